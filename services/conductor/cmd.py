# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-conductor``: the build flow and the compute agents' records.

    berth-conductor --config-file /etc/berth/berth.conf

Runs ``[conductor] workers`` processes (default: one per CPU) on the
``conductor`` topic. Each worker runs the periodic host discovery and
allocation audit as configured; both are safe to run concurrently.
"""

# NOTE: first, before anything imports threading (BERTH_EVENTLET mode).
from common import eventlet_mode  # noqa: F401

import os
import sys

from common import config
from common import service
from services.conductor import manager
from services.conductor import rpcapi

BINARY = 'berth-conductor'


def build_service():
    """The conductor :class:`common.service.Service` (not started)."""
    return service.Service(BINARY, rpcapi.RPC_TOPIC,
                           manager.ConductorManager())


def main(argv=None):
    """Console-script entry point; returns the exit status."""
    conf = config.parse_args(argv)
    config.setup_logging(BINARY)
    # NOTE: built before forking, so that a configuration error stops the
    # command at once with its reason; databases and transports are
    # opened lazily, in each worker.
    server = build_service()
    workers = conf.conductor.workers or os.cpu_count() or 1
    return service.serve(server, workers=workers)


if __name__ == '__main__':
    sys.exit(main())
