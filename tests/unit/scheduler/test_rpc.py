# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The scheduler's RPC client and server speak the same versions."""

from services.scheduler import manager
from services.scheduler import rpcapi
from tests.unit import rpc_versions


def test_client_and_server_versions_are_in_sync():
    rpc_versions.assert_versions_in_sync(rpcapi.SchedulerAPI,
                                         manager.SchedulerManager)
