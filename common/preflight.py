# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Start-up checks: a service with unusable configuration stops at once.

Each console script parses its configuration through :func:`start`, which
checks the options its service cannot run without (database connections,
the transport) before anything is built or forked. A problem ends the
process with status 1 and one line on stderr naming the option, e.g.::

    berth-scheduler: [api_database] connection is not set

rather than workers respawning every second with tracebacks (see
doc/operations.md, "Start-up checks").
"""

import sys

from oslo_config import cfg

from common import config
from common import rpc

EXIT_CONFIG = 1

# The options each service needs, as (group, option); None is [DEFAULT].
_DATABASE = ('database', 'connection')
_API_DATABASE = ('api_database', 'connection')
_PLACEMENT_DATABASE = ('placement_database', 'connection')
_TRANSPORT = (None, 'transport_url')

REQUIRED = {
    'berth-scheduler': (_TRANSPORT, _API_DATABASE),
    'berth-conductor': (_TRANSPORT, _API_DATABASE),
    'berth-compute': (_TRANSPORT,),
    'berth-api': (_TRANSPORT, _API_DATABASE),
    'berth-placement-api': (_PLACEMENT_DATABASE,),
}

# Services whose heartbeats go to the local cell database when
# ``servicegroup_driver = db`` (computes always report via the conductor).
_DB_HEARTBEATS = ('berth-scheduler', 'berth-conductor', 'berth-api')


class Unusable(Exception):
    """The configuration cannot run the service; the message says why."""


def _label(group, name):
    return '[%s] %s' % (group or 'DEFAULT', name)


def _is_set(conf, group, name):
    """Whether ``group.name`` was given a value (not left at its default).

    NOTE: transport_url defaults to ``rabbit://`` (localhost, guest): a
    service that silently talks to a local broker nobody configured is
    the start-up surprise these checks exist to prevent.
    """
    try:
        value = conf[group][name] if group else conf[name]
        location = conf.get_location(name, group)
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
        return False
    if not value:
        return False
    return location is None or location.location != cfg.Locations.opt_default


def required_options(conf, binary):
    """The (group, option) pairs ``binary`` needs under ``conf``."""
    required = list(REQUIRED.get(binary, ()))
    if (binary in _DB_HEARTBEATS
            and conf.servicegroup_driver == 'db'):
        required.append(_DATABASE)
    return required


def check(conf, binary):
    """Raise :class:`Unusable` naming the options ``binary`` lacks."""
    # NOTE: oslo.messaging registers transport_url lazily; unregistered,
    # a value from the config file would read as missing.
    rpc.register_opts(conf)
    missing = [_label(group, name)
               for group, name in required_options(conf, binary)
               if not _is_set(conf, group, name)]
    if missing:
        raise Unusable('%s %s not set' % (
            ' and '.join(missing), 'is' if len(missing) == 1 else 'are'))


def fail(binary, message):
    """Print ``binary: message`` on stderr and exit with status 1."""
    print('%s: %s' % (binary, message), file=sys.stderr)
    raise SystemExit(EXIT_CONFIG)


def start(binary, argv=None, cli_opts=()):
    """Parse the command line and config files, then :func:`check` them.

    :returns: the parsed ConfigOpts.
    :raises SystemExit: unreadable or invalid config file, or a required
        option not set; one line on stderr says which.
    """
    try:
        conf = config.parse_args(argv, cli_opts=cli_opts)
        check(conf, binary)
    except cfg.ConfigFilesNotFoundError as exc:
        fail(binary, 'cannot read configuration file(s): %s'
             % ', '.join(exc.config_files))
    except (cfg.Error, Unusable) as exc:
        fail(binary, str(exc).strip().splitlines()[0])
    return conf
