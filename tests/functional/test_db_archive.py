# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``db archive_deleted_rows --until-complete`` then ``db purge`` on
MariaDB and PostgreSQL, through berth-manage.

A cell database with many deleted instances (each with a fault, an action
and two events, and an instance mapping and request spec in the api
database) and a few live ones: the archive empties the deleted rows in
batches, showing progress, and leaves every live row as it was; the purge
then empties the shadow tables. BERTH_ARCHIVE_INSTANCES sets how many
deleted instances (default 5000; the issue's figure is 100000).
"""

import os
import subprocess
import sys
import time

import sqlalchemy as sa

from common.db import api_tables
from common.db import cell_tables as ct
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional.placement.conftest import make_database  # noqa
from tests.functional.placement.conftest import real_backend  # noqa
from tests.unit.db import archive_fixtures as af

DELETED = int(os.environ.get('BERTH_ARCHIVE_INSTANCES', '5000'))
LIVE = 20
LIVE_TABLES = (ct.instances, ct.instance_faults, ct.instance_actions,
               ct.instance_actions_events)


def _manage(conf_file, *args):
    return subprocess.run(
        [sys.executable, '-m', 'services.manage.main',
         '--config-file', str(conf_file)] + list(args),
        capture_output=True, text=True, timeout=1800)


def _snapshot(engine):
    """Every row of the live instances, column for column."""
    live = sa.select(ct.instances.c.uuid).where(ct.instances.c.deleted == 0)
    actions = sa.select(ct.instance_actions.c.id).where(
        ct.instance_actions.c.instance_uuid.in_(live))
    wheres = (ct.instances.c.deleted == 0,
              ct.instance_faults.c.instance_uuid.in_(live),
              ct.instance_actions.c.instance_uuid.in_(live),
              ct.instance_actions_events.c.action_id.in_(actions))
    with engine.connect() as conn:
        return [conn.execute(sa.select(t).where(w).order_by(t.c.id)).all()
                for t, w in zip(LIVE_TABLES, wheres)]


def _table(out):
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip('|').split('|')]
        if line.startswith('|') and len(cells) == 2 and cells[1].isdigit():
            rows[cells[0]] = int(cells[1])
    return rows


def test_archive_until_complete_then_purge(real_backend, make_database,  # noqa
                                           tmp_path):
    api_url = make_database(real_backend)
    cell_url = make_database(real_backend)
    conf_file = tmp_path / 'berth.conf'
    conf_file.write_text('[api_database]\nconnection = %s\n'
                         '[database]\nconnection = %s\n' % (api_url, cell_url))
    for family in ('api_db', 'db'):
        result = _manage(conf_file, family, 'sync')
        assert result.returncode == 0, result.stderr

    api = sa.create_engine(api_url, poolclass=sa.pool.NullPool)
    cell = sa.create_engine(cell_url, poolclass=sa.pool.NullPool)
    try:
        with api.begin() as conn:
            cell_id = conn.execute(api_tables.cell_mappings.insert().values(
                uuid='4473067d-4c91-459f-93ae-79cb1e1203c7', name='cell1',
                transport_url='rabbit://', database_connection=cell_url,
                disabled=False)).inserted_primary_key[0]
        live = af.add_instances(cell, 1, LIVE // 2, None, api, cell_id)
        af.add_instances(cell, 1000, DELETED, af.OLD, api, cell_id)
        live += af.add_instances(cell, 1000 + DELETED, LIVE - LIVE // 2,
                                 None, api, cell_id)
        af.add_services(cell, 1, 3, af.OLD)
        af.add_services(cell, 10, 2)
        before = _snapshot(cell)
        assert [len(rows) for rows in before] == [LIVE] * 3 + [2 * LIVE]

        started = time.monotonic()
        result = _manage(conf_file, 'db', 'archive_deleted_rows',
                         '--until-complete', '--max_rows', '1000',
                         '--verbose')
        took = time.monotonic() - started
        print('archived %d deleted instances on %s in %.1f s'
              % (DELETED, real_backend, took))
        assert result.returncode == 1, result.stdout + result.stderr

        progress = [line for line in result.stdout.splitlines()
                    if line.startswith('Archiving: ')]
        assert len(progress) == -(-DELETED // 1000), result.stdout
        assert progress[0].startswith('Archiving: %d rows so far ('
                                      % (7 * min(DELETED, 1000) + 6))
        table = _table(result.stdout)
        assert table == {
            'instances': DELETED, 'instance_faults': DELETED,
            'instance_actions': DELETED,
            'instance_actions_events': 2 * DELETED,
            'API_DB.instance_mappings': DELETED,
            'API_DB.request_specs': DELETED,
            'services': 3, 'compute_nodes': 3}, result.stdout

        assert _snapshot(cell) == before, 'live rows changed'
        assert af.count(cell, ct.services) == 2
        assert af.count(cell, ct.shadow_tables['instances']) == DELETED
        with api.connect() as conn:
            mapped = set(conn.execute(sa.select(
                api_tables.instance_mappings.c.instance_uuid)).scalars())
        assert mapped == set(live)

        result = _manage(conf_file, 'db', 'archive_deleted_rows')
        assert result.returncode == 0, result.stdout + result.stderr

        result = _manage(conf_file, 'db', 'purge', '--before', '2021-01-01',
                         '--verbose')
        assert result.returncode == 0, result.stdout + result.stderr
        assert ('Deleted %d rows from shadow_instance_actions_events'
                % (2 * DELETED)) in result.stdout
        for shadow in ct.shadow_tables.values():
            assert af.count(cell, shadow) == 0, shadow.name
        assert _snapshot(cell) == before, 'live rows changed'

        result = _manage(conf_file, 'db', 'purge', '--all')
        assert result.returncode == 3, result.stdout + result.stderr
    finally:
        api.dispose()
        cell.dispose()
