# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The ``berth-manage`` entry point and its command-family registry.

    berth-manage --config-file /etc/berth/berth.conf placement db sync

Each command family (``db``, ``api_db``, ``cell_v2``, ``placement``,
``scheduler``) is a module of this package with ``add_parsers(subparsers)``,
which adds its category and sets ``action_fn`` on each leaf command. The
action takes the parsed ConfigOpts and returns the exit code.

Exit codes, as nova-manage and placement-manage use them: 0 done,
1 the command could not do what was asked (its message says why),
2 bad command line or unreadable config file, 255 unexpected error.
"""

# NOTE: first, before anything imports threading (BERTH_EVENTLET mode).
from common import eventlet_mode  # noqa: F401

import importlib
import logging
import sys
import traceback

from oslo_config import cfg

from common import config
from common import exception

LOG = logging.getLogger(__name__)

# NOTE: category -> module. Adding a family is one line here plus its module.
FAMILIES = {
    'api_db': 'services.manage.api_db',
    'capacity': 'services.manage.capacity',
    'cell_v2': 'services.manage.cell_v2',
    'db': 'services.manage.db',
    'host': 'services.manage.host_drain',
    'placement': 'services.manage.placement',
    'scheduler': 'services.manage.scheduler',
}


def add_command_parsers(subparsers):
    """oslo.config handler: let each family add its sub-commands."""
    for name in sorted(FAMILIES):
        importlib.import_module(FAMILIES[name]).add_parsers(subparsers)


CATEGORY_OPT = cfg.SubCommandOpt(
    'category', title='Command categories',
    help='Available categories', handler=add_command_parsers)


def main(argv=None):
    """Console-script entry point; returns the process exit code."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        conf = config.parse_args(argv, cli_opts=[CATEGORY_OPT])
    except cfg.ConfigFilesNotFoundError as exc:
        print('Failed to read configuration file(s): %s'
              % ', '.join(exc.config_files), file=sys.stderr)
        return 2
    except cfg.Error as exc:
        # NOTE: unreadable or unparsable file, bad value: one line.
        print('berth-manage: %s' % str(exc).strip().splitlines()[0],
              file=sys.stderr)
        return 2
    # NOTE: logs go to stderr unless the config says otherwise, so that
    # stdout carries only a command's answer (``db version`` in scripts).
    conf.set_default('use_stderr', True)
    config.setup_logging('berth-manage')
    action = getattr(conf.category, 'action_fn', None)
    if action is None:
        # NOTE: a category given without its command, e.g. "placement db".
        print('Missing command; see berth-manage %s --help'
              % conf.category.name, file=sys.stderr)
        return 2
    try:
        return action(conf)
    except exception.DBNotConfigured as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except Exception:
        print('An error has occurred:\n%s' % traceback.format_exc(),
              file=sys.stderr)
        return 255


if __name__ == '__main__':
    sys.exit(main())
