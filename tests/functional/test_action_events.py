# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Instance action events on MariaDB and PostgreSQL.

The latest action (by creation time, then id) gets the event; an open
event is finished in place, one never started is recorded finished, and
a build's events are written with its guarded instance updates, alone or
in a batch. The unit tests show this on SQLite only.
"""

import pytest

from common.conf import CONF
from common.db import action_records
from common.db import cell_tables
from common.db import cells
from common.db import instance_records as records
from common.db import instance_updates
from common import exception
from common.objects import instance as instance_obj
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional.placement.conftest import make_database  # noqa
from tests.unit.db import records_fixtures as fx

EVENT = 'compute_build_and_run_instance'


@pytest.fixture(params=['mysql', 'postgresql'])
def cell(request, make_database):  # noqa
    database = cells.database_for_url(
        'events test', make_database(request.param), CONF)
    cell_tables.metadata.create_all(database.engine())
    yield database
    database.dispose()


def _events(cell, uuid):
    action, = action_records.list_actions(fx.ctxt(), cell, uuid)
    return action, [(e['event'], e['result'], e['host'], bool(
        e['finish_time'])) for e in action['events']]


def test_a_build_records_its_events(cell):
    ctxt = fx.ctxt()
    inst = records.create_instance(
        ctxt, cell, fx.instance())
    assert action_records.action_event_start(ctxt, cell, inst.uuid,
                                             'e0') is None

    action_records.record_action(ctxt, cell, inst.uuid, 'create')
    records.update_instance(
        ctxt, cell, inst.uuid, {'task_state': instance_obj.SPAWNING},
        expected_task_state=instance_obj.SCHEDULING,
        action_event={'phase': 'start', 'event': EVENT, 'host': 'h1'})
    action, events = _events(cell, inst.uuid)
    assert events == [(EVENT, None, 'h1', False)]
    assert action['finish_time'] is None

    records.update_instance(
        ctxt, cell, inst.uuid, {'task_state': None, 'vm_state': 'active'},
        expected_task_state=instance_obj.SPAWNING,
        action_event={'phase': 'finish', 'event': EVENT, 'host': 'h1',
                      'result': 'Success'})
    action, events = _events(cell, inst.uuid)
    assert events == [(EVENT, 'Success', 'h1', True)]
    assert action['finish_time'] and action['message'] is None


def test_only_the_latest_action_is_finished(cell):
    ctxt = fx.ctxt()
    inst = records.create_instance(ctxt, cell, fx.instance())
    action_records.record_action(ctxt, cell, inst.uuid, 'create')
    action_records.action_event_start(ctxt, cell, inst.uuid, EVENT, 'h1')
    action_records.record_action(ctxt, cell, inst.uuid, 'delete')
    action_records.action_event_finish(ctxt, cell, inst.uuid, 'never_started',
                                       'h2', 'Error', traceback='boom')

    newest, older = action_records.list_actions(ctxt, cell, inst.uuid)
    assert newest['action'] == 'delete' and newest['message'] == 'Error'
    assert [(e['event'], e['result'], e['traceback'])
            for e in newest['events']] == [('never_started', 'Error',
                                            'boom')]
    assert older['action'] == 'create' and older['finish_time'] is None
    assert [(e['event'], e['finish_time']) for e in older['events']] == [
        (EVENT, None)]


def test_a_batch_records_each_update_and_its_event(cell):
    """Conductor RPC 1.7: several builds' updates in one transaction."""
    ctxt = fx.ctxt()
    ready = records.create_instance(ctxt, cell, fx.instance(),
                                    action='create').uuid
    deleting = records.create_instance(ctxt, cell, fx.instance(),
                                       action='create').uuid
    records.update_instance(ctxt, cell, deleting, {'task_state': 'deleting'})

    def spawning(uuid):
        return {'instance_uuid': uuid,
                'values': {'task_state': instance_obj.SPAWNING},
                'expected_task_state': instance_obj.SCHEDULING,
                'action_event': {'phase': 'start', 'event': EVENT,
                                 'host': 'h1'}}
    results = instance_updates.update_instances(
        ctxt, cell, [spawning(deleting), spawning(ready),
                     spawning('no-such-instance')])
    assert results[1] is None
    assert isinstance(results[0], exception.UnexpectedTaskStateError)
    assert isinstance(results[2], exception.InstanceNotFound)
    assert _events(cell, ready)[1] == [(EVENT, None, 'h1', False)]
    assert _events(cell, deleting)[1] == []

    assert instance_updates.update_instances(ctxt, cell, [{
        'instance_uuid': ready,
        'values': {'task_state': None, 'vm_state': 'active'},
        'expected_task_state': instance_obj.SPAWNING,
        'action_event': {'phase': 'finish', 'event': EVENT, 'host': 'h1',
                         'result': 'Success'}}]) == [None]
    action, events = _events(cell, ready)
    assert events == [(EVENT, 'Success', 'h1', True)]
    assert action['finish_time']
