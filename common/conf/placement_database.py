# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[placement_database]`` group.

The placement service has its own database, as upstream. The options are
oslo.db's usual ones plus ``sync_on_startup``.
"""

import copy

from oslo_config import cfg
from oslo_db import options as oslo_db_options

from common.conf import _db_pool as pool

placement_db_group = cfg.OptGroup(
    'placement_database', title='Placement database options',
    help="""
The placement service's own database. Any SQLAlchemy URL that Berth supports:
sqlite:////var/lib/berth/placement.sqlite, mysql+pymysql://..., or
postgresql+psycopg2://...
""")

_extra_opts = [
    cfg.BoolOpt(
        'sync_on_startup',
        default=False,
        help="""
Bring the placement database schema up to date when the service starts.

When False, run ``berth-manage placement db sync`` before starting.
"""),
]


def _db_opts():
    # NOTE: copy oslo.db's option objects so that registering them in a
    # second group never shares state with [database].
    opts = [copy.deepcopy(o) for o in oslo_db_options.database_opts]
    for opt in opts:
        # Berth has only one default database driver; oslo.db's
        # deprecated aliases would confuse the sample file.
        opt.deprecated_opts = []
    return opts + _extra_opts


placement_db_opts = _db_opts()


def register_opts(conf):
    """Register the [placement_database] options."""
    conf.register_group(placement_db_group)
    conf.register_opts(placement_db_opts, group=placement_db_group)
    pool.set_pool_defaults(conf, placement_db_group.name)


def list_opts():
    """Options for the sample config."""
    return [(placement_db_group, pool.documented(placement_db_opts))]
