# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The api and cell schemas on MariaDB and PostgreSQL, through berth-manage.

The unit guard compares the migrated schemas with the tables modules on
SQLite; types (DATETIME(6), MEDIUMTEXT), defaults and constraints differ
per dialect, so the same comparison runs here on each real backend after
``api_db sync`` and ``db sync``, each run twice as operators do. Then the
database host source reads seeded rows back, so the scheduler's queries
are known to run on the backends users have.
"""

import datetime
import subprocess
import sys

from alembic import autogenerate
from alembic import migration as alembic_migration
from oslo_utils import timeutils
import sqlalchemy as sa

from common import context as berth_context
from common.db import api_tables
from common.db import cell_tables
from common.db import cells
from services.scheduler.sources import database as db_source
# NOTE: the database fixtures of the placement suite (skip locally, fail
# in CI when a server is unreachable), reused rather than copied.
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional.placement.conftest import make_database  # noqa
from tests.functional.placement.conftest import real_backend  # noqa

CELL1 = '4473067d-4c91-459f-93ae-79cb1e1203c7'


def _manage(conf_file, *args):
    return subprocess.run(
        [sys.executable, '-m', 'services.manage.main',
         '--config-file', str(conf_file)] + list(args),
        capture_output=True, text=True, timeout=300)


def _diff(url, metadata):
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            context = alembic_migration.MigrationContext.configure(
                connection, opts={'compare_type': True})
            return autogenerate.compare_metadata(context, metadata)
    finally:
        engine.dispose()


def _execute(url, statement, rows):
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as connection:
            connection.execute(statement, rows)
    finally:
        engine.dispose()


def test_syncs_match_tables(real_backend, make_database, tmp_path):  # noqa
    """api_db sync and db sync twice; the schemas equal the tables."""
    api_url = make_database(real_backend)
    cell0_url = make_database(real_backend)
    cell1_url = make_database(real_backend)
    conf_file = tmp_path / 'berth.conf'
    conf_file.write_text('[api_database]\nconnection = %s\n'
                         '[database]\nconnection = %s\n'
                         % (api_url, cell1_url))

    for _ in range(2):
        result = _manage(conf_file, 'api_db', 'sync')
        assert result.returncode == 0, result.stderr
    # NOTE: cell0 is reached only through its mapping, as in a
    # deployment; cell1 is both mapped and [database] connection.
    _execute(api_url, api_tables.cell_mappings.insert(), [
        dict(uuid=cells.CELL0_UUID, name='cell0', transport_url='none:///',
             database_connection=cell0_url, disabled=False),
        dict(uuid=CELL1, name='cell1', transport_url='rabbit://',
             database_connection=cell1_url, disabled=False)])
    for _ in range(2):
        result = _manage(conf_file, 'db', 'sync')
        assert result.returncode == 0, result.stderr

    for url, metadata in ((api_url, api_tables.metadata),
                          (cell0_url, cell_tables.metadata),
                          (cell1_url, cell_tables.metadata)):
        diff = _diff(url, metadata)
        assert diff == [], '%s schema differs from the tables:\n%s' % (
            real_backend, '\n'.join(str(d) for d in diff))

    _check_host_source(api_url, cell1_url)


def _check_host_source(api_url, cell1_url):
    """The scheduler's queries run and read the rows back faithfully."""
    now = timeutils.utcnow()
    _execute(cell1_url, cell_tables.services.insert(), [
        dict(host='h1', binary=db_source.COMPUTE_BINARY, topic='compute',
             last_seen_up=now, forced_down=False, created_at=now,
             updated_at=now),
        dict(host='h2', binary=db_source.COMPUTE_BINARY, topic='compute',
             last_seen_up=now - datetime.timedelta(hours=1),
             forced_down=True, created_at=now, updated_at=now)])
    _execute(cell1_url, cell_tables.compute_nodes.insert(), [
        dict(uuid='cn-%s' % host, host=host, hypervisor_hostname=host,
             vcpus=8, memory_mb=16384, local_gb=100, free_ram_mb=16384,
             free_disk_gb=100, numa_topology='{"cells": []}',
             created_at=now, updated_at=now)
        for host in ('h1', 'h2')])
    _execute(cell1_url, cell_tables.instances.insert(), [
        dict(uuid='i1', host='h1', node='h1', flavor='{"flavorid": "f1"}',
             deleted=0),
        dict(uuid='i2', host='h1', node='h1', flavor=None, deleted=2)])
    _execute(api_url, api_tables.aggregates.insert(),
             [dict(id=1, uuid='agg-1', name='az1')])
    _execute(api_url, api_tables.aggregate_hosts.insert(),
             [dict(aggregate_id=1, host='h1')])
    _execute(api_url, api_tables.aggregate_metadata.insert(),
             [dict(aggregate_id=1, key='availability_zone', value='az1')])

    api = cells.database_for_url('api functional', api_url)
    registry = cells.CellDatabases(api_database=api)
    try:
        source = db_source.DatabaseHostSource(api_database=api,
                                              cell_databases=registry)
        ctx = berth_context.get_admin_context()
        states = {s.host: s for s in source.get_host_states(
            ctx, ['cn-h1', 'cn-h2'])}
        assert states['h1'].service['up'] is True
        assert states['h2'].service['up'] is False
        assert list(states['h1'].instances) == ['i1']
        assert states['h1'].aggregate_metadata('availability_zone') == {
            'availability_zone': {'az1'}}
        assert states['h1'].numa_topology == {'cells': []}
        assert states['h1'].cell_uuid == CELL1
        # NOTE: microseconds survive the round trip (DATETIME(6) on
        # MariaDB), so a change within one second is still a change.
        assert source.get_updated_since(ctx, ['cn-h1']) == {'cn-h1': now}
        assert source.compute_uuids_for_host(ctx, 'h2') == ['cn-h2']
    finally:
        registry.reset()
        api.dispose()
