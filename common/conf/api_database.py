# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[api_database]`` group: the global api database.

The api database holds what is not in any one cell: cell and host
mappings, aggregates, server groups. The options are oslo.db's usual ones.
"""

import copy

from oslo_config import cfg
from oslo_db import options as oslo_db_options

from common.conf import _db_pool as pool

api_db_group = cfg.OptGroup(
    'api_database', title='API database options',
    help="""
The api database: cell mappings, host mappings, aggregates and server
groups. Any SQLAlchemy URL that Berth supports:
sqlite:////var/lib/berth/api.sqlite, mysql+pymysql://..., or
postgresql+psycopg2://...
""")


def _db_opts():
    # NOTE: copy oslo.db's option objects so that registering them in a
    # second group never shares state with [database].
    opts = [copy.deepcopy(o) for o in oslo_db_options.database_opts]
    for opt in opts:
        # oslo.db's deprecated [DEFAULT]/[sql] aliases belong to
        # [database] only; here they would confuse the sample file.
        opt.deprecated_opts = []
    return opts


api_db_opts = _db_opts()


def register_opts(conf):
    """Register the [api_database] options."""
    conf.register_group(api_db_group)
    conf.register_opts(api_db_opts, group=api_db_group)
    pool.set_pool_defaults(conf, api_db_group.name)


def list_opts():
    """Options for the sample config."""
    return [(api_db_group, pool.documented(api_db_opts))]
