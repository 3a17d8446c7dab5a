# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Migrations in a cell database: records, filters, paging, archiving."""

import datetime

import pytest
import sqlalchemy as sa

from common.db import api as db_api
from common.db import archive
from common.db import cell_tables
from common.db import instance_records
from common.db import migration_records as records
from common import exception
from common.objects import migration as migration_obj
from tests.unit.db import archive_fixtures as af
from tests.unit.db import records_fixtures as fx


@pytest.fixture
def cell(tmp_path):
    database = fx.cell_database(tmp_path)
    yield database
    database.dispose()


def _create(cell, **kwargs):
    values = dict(instance_uuid='i-1', source_compute='h1',
                  source_node='n1', project_id='p1', user_id='u1',
                  old_flavor=fx.flavor(), new_flavor=fx.flavor())
    values.update(kwargs)
    return records.create_migration(fx.ctxt(), cell,
                                    migration_obj.Migration(**values))


def _set_times(cell, uuid, created_at, updated_at=None):
    """Give a row chosen times (they decide the order and the filters)."""
    mi = cell_tables.migrations
    with cell.engine().begin() as conn:
        conn.execute(mi.update().where(mi.c.uuid == uuid).values(
            created_at=created_at, updated_at=updated_at))


def _uuids(found):
    return [m.uuid for m in found]


def test_create_and_get_round_trip(cell):
    made = _create(cell, migration_type=migration_obj.RESIZE,
                   dest_compute='h2', dest_node='n2',
                   new_flavor=fx.flavor(vcpus=4, name='big'),
                   memory_total=100)
    assert made.id and made.uuid and made.created_at
    assert made.status == migration_obj.ACCEPTED and not made.hidden
    got = records.get_migration(fx.ctxt(), cell, made.uuid)
    assert got.to_primitive() == made.to_primitive()
    assert got.new_flavor.vcpus == 4 and got.new_flavor.name == 'big'
    assert got.old_flavor.vcpus == 1
    assert (got.source_compute, got.dest_compute) == ('h1', 'h2')
    assert got.memory_total == 100 and got.updated_at is None
    # A uuid given is kept.
    named = _create(cell, uuid='11111111-2222-3333-4444-555555555555')
    assert named.uuid == '11111111-2222-3333-4444-555555555555'
    with pytest.raises(exception.MigrationNotFound):
        records.get_migration(fx.ctxt(), cell, 'nope')


def test_get_by_id_and_instance(cell):
    made = _create(cell)
    got = records.get_by_id_and_instance(fx.ctxt(), cell, made.id, 'i-1')
    assert got.uuid == made.uuid
    # The API passes the id from the URL as text.
    got = records.get_by_id_and_instance(fx.ctxt(), cell, str(made.id),
                                         'i-1')
    assert got.uuid == made.uuid
    with pytest.raises(exception.MigrationNotFoundForInstance):
        records.get_by_id_and_instance(fx.ctxt(), cell, made.id, 'i-2')
    with pytest.raises(exception.MigrationNotFoundForInstance):
        records.get_by_id_and_instance(fx.ctxt(), cell, made.id + 1, 'i-1')
    with pytest.raises(exception.MigrationNotFoundForInstance):
        records.get_by_id_and_instance(fx.ctxt(), cell, 'abc', 'i-1')


def test_update_with_status_guard(cell):
    made = _create(cell)
    ctxt = fx.ctxt()
    moved = records.update_migration(
        ctxt, cell, made.uuid,
        {'status': migration_obj.PRE_MIGRATING, 'dest_compute': 'h2',
         'new_flavor': fx.flavor(vcpus=2).to_primitive()},
        expected_status=migration_obj.ACCEPTED)
    assert moved.status == 'pre-migrating' and moved.dest_compute == 'h2'
    assert moved.new_flavor.vcpus == 2 and moved.updated_at
    with pytest.raises(exception.UnexpectedMigrationStatusError) as err:
        records.update_migration(ctxt, cell, made.uuid,
                                 {'status': migration_obj.FINISHED},
                                 expected_status=[migration_obj.ACCEPTED,
                                                  migration_obj.MIGRATING])
    assert 'pre-migrating' in str(err.value)
    # Nothing changed by the refused update.
    got = records.get_migration(ctxt, cell, made.uuid)
    assert got.status == 'pre-migrating'
    done = records.update_migration(
        ctxt, cell, made.uuid, {'status': migration_obj.FINISHED},
        expected_status=[migration_obj.PRE_MIGRATING,
                         migration_obj.MIGRATING])
    assert done.status == 'finished'
    # Without a guard any status is overwritten.
    assert records.update_migration(
        ctxt, cell, made.uuid, {'status': 'error'}).status == 'error'
    with pytest.raises(ValueError):
        records.update_migration(ctxt, cell, made.uuid, {'uuid': 'x'})
    with pytest.raises(ValueError):
        records.update_migration(ctxt, cell, made.uuid, {'id': 3})
    with pytest.raises(exception.MigrationNotFound):
        records.update_migration(ctxt, cell, 'nope', {'status': 'error'},
                                 expected_status='accepted')


def test_in_progress_for_instance(cell):
    ended = _create(cell, status=migration_obj.CONFIRMED)
    live = _create(cell, migration_type=migration_obj.LIVE_MIGRATION,
                   status=migration_obj.RUNNING)
    resize = _create(cell, migration_type=migration_obj.RESIZE,
                     status=migration_obj.ACCEPTED)
    _create(cell, instance_uuid='i-2', status=migration_obj.RUNNING)
    _set_times(cell, live.uuid, af.OLD)
    _set_times(cell, resize.uuid, af.RECENT)
    _set_times(cell, ended.uuid, af.RECENT)
    found = records.in_progress_for_instance(fx.ctxt(), cell, 'i-1')
    assert _uuids(found) == [resize.uuid, live.uuid]
    found = records.in_progress_for_instance(
        fx.ctxt(), cell, 'i-1', [migration_obj.LIVE_MIGRATION])
    assert _uuids(found) == [live.uuid]
    assert records.in_progress_for_instance(fx.ctxt(), cell, 'i-9') == []


def test_claim_finished_takes_the_newest_finished_move_once(cell):
    older = _create(cell, status=migration_obj.FINISHED)
    newer = _create(cell, migration_type=migration_obj.RESIZE,
                    status=migration_obj.FINISHED)
    _create(cell, migration_type=migration_obj.LIVE_MIGRATION,
            status=migration_obj.FINISHED)
    _set_times(cell, older.uuid, af.OLD)
    _set_times(cell, newer.uuid, af.RECENT)
    types = (migration_obj.RESIZE, migration_obj.MIGRATION)
    claim = records.claim_finished('i-1', types, migration_obj.CONFIRMING)
    claimed = db_api.write(cell, claim, fx.ctxt())
    assert (claimed.uuid, claimed.status) == (newer.uuid, 'confirming')
    assert records.get_migration(fx.ctxt(), cell,
                                 newer.uuid).status == 'confirming'
    # NOTE: the next claim takes the older one; then none is left.
    assert db_api.write(cell, claim, fx.ctxt()).uuid == older.uuid
    with pytest.raises(exception.MigrationNotFound):
        db_api.write(cell, claim, fx.ctxt())
    with pytest.raises(exception.MigrationNotFound):
        db_api.write(cell, records.claim_finished(
            'i-9', types, migration_obj.REVERTING), fx.ctxt())


@pytest.fixture
def listed(cell):
    """Five migrations with known times, types, hosts and owners."""
    rows = {}
    day = datetime.datetime(2026, 3, 1)
    specs = [
        ('m1', dict(instance_uuid='i-1', source_compute='h1',
                    dest_compute='h2', migration_type='migration',
                    status='confirmed')),
        ('m2', dict(instance_uuid='i-1', source_compute='h2',
                    dest_compute='h3', migration_type='resize',
                    status='finished', user_id='u2')),
        ('m3', dict(instance_uuid='i-2', source_compute='h3',
                    dest_compute='h1', migration_type='live-migration',
                    status='running', project_id='p2')),
        ('m4', dict(instance_uuid='i-3', source_compute='h4',
                    dest_compute='h5', migration_type='evacuation',
                    status='done', source_node='n4', dest_node='n5')),
        ('m5', dict(instance_uuid='i-3', source_compute='h1',
                    dest_compute='h4', migration_type='migration',
                    status='error', hidden=True)),
    ]
    for n, (name, values) in enumerate(specs):
        rows[name] = _create(cell, **values).uuid
        # NOTE: m1 oldest; m2 updated last of all.
        created = day + datetime.timedelta(hours=n)
        updated = (day + datetime.timedelta(days=2) if name == 'm2'
                   else None)
        _set_times(cell, rows[name], created, updated)
    return rows


def _list(cell, **filters):
    return records.list_migrations(fx.ctxt(), cell,
                                   records.Filters(**filters))


def _names(listed, found):
    names = {u: n for n, u in listed.items()}
    return [names[m.uuid] for m in found]


def test_list_newest_first_without_hidden(cell, listed):
    assert _names(listed, _list(cell)) == ['m4', 'm3', 'm2', 'm1']


@pytest.mark.parametrize('filters, expected', [
    (dict(instance_uuid='i-1'), ['m2', 'm1']),
    (dict(status='running'), ['m3']),
    (dict(statuses=['running', 'confirmed']), ['m3', 'm1']),
    (dict(host='h1'), ['m3', 'm1']),
    (dict(host='h3'), ['m3', 'm2']),
    (dict(source_compute='h2'), ['m2']),
    (dict(dest_compute='h1'), ['m3']),
    (dict(node='n5'), ['m4']),
    (dict(migration_type='migration'), ['m1']),
    (dict(migration_type='live-migration'), ['m3']),
    (dict(user_id='u2'), ['m2']),
    (dict(project_id='p2'), ['m3']),
    (dict(project_id='p1', migration_type='resize'), ['m2']),
    (dict(changes_since='2026-03-01T02:00:00'), ['m4', 'm3', 'm2']),
    (dict(changes_before='2026-03-01T01:00:00'), ['m1']),
    (dict(changes_since='2026-03-01T01:00:00',
          changes_before='2026-03-02T00:00:00'), ['m4', 'm3']),
    (dict(changes_since=datetime.datetime(2026, 3, 2)), ['m2']),
    (dict(changes_since='2026-03-01T04:00:00+02:00'), ['m4', 'm3', 'm2']),
    (dict(host='nowhere'), []),
    # NOTE: as in Nova, ``host`` wins over ``source_compute``.
    (dict(host='h1', source_compute='h3'), ['m3', 'm1']),
])
def test_list_filters(cell, listed, filters, expected):
    assert _names(listed, _list(cell, **filters)) == expected


def test_list_of_live_servers_leaves_out_those_of_deleted_ones(cell):
    ctxt = fx.ctxt()
    kept = instance_records.create_instance(ctxt, cell, fx.instance())
    gone = instance_records.create_instance(ctxt, cell, fx.instance())
    mine = _create(cell, instance_uuid=kept.uuid)
    _create(cell, instance_uuid=gone.uuid)
    instance_records.destroy_instance(ctxt, cell, gone.uuid)
    assert len(records.list_migrations(ctxt, cell)) == 2
    assert _uuids(records.list_migrations(ctxt, cell, records.Filters(
        of_live_servers=True))) == [mine.uuid]


def test_list_pages_with_marker_and_limit(cell, listed):
    ctxt = fx.ctxt()
    page = records.list_migrations(ctxt, cell, limit=2)
    assert _names(listed, page) == ['m4', 'm3']
    page = records.list_migrations(ctxt, cell, marker=page[-1].uuid,
                                   limit=2)
    assert _names(listed, page) == ['m2', 'm1']
    assert records.list_migrations(ctxt, cell, marker=page[-1].uuid) == []
    # Filters apply after the marker too.
    page = records.list_migrations(
        ctxt, cell, records.Filters(host='h1'), marker=listed['m4'])
    assert _names(listed, page) == ['m3', 'm1']
    assert records.list_migrations(ctxt, cell, limit=0) == []
    with pytest.raises(exception.MigrationNotFound):
        records.list_migrations(ctxt, cell, marker='nope')


def test_list_breaks_ties_of_created_at_by_id(cell):
    made = [_create(cell) for _ in range(4)]
    for migration in made:
        _set_times(cell, migration.uuid, af.RECENT)
    newest_first = _uuids(reversed(made))
    assert _uuids(records.list_migrations(fx.ctxt(), cell)) == newest_first
    page = records.list_migrations(fx.ctxt(), cell, marker=made[2].uuid)
    assert _uuids(page) == newest_first[2:]


def test_archive_moves_migrations_with_their_deleted_instance(cell):
    ctxt = fx.ctxt()
    gone = instance_records.create_instance(ctxt, cell, fx.instance())
    kept = instance_records.create_instance(ctxt, cell, fx.instance())
    for uuid in (gone.uuid, gone.uuid, kept.uuid):
        _create(cell, instance_uuid=uuid, status='confirmed')
    instance_records.destroy_instance(ctxt, cell, gone.uuid)
    counts = archive.Archiver(cell).run_once()
    assert counts['migrations'] == 2 and counts['instances'] == 1
    engine = cell.engine()
    mi = cell_tables.migrations
    shadow = cell_tables.shadow_tables['migrations']
    assert af.count(engine, mi) == 1
    assert af.count(engine, mi, mi.c.instance_uuid == kept.uuid) == 1
    assert af.count(engine, shadow, shadow.c.instance_uuid == gone.uuid) == 2
    # The shadow copies carry the instance's deletion time, which a purge
    # goes by.
    with engine.connect() as conn:
        stamps = conn.execute(sa.select(shadow.c.deleted_at)).scalars().all()
    assert all(stamps)
    assert archive.purge(cell)['shadow_migrations'] == 2
    assert records.list_migrations(ctxt, cell, records.Filters(
        instance_uuid=kept.uuid))


def test_list_after_a_migration_of_another_cell(cell, listed, tmp_path):
    other = fx.cell_database(tmp_path, 'cell2')
    try:
        elsewhere = _create(other, instance_uuid='i-9')
        _set_times(other, elsewhere.uuid,
                   datetime.datetime(2026, 3, 1, 2, 30))
        marker = records.get_migration(fx.ctxt(), other, elsewhere.uuid)
        page = records.list_migrations(fx.ctxt(), cell, after=marker)
        assert _names(listed, page) == ['m3', 'm2', 'm1']
    finally:
        other.dispose()


def test_get_migrations_and_instances_moving(cell):
    running = _create(cell, status=migration_obj.RUNNING)
    accepted = _create(cell, instance_uuid='i-2')
    done = _create(cell, instance_uuid='i-3', status=migration_obj.DONE)
    found = records.get_migrations(fx.ctxt(), cell,
                                   [running.uuid, done.uuid, 'nope'])
    assert set(found) == {running.uuid, done.uuid}
    assert found[done.uuid].status == 'done'
    assert records.get_migrations(fx.ctxt(), cell, []) == {}
    assert records.instances_moving(fx.ctxt(), cell) == {'i-1', 'i-2'}
    records.update_migration(fx.ctxt(), cell, accepted.uuid,
                             {'status': migration_obj.ERROR})
    assert records.instances_moving(fx.ctxt(), cell) == {'i-1'}
