# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""berth-conductor: the service it builds, lazily connected."""

from services.conductor import cmd
from services.conductor import manager
from services.conductor import rpcapi


def test_the_service_needs_no_database_or_transport_to_be_built():
    service = cmd.build_service()
    assert rpcapi.RPC_TOPIC == 'conductor'
    assert (service.binary, service.topic) == ('berth-conductor',
                                               'conductor')
    assert isinstance(service.manager, manager.ConductorManager)
    assert service.manager.additional_endpoints == [
        service.manager.records]
