# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[quota]`` group: the compute API's default limits.

A project's limit for a resource is its own row in the api database's
``quotas`` table when an administrator set one (``openstack quota set``),
else the ``default`` quota class's limit when one was set
(``openstack quota set --class default``, api table ``quota_classes``),
else the default here. Usage is counted from the cell databases and the
build requests, so there is nothing to get out of step.
"""

from oslo_config import cfg

quota_group = cfg.OptGroup(
    'quota', title='Quota options',
    help='Default per-project limits of the compute API.')

quota_opts = [
    cfg.StrOpt(
        'driver', default='db',
        choices=[
            ('db', 'Enforce the limits: per-project rows in the api '
                   'database, else the defaults below.'),
            ('noop', 'Enforce nothing and report every limit as -1 '
                     '(benchmarks, simulations).'),
        ],
        help='How quotas are enforced.'),
    cfg.IntOpt(
        'instances', default=10, min=-1,
        help="""
The number of servers a project may have. -1 means unlimited.

Related options:

* cores, ram: checked together with this on every boot.
"""),
    cfg.IntOpt(
        'cores', default=20, min=-1,
        help="""
The number of vCPUs a project's servers may have in total. -1 means
unlimited.
"""),
    cfg.IntOpt(
        'ram', default=50 * 1024, min=-1,
        help="""
The MiB of RAM a project's servers may have in total. -1 means unlimited.
"""),
    cfg.IntOpt(
        'metadata_items', default=128, min=-1,
        help='The number of metadata items a server may have.'),
    cfg.IntOpt(
        'server_groups', default=10, min=-1,
        help='The number of server groups a project may have.'),
    cfg.IntOpt(
        'server_group_members', default=10, min=-1,
        help='The number of servers a server group may have.'),
    cfg.IntOpt(
        'key_pairs', default=100, min=-1,
        help="""
The number of key pairs a user may have (reported only: Berth has no key
pairs).
"""),
]


def register_opts(conf):
    """Register the [quota] options."""
    conf.register_group(quota_group)
    conf.register_opts(quota_opts, group=quota_group)


def list_opts():
    """Options for the sample config."""
    return [(quota_group, quota_opts)]
