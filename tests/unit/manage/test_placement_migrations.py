# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""heal_allocations, placement audit and the conductor's periodic audit
with servers that move: the migration consumer holds the source.
"""

import uuid as uuid_lib

from common.db import instance_records
from common.db import migration_records
from common.objects import instance as instance_obj
from common.objects import migration as migration_obj
from services.conductor import allocation_audit
from services.conductor import build_flow
from services.manage import placement_audit
from services.manage import placement_heal
from tests.unit.db import records_fixtures as fx

HEAL = dict(max_count=None, verbose=True, dry_run=False, instance=None,
            cell=None, force=False)
AUDIT = dict(verbose=True, delete=False, resource_provider=None)


def _active(world):
    spec, [instance] = world.boot(1)
    build_flow.schedule_and_build_instances(
        world.manager, fx.ctxt(), spec, [instance.uuid], [instance])
    return instance_records.update_instance(
        fx.ctxt(), world.cell1, instance.uuid,
        {'vm_state': instance_obj.ACTIVE, 'task_state': None})


def _moving(world, status=migration_obj.FINISHED, hand_over=True):
    """An ACTIVE server whose move is at ``status``: with ``hand_over``
    its source allocation is its migration's, its own consumer empty
    (a resize waiting for its confirmation has no task state).

    :returns: (instance, migration).
    """
    instance = _active(world)
    migration = migration_records.create_migration(
        fx.ctxt(), world.cell1, migration_obj.Migration(
            instance_uuid=instance.uuid, migration_type='resize',
            status=status, source_compute=instance.host,
            source_node=instance.node, project_id=instance.project_id,
            user_id=instance.user_id))
    if hand_over:
        held = world.placement.allocations(instance.uuid)
        world.placement.delete('/allocations/%s' % instance.uuid, '1.38')
        _hold(world, migration.uuid, held)
    return instance, migration


def _hold(world, consumer, held):
    resp = world.placement.put('/allocations/%s' % consumer, {
        'allocations': {rp: {'resources': r} for rp, r in held.items()},
        'project_id': 'p1', 'user_id': 'u1', 'consumer_generation': None},
        '1.38')
    assert resp.ok


def _end(world, migration, status=migration_obj.CONFIRMED):
    migration_records.update_migration(fx.ctxt(), world.cell1,
                                       migration.uuid, {'status': status})


def _heal(manage, **args):
    values = dict(HEAL)
    values.update(args)
    return manage(placement_heal.heal_allocations, 'placement', **values)


def _audit(manage, **args):
    values = dict(AUDIT)
    values.update(args)
    return manage(placement_audit.audit, 'placement', **values)


def test_heal_skips_a_server_with_a_move_in_progress(manage, world, capsys):
    instance, migration = _moving(world)
    assert _heal(manage) == 4
    out = capsys.readouterr().out
    assert 'Instance %s is being migrated' % instance.uuid in out
    # Healing would have counted the server twice on its source.
    assert world.placement.allocations(instance.uuid) == {}
    assert _heal(manage, instance=instance.uuid) == 4
    # Once the move ended (and its allocation was dropped), heal heals.
    world.placement.delete('/allocations/%s' % migration.uuid, '1.38')
    _end(world, migration, migration_obj.ERROR)
    assert _heal(manage) == 0
    assert list(world.placement.allocations(instance.uuid).values()) == [
        {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}]


def test_audit_keeps_a_move_in_progress_and_finds_it_ended(manage, world,
                                                           capsys):
    instance, migration = _moving(world)
    source = world.nodes[instance.host]
    assert _audit(manage) == 0
    assert 'can be deleted' not in capsys.readouterr().out
    _end(world, migration)
    assert _audit(manage) == 3
    out = capsys.readouterr().out
    assert 'Allocations for consumer UUID %s on Resource Provider' % (
        migration.uuid) in out
    assert 'migration of instance %s ended (confirmed)' % instance.uuid in out
    assert _audit(manage, delete=True) == 4
    assert 'Deleted allocations for consumer UUID %s' % migration.uuid in \
        capsys.readouterr().out
    assert world.placement.allocations(migration.uuid) == {}
    assert world.placement.used(source) == {}
    assert _audit(manage) == 0


def test_audit_finds_a_migration_consumer_without_migration(manage, world,
                                                            capsys):
    instance = _active(world)
    ghost = str(uuid_lib.uuid4())
    _hold(world, ghost, world.placement.allocations(instance.uuid))
    assert _audit(manage, delete=True) == 4
    out = capsys.readouterr().out
    assert 'Consumer %s: no live instance, build request or migration' % (
        ghost) in out
    assert world.placement.allocations(ghost) == {}
    assert world.placement.allocations(instance.uuid)


def test_audit_finds_the_move_of_a_deleted_server(manage, world, capsys):
    instance, migration = _moving(world, status=migration_obj.RUNNING)
    instance_records.destroy_instance(fx.ctxt(), world.cell1, instance.uuid)
    assert _audit(manage) == 3
    assert 'migration of deleted instance %s' % instance.uuid in \
        capsys.readouterr().out


def _periodic(world, repair=False):
    return allocation_audit.audit(fx.ctxt(), world.manager.cells,
                                  world.placement, repair=repair, grace=0)


def test_periodic_audit_leaves_a_move_in_progress_alone(world):
    instance, migration = _moving(world)
    report = _periodic(world, repair=True)
    # Neither an orphan (the migration) nor a missing allocation (the
    # instance, whose consumer is empty while it moves).
    assert report.findings == []
    assert world.placement.allocations(migration.uuid)
    assert world.placement.allocations(instance.uuid) == {}


def test_periodic_audit_repairs_an_ended_move(world):
    instance, migration = _moving(world)
    # The move ended on its destination: the instance holds it, the
    # migration's source allocation was left behind.
    _hold(world, instance.uuid, world.placement.allocations(migration.uuid))
    _end(world, migration, migration_obj.COMPLETED)
    report = _periodic(world)
    [finding] = report.findings
    assert (finding.kind, finding.consumer) == ('orphaned', migration.uuid)
    assert world.placement.allocations(migration.uuid)
    report = _periodic(world, repair=True)
    assert [f.repaired for f in report.findings] == [True]
    assert world.placement.allocations(migration.uuid) == {}
    assert world.placement.allocations(instance.uuid)
    assert _periodic(world).findings == []
