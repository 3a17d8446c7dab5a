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
SIGTERM or Ctrl-C. With noauth2 (the default) it also writes
``<state-dir>/clouds.yaml``, whose cloud ``berth`` the ``openstack`` client
uses (``OS_CLOUD=berth``), a development convenience. ``--demo`` seeds a
small cloud, boots a few servers, prints where each landed and why, and
exits (status 1 if anything went differently than it should).
"""

# NOTE: first, before anything imports threading (BERTH_EVENTLET mode).
from common import eventlet_mode  # noqa: F401

import logging
import os
import signal
import sys
import time

from oslo_config import cfg

from common import config

# NOTE: the services (launcher, state, clouds) are imported by main(),
# after the first line is printed: loading them takes seconds, which the
# user should not spend looking at nothing.

LOG = logging.getLogger(__name__)

# NOTE: services.allinone.state's, which this module does not import.
DEFAULT_STATE_DIR = 'state'

CLI_OPTS = [
    cfg.StrOpt('state-dir', default=DEFAULT_STATE_DIR,
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


class Progress(object):
    """One line growing as start-up (or shut-down) goes through its steps.

    ``Starting Berth in state: loading, databases, ... ready``: each
    step's name is printed when it begins, so a slow step is the last
    word on the line.
    """

    def __init__(self, out=None):
        self._out = out or sys.stdout
        self._steps = 0

    def begin(self, text):
        """Start the line with ``text``."""
        self._out.write(text)
        self._out.flush()

    def step(self, name):
        """Say that step ``name`` begins."""
        self._out.write('%s %s' % (',' if self._steps else '', name))
        self._steps += 1
        self._out.flush()

    def end(self, text):
        """End the line with ``text``."""
        self._out.write('%s\n' % text)
        self._out.flush()
        self._steps = 0


def _client_lines(aio, clouds_file):
    """How to point the ``openstack`` client at the all-in-one."""
    from services.allinone import clouds
    if clouds_file is None:
        return ['Authentication is Keystone\'s ([api] auth_strategy = '
                'keystone): use its cloud entry.', '']
    pip = os.path.join(os.path.dirname(sys.executable), 'pip')
    return [
        'The openstack client (%s install -e .[client]) through the cloud '
        'entry "%s",' % (pip, clouds.CLOUD),
        'a development convenience of noauth2 (production uses Keystone):',
        '',
        '  ' + clouds.export_line(clouds_file),
        '  openstack server list --long',
        '  openstack resource provider list',
        '',
    ]


def _ready_banner(aio, state, elapsed, clouds_file=None):
    """The endpoints and a ready-to-paste client environment."""
    from services.allinone import state as state_mod
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
    ]
    if clouds_file is not None:
        lines += ['  identity       %s/identity (noauth2 stand-in)'
                  % aio.api_url,
                  '  image          %s/image' % aio.api_url]
    lines += [
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
        # NOTE: an admin page (doc/operations.md, "Capacity report"):
        # with noauth2, send the admin token, e.g. curl -H
        # 'X-Auth-Token: admin' URL > report.html.
        '  capacity report %s/os-berth-capacity/report (admin)' % compute,
        '',
    ]
    return '\n'.join(lines + _client_lines(aio, clouds_file))


def _write_clouds(aio, state):
    """Write the clouds.yaml of a noauth2 all-in-one; its path or None."""
    from services.allinone import clouds
    if aio.conf.api.auth_strategy != 'noauth2':
        return None
    return clouds.write(state, aio.api_url)


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


def _stop(aio, progress):
    """Stop every service, saying which stops as it goes."""
    started = time.monotonic()
    progress.begin('Stopping Berth:')
    aio.stop(progress=progress.step)
    progress.end(' ... stopped in %.1fs.' % (time.monotonic() - started))


def main(argv=None):
    """Console-script entry point; returns the exit status."""
    conf = config.parse_args(argv, cli_opts=CLI_OPTS)
    progress = Progress()
    progress.begin('Starting Berth in %s:'
                   % os.path.abspath(conf.state_dir))
    progress.step('loading')
    from services.allinone import launcher
    from services.allinone import state as state_mod
    state = state_mod.StateDir(conf.state_dir)
    state.prepare()
    state_mod.apply_defaults(conf, state, conf.hosts)
    config.setup_logging('berth-all-in-one')
    aio = launcher.AllInOne(conf, state, conf.hosts, conf.api_port,
                            conf.placement_port)
    started = time.monotonic()
    try:
        aio.start(progress=progress.step)
        state_mod.write_config(conf, state)
        clouds_file = _write_clouds(aio, state)
    except Exception as exc:
        progress.end(' ... failed.')
        LOG.exception('berth-all-in-one could not start')
        print('berth-all-in-one could not start: %s (see %s)'
              % (exc, conf.log_file or 'the log'), file=sys.stderr)
        aio.stop()
        return 1
    progress.end(' ... ready.')
    print(_ready_banner(aio, state, time.monotonic() - started, clouds_file),
          flush=True)
    if not conf.demo:
        return aio.wait(stop=lambda: _stop(aio, progress))
    try:
        return _run_demo(aio)
    finally:
        _stop(aio, progress)


if __name__ == '__main__':
    sys.exit(main())
