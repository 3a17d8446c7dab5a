# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-scheduler``: serve select_destinations on the scheduler topic.

    berth-scheduler --config-file /etc/berth/berth.conf

Runs ``[scheduler] workers`` processes (default: one per CPU); each loads
the configured filters and weighers and keeps its own host-state cache.
"""

# NOTE: first, before anything imports threading (BERTH_EVENTLET mode).
from common import eventlet_mode  # noqa: F401

import os
import sys

from common import config
from common import preflight
from common import service
from services.scheduler import manager
from services.scheduler import rpcapi


def main(argv=None):
    """Console-script entry point; returns the exit status."""
    conf = preflight.start('berth-scheduler', argv)
    config.setup_logging('berth-scheduler')
    # NOTE: built before forking so that a bad filter name or an
    # unreachable database stops the command at once, with its reason.
    scheduler = manager.SchedulerManager()
    server = service.Service('berth-scheduler', rpcapi.RPC_TOPIC, scheduler)
    workers = conf.scheduler.workers or os.cpu_count() or 1
    return service.serve(server, workers=workers)


if __name__ == '__main__':
    sys.exit(main())
