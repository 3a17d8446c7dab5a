# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The decision record of a placement: kept by the conductor with the
create action, read back newest first; the writer a move will call.
"""

import pytest

from common.db import action_records
from common.db import api as db_api
from common.db import decision_records
from common.db import instance_records
from services.conductor import build_flow
from tests.unit.conductor import fakes
from tests.unit.db import records_fixtures as fx


@pytest.fixture
def world(tmp_path):
    world = fakes.World(tmp_path)
    yield world
    world.close()


def _with_decisions(world):
    """The fake scheduler's selections, each with a record as the real
    scheduler's manager attaches them.
    """
    select = world.scheduler.select_destinations

    def select_destinations(ctxt, spec, uuids, return_alternates,
                            hand_over=None):
        result = select(ctxt, spec, uuids, return_alternates, hand_over)
        for index, per_instance in enumerate(result):
            chosen = per_instance[0]
            chosen.decision = {
                'summary': '3 hosts', 'selected': [chosen.service_host,
                                                   chosen.nodename],
                'ignored_hints': [{'hint': 'same_host',
                                   'needs': ['SameHostFilter']}],
                'notes': ['instance %d' % index]}
        return result
    world.scheduler.select_destinations = select_destinations


def test_a_boot_keeps_its_decision_with_the_create_action(world):
    _with_decisions(world)
    spec, instances = world.boot(2)
    build_flow.schedule_and_build_instances(
        world.manager, fx.ctxt(), spec, [i.uuid for i in instances],
        instances)
    for index, (instance, host) in enumerate(zip(instances, ('h1', 'h2'))):
        found, = decision_records.decisions(fx.ctxt(), world.cell1,
                                            instance.uuid)
        assert found['kind'] == 'build' and found['action'] == 'create'
        assert found['selected'] == [host, host]
        assert found['notes'] == ['instance %d' % index]
        assert found['recorded_at'].endswith('Z')
        action, = action_records.list_actions(fx.ctxt(), world.cell1,
                                              instance.uuid)
        event, = action['events']
        assert (event['event'], event['result']) == (
            'conductor_schedule_and_build_instances', 'Success')
        # NOTE: the action is the compute's to finish.
        assert action['finish_time'] is None
    # NOTE: the compute is not sent the record.
    assert all(b['selection']['decision'] is None
               for b in world.compute.builds)


def test_a_move_adds_its_own_record_newest_first(world):
    ctxt = fx.ctxt()
    inst = instance_records.create_instance(
        ctxt, world.cell1, fx.instance(), action='create',
        decision=('build', {'selected': ['h1', 'h1']}, 'cond1'))
    action_records.record_action(ctxt, world.cell1, inst.uuid, 'migrate')
    action_records.action_event_start(ctxt, world.cell1, inst.uuid,
                                      'conductor_migrate_server')
    assert decision_records.record(ctxt, world.cell1, inst.uuid, 'migrate',
                                   {'selected': ['h2', 'h2']})
    newest, first = decision_records.decisions(ctxt, world.cell1, inst.uuid)
    assert (newest['kind'], newest['action'], newest['selected']) == (
        'migrate', 'migrate', ['h2', 'h2'])
    assert (first['kind'], first['selected']) == ('build', ['h1', 'h1'])
    # NOTE: the move's open event got the record and stays open.
    migrate, _create = action_records.list_actions(ctxt, world.cell1,
                                                   inst.uuid)
    event, = migrate['events']
    assert event['finish_time'] is None and event['details']


def test_a_decision_and_its_event_finish_in_the_latest_action(world):
    ctxt = fx.ctxt()
    inst = instance_records.create_instance(
        ctxt, world.cell1, fx.instance(), action='create')
    action_records.record_action(ctxt, world.cell1, inst.uuid,
                                 'live-migration')
    action_records.action_event_start(ctxt, world.cell1, inst.uuid,
                                      'conductor_live_migrate_instance')
    db_api.write(world.cell1, lambda ctx: decision_records.add_and_finish(
        ctx, inst.uuid, 'live-migrate', {'selected': ['h2', 'h2']},
        host='cond1'), ctxt)
    found, = decision_records.decisions(ctxt, world.cell1, inst.uuid)
    assert (found['kind'], found['action'], found['selected']) == (
        'live-migrate', 'live-migration', ['h2', 'h2'])
    moved, _create = action_records.list_actions(ctxt, world.cell1,
                                                 inst.uuid)
    event, = moved['events']
    assert (event['event'], event['result']) == (
        'conductor_live_migrate_instance', 'Success')
    assert event['finish_time'] is not None and event['details']
    # NOTE: without a record, only the event is finished.
    action_records.record_action(ctxt, world.cell1, inst.uuid, 'migrate')
    db_api.write(world.cell1, lambda ctx: decision_records.add_and_finish(
        ctx, inst.uuid, 'migrate', None, host='cond1'), ctxt)
    migrate = action_records.list_actions(ctxt, world.cell1, inst.uuid)[0]
    event, = migrate['events']
    assert (event['event'], event['result']) == (
        'conductor_migrate_server', 'Success')
    assert event['details'] is None
    assert len(decision_records.decisions(ctxt, world.cell1,
                                          inst.uuid)) == 1


def test_unknown_kind_and_no_action(world):
    ctxt = fx.ctxt()
    inst = instance_records.create_instance(ctxt, world.cell1,
                                            fx.instance())
    assert not decision_records.record(ctxt, world.cell1, inst.uuid,
                                       'build', {})
    with pytest.raises(ValueError):
        decision_records.details('teleport', {})
    assert decision_records.decisions(ctxt, world.cell1, inst.uuid) == []
