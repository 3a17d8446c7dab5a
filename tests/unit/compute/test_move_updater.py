# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Move steps' writes, batched into move_updates calls."""

import threading

import pytest

from common import exception
from services.compute import move_updater
from tests.unit import waiting


class Conductor(object):
    """Migrations by status; records its calls."""

    def __init__(self, statuses):
        self.statuses = dict(statuses)
        self.calls = []
        self.lock = threading.Lock()

    def _apply(self, update):
        uuid = update['migration_uuid']
        expected = update.get('expected_status')
        if self.statuses[uuid] != expected:
            return exception.UnexpectedMigrationStatusError(
                migration_id=uuid, expected=expected,
                actual=self.statuses[uuid])
        self.statuses[uuid] = update['migration_values']['status']
        return {'instance': None, 'migration': {
            'uuid': uuid, 'status': self.statuses[uuid]}}

    def move_updates(self, ctxt, updates):
        with self.lock:
            self.calls.append(('move_updates', sorted(
                u['migration_uuid'] for u in updates)))
            return [self._apply(u) for u in updates]

    def move_update(self, ctxt, instance_uuid, migration_uuid, **changes):
        with self.lock:
            self.calls.append(('move_update', migration_uuid))
            answer = self._apply(dict(changes, instance_uuid=instance_uuid,
                                      migration_uuid=migration_uuid))
        if isinstance(answer, Exception):
            raise answer
        return answer


def _step(updater, migration_uuid):
    return updater.update(None, 'i-' + migration_uuid, migration_uuid,
                          migration_values={'status': 'post-migrating'},
                          expected_status='migrating', brief=True)


def test_a_lone_step_goes_at_once():
    conductor = Conductor({'a': 'migrating'})
    # NOTE: a delay that would time the test out if it were waited for.
    updater = move_updater.MoveUpdater(conductor, delay=600)
    assert _step(updater, 'a')['migration']['status'] == 'post-migrating'
    assert conductor.calls == [('move_updates', ['a'])]
    updater.stop()


def test_steps_pile_up_while_a_call_is_in_flight(monkeypatch):
    """Group commit: what arrives while the conductor is busy goes in
    the next call, each step with its own answer.
    """
    monkeypatch.setattr(move_updater, 'IN_FLIGHT', 1)
    conductor = Conductor({'a': 'migrating', 'b': 'migrating',
                           'c': 'error'})
    busy, release = threading.Event(), threading.Event()
    answer = conductor.move_updates

    def slow_first(ctxt, updates):
        if not busy.is_set():
            busy.set()
            release.wait(10)
        return answer(ctxt, updates)
    conductor.move_updates = slow_first
    updater = move_updater.MoveUpdater(conductor, delay=600)
    outcomes = {}

    def run(uuid):
        try:
            outcomes[uuid] = _step(updater, uuid)
        except Exception as exc:
            outcomes[uuid] = exc
    first = threading.Thread(target=run, args=('a',))
    first.start()
    assert busy.wait(10)
    others = [threading.Thread(target=run, args=(u,)) for u in 'bc']
    for thread in others:
        thread.start()
    assert waiting.wait_for(lambda: updater.calls.queued() == 2, timeout=10)
    release.set()
    for thread in [first] + others:
        thread.join(10)
    updater.stop()
    assert conductor.calls == [('move_updates', ['a']),
                               ('move_updates', ['b', 'c'])]
    assert outcomes['b']['migration']['status'] == 'post-migrating'
    assert isinstance(outcomes['c'],
                      exception.UnexpectedMigrationStatusError)
    assert conductor.statuses == {'a': 'post-migrating',
                                  'b': 'post-migrating', 'c': 'error'}


def test_without_a_delay_each_goes_alone():
    conductor = Conductor({'a': 'migrating', 'b': 'error'})
    updater = move_updater.MoveUpdater(conductor, delay=0)
    assert _step(updater, 'a')['migration']['status'] == 'post-migrating'
    with pytest.raises(exception.UnexpectedMigrationStatusError):
        _step(updater, 'b')
    assert conductor.calls == [('move_update', 'a'), ('move_update', 'b')]
