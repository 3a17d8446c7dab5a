# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[database]`` group: the local cell database.

``[database] connection`` is the cell database of the services on this
host (cell1 in a one-cell deployment). Other cells' databases are found
through the api database's ``cell_mappings``; they share these pool
options.
"""

from oslo_config import cfg
from oslo_db import options as oslo_db_options

from common.conf import _db_pool as pool

database_group = cfg.OptGroup(
    'database', title='Cell database options',
    help="""
The cell database: services, compute nodes and instances. Any SQLAlchemy
URL that Berth supports: sqlite:////var/lib/berth/cell1.sqlite,
mysql+pymysql://..., or postgresql+psycopg2://...
""")

# NOTE: oslo.db's own option objects, not copies: its enginefacade
# registers exactly these in [database] of the global CONF when an engine
# starts, and registering an unequal copy first would make that fail with
# a duplicate-option error.
database_opts = oslo_db_options.database_opts


def register_opts(conf):
    """Register the [database] options."""
    conf.register_group(database_group)
    conf.register_opts(database_opts, group=database_group)
    pool.set_pool_defaults(conf, database_group.name)


def list_opts():
    """Options for the sample config."""
    return [(database_group, pool.documented(database_opts))]
