# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""berth-manage placement heal_allocations, audit and sync_aggregates."""

import uuid as uuid_lib

from common.db import api_tables
from common.db import instance_records
from common.objects import instance as instance_obj
from services.conductor import build_flow
from services.manage import placement_audit
from services.manage import placement_heal
from tests.unit.db import records_fixtures as fx

HEAL = dict(max_count=None, verbose=True, dry_run=False, instance=None,
            cell=None, force=False)


def _active(world, count=1):
    spec, instances = world.boot(count)
    build_flow.schedule_and_build_instances(
        world.manager, fx.ctxt(), spec, [i.uuid for i in instances],
        instances)
    for instance in instances:
        instance_records.update_instance(
            fx.ctxt(), world.cell1, instance.uuid,
            {'vm_state': instance_obj.ACTIVE, 'task_state': None})
    return instances


def _heal(manage, **args):
    values = dict(HEAL)
    values.update(args)
    return manage(placement_heal.heal_allocations, 'placement', **values)


def test_heal_creates_missing_allocations(manage, world, capsys):
    healthy, lost = _active(world, 2)
    world.placement.delete('/allocations/%s' % lost.uuid, '1.36')
    assert _heal(manage, dry_run=True) == 0
    out = capsys.readouterr().out
    assert '[dry-run] Update allocations for instance %s' % lost.uuid in out
    assert '[dry-run] Processed 1 instances.' in out
    assert world.placement.allocations(lost.uuid) == {}
    assert _heal(manage) == 0
    out = capsys.readouterr().out
    assert 'Successfully created allocations for instance %s.' % (
        lost.uuid) in out
    assert 'Instance %s already has allocations.' % healthy.uuid in out
    assert out.splitlines()[-1] == 'Processed 1 instances.'
    assert list(world.placement.allocations(lost.uuid).values()) == [
        {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}]
    assert _heal(manage) == 4


def test_heal_options(manage, world, capsys):
    first, second = _active(world, 2)
    for instance in (first, second):
        world.placement.delete('/allocations/%s' % instance.uuid, '1.36')
    assert _heal(manage, force=True) == 127
    assert _heal(manage, max_count=0) == 127
    assert _heal(manage, instance='nope') == 127
    assert _heal(manage, max_count=1) == 1
    assert 'Max count reached. Processed 1 instances.' in \
        capsys.readouterr().out
    healed = [i for i in (first, second)
              if world.placement.allocations(i.uuid)]
    assert len(healed) == 1
    left = first if healed[0] is second else second
    assert _heal(manage, instance=left.uuid) == 0
    assert world.placement.allocations(left.uuid)
    # --force rewrites an instance's allocations even when it has some.
    world.placement.consumers[first.uuid]['allocations'] = {
        world.nodes['h1']: {'VCPU': 9}}
    assert _heal(manage, instance=first.uuid, force=True) == 0
    assert list(world.placement.allocations(first.uuid).values()) == [
        {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}]


def test_heal_skips_moving_and_unplaced_instances(manage, world, capsys):
    busy, = _active(world, 1)
    world.placement.delete('/allocations/%s' % busy.uuid, '1.36')
    instance_records.update_instance(fx.ctxt(), world.cell1, busy.uuid,
                                     {'task_state': 'deleting'})
    assert _heal(manage) == 4
    assert 'is undergoing a task state transition: deleting' in \
        capsys.readouterr().out


def _audit(manage, **args):
    values = dict(verbose=False, delete=False, resource_provider=None)
    values.update(args)
    return manage(placement_audit.audit, 'placement', **values)


def test_audit_reports_then_deletes_orphans(manage, world, capsys):
    kept, gone = _active(world, 2)
    assert _audit(manage) == 0
    assert capsys.readouterr().out == 'Processed 2 allocations.\n'
    instance_records.destroy_instance(fx.ctxt(), world.cell1, gone.uuid)
    assert _audit(manage) == 3
    out = capsys.readouterr().out
    assert 'Allocations for consumer UUID %s on Resource Provider %s can ' \
        'be deleted' % (gone.uuid, world.nodes['h2']) in out
    assert _audit(manage, resource_provider='nope') == 127
    assert _audit(manage, resource_provider=world.nodes['h1']) == 0
    assert _audit(manage, delete=True, verbose=True) == 4
    out = capsys.readouterr().out
    assert 'Deleted allocations for consumer UUID %s' % gone.uuid in out
    assert 'Processing allocations for Resource Provider' in out
    assert world.placement.allocations(gone.uuid) == {}
    assert world.placement.allocations(kept.uuid)


def _aggregate(world, name, hosts):
    agg_uuid = str(uuid_lib.uuid4())

    def insert(ctx):
        agg_id = ctx.session.execute(api_tables.aggregates.insert().values(
            uuid=agg_uuid, name=name)).inserted_primary_key[0]
        for host in hosts:
            ctx.session.execute(api_tables.aggregate_hosts.insert().values(
                aggregate_id=agg_id, host=host))
    world.api.writer(insert)(fx.ctxt())
    return agg_uuid


def test_sync_aggregates(manage, world, capsys):
    fast = _aggregate(world, 'io-fast', ['h1', 'h2'])
    slow = _aggregate(world, 'io-slow', ['h2'])
    run = lambda: manage(placement_audit.sync_aggregates,  # noqa: E731
                         'placement', verbose=False)
    assert run() == 0
    assert world.placement.aggregates[world.nodes['h1']][0] == [fast]
    assert sorted(world.placement.aggregates[world.nodes['h2']][0]) == \
        sorted([fast, slow])
    assert run() == 0
    _aggregate(world, 'ghosts', ['ghost'])
    assert run() == 4
    assert 'Missing: ghost' in capsys.readouterr().out
