# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A Berth Database whose pool holds one connection, for tests that read
that connection's own session counters between transactions.
"""

from oslo_config import cfg
from oslo_db import options as db_options
from oslo_db.sqlalchemy import enginefacade

from common.db import api as db_api


@enginefacade.transaction_context_provider
class Context(object):
    """The bare request context the Database decorators need."""


def database(url, name):
    """A configured :class:`common.db.api.Database` on ``url`` whose
    every transaction runs on the same pooled connection.
    """
    conf = cfg.ConfigOpts()
    conf.register_opts(db_options.database_opts, 'database')
    conf([], project='berth-test')
    conf.set_override('connection', url, 'database')
    conf.set_override('max_pool_size', 1, 'database')
    conf.set_override('max_overflow', 0, 'database')
    result = db_api.Database(name)
    result.configure(conf.database)
    return result
