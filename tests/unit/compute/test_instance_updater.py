# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Builds' instance updates, batched into instance_updates calls."""

import threading

import pytest

from common import exception
from services.compute import instance_updater
from tests.unit.compute import test_build
from tests.unit import waiting


class Conductor(object):
    """Answers updates from a table of task states; records its calls."""

    def __init__(self, states=None, error=None):
        self.states = dict(states or {})
        self.error = error
        self.calls = []
        self.lock = threading.Lock()

    def _apply(self, update):
        uuid = update['instance_uuid']
        if uuid not in self.states:
            return exception.InstanceNotFound(instance_id=uuid)
        expected = update.get('expected_task_state')
        if expected is not None and self.states[uuid] != expected:
            return exception.UnexpectedTaskStateError(
                instance_uuid=uuid, expected=[expected],
                actual=self.states[uuid])
        self.states[uuid] = update['values'].get('task_state')
        return None

    def instance_updates(self, ctxt, updates):
        with self.lock:
            self.calls.append(('instance_updates',
                               [u['instance_uuid'] for u in updates]))
            if self.error is not None:
                raise self.error
            return [self._apply(u) for u in updates]

    def instance_update(self, ctxt, instance_uuid, values,
                        expected_task_state=None, action_event=None,
                        brief=False):
        assert brief
        with self.lock:
            self.calls.append(('instance_update', instance_uuid))
            error = self._apply({'instance_uuid': instance_uuid,
                                 'values': values,
                                 'expected_task_state': expected_task_state})
        if error is not None:
            raise error


def _concurrently(updater, updates):
    """Run each (uuid, expected) update in its own thread; their outcomes
    (None or the exception raised), in order.
    """
    outcomes = [None] * len(updates)

    def run(index, uuid, expected):
        try:
            updater.update(None, uuid, {'task_state': 'spawning'},
                           expected_task_state=expected)
        except Exception as exc:
            outcomes[index] = exc
    threads = [threading.Thread(target=run, args=(i,) + u)
               for i, u in enumerate(updates)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not any(t.is_alive() for t in threads)
    return outcomes


def test_concurrent_updates_share_one_call_and_get_their_own_answer():
    conductor = Conductor({'a': 'scheduling', 'b': 'scheduling',
                           'c': 'deleting'})
    updater = instance_updater.InstanceUpdater(conductor, delay=0.5)
    outcomes = _concurrently(updater, [('a', 'scheduling'),
                                       ('b', 'scheduling'),
                                       ('c', 'scheduling'),
                                       ('gone', 'scheduling')])
    updater.stop()
    assert len(conductor.calls) == 1
    name, uuids = conductor.calls[0]
    assert name == 'instance_updates' and sorted(uuids) == [
        'a', 'b', 'c', 'gone']
    assert outcomes[:2] == [None, None]
    assert isinstance(outcomes[2], exception.UnexpectedTaskStateError)
    assert isinstance(outcomes[3], exception.InstanceNotFound)
    assert conductor.states == {'a': 'spawning', 'b': 'spawning',
                                'c': 'deleting'}


def test_without_a_delay_each_goes_alone():
    conductor = Conductor({'a': 'scheduling', 'b': 'deleting'})
    updater = instance_updater.InstanceUpdater(conductor, delay=0)
    updater.update(None, 'a', {'task_state': 'spawning'},
                   expected_task_state='scheduling')
    with pytest.raises(exception.UnexpectedTaskStateError):
        updater.update(None, 'b', {'task_state': 'spawning'},
                       expected_task_state='scheduling')
    assert conductor.calls == [('instance_update', 'a'),
                               ('instance_update', 'b')]


def test_a_failed_call_reaches_every_update_of_its_batch():
    conductor = Conductor({'a': 'scheduling', 'b': 'scheduling'},
                          error=RuntimeError('conductor timed out'))
    updater = instance_updater.InstanceUpdater(conductor, delay=0.2)
    outcomes = _concurrently(updater, [('a', 'scheduling'),
                                       ('b', 'scheduling')])
    assert [str(o) for o in outcomes] == ['conductor timed out'] * 2
    conductor.error = None
    updater.update(None, 'a', {'task_state': 'spawning'},
                   expected_task_state='scheduling')
    updater.stop()
    assert conductor.states['a'] == 'spawning'


def test_a_full_batch_does_not_wait_out_the_delay(monkeypatch):
    monkeypatch.setattr(instance_updater, 'BATCH', 3)
    conductor = Conductor({u: 'scheduling' for u in 'abc'})
    updater = instance_updater.InstanceUpdater(conductor, delay=60)
    outcomes = _concurrently(updater, [(u, 'scheduling') for u in 'abc'])
    assert outcomes == [None] * 3
    assert [sorted(uuids) for _n, uuids in conductor.calls] == [
        ['a', 'b', 'c']]
    updater.stop()


def test_stop_sends_what_is_queued_and_later_updates_go_alone():
    conductor = Conductor({'a': 'scheduling', 'b': 'scheduling'})
    updater = instance_updater.InstanceUpdater(conductor, delay=60)
    done = threading.Event()

    def queued():
        updater.update(None, 'a', {'task_state': 'spawning'})
        done.set()
    threading.Thread(target=queued).start()
    assert waiting.wait_for(lambda: updater.calls.queued(), timeout=5)
    updater.stop()
    assert done.wait(5)
    updater.update(None, 'b', {'task_state': 'spawning'})
    assert conductor.calls == [('instance_updates', ['a']),
                               ('instance_update', 'b')]


def test_a_build_goes_active_through_batched_updates(make_agent,
                                                     placement):
    agent, inst = test_build.build_with_batches(make_agent, placement)
    assert agent.conductor.instances[inst['uuid']]['vm_state'] == 'active'
    assert agent.conductor.calls.count('instance_updates') == 2
    assert [e[2] for e in agent.conductor.events
            if e[0] == inst['uuid']] == ['start', 'finish']
