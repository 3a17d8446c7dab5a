# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Move steps' writes, batched into move_updates calls."""

import threading

import pytest

from common import exception
from services.compute import move_updater


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


def test_concurrent_steps_share_one_call_and_get_their_own_answer():
    conductor = Conductor({'a': 'migrating', 'b': 'error'})
    updater = move_updater.MoveUpdater(conductor, delay=0.5)
    outcomes = {}

    def run(uuid):
        try:
            outcomes[uuid] = _step(updater, uuid)
        except Exception as exc:
            outcomes[uuid] = exc
    threads = [threading.Thread(target=run, args=(u,)) for u in 'ab']
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    updater.stop()
    assert conductor.calls == [('move_updates', ['a', 'b'])]
    assert outcomes['a']['migration']['status'] == 'post-migrating'
    assert isinstance(outcomes['b'],
                      exception.UnexpectedMigrationStatusError)
    assert conductor.statuses == {'a': 'post-migrating', 'b': 'error'}


def test_without_a_delay_each_goes_alone():
    conductor = Conductor({'a': 'migrating', 'b': 'error'})
    updater = move_updater.MoveUpdater(conductor, delay=0)
    assert _step(updater, 'a')['migration']['status'] == 'post-migrating'
    with pytest.raises(exception.UnexpectedMigrationStatusError):
        _step(updater, 'b')
    assert conductor.calls == [('move_update', 'a'), ('move_update', 'b')]
