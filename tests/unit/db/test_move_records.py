# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A compute's step of a move read or written in one transaction."""

from oslo_db import exception as db_exc
import pytest

from common.db import action_records
from common.db import instance_records
from common.db import migration_records
from common.db import move_records
from common import exception
from common.objects import migration as migration_obj
from tests.unit import calls
from tests.unit.db import records_fixtures as fx

EVENT = 'compute_resize_instance'


@pytest.fixture
def cell(tmp_path):
    database = fx.cell_database(tmp_path)
    yield database
    database.dispose()


def _new_move(cell):
    """(instance uuid, migration uuid) of a server migrating from src to
    dst, task resize_prep, under a ``migrate`` action.
    """
    instance = instance_records.create_instance(fx.ctxt(), cell, fx.instance(
        host='src', node='src', task_state='resize_prep'))
    action_records.record_action(fx.ctxt(), cell, instance.uuid, 'migrate')
    migration = migration_records.create_migration(
        fx.ctxt(), cell, migration_obj.Migration(
            instance_uuid=instance.uuid, status=migration_obj.MIGRATING,
            migration_type=migration_obj.MIGRATION, source_compute='src',
            dest_compute='dst'))
    return instance.uuid, migration.uuid


@pytest.fixture
def move(cell):
    return _new_move(cell)


def _events(cell, uuid):
    action, = action_records.list_actions(fx.ctxt(), cell, uuid)
    return [(e['event'], e['result']) for e in action['events']]


def test_read_together_and_start_the_step(cell, move):
    uuid, migration_uuid = move
    instance, migration = move_records.get_move(
        fx.ctxt(), cell, uuid, migration_uuid, action_events=[
            {'phase': 'start', 'event': EVENT, 'host': 'src'}])
    assert (instance.uuid, migration.uuid) == (uuid, migration_uuid)
    assert _events(cell, uuid) == [(EVENT, None)]
    with pytest.raises(exception.MigrationNotFound):
        move_records.get_move(fx.ctxt(), cell, uuid, 'no-such-migration')


def test_step_written_at_once(cell, move):
    uuid, migration_uuid = move
    instance, migration = move_records.update_move(
        fx.ctxt(), cell, uuid, migration_uuid,
        migration_values={'status': migration_obj.POST_MIGRATING},
        expected_status=migration_obj.MIGRATING,
        instance_values={'task_state': 'resize_migrated'},
        expected_task_state=['resize_prep'],
        action_events=[{'phase': 'start', 'event': EVENT, 'host': 'src'},
                       {'phase': 'finish', 'event': EVENT, 'host': 'src',
                        'result': 'Success'}])
    assert instance.task_state == 'resize_migrated'
    assert migration.status == migration_obj.POST_MIGRATING
    assert _events(cell, uuid) == [(EVENT, 'Success')]


def test_a_step_started_earlier_keeps_its_start_time(cell, move):
    """A step's start and finish written together are one event that
    started when the compute says it did.
    """
    uuid, migration_uuid = move
    move_records.update_move(
        fx.ctxt(), cell, uuid, migration_uuid,
        action_events=[{'phase': 'start', 'event': EVENT, 'host': 'src',
                        'start_time': '2026-01-02T03:04:05.000006'},
                       {'phase': 'finish', 'event': EVENT, 'host': 'src',
                        'result': 'Success'}], brief=True)
    action, = action_records.list_actions(fx.ctxt(), cell, uuid)
    event, = action['events']
    assert event['start_time'] == '2026-01-02T03:04:05.000006'
    assert event['finish_time'] > event['start_time']
    assert (event['result'], event['host']) == ('Success', 'src')
    # NOTE: a start alone keeps its time too, and its finish closes it.
    other = 'compute_finish_resize'
    move_records.get_move(fx.ctxt(), cell, uuid, migration_uuid,
                          action_events=[{
                              'phase': 'start', 'event': other,
                              'start_time': '2026-01-02T03:04:06'}])
    move_records.update_move(
        fx.ctxt(), cell, uuid, migration_uuid, action_events=[
            {'phase': 'finish', 'event': other, 'result': 'Success'}],
        brief=True)
    action, = action_records.list_actions(fx.ctxt(), cell, uuid)
    assert [(e['event'], e['start_time'][:19], e['result'])
            for e in action['events'] if e['event'] == other] == [
        (other, '2026-01-02T03:04:06', 'Success')]


def test_a_failed_guard_leaves_nothing_written(cell, move):
    uuid, migration_uuid = move
    with pytest.raises(exception.UnexpectedTaskStateError):
        move_records.update_move(
            fx.ctxt(), cell, uuid, migration_uuid,
            migration_values={'status': migration_obj.POST_MIGRATING},
            expected_status=migration_obj.MIGRATING,
            instance_values={'task_state': 'resize_migrated'},
            expected_task_state=['resize_migrating'],
            action_events=[{'phase': 'start', 'event': EVENT}])
    migration = migration_records.get_migration(fx.ctxt(), cell,
                                                migration_uuid)
    assert migration.status == migration_obj.MIGRATING
    assert _events(cell, uuid) == []
    with pytest.raises(exception.UnexpectedMigrationStatusError):
        move_records.update_move(
            fx.ctxt(), cell, uuid, migration_uuid,
            migration_values={'status': migration_obj.FINISHED},
            expected_status=migration_obj.POST_MIGRATING,
            instance_values={'task_state': None},
            expected_task_state=['resize_prep'])
    instance = instance_records.get_instance(fx.ctxt(), cell, uuid)
    assert instance.task_state == 'resize_prep'


def test_events_go_under_the_latest_action(cell, move):
    uuid, migration_uuid = move
    action_records.record_action(fx.ctxt(), cell, uuid, 'confirmResize')
    move_records.update_move(
        fx.ctxt(), cell, uuid, migration_uuid,
        migration_values={'status': migration_obj.CONFIRMED},
        action_events=[{'phase': 'start', 'event': EVENT, 'host': 'src'},
                       {'phase': 'finish', 'event': EVENT, 'host': 'src',
                        'result': 'Success'}], brief=True)
    newest, oldest = action_records.list_actions(fx.ctxt(), cell, uuid)
    assert newest['action'] == 'confirmResize'
    assert [(e['event'], e['result']) for e in newest['events']] == [
        (EVENT, 'Success')]
    assert oldest['events'] == []


def test_a_brief_step_reads_nothing_back_but_still_says_why_it_failed(
        cell, move):
    uuid, migration_uuid = move
    assert move_records.update_move(
        fx.ctxt(), cell, uuid, migration_uuid,
        migration_values={'status': migration_obj.POST_MIGRATING},
        expected_status=migration_obj.MIGRATING,
        instance_values={'task_state': 'resize_migrated'},
        expected_task_state=['resize_prep'], brief=True) == (None, None)
    assert migration_records.get_migration(
        fx.ctxt(), cell, migration_uuid).status == \
        migration_obj.POST_MIGRATING
    # Nor without migration values: the migration is not read either.
    assert move_records.update_move(
        fx.ctxt(), cell, uuid, migration_uuid,
        instance_values={'task_state': 'resize_finish'},
        expected_task_state=['resize_migrated'], brief=True) == (None, None)
    assert instance_records.get_instance(
        fx.ctxt(), cell, uuid).task_state == 'resize_finish'
    with pytest.raises(exception.UnexpectedMigrationStatusError) as err:
        move_records.update_move(
            fx.ctxt(), cell, uuid, migration_uuid,
            migration_values={'status': migration_obj.FINISHED},
            expected_status=migration_obj.MIGRATING, brief=True)
    assert migration_obj.POST_MIGRATING in str(err.value)
    with pytest.raises(exception.MigrationNotFound):
        move_records.update_move(
            fx.ctxt(), cell, uuid, 'no-such-migration',
            migration_values={'status': migration_obj.FINISHED}, brief=True)


def test_several_steps_in_one_transaction_each_all_or_nothing(cell, move):
    uuid, migration_uuid = move
    other, other_migration = _new_move(cell)
    step = {'migration_values': {'status': migration_obj.POST_MIGRATING},
            'expected_status': migration_obj.MIGRATING,
            'instance_values': {'task_state': 'resize_migrated'},
            'action_events': [{'phase': 'start', 'event': EVENT,
                               'host': 'src'}]}
    outcomes = move_records.update_moves(fx.ctxt(), cell, [
        dict(step, instance_uuid=uuid, migration_uuid=migration_uuid,
             expected_task_state=['resize_prep']),
        # The migration's guard holds, the instance's does not: its
        # migration must not move either.
        dict(step, instance_uuid=other, migration_uuid=other_migration,
             expected_task_state=['resize_migrating'], brief=True),
        {'instance_uuid': uuid, 'migration_uuid': 'no-such-migration',
         'migration_values': {'status': migration_obj.FINISHED}},
        {'instance_uuid': uuid, 'migration_uuid': migration_uuid,
         'instance_values': {'uuid': 'another'}},
    ])
    instance, migration = outcomes[0]
    assert instance.task_state == 'resize_migrated'
    assert migration.status == migration_obj.POST_MIGRATING
    assert isinstance(outcomes[1], exception.UnexpectedTaskStateError)
    assert isinstance(outcomes[2], exception.MigrationNotFound)
    assert isinstance(outcomes[3], ValueError)
    assert migration_records.get_migration(
        fx.ctxt(), cell, other_migration).status == migration_obj.MIGRATING
    assert _events(cell, uuid) == [(EVENT, None)]
    assert _events(cell, other) == []


def test_a_batch_whose_guards_hold_takes_no_savepoint(
        cell, move, monkeypatch):
    """Savepoints (two statements a step) are for a batch where a step
    misses its guard; one where none does is written without them.
    """
    uuid, migration_uuid = move
    other, other_migration = _new_move(cell)
    alone = calls.record_calls(monkeypatch, move_records._MoveUpdate,
                               'apply_alone',
                               lambda step, *a, **k: step.instance_uuid)
    step = {'migration_values': {'status': migration_obj.POST_MIGRATING},
            'expected_status': migration_obj.MIGRATING,
            'instance_values': {'task_state': 'resize_finish'},
            'expected_task_state': ['resize_prep'], 'brief': True}
    outcomes = move_records.update_moves(fx.ctxt(), cell, [
        dict(step, instance_uuid=uuid, migration_uuid=migration_uuid),
        dict(step, instance_uuid=other, migration_uuid=other_migration)])
    assert [o[1] for o in outcomes] == [None, None]
    assert alone == []
    # NOTE: the same steps again miss the guard they just moved past: the
    # batch is written again step by step, each one left unwritten.
    outcomes = move_records.update_moves(fx.ctxt(), cell, [
        dict(step, instance_uuid=uuid, migration_uuid=migration_uuid),
        dict(step, instance_uuid=other, migration_uuid=other_migration)])
    assert all(isinstance(o, exception.UnexpectedMigrationStatusError)
               for o in outcomes)
    assert sorted(alone) == sorted([uuid, other])
    for migration in (migration_uuid, other_migration):
        assert migration_records.get_migration(
            fx.ctxt(), cell, migration).status == \
            migration_obj.POST_MIGRATING


def test_a_step_of_a_batch_reads_nothing_back_when_brief(cell, move):
    uuid, migration_uuid = move
    outcome, = move_records.update_moves(fx.ctxt(), cell, [{
        'instance_uuid': uuid, 'migration_uuid': migration_uuid,
        'migration_values': {'status': migration_obj.POST_MIGRATING},
        'expected_status': migration_obj.MIGRATING, 'brief': True}])
    assert outcome == (None, None)
    # A migration update whose instance is gone is undone: the instance
    # read after it fails.
    instance_records.destroy_instance(fx.ctxt(), cell, uuid)
    outcome, = move_records.update_moves(fx.ctxt(), cell, [{
        'instance_uuid': uuid, 'migration_uuid': migration_uuid,
        'migration_values': {'status': migration_obj.ERROR}}])
    assert isinstance(outcome, exception.InstanceNotFound)
    assert migration_records.get_migration(
        fx.ctxt(), cell, migration_uuid).status == \
        migration_obj.POST_MIGRATING


def test_a_deadlock_in_a_batch_runs_the_whole_batch_again(cell, move,
                                                          monkeypatch):
    """MariaDB ends a deadlocked transaction with its savepoints: the
    batch must go up as a deadlock and run again, not fail on the gone
    savepoint.
    """
    uuid, migration_uuid = move
    record = action_records.record_action_event
    deadlocks = []

    def deadlock_once(ctx, *args, **kwargs):
        if not deadlocks:
            deadlocks.append(True)
            ctx.session.connection().exec_driver_sql('ROLLBACK')
            raise db_exc.DBDeadlock()
        return record(ctx, *args, **kwargs)
    monkeypatch.setattr(action_records, 'record_action_event',
                        deadlock_once)
    outcome, = move_records.update_moves(fx.ctxt(), cell, [{
        'instance_uuid': uuid, 'migration_uuid': migration_uuid,
        'migration_values': {'status': migration_obj.POST_MIGRATING},
        'expected_status': migration_obj.MIGRATING,
        'instance_values': {'task_state': 'resize_migrated'},
        'expected_task_state': ['resize_prep'],
        'action_events': [{'phase': 'start', 'event': EVENT,
                           'host': 'src'}]}])
    assert deadlocks and outcome[1].status == migration_obj.POST_MIGRATING
    assert _events(cell, uuid) == [(EVENT, None)]


def test_a_batch_records_each_steps_events_under_its_own_latest_action(
        cell, move):
    uuid, migration_uuid = move
    other, other_migration = _new_move(cell)
    action_records.record_action(fx.ctxt(), cell, uuid, 'confirmResize')
    finish = {'phase': 'finish', 'event': EVENT, 'host': 'src',
              'result': 'Success'}
    outcomes = move_records.update_moves(fx.ctxt(), cell, [
        {'instance_uuid': uuid, 'migration_uuid': migration_uuid,
         'action_events': [finish], 'brief': True},
        {'instance_uuid': other, 'migration_uuid': other_migration,
         'action_events': [finish], 'brief': True}])
    # NOTE: brief: nothing read back, not even the migration.
    assert outcomes == [(None, None), (None, None)]
    newest, oldest = action_records.list_actions(fx.ctxt(), cell, uuid)
    assert newest['action'] == 'confirmResize'
    assert [(e['event'], e['result']) for e in newest['events']] == [
        (EVENT, 'Success')]
    assert oldest['events'] == []
    assert _events(cell, other) == [(EVENT, 'Success')]


def _finished(cell, vm_state='resized', task_state=None):
    """(instance uuid, migration uuid) of a move in VERIFY_RESIZE, the
    instance then set to ``vm_state`` and ``task_state``.
    """
    uuid, migration_uuid = _new_move(cell)
    migration_records.update_migration(
        fx.ctxt(), cell, migration_uuid,
        {'status': migration_obj.FINISHED})
    instance_records.update_instance(
        fx.ctxt(), cell, uuid, {'vm_state': vm_state,
                                'task_state': task_state})
    return uuid, migration_uuid


def _actions(cell, uuid):
    return [a['action']
            for a in action_records.list_actions(fx.ctxt(), cell, uuid)]


def test_an_expired_move_is_claimed_with_a_confirm_action(cell):
    uuid, migration_uuid = _finished(cell)
    instance, migration = move_records.claim_expired(
        fx.ctxt(), cell, uuid, migration_uuid)
    assert (instance.uuid, migration.status) == (
        uuid, migration_obj.CONFIRMING)
    assert _actions(cell, uuid) == ['confirmResize', 'migrate']
    # NOTE: a user's confirm or revert won meanwhile: nothing more.
    with pytest.raises(exception.UnexpectedMigrationStatusError):
        move_records.claim_expired(fx.ctxt(), cell, uuid, migration_uuid)
    assert _actions(cell, uuid) == ['confirmResize', 'migrate']


def test_an_expired_move_of_a_busy_server_waits(cell):
    uuid, migration_uuid = _finished(cell, task_state='deleting')
    with pytest.raises(exception.UnexpectedTaskStateError):
        move_records.claim_expired(fx.ctxt(), cell, uuid, migration_uuid)
    migration = migration_records.get_migration(fx.ctxt(), cell,
                                                migration_uuid)
    assert migration.status == migration_obj.FINISHED
    assert _actions(cell, uuid) == ['migrate']


def test_an_expired_move_of_a_server_reset_to_active_is_an_error(cell):
    uuid, migration_uuid = _finished(cell, vm_state='active')
    instance, migration = move_records.claim_expired(
        fx.ctxt(), cell, uuid, migration_uuid)
    assert (instance.vm_state, migration.status) == (
        'active', migration_obj.ERROR)
    assert _actions(cell, uuid) == ['migrate']


def test_an_expired_move_of_a_deleted_server_is_an_error(cell):
    uuid, migration_uuid = _finished(cell)
    instance_records.destroy_instance(fx.ctxt(), cell, uuid)
    instance, migration = move_records.claim_expired(
        fx.ctxt(), cell, uuid, migration_uuid)
    assert (instance, migration.status) == (None, migration_obj.ERROR)
