# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The conductor's unshelve and evacuate workflows, and the audit of the
migration consumers they leave.
"""

import pytest

from common.db import instance_records
from common.db import migration_records
from common import exception
from common.objects import migration as migration_obj
from services.conductor import allocation_audit
from services.conductor import build_flow
from services.conductor import evacuate_flow
from services.conductor import unshelve_flow
from tests.unit.conductor import fakes
from tests.unit.db import records_fixtures as fx


@pytest.fixture
def world(tmp_path):
    world = fakes.World(tmp_path)
    yield world
    world.close()


def _built(world, **values):
    """A server built on h1 (its allocation there), then ``values``."""
    spec, instances = world.boot(1)
    build_flow.schedule_and_build_instances(world.manager, fx.ctxt(), spec,
                                            [instances[0].uuid], instances)
    world.compute.builds.pop()
    uuid = instances[0].uuid
    instance_records.update_instance(fx.ctxt(), world.cell1, uuid,
                                     dict({'vm_state': 'active',
                                           'task_state': None}, **values))
    world.scheduler.calls[:] = []
    return uuid


def _row(world, uuid):
    return instance_records.get_instance(fx.ctxt(), world.cell1, uuid)


def _casts(world, name):
    return [kw for n, kw in getattr(world.compute, 'casts', []) if n == name]


# --- unshelve ---------------------------------------------------------------

def _offloaded(world):
    uuid = _built(world, vm_state='shelved_offloaded',
                  task_state='unshelving', host=None, node=None)
    world.placement.delete('/allocations/%s' % uuid, '1.36')
    return uuid


def test_unshelve_of_a_shelved_server_powers_it_on(world):
    uuid = _built(world, vm_state='shelved', task_state='unshelving')
    unshelve_flow.unshelve_instance(world.manager, fx.ctxt(),
                                    unshelve_flow.Unshelve(uuid))
    assert _row(world, uuid).task_state == 'powering-on'
    assert _casts(world, 'start_instance') == [
        {'host': 'h1', 'instance_uuid': uuid}]
    assert world.scheduler.calls == []


def test_unshelve_of_an_offloaded_server_schedules_it(world):
    uuid = _offloaded(world)
    world.scheduler.hosts.reverse()
    world.add_zone('az2', ['h3'])
    host = unshelve_flow.unshelve_instance(
        world.manager, fx.ctxt(), unshelve_flow.Unshelve(
            uuid, zone_given=True, availability_zone='az2'))
    assert host == 'h3'
    [(spec, uuids)] = world.scheduler.calls
    assert (spec['move_type'], spec['availability_zone'], uuids) == (
        'unshelve', 'az2', [uuid])
    row = _row(world, uuid)
    assert (row.host, row.node, row.availability_zone, row.task_state) == (
        'h3', 'h3', 'az2', 'unshelving')
    [cast] = _casts(world, 'unshelve_instance')
    assert (cast['host'], cast['instance_uuid']) == ('h3', uuid)
    assert list(world.placement.allocations(uuid)) == [world.nodes['h3']]


def test_no_valid_host_leaves_the_server_offloaded(world):
    uuid = _offloaded(world)
    world.scheduler.fail = fakes.no_valid_host()
    unshelve_flow.unshelve_instance(world.manager, fx.ctxt(),
                                    unshelve_flow.Unshelve(uuid))
    row = _row(world, uuid)
    assert (row.vm_state, row.task_state, row.host) == (
        'shelved_offloaded', None, None)
    assert world.placement.allocations(uuid) == {}
    assert _casts(world, 'unshelve_instance') == []


# --- evacuate ---------------------------------------------------------------

def _evacuation(world, host=None):
    uuid = _built(world, task_state='rebuilding')
    migration = migration_records.create_migration(
        fx.ctxt(), world.cell1, migration_obj.Migration(
            instance_uuid=uuid, migration_type='evacuation',
            status='accepted', source_compute='h1', source_node='h1',
            dest_compute=host))
    return uuid, migration.uuid


def _migration(world, migration_uuid):
    return migration_records.get_migration(fx.ctxt(), world.cell1,
                                           migration_uuid)


def test_evacuate_holds_the_source_under_the_migration(world):
    uuid, migration_uuid = _evacuation(world)
    world.scheduler.hosts = world.scheduler.hosts[1:]
    host = evacuate_flow.evacuate_instance(
        world.manager, fx.ctxt(), evacuate_flow.Evacuate(
            uuid, migration_uuid))
    assert host == 'h2'
    [(spec, _uuids)] = world.scheduler.calls
    assert (spec['move_type'], spec['ignore_hosts']) == ('evacuate', ['h1'])
    assert list(world.placement.allocations(migration_uuid)) == [
        world.nodes['h1']]
    assert list(world.placement.allocations(uuid)) == [world.nodes['h2']]
    migration = _migration(world, migration_uuid)
    assert (migration.status, migration.dest_compute,
            migration.dest_node) == ('pre-migrating', 'h2', 'h2')
    [cast] = _casts(world, 'evacuate_instance')
    assert (cast['host'], cast['migration_uuid'], cast['target_state']) == (
        'h2', migration_uuid, None)
    # the migration's allocation is no orphan for the audit, in progress
    # or done until the source comes back, and is one once completed.
    for status, orphan in (('pre-migrating', False), ('done', False),
                           ('completed', True)):
        migration_records.update_migration(fx.ctxt(), world.cell1,
                                           migration_uuid,
                                           {'status': status})
        report = allocation_audit.audit(fx.ctxt(), world.manager.cells,
                                        world.placement, orphans_only=True)
        assert [f.consumer for f in report.of_kind('orphaned')] == (
            [migration_uuid] if orphan else []), status


def test_a_forced_host_is_claimed_without_the_scheduler(world):
    uuid, migration_uuid = _evacuation(world, host='h3')
    evacuate_flow.evacuate_instance(
        world.manager, fx.ctxt(), evacuate_flow.Evacuate(
            uuid, migration_uuid, host='h3', force=True))
    assert world.scheduler.calls == []
    assert world.placement.allocations(uuid) == {world.nodes['h3']: {
        'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}}
    assert _casts(world, 'evacuate_instance')[0]['host'] == 'h3'


def test_no_valid_host_gives_the_source_back(world):
    uuid, migration_uuid = _evacuation(world, host='h2')
    held = world.placement.allocations(uuid)
    world.scheduler.fail = exception.NoValidHost(reason='nope')
    evacuate_flow.evacuate_instance(
        world.manager, fx.ctxt(), evacuate_flow.Evacuate(
            uuid, migration_uuid, host='h2'))
    row = _row(world, uuid)
    assert (row.vm_state, row.task_state, row.host) == ('error', None, 'h1')
    assert world.placement.allocations(uuid) == held
    assert world.placement.allocations(migration_uuid) == {}
    assert _migration(world, migration_uuid).status == 'error'
    assert _casts(world, 'evacuate_instance') == []
