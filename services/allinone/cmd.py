# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-all-in-one``: a whole Berth cloud in one process.

    berth-all-in-one [--config-file F] [--state-dir D] [--api-port P]
                     [--placement-port P] [--hosts N] [--demo]

Placement, the compute API, the conductor, the scheduler and a fake
compute agent simulating ``--hosts`` hosts, each in its own threads, on
SQLite files under ``--state-dir`` and the in-process transport. It prints
the endpoints and an ``openstack`` client environment, then serves until
SIGTERM or Ctrl-C. ``--demo`` seeds a small cloud, boots a few servers,
prints where each landed and why, and exits (status 1 if anything went
differently than it should).
"""

# NOTE: first, before anything imports threading (BERTH_EVENTLET mode).
from common import eventlet_mode  # noqa: F401

import logging
import signal
import sys
import time

from oslo_config import cfg

from common import config
from services.allinone import launcher
from services.allinone import state as state_mod

LOG = logging.getLogger(__name__)

CLI_OPTS = [
    cfg.StrOpt('state-dir', default=state_mod.DEFAULT_STATE_DIR,
               help='Directory of the SQLite databases, the log and the '
                    'derived berth.conf (created when missing).'),
    cfg.PortOpt('api-port', default=8774,
                help='Port of the compute API on 127.0.0.1 (0: any free '
                     'port).'),
    cfg.PortOpt('placement-port', default=8778,
                help='Port of the placement API on 127.0.0.1 (0: any free '
                     'port).'),
    cfg.IntOpt('hosts', default=8, min=1,
               help='How many compute hosts the fake driver simulates.'),
    cfg.BoolOpt('demo', default=False,
                help='Seed flavors, images and aggregates, boot a few '
                     'servers, report where each landed and why, exit.'),
]


def _interrupt(signum, _frame):
    """SIGTERM/SIGINT during the demo: unwind through ``finally``."""
    raise KeyboardInterrupt('signal %d' % signum)


def _ready_banner(aio, state, elapsed):
    """The endpoints and a ready-to-paste client environment."""
    conf = aio.conf
    compute = aio.api_url + '/v2.1'
    hosts = aio.compute_hosts()
    lines = [
        'Berth all-in-one is ready in %.1fs: %d compute host%s (%s).' % (
            elapsed, len(hosts), '' if len(hosts) == 1 else 's',
            ', '.join(hosts[:4]) + (', ...' if len(hosts) > 4 else '')),
        '',
        '  compute API    %s' % compute,
        '  placement API  %s' % aio.placement_url,
        '  transport      %s' % state_mod.describe(conf.transport_url),
        '  concurrency    %s' % ('eventlet (BERTH_EVENTLET)'
                                 if eventlet_mode.is_active()
                                 else 'native threads'),
        '  api database   %s' % state_mod.describe(
            conf.api_database.connection),
        '  cell1 database %s' % state_mod.describe(conf.database.connection),
        '  state          %s (log: %s)' % (state.path, conf.log_file),
        '  berth-manage   berth-manage --config-file %s ...' % (
            state.conf_file),
        '',
        'The openstack client (pip install python-openstackclient '
        'osc-placement), with',
        'noauth2: the token names the caller, "admin" or "user:project":',
        '',
        '  export OS_AUTH_TYPE=admin_token OS_TOKEN=admin '
        'OS_IDENTITY_API_VERSION=3',
        '  export OS_ENDPOINT=%s' % compute,
        '  export OS_IMAGE_ENDPOINT_OVERRIDE=%s/image' % aio.api_url,
        '  export OS_IDENTITY_ENDPOINT_OVERRIDE=%s/identity' % aio.api_url,
        '  openstack server list --long',
        '  OS_ENDPOINT=%s OS_PLACEMENT_API_VERSION=1.39 openstack '
        'resource provider list' % aio.placement_url,
        '',
    ]
    return '\n'.join(lines)


def _run_demo(aio):
    from services.allinone import demo
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    hosts = aio.compute_hosts()
    try:
        return 0 if demo.run(aio.api_url, hosts, aio.journal) else 1
    except KeyboardInterrupt:
        print('Demo interrupted.', file=sys.stderr)
        return 130
    except Exception as exc:
        print('Demo failed: %s' % exc, file=sys.stderr)
        return 1


def main(argv=None):
    """Console-script entry point; returns the exit status."""
    conf = config.parse_args(argv, cli_opts=CLI_OPTS)
    state = state_mod.StateDir(conf.state_dir)
    state.prepare()
    state_mod.apply_defaults(conf, state, conf.hosts)
    config.setup_logging('berth-all-in-one')
    aio = launcher.AllInOne(conf, state, conf.hosts, conf.api_port,
                            conf.placement_port)
    print('Starting Berth in %s ...' % state.path, flush=True)
    started = time.monotonic()
    try:
        aio.start()
        state_mod.write_config(conf, state)
    except Exception as exc:
        LOG.exception('berth-all-in-one could not start')
        print('berth-all-in-one could not start: %s (see %s)'
              % (exc, conf.log_file or 'the log'), file=sys.stderr)
        aio.stop()
        return 1
    print(_ready_banner(aio, state, time.monotonic() - started), flush=True)
    if not conf.demo:
        return aio.wait()
    try:
        return _run_demo(aio)
    finally:
        aio.stop()


if __name__ == '__main__':
    sys.exit(main())
