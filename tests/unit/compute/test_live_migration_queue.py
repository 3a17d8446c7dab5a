# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The agent's queue of outgoing live migrations."""

import threading

from services.compute import live_migration_queue

WAIT = 10


class _Gate(object):
    """Work that records its start and waits until opened."""

    def __init__(self, log, name):
        self.log, self.name = log, name
        self.started = threading.Event()
        self.opened = threading.Event()

    def __call__(self):
        self.log.append(self.name)
        self.started.set()
        assert self.opened.wait(WAIT)


def test_one_host_runs_its_migrations_one_at_a_time_in_order():
    queue = live_migration_queue.LiveMigrationQueue(per_host=1)
    log = []
    gates = [_Gate(log, n) for n in ('a', 'b', 'c')]
    for gate in gates:
        queue.submit('h1', gate)
    assert gates[0].started.wait(WAIT)
    assert queue.pending('h1') == 3 and log == ['a']
    for gate in gates:
        gate.opened.set()
    assert queue.wait_idle(WAIT)
    assert log == ['a', 'b', 'c'] and queue.pending() == 0
    queue.shutdown()


def test_hosts_do_not_wait_for_each_other():
    queue = live_migration_queue.LiveMigrationQueue(per_host=1)
    log = []
    first, other = _Gate(log, 'h1'), _Gate(log, 'h2')
    queue.submit('h1', first)
    queue.submit('h2', other)
    assert first.started.wait(WAIT) and other.started.wait(WAIT)
    first.opened.set()
    other.opened.set()
    assert queue.wait_idle(WAIT)
    queue.shutdown()


def test_zero_means_no_limit_per_host():
    queue = live_migration_queue.LiveMigrationQueue(per_host=0)
    log = []
    gates = [_Gate(log, n) for n in range(3)]
    for gate in gates:
        queue.submit('h1', gate)
    assert all(g.started.wait(WAIT) for g in gates)
    for gate in gates:
        gate.opened.set()
    assert queue.wait_idle(WAIT)
    queue.shutdown()


def test_a_failing_migration_frees_its_slot():
    queue = live_migration_queue.LiveMigrationQueue(per_host=1)
    done = threading.Event()

    def broken():
        raise RuntimeError('boom')
    queue.submit('h1', broken)
    queue.submit('h1', done.set)
    assert done.wait(WAIT)
    assert queue.wait_idle(WAIT) and queue.pending('h1') == 0
    queue.shutdown()


def test_shutdown_starts_none_of_those_waiting():
    queue = live_migration_queue.LiveMigrationQueue(per_host=1)
    log = []
    first, second = _Gate(log, 'a'), _Gate(log, 'b')
    queue.submit('h1', first)
    queue.submit('h1', second)
    assert first.started.wait(WAIT)
    queue.shutdown(wait=False)
    first.opened.set()
    assert queue.wait_idle(WAIT)
    assert log == ['a']
