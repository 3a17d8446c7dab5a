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


def test_records_are_served_on_their_own_topic(monkeypatch):
    made = []
    monkeypatch.setattr(cmd.rpc, 'get_server',
                        lambda target, endpoints, **kw: made.append(
                            (target.topic, endpoints)) or target)
    service = cmd.build_service()
    group = service._rpc_server([service.manager,
                                 service.manager.records])
    assert [topic for topic, _e in made] == ['conductor',
                                             'conductor_records']
    assert made[1][1][0] is service.manager.records
    assert service.manager.records not in made[0][1]
    assert len(group.servers) == 2
