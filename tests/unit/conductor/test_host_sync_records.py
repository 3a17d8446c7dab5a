# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The cell database side of the compute agents' instance sync.

``host_instances.sync_host_instances`` is what the conductor's record
proxy answers conductor API 1.1 ``instances_get_by_host(changed_since=)``
with: the rows of a host changed since a time, and every live uuid.
"""

import datetime

from oslo_utils import timeutils
import pytest
import sqlalchemy as sa

from common.db import cell_tables
from common.db import host_instances
from common.db import instance_records as records
from common.db import migration_records
from common.objects import migration as migration_obj
from tests.unit.db import records_fixtures as fx

DAY_AGO = timeutils.utcnow() - datetime.timedelta(days=1)
HOUR_AGO = timeutils.utcnow() - datetime.timedelta(hours=1)


@pytest.fixture
def cell(tmp_path):
    database = fx.cell_database(tmp_path)
    yield database
    database.dispose()


def _create(cell, host='h1', created_at=DAY_AGO, **kwargs):
    return records.create_instance(fx.ctxt(), cell, fx.instance(
        host=host, node=host, created_at=created_at.isoformat(), **kwargs))


def _sync(cell, since, host='h1'):
    return host_instances.sync_host_instances(fx.ctxt(), cell, host, since)


def test_everything_and_then_only_the_changes(cell):
    old = _create(cell, numa_topology={'cells': [{'id': 0}]},
                  image_meta={'os_type': 'linux'},
                  pci_requests=[{'count': 1}])
    _create(cell, host='h2')
    full = _sync(cell, None)
    row, = full['instances']
    assert set(row) == set(host_instances.TRACKED_FIELDS) | {'deleted'}
    assert row['flavor']['vcpus'] == 1 and not row['deleted']
    assert row['numa_topology'] == {'cells': [{'id': 0}]}
    assert row['image_meta'] == {'os_type': 'linux'}
    assert row['pci_requests'] == [{'count': 1}]
    assert full['uuids'] == [old.uuid]
    as_of = timeutils.parse_isotime(full['as_of']).replace(tzinfo=None)
    assert abs(as_of - timeutils.utcnow()) < datetime.timedelta(minutes=1)
    quiet = _sync(cell, HOUR_AGO)
    assert (quiet['instances'], quiet['uuids']) == ([], [old.uuid])
    records.update_instance(fx.ctxt(), cell, old.uuid,
                            {'task_state': 'rebooting'})
    changed = _sync(cell, HOUR_AGO.isoformat())
    assert [r['task_state'] for r in changed['instances']] == ['rebooting']


def test_new_rows_count_as_changed_by_their_creation(cell):
    new = _create(cell, created_at=timeutils.utcnow())
    _create(cell)
    found = _sync(cell, HOUR_AGO)
    assert [r['uuid'] for r in found['instances']] == [new.uuid]
    assert len(found['uuids']) == 2


def test_rows_without_any_time_always_count_as_changed(cell):
    inst = _create(cell)

    def clear(ctx):
        ctx.session.execute(cell_tables.instances.update().values(
            created_at=None, updated_at=None))
    cell.writer(clear)(fx.ctxt())
    assert [r['uuid'] for r in _sync(cell, HOUR_AGO)['instances']] == [
        inst.uuid]


def test_rows_that_left_the_host_are_gone_from_the_uuids(cell):
    moved = _create(cell)
    deleted = _create(cell)
    stays = _create(cell)
    records.update_instance(fx.ctxt(), cell, moved.uuid, {'host': 'h2'})
    records.destroy_instance(fx.ctxt(), cell, deleted.uuid)
    found = _sync(cell, HOUR_AGO)
    assert found['uuids'] == [stays.uuid] and found['instances'] == []
    assert [r['uuid'] for r in _sync(cell, HOUR_AGO, 'h2')['instances']] \
        == [moved.uuid]


def test_rows_share_what_decodes_alike(cell):
    for _ in range(3):
        _create(cell)
    rows = _sync(cell, None)['instances']
    assert rows[0]['flavor'] is rows[2]['flavor']
    assert rows[0] is not rows[1]


def test_the_host_index_serves_the_query(cell):
    # NOTE: both queries filter on (host, deleted), the index the live
    # instances of a host are found with.
    names = {i.name for i in cell_tables.instances.indexes}
    assert 'instances_host_deleted_idx' in names
    with cell.engine().connect() as conn:
        plan = conn.execute(sa.text(
            "EXPLAIN QUERY PLAN SELECT uuid, updated_at, created_at FROM "
            "instances WHERE host = 'h1' AND deleted = 0")).fetchall()
    assert 'instances_host_deleted_idx' in str(plan)


def test_migrations_to_the_host_not_started_are_named(cell):
    moving = _create(cell, host='h2')

    def migrate(status, dest='h1'):
        return migration_records.create_migration(
            fx.ctxt(), cell, migration_obj.Migration(
                instance_uuid=moving.uuid, status=status,
                migration_type=migration_obj.LIVE_MIGRATION,
                source_compute='h2', dest_compute=dest))

    accepted = migrate(migration_obj.ACCEPTED)
    migrate(migration_obj.ACCEPTED, dest='h3')
    migrate(migration_obj.ERROR)
    running = migrate(migration_obj.RUNNING)
    reply = _sync(cell, None)
    assert reply['accepted'] == [accepted.uuid]
    assert [m['uuid'] for m in reply['migrations']] == [running.uuid]
