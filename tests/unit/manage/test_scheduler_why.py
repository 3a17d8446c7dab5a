# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""berth-manage scheduler why: the decision record a boot kept."""

import json

from common.db import action_records
from common.db import api_tables
from common.db import decision_records
from common.db import instance_records
from services.conductor import build_flow
from services.manage import scheduler_why
from tests.unit.conductor import fakes
from tests.unit.conductor import test_decision_records
from tests.unit.db import records_fixtures as fx

RECORD = {
    'summary': '3 hosts: 1 rejected by AvailabilityZoneFilter (zone az1)',
    'placement_query': 'resources=VCPU:1', 'candidates': 3, 'hosts': 3,
    'filters': [{'filter': 'AvailabilityZoneFilter', 'hosts_in': 3,
                 'hosts_out': 2}],
    'rejected': {'AvailabilityZoneFilter': {
        'count': 1, 'reasons': [['zone az1 requested', 1]],
        'hosts': ['h3:h3']}},
    'weighed': [{'host': 'h1', 'node': 'h1', 'weight': 1.0,
                 'weighers': {'RAMWeigher': 1.0}}],
    'selected': ['h1', 'h1'],
    'random_pick': None,
    'ignored_hints': [{'hint': 'same_host', 'needs': ['SameHostFilter']}],
    'notes': ['h1 (h1) was picked at random among 2 hosts of equal '
              'weight 1.0: h1, h2'],
}


def _why(manage, server, **args):
    values = dict(server=server, all=False, json=False)
    values.update(args)
    return manage(scheduler_why.why, 'scheduler', **values)


def _cell_id(world):
    def read(ctx):
        return ctx.session.execute(api_tables.cell_mappings.select().where(
            api_tables.cell_mappings.c.uuid == fakes.CELL1_UUID)).first().id
    return world.api.reader(read)(fx.ctxt())


def _booted(world):
    test_decision_records._with_decisions(world)
    spec, instances = world.boot(1)
    build_flow.schedule_and_build_instances(
        world.manager, fx.ctxt(), spec, [instances[0].uuid], instances)
    return instances[0].uuid


def test_why_prints_the_boot_record(manage, world, capsys):
    uuid = _booted(world)
    assert _why(manage, uuid) == 0
    out = capsys.readouterr().out
    assert out.startswith('Server %s is on h1 (h1).' % uuid)
    assert 'build at ' in out and ': h1 (h1)' in out
    assert 'Ignored hint: same_host (needs SameHostFilter)' in out


def test_why_renders_every_part_and_all_shows_moves(manage, world, capsys):
    ctxt = fx.ctxt()
    inst = instance_records.create_instance(
        ctxt, world.cell1, fx.instance(host='h1', node='h1'),
        action='create', decision=('build', RECORD, None))
    world._insert(world.api, api_tables.instance_mappings, [dict(
        instance_uuid=inst.uuid, project_id='p1',
        cell_id=_cell_id(world), queued_for_delete=False)])
    action_records.record_action(ctxt, world.cell1, inst.uuid, 'migrate')
    decision_records.record(ctxt, world.cell1, inst.uuid, 'migrate',
                            dict(RECORD, selected=['h2', 'h2']))
    assert _why(manage, inst.uuid) == 0
    out = capsys.readouterr().out
    assert 'migrate at ' in out and ': h2 (h2)' in out
    assert '(1 earlier placement(s): --all shows them)' in out
    assert 'Filter AvailabilityZoneFilter: 3 -> 2' in out
    assert ('AvailabilityZoneFilter removed 1: zone az1 requested (1) '
            '[e.g. h3:h3]') in out
    assert '1. h1 (h1) weight 1.0 [RAMWeigher 1.0]' in out
    assert 'picked at random among 2 hosts of equal weight' in out
    assert _why(manage, inst.uuid, all=True, json=True) == 0
    body = json.loads(capsys.readouterr().out)
    assert [d['kind'] for d in body['decisions']] == ['migrate', 'build']


def test_why_without_a_record(manage, world, capsys):
    assert _why(manage, 'ffffffff-0000-0000-0000-000000000000') == 1
    assert 'could not be found' in capsys.readouterr().out
    spec, instances = world.boot(1)
    assert _why(manage, instances[0].uuid) == 1
    assert 'waiting to be scheduled' in capsys.readouterr().out
    world.scheduler.fail = fakes.no_valid_host()
    build_flow.schedule_and_build_instances(
        world.manager, fx.ctxt(), spec, [instances[0].uuid], instances)
    assert _why(manage, instances[0].uuid) == 1
    assert 'was not placed: No valid host' in capsys.readouterr().out
