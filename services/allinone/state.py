# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The all-in-one's state directory and the configuration it derives.

A bare ``berth-all-in-one`` needs nothing but a directory: the api, cell0,
cell1 and placement databases are SQLite files in it, RPC goes over the
in-process ``fake://`` transport, logs go to a file in it, and authentication
is ``noauth2``. Everything here is a *default*: a ``--config-file`` that
names a ``transport_url`` or a ``[database] connection`` wins, and the same
command then runs on RabbitMQ and MariaDB or PostgreSQL.

The derived options are also written to ``<state>/berth.conf``, so that
``berth-manage --config-file <state>/berth.conf ...`` works on the
all-in-one's databases while it runs (or after).
"""

import logging
import os

from keystoneauth1 import loading as ks_loading
import sqlalchemy as sa

from common.db import cells
from common import rpc

LOG = logging.getLogger(__name__)

DEFAULT_STATE_DIR = 'state'
# NOTE: the databases the all-in-one keeps, by the file name each gets.
SQLITE_SUFFIX = '.sqlite'

# (group, option) pairs written to <state>/berth.conf, in this order; the
# values are whatever the configuration holds once the defaults are set.
DERIVED_OPTIONS = [
    ('DEFAULT', 'transport_url'),
    ('api', 'auth_strategy'),
    ('api_database', 'connection'),
    ('database', 'connection'),
    ('placement_database', 'connection'),
    ('placement', 'auth_type'),
    ('placement', 'token'),
    ('placement', 'endpoint'),
    ('placement', 'endpoint_override'),
    # NOTE: berth-manage host drain moves servers through the API.
    ('compute_api', 'auth_type'),
    ('compute_api', 'token'),
    ('compute_api', 'endpoint_override'),
    ('compute', 'compute_driver'),
    ('fake_driver', 'host_count'),
    ('fake_driver', 'host_name_pattern'),
    ('compute', 'cpu_shared_set'),
    ('compute', 'cpu_dedicated_set'),
    # NOTE: so that berth-manage's dry runs (scheduler explain, capacity)
    # run the same filters and weighers as the all-in-one's scheduler.
    ('filter_scheduler', 'enabled_filters'),
    ('filter_scheduler', 'weight_classes'),
]


class StateDir(object):
    """The directory holding the all-in-one's databases, config and log."""

    def __init__(self, path):
        self.path = os.path.abspath(path)

    def prepare(self):
        """Create the directory (and its parents) when missing."""
        os.makedirs(self.path, exist_ok=True)

    def file(self, name):
        """The absolute path of ``name`` in the directory."""
        return os.path.join(self.path, name)

    def sqlite_url(self, name):
        """The SQLite URL of the database called ``name``."""
        return 'sqlite:///' + self.file(name + SQLITE_SUFFIX)

    @property
    def conf_file(self):
        """The derived configuration written for berth-manage."""
        return self.file('berth.conf')

    @property
    def log_file(self):
        """Where every service logs unless the config says otherwise."""
        return self.file('berth.log')


def apply_defaults(conf, state, hosts):
    """Make the bare command work; options from config files still win.

    :param conf: the parsed ConfigOpts.
    :param state: the :class:`StateDir`.
    :param hosts: how many hosts the fake driver simulates (``--hosts``).
    """
    rpc.register_opts(conf)
    defaults = [
        # NOTE: in-process RPC; the all-in-one is the only process.
        ('DEFAULT', 'transport_url', 'fake://'),
        # NOTE: the console is for the endpoints and the demo's report.
        ('DEFAULT', 'log_file', state.log_file),
        # NOTE: ready in seconds: the first resource update and the first
        # periodic tasks run at once, not after a random delay.
        ('DEFAULT', 'periodic_fuzzy_delay', 0),
        ('api', 'auth_strategy', 'noauth2'),
        ('api_database', 'connection', state.sqlite_url('api')),
        ('database', 'connection', state.sqlite_url('cell1')),
        ('placement_database', 'connection',
         state.sqlite_url('placement')),
        ('placement_database', 'sync_on_startup', True),
        ('compute', 'compute_driver', 'fake'),
        # NOTE: the defaults plus the two filters the demo shows at work:
        # flavor extra specs against aggregate metadata (io=fast), and
        # the NUMA fit of pinned CPUs; and SameHostFilter and
        # DifferentHostFilter, as devstack enables them for Nova, so that
        # the same_host / different_host hints a user tries work.
        ('filter_scheduler', 'enabled_filters', [
            'ComputeFilter', 'ComputeCapabilitiesFilter',
            'ImagePropertiesFilter', 'AggregateInstanceExtraSpecsFilter',
            'NUMATopologyFilter', 'ServerGroupAntiAffinityFilter',
            'ServerGroupAffinityFilter', 'SameHostFilter',
            'DifferentHostFilter']),
        ('fake_driver', 'host_name_pattern', 'compute{index}'),
        # NOTE: half of each simulated host's CPUs for pinned guests, so
        # that a dedicated-CPU flavor has somewhere to go (PCPU inventory).
        ('compute', 'cpu_shared_set', '0-7'),
        ('compute', 'cpu_dedicated_set', '8-15'),
    ]
    for group, name, value in defaults:
        conf.set_default(name, value,
                         group=None if group == 'DEFAULT' else group)
    # NOTE: --hosts is the all-in-one's own knob; it beats a config file.
    conf.set_override('host_count', hosts, group='fake_driver')


def _use_admin_token(conf, group, url):
    """Default ``group``'s keystoneauth client to ``url`` with noauth2's
    token ``admin`` (keystoneauth's ``admin_token`` plugin sends it). A
    config file with keystone options keeps its own.
    """
    # NOTE: keystoneauth registers a plugin's options only when it loads
    # the plugin; the admin_token ones must exist to get defaults. A file
    # naming another plugin loads that one's options as usual.
    conf.register_opts(ks_loading.get_auth_plugin_conf_options(
        'admin_token'), group=group)
    for name, value in (('auth_type', 'admin_token'), ('token', 'admin'),
                        ('endpoint', url), ('endpoint_override', url)):
        conf.set_default(name, value, group=group)


def use_placement(conf, url):
    """Point every placement client of the process at ``url``."""
    _use_admin_token(conf, 'placement', url)


def use_compute_api(conf, url):
    """Point berth-manage's compute API client (``[compute_api]``, in the
    derived config) at the API's ``url`` (its ``/v2.1``).
    """
    _use_admin_token(conf, 'compute_api', url)


def cell0_url(conf, state):
    """The cell0 database URL, derived from cell1's as nova-manage does.

    cell1 in the state directory: ``cell0.sqlite`` beside it. Another
    SQLite file: ``<name>_cell0.sqlite``. A server database: the same
    server, database ``<name>_cell0``.
    """
    url = conf.database.connection
    if url == state.sqlite_url('cell1'):
        return state.sqlite_url('cell0')
    parsed = sa.engine.make_url(url)
    database = parsed.database or ''
    if parsed.get_backend_name() == 'sqlite':
        stem, ext = os.path.splitext(database)
        database = '%s_cell0%s' % (stem, ext)
    else:
        database += '_cell0'
    return parsed.set(database=database).render_as_string(
        hide_password=False)


def _value(conf, group, name):
    try:
        return getattr(conf if group == 'DEFAULT' else conf[group], name)
    except Exception:
        # NOTE: an option another helper's group may not define (yet).
        return None


def write_config(conf, state):
    """Write the derived options to ``<state>/berth.conf`` (mode 0600).

    :returns: the file's path.
    """
    sections = {}
    for group, name in DERIVED_OPTIONS:
        value = _value(conf, group, name)
        if value is None:
            continue
        if isinstance(value, bool):
            value = str(value)
        elif isinstance(value, (list, tuple)):
            value = ','.join(str(v) for v in value)
        sections.setdefault(group, []).append('%s = %s' % (name, value))
    lines = ['# Written by berth-all-in-one: the options it derived, for',
             '# berth-manage --config-file %s ...' % state.conf_file]
    for group, items in sections.items():
        lines.append('')
        lines.append('[%s]' % group)
        lines.extend(items)
    # NOTE: the file may hold database passwords from the caller's config.
    fd = os.open(state.conf_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                 0o600)
    with os.fdopen(fd, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return state.conf_file


def describe(url):
    """A URL for the console, password masked."""
    return cells.safe_url(url)
