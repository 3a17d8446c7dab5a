# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Guarded updates of several instances in one transaction."""

import pytest

from common.db import action_records
from common.db import instance_records as records
from common.db import instance_updates
from common import exception
from common.objects import instance as instance_obj
from tests.unit.db import records_fixtures as fx

EVENT = 'compute_build_and_run_instance'


@pytest.fixture
def cell(tmp_path):
    database = fx.cell_database(tmp_path)
    yield database
    database.dispose()


def _building(cell, task_state=instance_obj.SCHEDULING):
    """A new instance with its create action, in ``task_state``."""
    ctxt = fx.ctxt()
    inst = records.create_instance(ctxt, cell, fx.instance(),
                                   action='create')
    if task_state != instance_obj.SCHEDULING:
        records.update_instance(ctxt, cell, inst.uuid,
                                {'task_state': task_state})
    return inst.uuid


def _spawning(uuid, host='h1'):
    return {'instance_uuid': uuid,
            'values': {'task_state': instance_obj.SPAWNING, 'host': host},
            'expected_task_state': instance_obj.SCHEDULING,
            'action_event': {'phase': 'start', 'event': EVENT,
                             'host': host}}


def _active(uuid):
    return {'instance_uuid': uuid,
            'values': {'task_state': None, 'vm_state': instance_obj.ACTIVE,
                       'launched_at': '2024-01-02T03:04:05'},
            'expected_task_state': instance_obj.SPAWNING,
            'action_event': {'phase': 'finish', 'event': EVENT,
                             'host': 'h1', 'result': 'Success'}}


def _events(cell, uuid):
    action, = action_records.list_actions(fx.ctxt(), cell, uuid)
    return [(e['event'], e['result'], bool(e['finish_time']))
            for e in action['events']], action


def test_every_update_and_its_event_happen_as_alone(cell):
    first, second = _building(cell), _building(cell)
    results = instance_updates.update_instances(
        fx.ctxt(), cell, [_spawning(second, 'h2'), _spawning(first)])
    assert results == [None, None]
    for uuid, host in ((first, 'h1'), (second, 'h2')):
        got = records.get_instance(fx.ctxt(), cell, uuid)
        assert (got.task_state, got.host) == ('spawning', host)
        assert _events(cell, uuid)[0] == [(EVENT, None, False)]

    assert instance_updates.update_instances(
        fx.ctxt(), cell, [_active(first), _active(second)]) == [None, None]
    got = records.get_instance(fx.ctxt(), cell, first)
    assert got.status == 'ACTIVE'
    assert got.launched_at == '2024-01-02T03:04:05'
    events, action = _events(cell, first)
    assert events == [(EVENT, 'Success', True)]
    assert action['finish_time'] and action['message'] is None


def test_an_update_that_cannot_happen_is_reported_and_the_rest_happen(cell):
    ready = _building(cell)
    deleting = _building(cell, task_state='deleting')
    results = instance_updates.update_instances(fx.ctxt(), cell, [
        _spawning(deleting), _spawning('no-such-instance'),
        _spawning(ready),
        dict(_spawning(ready), values={'uuid': 'other'})])

    assert results[2] is None
    assert isinstance(results[0], exception.UnexpectedTaskStateError)
    assert 'deleting' in str(results[0])
    assert isinstance(results[1], exception.InstanceNotFound)
    assert isinstance(results[3], ValueError)
    assert 'not updatable: uuid' in str(results[3])
    assert records.get_instance(fx.ctxt(), cell,
                                ready).task_state == 'spawning'
    # NOTE: the event of an update that did not happen is not recorded.
    assert records.get_instance(fx.ctxt(), cell,
                                deleting).task_state == 'deleting'
    assert _events(cell, deleting)[0] == []
    assert _events(cell, ready)[0] == [(EVENT, None, False)]


def test_a_malformed_event_is_refused_before_anything_is_written(cell):
    uuid = _building(cell)
    bad = dict(_spawning(uuid), action_event={'phase': 'begin',
                                              'event': EVENT})
    result, = instance_updates.update_instances(fx.ctxt(), cell, [bad])
    assert isinstance(result, ValueError)
    assert records.get_instance(fx.ctxt(), cell,
                                uuid).task_state == 'scheduling'


def test_updates_of_one_instance_run_in_the_order_given(cell):
    uuid = _building(cell)
    results = instance_updates.update_instances(
        fx.ctxt(), cell, [_spawning(uuid), _active(uuid)])
    assert results == [None, None]
    assert records.get_instance(fx.ctxt(), cell, uuid).status == 'ACTIVE'
    assert _events(cell, uuid)[0] == [(EVENT, 'Success', True)]


def test_the_event_goes_to_the_latest_action(cell):
    uuid = _building(cell)
    action_records.record_action(fx.ctxt(), cell, uuid, 'rebuild')
    instance_updates.update_instances(fx.ctxt(), cell, [_spawning(uuid)])
    newest, older = action_records.list_actions(fx.ctxt(), cell, uuid)
    assert newest['action'] == 'rebuild' and len(newest['events']) == 1
    assert older['action'] == 'create' and older['events'] == []
