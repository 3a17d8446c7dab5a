# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Concurrent identical placement queries share one answer."""

import itertools
import threading

import pytest

from common.conf import CONF
from services.scheduler import shared_queries
from tests.unit.scheduler import fakes
from tests.unit.scheduler import test_scheduling
from tests.unit import waiting

QUERY = [('resources', 'DISK_GB:10,MEMORY_MB:512,VCPU:1'), ('limit', '1000')]
OTHER = [('resources', 'DISK_GB:10,MEMORY_MB:2048,VCPU:2'), ('limit', '1000')]


class GatedPlacement(object):
    """Answers each query only once the test opens the gate."""

    def __init__(self, error=None):
        self.gate = threading.Event()
        self.sent = []
        self.error = error
        self._answers = itertools.count()

    def fetch(self, context, params):
        self.sent.append(params)
        assert self.gate.wait(10)
        if self.error is not None:
            raise self.error
        return ('answer', next(self._answers), params)


def _wait_for_sharers(shared, params, count):
    """Until ``count`` requests wait on the flight of ``params``."""
    flight = shared._flights.get
    assert waiting.wait_for(
        lambda: getattr(flight(tuple(params)), 'sharers', None) == count,
        timeout=5)


def _one_flight(shared, placement, count):
    """``count`` identical requests, all waiting on the first one's query
    before placement answers it; their results (answers or exceptions).
    """
    results = [None] * count

    def ask(slot):
        try:
            results[slot] = shared.get(None, QUERY)
        except Exception as exc:
            results[slot] = exc
    threads = [threading.Thread(target=ask, args=(slot,))
               for slot in range(count)]
    threads[0].start()
    assert waiting.wait_for(lambda: placement.sent, timeout=5)
    for thread in threads[1:]:
        thread.start()
    _wait_for_sharers(shared, QUERY, count - 1)
    placement.gate.set()
    for thread in threads:
        thread.join(10)
    return results


def _clock():
    ticks = itertools.count(100)
    return lambda: next(ticks)


def test_requests_in_flight_share_the_leaders_answer_and_snapshot():
    placement = GatedPlacement()
    shared = shared_queries.SharedQueries(placement.fetch, _clock())
    results = _one_flight(shared, placement, 4)

    assert placement.sent == [QUERY]
    assert [r[:2] for r in results] == [(100, ('answer', 0, QUERY))] * 4
    assert sorted(r[2] for r in results) == [False, True, True, True]


def test_different_queries_and_finished_answers_are_not_shared():
    placement = GatedPlacement()
    placement.gate.set()
    shared = shared_queries.SharedQueries(placement.fetch, _clock())
    first = shared.get(None, QUERY)
    second = shared.get(None, QUERY)
    other = shared.get(None, OTHER)
    assert placement.sent == [QUERY, QUERY, OTHER]
    assert (first[2], second[2], other[2]) == (False, False, False)
    assert first[1] != second[1]


def test_the_leaders_failure_reaches_those_who_waited():
    placement = GatedPlacement(error=RuntimeError('placement is down'))
    shared = shared_queries.SharedQueries(placement.fetch, _clock())
    results = _one_flight(shared, placement, 3)
    assert placement.sent == [QUERY]
    assert [str(r) for r in results] == ['placement is down'] * 3
    # NOTE: the failed flight is gone: the next request asks again.
    placement.error = None
    assert shared.get(None, QUERY)[1][0] == 'answer'


def test_disabled_every_request_sends_its_own_query():
    placement = GatedPlacement()
    placement.gate.set()
    shared = shared_queries.SharedQueries(placement.fetch, _clock(),
                                          enabled=False)
    shared.get(None, QUERY)
    shared.get(None, QUERY)
    assert placement.sent == [QUERY, QUERY]


@pytest.mark.parametrize('share', [True, False])
def test_a_burst_of_one_flavor_spreads_over_hosts(share):
    """Sharers see the leader's claims: no two land on one full host."""
    CONF.set_override('share_placement_queries', share, group='scheduler')
    try:
        _burst(share)
    finally:
        CONF.clear_override('share_placement_queries', group='scheduler')


def _burst(share):
    hosts = [fakes.host('h%d' % i, total_usable_ram_mb=2048)
             for i in range(4)]
    scheduler, placement = test_scheduling.make(hosts)
    gate = threading.Event()
    answer = placement.get_allocation_candidates

    def slow_answer(context, params):
        result = answer(context, params)
        assert gate.wait(10)
        return result
    scheduler.queries._fetch = slow_answer
    chosen, errors = [], []

    def boot(uuid):
        try:
            selections, _record = scheduler.select_destinations(
                None, fakes.spec(memory_mb=2048), [uuid])
            chosen.append(selections[0][0].service_host)
        except Exception as exc:
            errors.append(exc)
    threads = [threading.Thread(target=boot, args=('i%d' % i,))
               for i in range(4)]
    for thread in threads:
        thread.start()
    assert waiting.wait_for(
        lambda: len(placement.queries) == (1 if share else 4), timeout=5)
    gate.set()
    for thread in threads:
        thread.join(10)
    assert not errors
    assert sorted(chosen) == ['h0', 'h1', 'h2', 'h3']


class _Clock(object):
    """A clock the test moves."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _answers_kept_a_second():
    """(placement answering at once, a clock the test moves, queries
    whose finished answers are kept for 1 s).
    """
    placement = GatedPlacement()
    placement.gate.set()
    clock = _Clock()
    shared = shared_queries.SharedQueries(placement.fetch, clock,
                                          max_age=1.0)
    return placement, clock, shared


def test_a_young_finished_answer_is_given_to_later_requests():
    placement, clock, shared = _answers_kept_a_second()
    first = shared.get(None, QUERY)
    clock.now += 0.9
    second = shared.get(None, QUERY)
    other = shared.get(None, OTHER)
    assert placement.sent == [QUERY, OTHER]
    # NOTE: the snapshot time stays the query's: the host manager applies
    # this worker's later selections on top of it.
    assert second == (first[0], first[1], True)
    assert other[2] is False

    clock.now += 0.1
    third = shared.get(None, QUERY)
    assert placement.sent == [QUERY, OTHER, QUERY]
    assert third == (clock.now, ('answer', 2, QUERY), False)


def test_a_request_that_wants_its_own_answer_sends_a_query():
    placement, clock, shared = _answers_kept_a_second()
    shared.get(None, QUERY)
    clock.now += 0.5
    own = shared.get(None, QUERY, reuse=False)
    assert placement.sent == [QUERY, QUERY]
    assert own == (clock.now, ('answer', 1, QUERY), False)
    # NOTE: and the newer answer is the one later requests get.
    assert shared.get(None, QUERY)[1] == own[1]
    assert len(placement.sent) == 2


def test_a_request_that_wants_its_own_answer_does_not_join_a_flight():
    placement = GatedPlacement()
    shared = shared_queries.SharedQueries(placement.fetch, _clock(),
                                          max_age=1.0)
    results = []
    leader = threading.Thread(
        target=lambda: results.append(shared.get(None, QUERY)))
    leader.start()
    assert waiting.wait_for(lambda: placement.sent, timeout=5)
    own = threading.Thread(
        target=lambda: results.append(shared.get(None, QUERY, reuse=False)))
    own.start()
    assert waiting.wait_for(lambda: len(placement.sent) == 2, timeout=5)
    placement.gate.set()
    leader.join(10)
    own.join(10)
    assert sorted(r[1][1] for r in results) == [0, 1]


def test_a_failed_query_leaves_no_answer_behind():
    placement = GatedPlacement(error=RuntimeError('placement is down'))
    placement.gate.set()
    shared = shared_queries.SharedQueries(placement.fetch, _Clock(),
                                          max_age=1.0)
    with pytest.raises(RuntimeError):
        shared.get(None, QUERY)
    placement.error = None
    assert shared.get(None, QUERY)[2] is False
    assert len(placement.sent) == 2
