# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The all-in-one's databases: schemas, cell0 and cell1, host mappings.

What ``berth-manage api_db sync``, ``cell_v2 map_cell0``, ``cell_v2
create_cell``, ``db sync`` and ``cell_v2 discover_hosts`` do on a real
deployment, done in process and made idempotent, so that a second start on
the same state directory (or on the same MariaDB databases) changes
nothing. Host discovery is the one the conductor runs
(:func:`common.db.discovery.discover_hosts`).
"""

import logging
import uuid as uuid_lib

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api_tables
from common.db import boot_records
from common.db import cell_access
from common.db import cells
from common.db import compute_records
from common.db import discovery

LOG = logging.getLogger(__name__)

CELL1_NAME = 'cell1'
CELL0_NAME = 'cell0'
# NOTE: cell0 never hosts anything, so it has no queue (as nova-manage).
CELL0_TRANSPORT = 'none:///'


def sync_api(conf):
    """Upgrade the api schema (creating a server database if missing)."""
    ensure_database(conf.api_database.connection)
    cells.sync_api(conf)


def ensure_database(url):
    """Create the database ``url`` names on its server when missing.

    SQLite files are created by the first connection. On MySQL/MariaDB and
    PostgreSQL the all-in-one creates what it was pointed at, as a
    one-command tool should; the caller's user needs the privilege.
    """
    parsed = sa.engine.make_url(url)
    backend = parsed.get_backend_name()
    if backend == 'sqlite' or not parsed.database:
        return
    # NOTE: URL.set() keeps a database given None; the URL is a named
    # tuple, and _replace is how to drop a field.
    server = parsed._replace(database='postgres' if backend == 'postgresql'
                             else None)
    engine = sa.create_engine(server, poolclass=sa.pool.NullPool,
                              isolation_level='AUTOCOMMIT')
    try:
        with engine.connect() as connection:
            if backend == 'postgresql':
                exists = connection.execute(sa.text(
                    'SELECT 1 FROM pg_database WHERE datname = :name'),
                    {'name': parsed.database}).scalar()
                if not exists:
                    connection.execute(sa.text(
                        'CREATE DATABASE "%s"' % parsed.database))
            else:
                connection.execute(sa.text(
                    'CREATE DATABASE IF NOT EXISTS `%s` CHARACTER SET utf8mb4'
                    % parsed.database))
    finally:
        engine.dispose()


def _mappings_by_uuid(ctxt):
    return {m.uuid: m for m in cells.get_cell_mappings(ctxt)}


def _insert_mapping(ctxt, uuid, name, transport_url, connection):
    now = timeutils.utcnow()
    ctxt.session.execute(api_tables.cell_mappings.insert().values(
        uuid=uuid, name=name, transport_url=transport_url,
        database_connection=connection, disabled=False, created_at=now))


def ensure_cells(ctxt, conf, cell0_url):
    """Map cell0 and cell1 unless they are; returns cell1's uuid.

    cell1 is the cell whose database is ``[database] connection``; an
    existing mapping of that URL is reused whatever its name.
    """
    mappings = _mappings_by_uuid(ctxt)
    api = cells.configure_api(conf)
    if cells.CELL0_UUID not in mappings:
        ensure_database(cell0_url)
        api.writer(_insert_mapping)(ctxt, cells.CELL0_UUID, CELL0_NAME,
                                    CELL0_TRANSPORT, cell0_url)
        LOG.info('Mapped cell0 at %s', cells.safe_url(cell0_url))
    local = conf.database.connection
    for mapping in mappings.values():
        if not mapping.is_cell0 and mapping.database_connection == local:
            return mapping.uuid
    ensure_database(local)
    uuid = str(uuid_lib.uuid4())
    api.writer(_insert_mapping)(ctxt, uuid, CELL1_NAME, conf.transport_url,
                                local)
    LOG.info('Mapped %s (%s) at %s', CELL1_NAME, uuid, cells.safe_url(local))
    return uuid


def sync_cells(conf):
    """Upgrade cell0's and every mapped cell's schema."""
    return cells.sync_cells(conf)


def discover_hosts(ctxt):
    """Map the compute hosts that appeared since the last call.

    :returns: every host mapped so far (not only the new ones).
    """
    access = cell_access.CellAccess()
    discovery.discover_hosts(ctxt, access)
    return [host for host, _cell in boot_records.list_host_mappings(
        ctxt, database=access.api)]


def compute_nodes(ctxt, hosts):
    """{node uuid: host} of the compute nodes of ``hosts`` in cell1."""
    database = cells.local_cell_database()
    return {node['uuid']: node['host'] for node in
            compute_records.list_compute_nodes(ctxt, database)
            if node['host'] in hosts}
