# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The conductor's resize and cold migration: scheduling, reschedule,
confirm and revert, with what placement holds at each end.
"""

import pytest

from common.db import action_records
from common.db import boot_records
from common.db import instance_records
from common.db import migration_records
from common import exception
from common.objects import flavor as flavor_obj
from services.conductor import build_flow
from services.conductor import migrate_flow
from tests.unit.conductor import fakes
from tests.unit.db import records_fixtures as fx

BIG = flavor_obj.Flavor(name='big', flavorid='big', vcpus=4,
                        memory_mb=4096, root_gb=20)


@pytest.fixture
def world(tmp_path):
    world = fakes.World(tmp_path)
    yield world
    world.close()


def _active(world, task_state='resize_prep', action='resize'):
    """A server ACTIVE on h1, marked as the API leaves a move; its uuid.
    The scheduler then offers h2 and h3 (it would ignore the source).
    """
    spec, instances = world.boot(1)
    build_flow.schedule_and_build_instances(world.manager, fx.ctxt(), spec,
                                            [instances[0].uuid], instances)
    world.compute.builds.pop()
    uuid = instances[0].uuid
    instance_records.update_instance(
        fx.ctxt(), world.cell1, uuid, {'vm_state': 'active',
                                       'task_state': None})
    instance_records.begin_action(fx.ctxt(), world.cell1, uuid, action,
                                  {'task_state': task_state})
    world.scheduler.hosts = world.scheduler.hosts[1:]
    return uuid


def _rp(world, host):
    return world.nodes[host]


def _held(world, consumer):
    return {rp: res for rp, res in
            world.placement.allocations(consumer).items()}


def _migration(world, uuid):
    [found] = migration_records.list_migrations(fx.ctxt(), world.cell1)
    assert found.instance_uuid == uuid
    return found


def test_resize_moves_the_source_to_the_migration_and_casts_prep(world):
    uuid = _active(world)
    dest = migrate_flow.migrate_server(world.manager, fx.ctxt(), uuid,
                                       flavor=BIG, numa_topology=None,
                                       pci_requests=[])
    assert dest == 'h2'
    migration = _migration(world, uuid)
    assert (migration.migration_type, migration.status) == (
        'resize', 'pre-migrating')
    assert (migration.source_compute, migration.dest_compute) == ('h1',
                                                                  'h2')
    assert migration.new_flavor.flavorid == 'big'
    # NOTE: the source held by the migration, the new flavor by the
    # instance on the destination.
    assert list(_held(world, migration.uuid)) == [_rp(world, 'h1')]
    assert _held(world, uuid) == {_rp(world, 'h2'): {
        'VCPU': 4, 'MEMORY_MB': 4096, 'DISK_GB': 20}}
    [(spec, _uuids)] = world.scheduler.calls[-1:]
    assert spec['ignore_hosts'] == ['h1']
    assert spec['flavor']['flavorid'] == 'big'
    # NOTE: the hand-over is the scheduler's claim: the conductor only
    # read what the instance held, and wrote nothing to placement.
    hand_over = world.scheduler.hand_overs[-1]
    assert hand_over['migration_uuid'] == migration.uuid
    assert list(hand_over['allocations']) == [_rp(world, 'h1')]
    assert [c for c in world.placement.calls if c[0] != 'GET'] == [
        ('PUT', '/allocations/%s' % uuid), ('POST', '/allocations')]
    [cast] = world.compute.moves
    assert (cast['method'], cast['host']) == ('prep_resize', 'h2')
    assert cast['flavor'].flavorid == 'big'
    assert [a.service_host for a in cast['alternates']] == ['h3']


def test_same_host_resize_keeps_the_source_a_candidate(world):
    uuid = _active(world)
    common_conf = migrate_flow.CONF
    common_conf.set_override('allow_resize_to_same_host', True)
    try:
        migrate_flow.migrate_server(world.manager, fx.ctxt(), uuid,
                                    flavor=BIG, numa_topology=None)
    finally:
        common_conf.clear_override('allow_resize_to_same_host')
    spec, _uuids = world.scheduler.calls[-1]
    assert spec['ignore_hosts'] == []
    # NOTE: a cold migration never keeps its host.
    uuid = _active(world, action='migrate')
    source = instance_records.get_instance(fx.ctxt(), world.cell1,
                                           uuid).host
    common_conf.set_override('allow_resize_to_same_host', True)
    try:
        migrate_flow.migrate_server(world.manager, fx.ctxt(), uuid)
    finally:
        common_conf.clear_override('allow_resize_to_same_host')
    spec, _uuids = world.scheduler.calls[-1]
    assert spec['ignore_hosts'] == [source]


def test_no_valid_host_gives_everything_back(world):
    uuid = _active(world, action='migrate')
    before = _held(world, uuid)
    world.scheduler.fail = fakes.no_valid_host()
    with pytest.raises(exception.NoValidHost):
        migrate_flow.migrate_server(world.manager, fx.ctxt(), uuid,
                                    host='h2')
    migration = _migration(world, uuid)
    assert (migration.migration_type, migration.status) == ('migration',
                                                            'error')
    assert _held(world, uuid) == before
    assert _held(world, migration.uuid) == {}
    # NOTE: nothing was handed over, so nothing is written back.
    assert ('POST', '/allocations') not in world.placement.calls
    row = instance_records.get_instance(fx.ctxt(), world.cell1, uuid)
    assert (row.vm_state, row.task_state) == ('active', None)
    assert row.fault['message'].startswith('No valid host was found.')
    action = action_records.list_actions(fx.ctxt(), world.cell1, uuid)[0]
    assert [(e['event'], e['result']) for e in action['events']] == [
        (migrate_flow.EVENT, 'Error')]
    assert not getattr(world.compute, 'moves', [])


def _moved(world):
    uuid = _active(world)
    migrate_flow.migrate_server(world.manager, fx.ctxt(), uuid, flavor=BIG,
                                numa_topology=None)
    [cast] = world.compute.moves
    world.compute.moves.clear()
    return uuid, cast


def test_a_failed_destination_moves_to_the_next_alternate(world):
    uuid, cast = _moved(world)
    migrate_flow.migrate_reschedule(
        world.manager, fx.ctxt(), uuid, cast['migration_uuid'],
        cast['request_spec'], cast['alternates'], 'h2', 'boom')
    [again] = world.compute.moves
    assert (again['method'], again['host']) == ('prep_resize', 'h3')
    assert again['request_spec'].retry.num_attempts == 2
    assert list(_held(world, uuid)) == [_rp(world, 'h3')]
    assert _migration(world, uuid).dest_compute == 'h3'


def test_no_alternate_left_ends_the_move_on_its_source(world):
    uuid, cast = _moved(world)
    source = _held(world, cast['migration_uuid'])
    migrate_flow.migrate_reschedule(
        world.manager, fx.ctxt(), uuid, cast['migration_uuid'],
        cast['request_spec'], [], 'h2', 'boom')
    assert _held(world, uuid) == source
    assert _held(world, cast['migration_uuid']) == {}
    assert _migration(world, uuid).status == 'error'
    row = instance_records.get_instance(fx.ctxt(), world.cell1, uuid)
    assert row.task_state is None
    assert 'Exceeded maximum number of retries' in row.fault['message']
    # NOTE: the server keeps its flavor, and so does its stored spec.
    assert _stored_flavor(world, uuid) == row.flavor.flavorid != 'big'


def _stored_flavor(world, uuid):
    return boot_records.get_request_spec(fx.ctxt(), uuid,
                                         database=world.api).flavor.flavorid


def test_a_resize_stores_its_flavor_once_scheduled(world):
    uuid, _cast = _moved(world)
    stored = boot_records.get_request_spec(fx.ctxt(), uuid,
                                           database=world.api)
    assert stored.flavor.flavorid == 'big'
    # NOTE: what only this move asked for is not kept.
    assert (stored.ignore_hosts, stored.move_type, stored.retry,
            stored.requested_destination) == ([], None, None, None)
    # NOTE: a cold migration's flavor is the server's: nothing written.
    other = _active(world, action='migrate')
    before = boot_records.get_request_spec(fx.ctxt(), other,
                                           database=world.api)
    migrate_flow.migrate_server(world.manager, fx.ctxt(), other)
    assert boot_records.get_request_spec(
        fx.ctxt(), other, database=world.api) == before


def test_a_resize_no_host_fits_leaves_the_stored_flavor(world):
    uuid = _active(world)
    booted = _stored_flavor(world, uuid)
    world.scheduler.fail = fakes.no_valid_host()
    with pytest.raises(exception.NoValidHost):
        migrate_flow.migrate_server(world.manager, fx.ctxt(), uuid,
                                    flavor=BIG, numa_topology=None)
    assert _stored_flavor(world, uuid) == booted


def test_a_migration_sent_the_server_the_api_wrote_reads_nothing(
        world, monkeypatch):
    uuid = _active(world, action='migrate')
    written = instance_records.get_instance(fx.ctxt(), world.cell1, uuid)
    written.cell_uuid = fakes.CELL1_UUID

    def no_read(*args, **kwargs):
        raise AssertionError('the server was read again')
    monkeypatch.setattr(migrate_flow.instance_records, 'get_instance',
                        no_read)
    dest = migrate_flow.migrate_server(world.manager, fx.ctxt(), uuid,
                                       instance=written.to_primitive())
    assert dest == 'h2'
    migration = _migration(world, uuid)
    assert (migration.migration_type, migration.source_compute,
            migration.dest_compute) == ('migration', 'h1', 'h2')
    [cast] = world.compute.moves
    assert (cast['method'], cast['host']) == ('prep_resize', 'h2')


def test_a_rollback_restores_the_flavor_and_casts_the_destination(world):
    uuid, cast = _moved(world)
    source = _held(world, cast['migration_uuid'])
    dest = _held(world, uuid)
    migrate_flow.revert_resize(world.manager, fx.ctxt(), uuid,
                               cast['migration_uuid'], reason='boom')
    assert _migration(world, uuid).status == 'reverting'
    [done] = world.compute.moves
    assert (done['method'], done['host'], done['reason']) == (
        'revert_resize', 'h2', 'boom')
    # NOTE: the destination gives the source back when it reverts.
    assert (_held(world, cast['migration_uuid']), _held(world, uuid)) == (
        source, dest)
    # NOTE: the server goes back to its old flavor, so does the spec.
    row = instance_records.get_instance(fx.ctxt(), world.cell1, uuid)
    assert _stored_flavor(world, uuid) == row.flavor.flavorid != 'big'


def test_a_cast_that_fails_gives_the_destination_back(world):
    uuid = _active(world)
    before = _held(world, uuid)

    def unreachable(*args, **kwargs):
        raise RuntimeError('no compute')
    world.compute.prep_resize = unreachable
    with pytest.raises(RuntimeError):
        migrate_flow.migrate_server(world.manager, fx.ctxt(), uuid,
                                    flavor=BIG, numa_topology=None)
    migration = _migration(world, uuid)
    assert migration.status == 'error'
    assert _held(world, uuid) == before
    assert _stored_flavor(world, uuid) != 'big'
    assert _held(world, migration.uuid) == {}
    row = instance_records.get_instance(fx.ctxt(), world.cell1, uuid)
    assert row.task_state is None


def test_a_reschedule_after_the_delete_drops_the_whole_move(world):
    uuid, cast = _moved(world)
    instance_records.destroy_instance(fx.ctxt(), world.cell1, uuid)
    assert migrate_flow.migrate_reschedule(
        world.manager, fx.ctxt(), uuid, cast['migration_uuid'],
        cast['request_spec'], cast['alternates'], 'h2', 'boom') is None
    assert world.compute.moves == []
    assert _held(world, cast['migration_uuid']) == {}
    assert _held(world, uuid) == {}
    assert _migration(world, uuid).status == 'error'


def test_a_move_failing_while_its_server_is_deleted_keeps_nothing(world):
    uuid = _active(world)

    def deleted_meanwhile(*args, **kwargs):
        instance_records.update_instance(fx.ctxt(), world.cell1, uuid,
                                         {'task_state': 'deleting'})
        raise RuntimeError('no compute')
    world.compute.prep_resize = deleted_meanwhile
    with pytest.raises(RuntimeError):
        migrate_flow.migrate_server(world.manager, fx.ctxt(), uuid,
                                    flavor=BIG, numa_topology=None)
    migration = _migration(world, uuid)
    assert migration.status == 'error'
    assert _held(world, uuid) == {}
    assert _held(world, migration.uuid) == {}
