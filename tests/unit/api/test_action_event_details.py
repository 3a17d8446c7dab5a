# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Instance action events show what went wrong from 2.84 (``details``)."""

import datetime

from common.db import cell_tables
from common.db import decision_records
from tests.unit.api.helpers import V

NOW = datetime.datetime(2026, 3, 1, 10, 0, 0)


def _action_with_events(world, uuid, events):
    action_id = world.insert(
        'cell1', cell_tables.instance_actions, action='migrate',
        instance_uuid=uuid, request_id='req-1', user_id='alice',
        project_id='projA', start_time=NOW, message='Error', deleted=0,
        created_at=NOW)
    for name, result, details in events:
        world.insert('cell1', cell_tables.instance_actions_events,
                     event=name, action_id=action_id, start_time=NOW,
                     finish_time=NOW, result=result, traceback='tb',
                     host='c1', details=details, deleted=0, created_at=NOW)


def _events(world, uuid, version, token='admin'):
    status, body, _ = world.client.get(
        V + '/servers/%s/os-instance-actions/req-1' % uuid, version=version,
        token=token)
    assert status == 200, body
    return {e['event']: e for e in body['instanceAction']['events']}


def test_failed_events_show_their_details_from_2_84(world):
    uuid = world.add_instance('cell1', host='c1', project_id='projA')
    record = decision_records.details('migrate', {'chosen': 'c2'})
    _action_with_events(world, uuid, [
        ('compute_prep_resize', 'Error', 'No valid host was found. full'),
        ('conductor_migrate_server', 'Error', record),
        ('compute_resize_instance', 'Success', None),
    ])
    for event in _events(world, uuid, '2.83').values():
        assert 'details' not in event
    events = _events(world, uuid, '2.84')
    assert events['compute_prep_resize']['details'] == (
        'No valid host was found. full')
    # NOTE: a placement's decision record is Berth's, not a failure.
    assert events['conductor_migrate_server']['details'] is None
    assert events['compute_resize_instance']['details'] is None
    # The owner sees them too, without the traceback.
    events = _events(world, uuid, '2.84', token='alice:projA')
    assert events['compute_prep_resize']['details'] == (
        'No valid host was found. full')
    assert 'traceback' not in events['compute_prep_resize']
