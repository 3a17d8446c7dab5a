# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The drain's moves, server by server, against a fake compute API."""

import _thread
import io

import pytest

from services.manage import compute_client
from services.manage import drain_moves as moves
from services.manage import drain_progress
from tests.unit.manage import drain_fakes


class Clock(object):
    """Time that passes only when the drain waits (a poll)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def api():
    return drain_fakes.FakeComputeAPI()


def _drain(api, **kwargs):
    events = []
    kwargs.setdefault('listener',
                      lambda event, task: events.append((event, task.server)))
    drain = moves.Drain(api, poll_interval=0, **kwargs)
    drain.events = events
    return drain


def _task(uuid, destination='h1', source='h0'):
    return moves.Task(server=uuid, name=uuid, source=source,
                      destination=destination, why='best of 2 host(s)')


def test_a_running_server_is_live_migrated_to_its_planned_host(api):
    api.add('a', 'h0', status='ACTIVE')
    api.add('p', 'h0', status='PAUSED')
    drain = _drain(api)
    done = drain.run([_task('a', 'h2'), _task('p', 'h1')])
    assert [(t.outcome, t.kind, t.host) for t in done] == [
        (moves.MOVED, moves.LIVE, 'h2'), (moves.MOVED, moves.LIVE, 'h1')]
    assert api.moves() == [('live_migrate', 'a', 'h2'),
                           ('live_migrate', 'p', 'h1')]
    assert drain.events == [('started', 'a'), ('ended', 'a'),
                            ('started', 'p'), ('ended', 'p')]


def test_a_stopped_server_is_cold_migrated_then_confirmed(api):
    api.add('s', 'h0', status='SHUTOFF')
    [task] = _drain(api).run([_task('s', 'h2')])
    assert (task.outcome, task.kind, task.host) == (moves.MOVED, moves.COLD,
                                                    'h2')
    assert api.moves() == [('migrate', 's', 'h2'), ('confirm_resize', 's')]
    # NOTE: confirmed: the source's allocation is gone, the guest stopped.
    assert api.rows[-1]['status'] == 'confirmed'
    assert api.servers['s']['status'] == 'SHUTOFF'


def test_cold_mode_migrates_running_servers_too(api):
    api.add('a', 'h0', status='ACTIVE')
    api.add('p', 'h0', status='PAUSED')
    done = _drain(api, mode=moves.COLD).run([_task('a'), _task('p')])
    assert [(t.outcome, t.kind) for t in done] == [
        (moves.MOVED, moves.COLD), (moves.LEFT, None)]
    assert 'a PAUSED server cannot be cold-migrated' in done[1].detail
    assert api.servers['a']['status'] == 'ACTIVE'
    assert [c[0] for c in api.moves()] == ['migrate', 'confirm_resize']


def test_live_mode_leaves_a_stopped_server_where_it_is(api):
    api.add('s', 'h0', status='SHUTOFF')
    api.add('a', 'h0')
    done = _drain(api, mode=moves.LIVE).run([_task('s'), _task('a')])
    assert [(t.outcome, t.host) for t in done] == [
        (moves.LEFT, 'h0'), (moves.MOVED, 'h1')]
    assert done[0].detail == ('a SHUTOFF server is not live-migrated '
                              '(--live moves ACTIVE and PAUSED servers)')
    assert api.moves() == [('live_migrate', 'a', 'h1')]


def test_an_unplaced_server_is_left_untouched(api):
    api.add('u', 'h0')
    task = _task('u', destination=None)
    task.why = '3 host(s), rejected: ServerGroupAntiAffinityFilter 3'
    [task] = _drain(api).run([task])
    assert (task.outcome, task.detail, task.host) == (
        moves.LEFT, '3 host(s), rejected: ServerGroupAntiAffinityFilter 3',
        'h0')
    assert api.calls == []


def test_a_failed_live_migration_says_why_and_leaves_the_server(api):
    api.add('a', 'h0')
    api.failing.add('h1')
    [task] = _drain(api).run([_task('a', 'h1')])
    assert (task.outcome, task.host) == (moves.FAILED, 'h0')
    assert task.detail == ('status ACTIVE; Migration pre-check error: h1 '
                           'refused; migration live-migration error')


def test_a_refused_move_is_reported_with_novas_message(api):
    api.add('s', 'h0', status='SHUTOFF')
    api.refusals['s'] = (400, 'No valid host was found. ')
    [task] = _drain(api).run([_task('s')])
    assert (task.outcome, task.detail) == (
        moves.FAILED, 'refused (400): No valid host was found. ')
    assert api.servers['s']['OS-EXT-SRV-ATTR:host'] == 'h0'


def test_a_server_in_error_at_the_end_carries_its_fault(api):
    api.add('a', 'h0')
    api.live_migrate = lambda uuid, host: api.then(uuid, {
        'status': 'ERROR', 'fault': {'message': 'copy failed'}})
    [task] = _drain(api).run([_task('a')])
    assert task.outcome == moves.FAILED
    assert task.detail.startswith('status ERROR; copy failed')


def test_busy_deleted_and_already_moved_servers(api):
    api.add('busy', 'h0', task='powering-off')
    api.add('elsewhere', 'h2')
    api.add('deleted', 'h0')
    api.then('deleted', {}, None)
    done = _drain(api).run([_task('busy'), _task('elsewhere'),
                            _task('deleted')])
    assert [(t.outcome, t.detail) for t in done] == [
        (moves.LEFT, 'busy: task state powering-off; run the drain again '
                     'once it ends'),
        (moves.MOVED, 'already on h2'),
        (moves.GONE, 'deleted meanwhile')]


def test_a_move_that_never_ends_times_out(api):
    api.add('a', 'h0')
    api.live_migrate = lambda uuid, host: api.servers[uuid].update(
        {'OS-EXT-STS:task_state': 'migrating'})
    clock = Clock()
    drain = _drain(api, timeout=60, clock=clock)
    drain.stopping.wait = lambda seconds: setattr(clock, 'now',
                                                  clock.now + 10)
    [task] = drain.run([_task('a')])
    assert task.outcome == moves.FAILED
    assert task.detail == (
        'still moving after 60s (status ACTIVE, task state migrating); it '
        'goes on in the cloud: run the drain again to wait for it')


def test_looks_come_soon_after_a_move_starts_then_each_second(api):
    # NOTE: a cold migration that shows VERIFY_RESIZE at the fifth look,
    # then leaves it at the third look after its confirmation.
    api.add('s', 'h0', status='SHUTOFF')
    api.migrate = lambda uuid, host: api.then(
        uuid, *[{'OS-EXT-STS:task_state': 'resize_migrating'}] * 4,
        {'OS-EXT-SRV-ATTR:host': host, 'status': 'VERIFY_RESIZE',
         'OS-EXT-STS:task_state': None})
    api.confirm_resize = lambda uuid: api.then(
        uuid, *[{'OS-EXT-STS:task_state': None}] * 2, {'status': 'SHUTOFF'})
    waits = []
    drain = moves.Drain(api, poll_interval=1.0)
    drain.stopping.wait = waits.append
    [task] = drain.run([_task('s', 'h2')])
    assert (task.outcome, task.host) == (moves.MOVED, 'h2')
    assert waits == [0.25, 0.5, 1.0, 1.0, 0.25, 0.5]
    assert 'waits' not in task.to_dict()


def test_resume_waits_for_a_move_and_confirms_a_finished_one(api):
    # NOTE: a live migration still copying, a cold one in VERIFY_RESIZE
    # on its destination, and old history that is over.
    api.add('live', 'h0', task='migrating')
    api.migration('live', 'h0', 'h1', 'running', kind='live-migration')
    api.then('live', {}, {'OS-EXT-SRV-ATTR:host': 'h1',
                          'OS-EXT-STS:task_state': None})
    api.add('cold', 'h2', status='VERIFY_RESIZE')
    api.servers['cold']['was'] = 'SHUTOFF'
    api.migration('cold', 'h0', 'h2', 'finished')
    api.migration('old', 'h0', 'h1', 'error', kind='live-migration')
    api.add('back', 'h0', task='migrating')
    api.migration('back', 'h0', 'h2', 'running', kind='live-migration')
    api.then('back', {'OS-EXT-STS:task_state': None})
    pending = moves.pending_tasks(api, 'h0')
    assert [(t.server, t.state, t.kind, t.destination) for t in pending] == [
        ('live', moves.MOVING, moves.LIVE, 'h1'),
        ('cold', moves.CONFIRM, moves.COLD, 'h2'),
        ('back', moves.MOVING, moves.LIVE, 'h2')]
    drain = _drain(api)
    done = drain.run(pending, parallel=2)
    assert [(t.outcome, t.host) for t in done] == [
        (moves.MOVED, 'h1'), (moves.MOVED, 'h2'), (moves.RETURNED, 'h0')]
    assert api.moves() == [('confirm_resize', 'cold')]
    assert api.servers['cold']['status'] == 'SHUTOFF'
    assert ('resumed', 'live') in drain.events


def test_parallel_moves_all_end(api):
    for index in range(6):
        api.add('s%d' % index, 'h0',
                status='SHUTOFF' if index % 2 else 'ACTIVE')
    done = _drain(api).run([_task('s%d' % i, 'h%d' % (1 + i % 2))
                            for i in range(6)], parallel=3)
    assert [(t.outcome, t.host) for t in done] == [
        (moves.MOVED, 'h%d' % (1 + i % 2)) for i in range(6)]


def test_a_stopped_drain_starts_nothing_more(api):
    api.add('a', 'h0')
    drain = _drain(api)
    drain.stop()
    [task] = drain.run([_task('a')])
    assert task.outcome is None
    assert api.calls == []


def test_an_unanswered_poll_is_waited_out(api):
    api.add('a', 'h0')
    real = api.get_server
    answers = iter([compute_client.Unreachable('connection refused')])

    def flaky(uuid):
        if api.moves():
            for problem in answers:
                raise problem
        return real(uuid)
    api.get_server = flaky
    [task] = _drain(api).run([_task('a')])
    assert (task.outcome, task.host) == (moves.MOVED, 'h1')


def test_the_progress_counts_rate_and_eta():
    out = io.StringIO()
    clock = Clock()
    progress = drain_progress.DrainProgress('h0', stream=out, tty=False,
                                            clock=clock)
    progress.expect(4)
    tasks = [_task(u) for u in 'abcd']
    tasks[0].kind = moves.LIVE
    progress('started', tasks[0])
    clock.now = 30
    tasks[0].outcome, tasks[0].host = moves.MOVED, 'h1'
    tasks[0].started, tasks[0].ended = 0, 30
    progress('ended', tasks[0])
    tasks[1].outcome, tasks[1].detail = moves.LEFT, 'no host'
    progress('ended', tasks[1])
    lines = out.getvalue().splitlines()
    assert lines[0] == ('moving a (a) h0 -> h1 (live) | drain h0: 0/4 '
                        'moved, 0 left, 0 failed, 1 moving')
    assert lines[1] == ('moved a (a) h0 -> h1 [live, 30s] | drain h0: 1/4 '
                        'moved, 0 left, 0 failed, 0 moving | 2.0/min | '
                        'ETA 1m30s')
    assert lines[2] == ('left b (b): no host | drain h0: 1/4 moved, 1 '
                        'left, 0 failed, 0 moving | 2.0/min | ETA 1m00s')


def test_the_progress_on_a_terminal_is_one_line():
    out = io.StringIO()
    progress = drain_progress.DrainProgress('h0', stream=out, tty=True)
    progress.expect(1)
    task = _task('a')
    progress('started', task)
    task.outcome = moves.MOVED
    progress('ended', task)
    progress.finish()
    text = out.getvalue()
    assert text.count('\n') == 1 and text.endswith('\n')
    assert text.split('\r\x1b[K')[-1].startswith('drain h0: 1/1 moved')


def test_ctrl_c_stops_every_task(api, monkeypatch):
    api.add('a', 'h0')
    api.add('b', 'h0')

    def interrupt(event, task):
        if event == 'started':
            # NOTE: as a SIGINT does: the main thread raises it.
            _thread.interrupt_main()
    # NOTE: long polls from the first: the first task is still waiting
    # when it stops.
    monkeypatch.setattr(moves, 'FIRST_POLL', 60)
    drain = moves.Drain(api, poll_interval=60, listener=interrupt)
    tasks = [_task('a'), _task('b')]
    with pytest.raises(KeyboardInterrupt):
        drain.run(tasks)
    assert [t.outcome for t in tasks] == [None, None]
    # NOTE: the first move was asked for; it goes on in the cloud.
    assert api.moves() == [('live_migrate', 'a', 'h1')]
