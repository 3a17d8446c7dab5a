# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The details of a failed instance action event (compute API 2.84)."""

import traceback

import pytest

from common.db import action_records
from common.db import decision_records
from common.db import event_details
from common.db import instance_records as records
from common import exception
from tests.unit.db import records_fixtures as fx


def _traceback_of(exc, cause=None):
    try:
        try:
            if cause is not None:
                raise cause
        finally:
            raise exc
    except Exception:
        return traceback.format_exc()


@pytest.mark.parametrize('exc,expected', [
    (exception.NoValidHost(reason='3 hosts: 3 rejected'),
     'No valid host was found. 3 hosts: 3 rejected'),
    # NOTE: a library's message may say too much: its class name only.
    (ValueError('password=hunter2'), 'ValueError'),
    (ConnectionError(), 'ConnectionError'),
])
def test_berths_own_messages_and_other_class_names(exc, expected):
    assert event_details.from_traceback(_traceback_of(exc)) == expected


def test_the_last_exception_of_a_chain_counts():
    text = _traceback_of(exception.NoValidHost(reason='line one\nline two'),
                         cause=KeyError('x'))
    assert event_details.from_traceback(text) == (
        'No valid host was found. line one\nline two')


@pytest.mark.parametrize('text', [None, '', 'boom', 'Traceback (most '
                                  'recent call last):\n  File "x"\n'])
def test_no_traceback_no_details(text):
    assert event_details.from_traceback(text) is None


@pytest.fixture
def cell(tmp_path):
    database = fx.cell_database(tmp_path)
    yield database
    database.dispose()


def _events(cell, uuid):
    action, = action_records.list_actions(fx.ctxt(), cell, uuid)
    return {e['event']: e for e in action['events']}


def test_a_failed_event_gets_its_details_and_keeps_a_record(cell):
    inst = records.create_instance(fx.ctxt(), cell, fx.instance())
    ctxt = fx.ctxt()
    action_records.record_action(ctxt, cell, inst.uuid, 'migrate')
    tb = _traceback_of(exception.NoValidHost(reason='none fits'))
    action_records.action_event_start(ctxt, cell, inst.uuid,
                                      'compute_prep_resize')
    action_records.action_event_finish(ctxt, cell, inst.uuid,
                                       'compute_prep_resize', 'h1', 'Error',
                                       traceback=tb)
    action_records.action_event_finish(ctxt, cell, inst.uuid, 'compute_ok',
                                       'h1', 'Success', traceback=tb)
    # A placing event holds its decision record: a failure keeps it.
    action_records.action_event_start(ctxt, cell, inst.uuid,
                                      'conductor_migrate_server')
    decision_records.record(ctxt, cell, inst.uuid, 'migrate',
                            {'chosen': 'h2'})
    action_records.action_event_finish(ctxt, cell, inst.uuid,
                                       'conductor_migrate_server', 'c1',
                                       'Error', traceback=tb)
    events = _events(cell, inst.uuid)
    assert events['compute_prep_resize']['details'] == (
        'No valid host was found. none fits')
    assert events['compute_ok']['details'] is None
    assert decision_records.is_record(
        events['conductor_migrate_server']['details'])
