# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""GET /os-berth-scheduler/decisions/{server_id}: why a server is there."""

from common.db import action_records
from common.db import cells
from common.db import decision_records
from tests.unit.api.helpers import V


def test_admin_reads_the_records_newest_first(world):
    world.add_host('node1')
    uuid = world.add_instance('cell1', host='node1')
    database = cells.get_cell_database(world.urls['cell1'])
    ctxt = world.admin_context()
    action_records.record_action(ctxt, database, uuid, 'create',
                                 request_id='req-1')
    decision_records.record(ctxt, database, uuid, 'build',
                            {'selected': ['node1', 'node1'],
                             'summary': '1 host'})
    status, body, _r = world.client.get(
        V + '/os-berth-scheduler/decisions/%s' % uuid)
    assert status == 200, body
    assert (body['server_id'], body['host']) == (uuid, 'node1')
    decision, = body['decisions']
    assert decision['kind'] == 'build' and decision['request_id'] == 'req-1'
    assert decision['selected'] == ['node1', 'node1']


def test_no_record_unknown_server_and_non_admins(world):
    world.add_host('node1')
    uuid = world.add_instance('cell1', host='node1', project_id='projA')
    path = V + '/os-berth-scheduler/decisions/%s' % uuid
    status, body, _r = world.client.get(path)
    assert status == 200 and body['decisions'] == []
    status, _b, _r = world.client.get(path, token='alice:projA')
    assert status == 403
    status, _b, _r = world.client.get(
        V + '/os-berth-scheduler/decisions/'
        'ffffffff-0000-0000-0000-000000000000')
    assert status == 404
