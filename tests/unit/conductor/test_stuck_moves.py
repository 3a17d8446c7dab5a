# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The conductor's bound for moves that stopped half-way."""

import datetime
import uuid as uuid_mod

from oslo_utils import timeutils
import pytest

from common.db import boot_records
from common.db import cell_tables
from common.db import instance_records
from common.db import migration_records
from common.objects import flavor as flavor_obj
from common.objects import instance as instance_obj
from common.objects import migration as migration_obj
from common.objects import request_spec as spec_obj
from services.conductor import move_allocations
from services.conductor import stuck_moves
from tests.unit.conductor import fakes
from tests.unit.db import records_fixtures as fx

BOUND = 600
SMALL = flavor_obj.Flavor(name='small', flavorid='small', vcpus=1,
                          memory_mb=512, root_gb=1)


@pytest.fixture
def world(tmp_path):
    world = fakes.World(tmp_path)
    yield world
    world.close()


def _server(world, host, task_state):
    instance = instance_obj.Instance(
        uuid=str(uuid_mod.uuid4()), project_id='p1', user_id='u1',
        host=host, node=host, vm_state=instance_obj.ACTIVE,
        task_state=task_state, flavor=SMALL)
    instance_records.create_instance(fx.ctxt(), world.cell1, instance)
    world.placement.put('/allocations/%s' % instance.uuid, {
        'allocations': {world.nodes[host]: {'resources': {'VCPU': 1}}},
        'consumer_generation': None, 'project_id': 'p1',
        'user_id': 'u1'}, '1.38')
    return instance


def _move(world, instance, dest, status=migration_obj.PRE_MIGRATING,
          age=BOUND + 60):
    migration = migration_records.create_migration(
        fx.ctxt(), world.cell1, migration_obj.Migration(
            instance_uuid=instance.uuid, migration_type=migration_obj.RESIZE,
            status=status, source_compute=instance.host,
            source_node=instance.node, dest_compute=dest, dest_node=dest,
            project_id='p1', user_id='u1'))
    move_allocations.to_migration(world.placement, fx.ctxt(), instance.uuid,
                                  migration.uuid, 'p1', 'u1')
    world.placement.put('/allocations/%s' % instance.uuid, {
        'allocations': {world.nodes[dest]: {'resources': {'VCPU': 1}}},
        'consumer_generation': None, 'project_id': 'p1',
        'user_id': 'u1'}, '1.38')
    then = timeutils.utcnow() - datetime.timedelta(seconds=age)

    def age_row(ctx):
        ctx.session.execute(cell_tables.migrations.update().where(
            cell_tables.migrations.c.uuid == migration.uuid).values(
                created_at=then, updated_at=then))
    world.cell1.writer(age_row)(fx.ctxt())
    return migration


def test_a_stuck_move_on_its_source_gets_its_source_back(world):
    server = _server(world, 'h1', instance_obj.RESIZE_PREP)
    migration = _move(world, server, 'h2')
    assert stuck_moves.run(world.manager, fx.ctxt(), BOUND) == [
        migration.uuid]
    assert world.placement.allocations(server.uuid) == {
        world.nodes['h1']: {'VCPU': 1}}
    assert world.placement.allocations(migration.uuid) == {}
    found = migration_records.get_migration(fx.ctxt(), world.cell1,
                                            migration.uuid)
    assert found.status == migration_obj.ERROR
    instance = instance_records.get_instance(fx.ctxt(), world.cell1,
                                             server.uuid)
    assert instance.task_state is None
    assert instance.vm_state == instance_obj.ACTIVE
    assert 'move_timeout' in instance.fault['message']


def test_a_stuck_move_on_its_destination_drops_the_source(world):
    server = _server(world, 'h1', instance_obj.MIGRATING)
    migration = _move(world, server, 'h2')
    instance_records.update_instance(fx.ctxt(), world.cell1, server.uuid,
                                     {'host': 'h2', 'node': 'h2'})
    assert stuck_moves.run(world.manager, fx.ctxt(), BOUND) == [
        migration.uuid]
    assert world.placement.allocations(server.uuid) == {
        world.nodes['h2']: {'VCPU': 1}}
    assert world.placement.allocations(migration.uuid) == {}


@pytest.mark.parametrize('old_vm_state', [instance_obj.ACTIVE,
                                          instance_obj.STOPPED])
def test_a_lost_confirm_leaves_the_server_as_the_confirm_would(
        world, old_vm_state):
    # NOTE: the confirm was claimed and cast to a source compute that
    # never answered: VERIFY_RESIZE with no finished migration would
    # refuse every action.
    server = _server(world, 'h1', None)
    migration = _move(world, server, 'h2', status=migration_obj.CONFIRMING)
    instance_records.update_instance(
        fx.ctxt(), world.cell1, server.uuid,
        {'host': 'h2', 'node': 'h2', 'vm_state': instance_obj.RESIZED,
         'system_metadata': {'old_vm_state': old_vm_state, 'kept': 'x'}})
    assert stuck_moves.run(world.manager, fx.ctxt(), BOUND) == [
        migration.uuid]
    instance = instance_records.get_instance(fx.ctxt(), world.cell1,
                                             server.uuid)
    assert (instance.host, instance.vm_state) == ('h2', old_vm_state)
    assert instance.system_metadata == {'kept': 'x'}
    assert world.placement.allocations(migration.uuid) == {}
    assert 'move_timeout' in instance.fault['message']


def test_a_lost_revert_leaves_the_server_in_error(world):
    # NOTE: the destination may have given the source back already: the
    # server is not known to run where its row says.
    server = _server(world, 'h1', instance_obj.RESIZE_REVERTING)
    _move(world, server, 'h2', status=migration_obj.REVERTING)
    instance_records.update_instance(
        fx.ctxt(), world.cell1, server.uuid,
        {'host': 'h2', 'node': 'h2', 'vm_state': instance_obj.RESIZED})
    stuck_moves.run(world.manager, fx.ctxt(), BOUND)
    instance = instance_records.get_instance(fx.ctxt(), world.cell1,
                                             server.uuid)
    assert (instance.vm_state, instance.task_state) == (
        instance_obj.ERROR, None)
    assert 'move_timeout' in instance.fault['message']


def test_an_ended_resize_gives_the_stored_spec_the_servers_flavor(world):
    big = flavor_obj.Flavor(name='big', flavorid='big', vcpus=4,
                            memory_mb=4096, root_gb=20)
    server = _server(world, 'h1', instance_obj.RESIZE_PREP)
    # NOTE: as the resize left it when it was scheduled.
    boot_records.save_request_spec(
        fx.ctxt(), server.uuid, spec_obj.RequestSpec(
            instance_uuid=server.uuid, project_id='p1', user_id='u1',
            flavor=big), database=world.api)
    _move(world, server, 'h2')
    stuck_moves.run(world.manager, fx.ctxt(), BOUND)
    stored = boot_records.get_request_spec(fx.ctxt(), server.uuid,
                                           database=world.api)
    assert stored.flavor.flavorid == 'small'


def test_fresh_waiting_and_ended_moves_are_left_alone(world):
    fresh = _move(world, _server(world, 'h1', instance_obj.RESIZE_PREP),
                  'h2', age=10)
    waiting = _move(world, _server(world, 'h1', None), 'h3',
                    status=migration_obj.FINISHED)
    assert stuck_moves.run(world.manager, fx.ctxt(), BOUND) == []
    for migration in (fresh, waiting):
        assert world.placement.allocations(migration.uuid)


def test_a_deleted_server_loses_its_migration_allocation(world):
    server = _server(world, 'h1', instance_obj.RESIZE_PREP)
    migration = _move(world, server, 'h2')
    instance_records.destroy_instance(fx.ctxt(), world.cell1, server.uuid)
    assert stuck_moves.run(world.manager, fx.ctxt(), BOUND) == [
        migration.uuid]
    assert world.placement.allocations(migration.uuid) == {}


def test_a_deleted_server_loses_a_destination_claimed_after_it(world):
    server = _server(world, 'h1', instance_obj.RESIZE_PREP)
    migration = _move(world, server, 'h2')
    instance_records.destroy_instance(fx.ctxt(), world.cell1, server.uuid)
    stuck_moves.run(world.manager, fx.ctxt(), BOUND)
    assert world.placement.allocations(server.uuid) == {}
    found = migration_records.get_migration(fx.ctxt(), world.cell1,
                                            migration.uuid)
    assert found.status == migration_obj.ERROR


def test_a_finished_move_of_a_deleted_server_is_ended(world):
    server = _server(world, 'h1', None)
    migration = _move(world, server, 'h2', status=migration_obj.FINISHED)
    kept = _move(world, _server(world, 'h1', None), 'h3',
                 status=migration_obj.FINISHED)
    instance_records.destroy_instance(fx.ctxt(), world.cell1, server.uuid)
    assert stuck_moves.run(world.manager, fx.ctxt(), BOUND) == [
        migration.uuid]
    assert world.placement.allocations(migration.uuid) == {}
    assert world.placement.allocations(kept.uuid)


def _age(world, uuid, age=BOUND + 60):
    then = timeutils.utcnow() - datetime.timedelta(seconds=age)

    def age_row(ctx):
        ctx.session.execute(cell_tables.instances.update().where(
            cell_tables.instances.c.uuid == uuid).values(
                created_at=then, updated_at=then))
    world.cell1.writer(age_row)(fx.ctxt())


def test_a_resize_its_conductor_never_started_is_ended(world):
    server = _server(world, 'h1', instance_obj.RESIZE_PREP)
    instance_records.update_instance(
        fx.ctxt(), world.cell1, server.uuid,
        {'system_metadata': {'old_vm_state': 'active', 'kept': '1'}})
    _age(world, server.uuid)
    fresh = _server(world, 'h1', instance_obj.RESIZE_PREP)
    assert stuck_moves.run(world.manager, fx.ctxt(), BOUND) == [
        server.uuid]
    instance = instance_records.get_instance(fx.ctxt(), world.cell1,
                                             server.uuid)
    assert (instance.vm_state, instance.task_state, instance.host) == (
        instance_obj.ACTIVE, None, 'h1')
    assert instance.system_metadata == {'kept': '1'}
    assert 'move_timeout' in instance.fault['message']
    assert world.placement.allocations(server.uuid) == {
        world.nodes['h1']: {'VCPU': 1}}
    assert instance_records.get_instance(
        fx.ctxt(), world.cell1, fresh.uuid).task_state == \
        instance_obj.RESIZE_PREP


def test_a_server_whose_migration_is_under_way_is_left_to_it(world):
    server = _server(world, 'h1', instance_obj.RESIZE_PREP)
    migration = _move(world, server, 'h2', age=10)
    _age(world, server.uuid)
    assert stuck_moves.run(world.manager, fx.ctxt(), BOUND) == []
    assert world.placement.allocations(migration.uuid)
    assert instance_records.get_instance(
        fx.ctxt(), world.cell1, server.uuid).task_state == \
        instance_obj.RESIZE_PREP


def test_an_offloaded_unshelve_never_cast_loses_its_claim(world):
    server = _server(world, 'h1', instance_obj.UNSHELVING)
    instance_records.update_instance(
        fx.ctxt(), world.cell1, server.uuid,
        {'vm_state': instance_obj.SHELVED_OFFLOADED})
    _age(world, server.uuid)
    assert stuck_moves.run(world.manager, fx.ctxt(), BOUND) == [
        server.uuid]
    instance = instance_records.get_instance(fx.ctxt(), world.cell1,
                                             server.uuid)
    assert (instance.vm_state, instance.task_state, instance.host) == (
        instance_obj.SHELVED_OFFLOADED, None, None)
    assert world.placement.allocations(server.uuid) == {}


def test_the_task_is_registered_from_the_option(world):
    names = [name for name, _task in world.manager._periodic_tasks]
    assert 'end_stuck_moves' in names
    assert stuck_moves.spacing(0) is None
    assert stuck_moves.spacing(3600) == 60
