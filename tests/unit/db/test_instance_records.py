# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Instances, faults and actions in a cell database."""

import json

import pytest

from common.db import action_records
from common.db import cell_tables
from common.db import instance_records as records
from common import exception
from common.objects import instance as instance_obj
from tests.unit.db import records_fixtures as fx


@pytest.fixture
def cell(tmp_path):
    database = fx.cell_database(tmp_path)
    yield database
    database.dispose()


def _create(cell, **kwargs):
    return records.create_instance(fx.ctxt(), cell, fx.instance(**kwargs))


def test_create_and_get_round_trip(cell):
    inst = fx.instance(host='h1', node='n1', availability_zone='az1',
                       numa_topology={'cells': []}, metadata={'k': 'v'},
                       image_meta={'hw_cpu_policy': 'dedicated'},
                       pci_requests=[{'alias': 'a', 'count': 1}],
                       cell_uuid=fx.CELL1_UUID)
    created = records.create_instance(fx.ctxt(), cell, inst)
    assert created.created_at and created.cell_uuid == fx.CELL1_UUID
    got = records.get_instance(fx.ctxt(), cell, inst.uuid)
    assert got.flavor == inst.flavor
    assert (got.host, got.node, got.availability_zone) == ('h1', 'n1', 'az1')
    assert got.numa_topology == {'cells': []}
    assert got.metadata == {'k': 'v'} and got.pci_requests[0]['count'] == 1
    assert got.vm_state == instance_obj.BUILDING and not got.deleted
    # What create answers (without reading the row back) is the row.
    got.cell_uuid = created.cell_uuid
    assert created.to_primitive() == got.to_primitive()
    with pytest.raises(exception.InstanceNotFound):
        records.get_instance(fx.ctxt(), cell, 'nope')


def test_update_with_task_state_guard(cell):
    inst = _create(cell)
    ctxt = fx.ctxt()
    updated = records.update_instance(
        ctxt, cell, inst.uuid,
        {'task_state': instance_obj.SPAWNING, 'host': 'h2',
         'launched_at': '2024-01-02T03:04:05'},
        expected_task_state=instance_obj.SCHEDULING)
    assert updated.task_state == 'spawning' and updated.host == 'h2'
    assert updated.launched_at == '2024-01-02T03:04:05'
    with pytest.raises(exception.UnexpectedTaskStateError) as err:
        records.update_instance(ctxt, cell, inst.uuid, {'task_state': None},
                                expected_task_state=[None, 'deleting'])
    assert 'spawning' in str(err.value)
    done = records.update_instance(
        ctxt, cell, inst.uuid,
        {'task_state': None, 'vm_state': instance_obj.ACTIVE},
        expected_task_state=['spawning', None])
    assert done.status == 'ACTIVE'
    records.update_instance(ctxt, cell, inst.uuid, {'display_name': 'x'},
                            expected_task_state=[None])
    with pytest.raises(ValueError):
        records.update_instance(ctxt, cell, inst.uuid, {'uuid': 'other'})
    with pytest.raises(exception.InstanceNotFound):
        records.update_instance(ctxt, cell, 'nope', {'host': 'h'})


def test_destroy_is_a_soft_delete(cell):
    inst = _create(cell)
    gone = records.destroy_instance(fx.ctxt(), cell, inst.uuid)
    assert gone.deleted and gone.vm_state == instance_obj.DELETED
    assert gone.terminated_at is not None
    with pytest.raises(exception.InstanceNotFound):
        records.get_instance(fx.ctxt(), cell, inst.uuid)
    assert records.get_instance(fx.ctxt(), cell, inst.uuid,
                                read_deleted=True).deleted
    with pytest.raises(exception.InstanceNotFound):
        records.destroy_instance(fx.ctxt(), cell, inst.uuid)
    # The uuid stays taken by the deleted row's history.
    assert records.list_instances(fx.ctxt(), cell) == []
    assert len(records.list_instances(fx.ctxt(), cell, deleted=True)) == 1
    assert len(records.list_instances(fx.ctxt(), cell, deleted=None)) == 1


def test_faults_latest_first_and_attached_to_errors(cell):
    inst = _create(cell, vm_state=instance_obj.ERROR)
    ctxt = fx.ctxt()
    records.add_fault(ctxt, cell, inst.uuid, 500, 'first')
    records.add_fault(ctxt, cell, inst.uuid, 500, 'No valid host ' * 40,
                      details={'summary': '3 hosts'}, host='h1')
    fault = records.get_instance(ctxt, cell, inst.uuid).fault
    assert len(fault['message']) == 255 and fault['host'] == 'h1'
    assert json.loads(fault['details']) == {'summary': '3 hosts'}
    listed, = records.list_instances(ctxt, cell)
    assert listed.fault['code'] == 500
    assert records.get_instances(ctxt, cell, [inst.uuid, 'x'])[
        inst.uuid].fault['host'] == 'h1'


def test_listing_filters_and_pages(cell):
    made = [_create(cell, host='h%d' % (i % 2)) for i in range(5)]
    _create(cell, project_id='p2')
    ctxt = fx.ctxt()
    newest_first = [i.uuid for i in reversed(made)]
    page1 = records.list_instances(ctxt, cell, project_id='p1', limit=2)
    assert [i.uuid for i in page1] == newest_first[:2]
    page2 = records.list_instances(ctxt, cell, project_id='p1', limit=2,
                                   marker=page1[-1].uuid)
    assert [i.uuid for i in page2] == newest_first[2:4]
    assert len(records.list_instances(ctxt, cell, host='h0')) == 3
    with pytest.raises(exception.InstanceNotFound):
        records.list_instances(ctxt, cell, marker='nope')


def test_listing_by_last_change_is_done_in_the_query(cell):
    """changes-since/changes-before bound updated_at, else created_at
    (a row never updated), inclusive, deleted rows included on request.
    """
    ctxt = fx.ctxt()
    old, touched, gone = _create(cell), _create(cell), _create(cell)
    tables = cell_tables.instances
    stamps = {old.uuid: ('2026-01-01T00:00:00', None),
              touched.uuid: ('2026-01-01T00:00:00', '2026-01-03T00:00:00'),
              gone.uuid: ('2026-01-02T00:00:00', '2026-01-02T12:00:00')}

    def stamp(ctx):
        for uuid, (created, updated) in stamps.items():
            ctx.session.execute(tables.update().where(
                tables.c.uuid == uuid).values(
                    created_at=records.to_datetime(created),
                    updated_at=records.to_datetime(updated) if updated
                    else None))
    cell.writer(stamp)(ctxt)
    records.destroy_instance(ctxt, cell, gone.uuid)
    cell.writer(stamp)(ctxt)

    def listed(**kwargs):
        return sorted(i.uuid for i in records.list_instances(
            ctxt, cell, deleted=None, **kwargs))
    day = records.to_datetime
    assert listed(changed_since=day('2026-01-02T00:00:00')) == sorted(
        [touched.uuid, gone.uuid])
    assert listed(changed_since=day('2026-01-01T00:00:00'),
                  changed_before=day('2026-01-01T00:00:00')) == [old.uuid]
    assert listed(changed_since=day('2026-01-02T12:00:00'),
                  changed_before=day('2026-01-02T12:00:00')) == [gone.uuid]
    assert listed(changed_since=day('2026-01-04T00:00:00')) == []
    assert [i.uuid for i in records.list_instances(
        ctxt, cell, changed_since=day('2026-01-02T00:00:00'))] == [
            touched.uuid]


def test_count_by_project(cell):
    _create(cell, flavor=fx.flavor(vcpus=2, memory_mb=1024))
    _create(cell, flavor=fx.flavor(vcpus=4, memory_mb=2048))
    gone = _create(cell)
    records.destroy_instance(fx.ctxt(), cell, gone.uuid)
    assert records.count_instances_by_project(fx.ctxt(), cell, 'p1') == (
        2, 6, 3072)


def test_count_by_project_follows_resizes_and_older_rows(cell):
    small = _create(cell, flavor=fx.flavor(vcpus=2, memory_mb=1024))
    records.update_instance(fx.ctxt(), cell, small.uuid,
                            {'flavor': fx.flavor(vcpus=8, memory_mb=8192)})
    older = _create(cell, flavor=fx.flavor(vcpus=1, memory_mb=512))

    def forget_sizes(ctx):
        # As a row written by a release without the columns.
        ctx.session.execute(cell_tables.instances.update().where(
            cell_tables.instances.c.uuid == older.uuid).values(
            vcpus=None, memory_mb=None))
    cell.writer(forget_sizes)(fx.ctxt())

    assert records.count_instances_by_project(fx.ctxt(), cell, 'p1') == (
        2, 9, 8704)
    assert records.count_instances_by_project(fx.ctxt(), cell, 'p2') == (
        0, 0, 0)


def test_actions_and_events(cell):
    inst = _create(cell)
    ctxt = fx.ctxt()
    assert action_records.action_event_start(ctxt, cell, inst.uuid,
                                             'e0') is None
    action_records.record_action(ctxt, cell, inst.uuid, 'create')
    action_records.action_event_start(ctxt, cell, inst.uuid,
                                      'compute_build_and_run_instance', 'h1')
    action_records.action_event_finish(ctxt, cell, inst.uuid,
                                       'compute_build_and_run_instance', 'h1',
                                       'Error', traceback='boom')
    action_records.action_event_finish(ctxt, cell, inst.uuid, 'never_started',
                                       'h1', 'Success')
    action, = action_records.list_actions(ctxt, cell, inst.uuid)
    assert action['action'] == 'create' and action['message'] == 'Error'
    assert action['request_id'] == ctxt.request_id
    assert [(e['event'], e['result']) for e in action['events']] == [
        ('compute_build_and_run_instance', 'Error'),
        ('never_started', 'Success')]
    assert action['events'][0]['traceback'] == 'boom'


def test_update_records_its_action_event_in_the_same_transaction(cell):
    inst = _create(cell)
    ctxt = fx.ctxt()
    action_records.record_action(ctxt, cell, inst.uuid, 'create')
    event = 'compute_build_and_run_instance'
    records.update_instance(
        ctxt, cell, inst.uuid, {'task_state': instance_obj.SPAWNING},
        expected_task_state=instance_obj.SCHEDULING,
        action_event={'phase': 'start', 'event': event, 'host': 'h1'})
    started, = action_records.list_actions(ctxt, cell, inst.uuid)[0]['events']
    assert started['start_time'] and started['finish_time'] is None

    # NOTE: a failed guard rolls back: no event finished.
    with pytest.raises(exception.UnexpectedTaskStateError):
        records.update_instance(
            ctxt, cell, inst.uuid, {'task_state': None},
            expected_task_state=instance_obj.SCHEDULING,
            action_event={'phase': 'finish', 'event': event,
                          'result': 'Success'})
    assert action_records.list_actions(ctxt, cell, inst.uuid)[0]['events'][0][
        'finish_time'] is None

    records.update_instance(
        ctxt, cell, inst.uuid, {'task_state': None, 'vm_state': 'active'},
        expected_task_state=instance_obj.SPAWNING,
        action_event={'phase': 'finish', 'event': event, 'host': 'h1',
                      'result': 'Success'})
    action, = action_records.list_actions(ctxt, cell, inst.uuid)
    assert [(e['event'], e['result']) for e in action['events']] == [
        (event, 'Success')]
    assert action['events'][0]['finish_time']


@pytest.mark.parametrize('action_event,message', [
    ('start', 'must be a dict'),
    ({'phase': 'begin', 'event': 'e'}, "phase must be 'start' or 'finish'"),
    ({'phase': 'start'}, 'needs an event name'),
    ({'phase': 'start', 'event': 'e', 'colour': 1}, 'unknown keys colour'),
])
def test_a_malformed_action_event_changes_nothing(cell, action_event,
                                                  message):
    inst = _create(cell)
    with pytest.raises(ValueError, match=message):
        records.update_instance(fx.ctxt(), cell, inst.uuid,
                                {'display_name': 'changed'},
                                action_event=action_event)
    assert records.get_instance(fx.ctxt(), cell,
                                inst.uuid).display_name != 'changed'
