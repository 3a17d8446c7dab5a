# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The placement database: its transaction decorators and schema sync.

Every placement DB function is decorated with ``@placement_db.reader`` or
``@placement_db.writer`` and takes the request context first.
"""

import logging
import os

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration

from common.db import api as db_api

LOG = logging.getLogger(__name__)

placement_db = db_api.Database('placement')

_MIGRATIONS = os.path.join(os.path.dirname(__file__), 'migrations')


def configure(conf):
    """Point the placement database at ``[placement_database] connection``."""
    placement_db.configure(conf.placement_database)


def _alembic_config(connection):
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', _MIGRATIONS)
    cfg.attributes['connection'] = connection
    return cfg


def sync(conf, revision='head'):
    """Upgrade the placement schema and load the standard catalogues.

    Safe to run again and from several processes: alembic records the
    version, and the catalogue sync inserts only what is missing.

    :param conf: the ConfigOpts with [placement_database].
    :param revision: the alembic revision to upgrade to.
    """
    # Imported here: the catalogue module imports this one.
    from services.placement.objects import catalog

    configure(conf)
    engine = placement_db.engine()
    with engine.begin() as connection:
        alembic_command.upgrade(_alembic_config(connection), revision)
    catalog.sync_standard_catalogues()


def current_revision(conf):
    """The schema revision the database is at, or None when empty."""
    configure(conf)
    with placement_db.engine().connect() as connection:
        return alembic_migration.MigrationContext.configure(
            connection).get_current_revision()
