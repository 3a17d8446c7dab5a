# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""berth-manage placement audit: servers stuck in a task state."""

import datetime

from oslo_utils import timeutils

from common.db import api_tables
from common.db import cell_tables
from common.db import instance_records
from common.objects import instance as instance_obj
from services.conductor import build_flow
from services.manage import placement_audit
from tests.unit.db import records_fixtures as fx


def _audit(manage, **args):
    values = dict(verbose=False, delete=False, resource_provider=None)
    values.update(args)
    return manage(placement_audit.audit, 'placement', **values)


def _age(database, table, column, uuid, seconds, stamps):
    when = timeutils.utcnow() - datetime.timedelta(seconds=seconds)

    def update(ctx):
        ctx.session.execute(table.update().where(column == uuid).values(
            **{name: when for name in stamps}))
    database.writer(update)(fx.ctxt())


def _built(world, count):
    """Servers scheduled and cast (building, task scheduling)."""
    spec, instances = world.boot(count)
    build_flow.schedule_and_build_instances(
        world.manager, fx.ctxt(), spec, [i.uuid for i in instances],
        instances)
    return instances


def test_audit_reports_stuck_servers_with_their_allocations(manage, world,
                                                            capsys):
    stuck, active = _built(world, 2)
    instance_records.update_instance(
        fx.ctxt(), world.cell1, active.uuid,
        {'vm_state': instance_obj.ACTIVE, 'task_state': None})
    _spec, (unscheduled,) = world.boot(1)
    # NOTE: fresh: a build under way is not stuck.
    assert _audit(manage, stuck_after=60) == 0
    capsys.readouterr()

    instances = cell_tables.instances
    for uuid in (stuck.uuid, active.uuid):
        _age(world.cell1, instances, instances.c.uuid, uuid, 120,
             ('created_at', 'updated_at'))
    requests = api_tables.build_requests
    _age(world.api, requests, requests.c.instance_uuid, unscheduled.uuid,
         120, ('created_at',))
    assert _audit(manage, stuck_after=60) == 3
    out = capsys.readouterr().out
    held = world.placement.allocations(stuck.uuid)
    assert held
    assert ('Server %s has been in task state scheduling (building) on '
            'host %s for 1' % (stuck.uuid, 'h1')) in out
    assert 'it holds allocations %s' % held in out
    assert ('Server %s has been in task state build request on host '
            '(none)' % unscheduled.uuid) in out
    assert active.uuid not in out
    # NOTE: --delete does not touch a stuck server's allocation.
    assert _audit(manage, stuck_after=60, delete=True) == 3
    assert world.placement.allocations(stuck.uuid) == held
    # NOTE: the default bound is an hour.
    assert _audit(manage) == 0


def test_audit_refuses_a_negative_bound(manage, world, capsys):
    assert _audit(manage, stuck_after=-1) == 127
    assert '--stuck_after must be 0 or more' in capsys.readouterr().out
