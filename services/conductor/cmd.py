# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-conductor``: the build flow and the compute agents' records.

    berth-conductor --config-file /etc/berth/berth.conf

Runs ``[conductor] workers`` processes (default: one per CPU), each with
one RPC server on the ``conductor`` topic (the build flow) and one on
``conductor_records`` (the compute agents' record calls), so that builds
waiting on the scheduler never hold up heartbeats and records. Each
worker runs the periodic host discovery and allocation audit as
configured; both are safe to run concurrently.
"""

# NOTE: first, before anything imports threading (BERTH_EVENTLET mode).
from common import eventlet_mode  # noqa: F401

import os
import sys

import oslo_messaging as messaging

from common import baserpc
from common import config
from common import preflight
from common import rpc
from common import service
from services.conductor import manager
from services.conductor import rpcapi

BINARY = 'berth-conductor'


class ConductorService(service.Service):
    """A conductor worker: the build flow and the records, two servers."""

    def _rpc_server(self, endpoints):
        # NOTE: the record proxy is served on its own topic only (see
        # rpcapi's module docstring for why it has a topic of its own).
        records = messaging.Target(topic=rpcapi.RECORDS_TOPIC,
                                   server=self.host)
        return rpc.ServerGroup([
            super()._rpc_server([e for e in endpoints
                                 if e is not self.manager.records]),
            rpc.get_server(records, [self.manager.records,
                                     baserpc.BaseRPCAPI('conductor')])])


def build_service():
    """The conductor :class:`common.service.Service` (not started)."""
    return ConductorService(BINARY, rpcapi.RPC_TOPIC,
                            manager.ConductorManager())


def main(argv=None):
    """Console-script entry point; returns the exit status."""
    conf = preflight.start(BINARY, argv)
    config.setup_logging(BINARY)
    # NOTE: built before forking, so that a configuration error stops the
    # command at once with its reason; databases and transports are
    # opened lazily, in each worker.
    server = build_service()
    workers = conf.conductor.workers or os.cpu_count() or 1
    return service.serve(server, workers=workers)


if __name__ == '__main__':
    sys.exit(main())
