# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The api database, the registry of cell databases, and their schema sync.

There is one api database (``[api_database] connection``) and many cell
databases: cell0, which holds the instances that never got a host, and
cell1..N, each with its own URL recorded in the api database's
``cell_mappings``. ``[database] connection`` is the local cell's (cell1 in
a one-cell deployment).

:func:`get_cell_database` hands out one :class:`common.db.api.Database` per
distinct URL, created on first use and kept for the life of the process,
so that every cell has a single connection pool however many callers ask.
"""

import dataclasses
import logging
import os
import threading

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
import sqlalchemy as sa

import common.conf
from common import context as berth_context
from common.db import api as db_api
from common.db import api_tables
from common import exception

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

CELL0_UUID = '00000000-0000-0000-0000-000000000000'

_HERE = os.path.dirname(__file__)
API_MIGRATIONS = os.path.join(_HERE, 'api_migrations')
CELL_MIGRATIONS = os.path.join(_HERE, 'cell_migrations')

api_db = db_api.Database('api')


class CellMappingNotFound(exception.NotFound):
    """A cell uuid that no cell mapping has."""

    msg_fmt = 'Cell %(uuid)s has no cell mapping.'


@dataclasses.dataclass
class CellMapping(object):
    """One row of ``cell_mappings``: where a cell's database and queue are."""

    id: int
    uuid: str
    name: str
    transport_url: str
    database_connection: str
    disabled: bool = False

    @property
    def is_cell0(self):
        """True for cell0, which holds no hosts."""
        return self.uuid == CELL0_UUID

    @property
    def label(self):
        """``name (uuid)`` for logs and command output."""
        return '%s (%s)' % (self.name or 'unnamed', self.uuid)


def configure_api(conf=None):
    """Point :data:`api_db` at ``[api_database] connection``; return it.

    :raises common.exception.DBNotConfigured: when no connection is set.
    """
    api_db.configure((conf or CONF).api_database)
    return api_db


def read(database, fn, context, *args, **kwargs):
    """Run ``fn(context, *args)`` in a read transaction of ``database``.

    NOTE: the decorator is applied per call, not at import, because the
    database is chosen at run time (which cell; a test's own database).
    """
    return database.reader(fn)(context, *args, **kwargs)


def _cell_mappings(context, uuid=None):
    query = sa.select(api_tables.cell_mappings).order_by(
        api_tables.cell_mappings.c.id)
    if uuid is not None:
        query = query.where(api_tables.cell_mappings.c.uuid == uuid)
    return [CellMapping(id=row.id, uuid=row.uuid, name=row.name,
                        transport_url=row.transport_url,
                        database_connection=row.database_connection,
                        disabled=bool(row.disabled))
            for row in context.session.execute(query)]


def get_cell_mappings(context, database=None):
    """Every cell mapping, in id order.

    :param database: the api Database; :data:`api_db` when not given.
    """
    return read(database or api_db, _cell_mappings, context)


def get_cell_mapping(context, uuid, database=None):
    """The cell mapping of ``uuid``.

    :raises CellMappingNotFound: when there is none.
    """
    found = read(database or api_db, _cell_mappings, context, uuid)
    if not found:
        raise CellMappingNotFound(uuid=uuid)
    return found[0]


class _Options(object):
    """An oslo.db option group with another ``connection`` URL.

    NOTE: every cell database shares the pool options of ``[database]``;
    only the URL comes from the cell mapping.
    """

    def __init__(self, group, connection):
        self._group = group
        self.connection = connection

    def __getattr__(self, name):
        return getattr(self._group, name)


def database_for_url(name, url, conf=None):
    """A new Database at ``url`` with ``[database]``'s pool options.

    :param name: a label for logs and errors.
    """
    database = db_api.Database(name)
    database.configure(_Options((conf or CONF).database, url))
    return database


def _looks_like_url(value):
    return '://' in value or value.startswith('sqlite:')


def safe_url(url):
    """``url`` with its password masked, for logs and messages."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return '<unparsable database URL>'


class CellDatabases(object):
    """Registry: one Database per distinct cell database URL.

    Thread-safe; a Database is created and configured the first time its
    URL is asked for and reused afterwards.
    """

    def __init__(self, conf=None, api_database=None):
        """
        :param conf: the ConfigOpts whose ``[database]`` pool options every
            cell uses; the global CONF when not given.
        :param api_database: where to look up cell uuids; :data:`api_db`
            (configured from ``conf``) when not given.
        """
        self._conf = conf
        self._api_database = api_database
        self._lock = threading.Lock()
        self._by_url = {}
        self._url_by_uuid = {}

    @property
    def conf(self):
        """The ConfigOpts in use (resolved late so tests may override)."""
        return self._conf or CONF

    def get(self, cell, context=None):
        """The Database of ``cell``.

        :param cell: a :class:`CellMapping`, a cell uuid (looked up in the
            api database once, then remembered) or a database URL.
        :param context: for the uuid lookup; an admin context if None.
        :raises CellMappingNotFound: for an unknown uuid.
        """
        if isinstance(cell, CellMapping):
            with self._lock:
                self._url_by_uuid[cell.uuid] = cell.database_connection
            return self._for_url(cell.database_connection, cell.label)
        if _looks_like_url(cell):
            return self._for_url(cell, safe_url(cell))
        with self._lock:
            url = self._url_by_uuid.get(cell)
        if url is None:
            api = self._api_database or configure_api(self.conf)
            mapping = get_cell_mapping(
                context or berth_context.get_admin_context(), cell, api)
            url = mapping.database_connection
            with self._lock:
                self._url_by_uuid[cell] = url
        return self._for_url(url, cell)

    def local(self):
        """The Database of ``[database] connection`` (the local cell).

        :raises common.exception.DBNotConfigured: when it is not set.
        """
        url = self.conf.database.connection
        if not url:
            raise exception.DBNotConfigured(name='cell ([database])')
        return self._for_url(url, '[database] connection')

    def _for_url(self, url, label):
        with self._lock:
            database = self._by_url.get(url)
            if database is None:
                database = database_for_url('cell %s' % label, url,
                                            self.conf)
                self._by_url[url] = database
            return database

    def reset(self):
        """Close every pool and forget every database (tests, after fork)."""
        with self._lock:
            databases = list(self._by_url.values())
            self._by_url.clear()
            self._url_by_uuid.clear()
        for database in databases:
            database.dispose()


# NOTE: the process-wide registry: every service of a process shares its
# cells' connection pools.
REGISTRY = CellDatabases()


def get_cell_database(cell, context=None):
    """The process-wide Database of a cell (mapping, uuid or URL)."""
    return REGISTRY.get(cell, context)


def local_cell_database():
    """The process-wide Database of ``[database] connection``."""
    return REGISTRY.local()


# --- schema sync ------------------------------------------------------------

def _alembic_config(migrations, connection=None):
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', migrations)
    cfg.attributes['connection'] = connection
    return cfg


def _upgrade(database, migrations, revision):
    with database.engine().begin() as connection:
        alembic_command.upgrade(_alembic_config(migrations, connection),
                                revision)


def _current(database):
    with database.engine().connect() as connection:
        return alembic_migration.MigrationContext.configure(
            connection).get_current_revision()


def sync_api(conf=None, revision='head'):
    """Upgrade the api database schema; safe to run again.

    :param conf: the ConfigOpts with ``[api_database]``.
    :raises common.exception.DBNotConfigured: when no connection is set.
    """
    _upgrade(configure_api(conf), API_MIGRATIONS, revision)


def api_revision(conf=None):
    """The api schema revision, or None when never synced."""
    return _current(configure_api(conf))


def sync_cell(database, revision='head'):
    """Upgrade one cell database's schema; safe to run again."""
    _upgrade(database, CELL_MIGRATIONS, revision)


def cell_revision(database):
    """A cell database's schema revision, or None when never synced."""
    return _current(database)


def _mapped_cells(conf):
    """The cell mappings, or [] when the api database cannot tell yet."""
    if not conf.api_database.connection:
        return []
    if api_revision(conf) is None:
        LOG.warning('The api database has no schema yet (run berth-manage '
                    'api_db sync); no mapped cell is synced.')
        return []
    return get_cell_mappings(berth_context.get_admin_context())


def cells_to_sync(conf=None):
    """(label, Database) of every cell database ``db sync`` looks after.

    cell0 and every mapped cell, cell0 first; then ``[database]
    connection`` unless a mapping already names it (a new deployment syncs
    it before any cell is mapped, as ``nova-manage db sync`` does).

    :raises common.exception.DBNotConfigured: when there is none at all.
    """
    conf = conf or CONF
    registry = REGISTRY if conf is CONF else CellDatabases(conf)
    mappings = sorted(_mapped_cells(conf),
                      key=lambda m: (not m.is_cell0, m.id))
    targets = [(m.label, registry.get(m)) for m in mappings]
    urls = {m.database_connection for m in mappings}
    if conf.database.connection and conf.database.connection not in urls:
        targets.append(('[database] connection', registry.local()))
    if not targets:
        raise exception.DBNotConfigured(name='cell ([database])')
    return targets


def sync_cells(conf=None, revision='head'):
    """Upgrade every cell database (see :func:`cells_to_sync`).

    :returns: the labels of the databases synced, in order.
    """
    labels = []
    for label, database in cells_to_sync(conf):
        LOG.info('Syncing cell database %s', label)
        sync_cell(database, revision)
        labels.append(label)
    return labels
