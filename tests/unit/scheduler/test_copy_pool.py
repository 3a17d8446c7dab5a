# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Requests on one placement answer share the host-state copies that no
reservation or report has touched since they were made; and a request
that finds no host in a shared answer asks placement itself.
"""

import pytest

from common.conf import CONF
from services.scheduler import answer_snapshot
from services.scheduler import host_manager
from services.scheduler import host_state as hs
from services.scheduler import reservations
from tests.unit.scheduler import fakes
from tests.unit.scheduler import test_scheduling


def _summary(used_ram=0, ram=32768):
    return {'resources': {'MEMORY_MB': {'capacity': ram, 'used': used_ram}}}


@pytest.fixture
def answers_kept_a_minute():
    """Finished placement answers handed out for 60 s."""
    CONF.set_override('placement_answer_max_age', 60.0, group='scheduler')
    yield
    CONF.clear_override('placement_answer_max_age', group='scheduler')


@pytest.fixture
def manager():
    states = [fakes.host('h%d' % i) for i in range(3)]
    return host_manager.HostManager(test_scheduling.Source(states))


@pytest.fixture
def ledger(manager):
    return reservations.Reservations(manager.now)


UUIDS = ['uuid-h0', 'uuid-h1', 'uuid-h2']
SUMMARIES = {u: _summary() for u in UUIDS}


@pytest.fixture
def snapshot():
    """One placement answer, shared by the requests below."""
    return answer_snapshot.AnswerSnapshot(
        fakes.answer(UUIDS, SUMMARIES), 0.0)


def _copies(manager, ledger, snapshot):
    """The copies of a request on ``snapshot``, by uuid."""
    return {s.uuid: s for s in fakes.request_host_states(
        manager, UUIDS, reservations=ledger, snapshot=snapshot)}


def test_copies_on_one_answer_are_handed_out_again(manager, ledger,
                                                   snapshot):
    first = fakes.request_host_states(manager, UUIDS, reservations=ledger,
                                      snapshot=snapshot)
    second = fakes.request_host_states(manager, UUIDS, reservations=ledger,
                                       snapshot=snapshot)
    assert [id(s) for s in first] == [id(s) for s in second]
    # NOTE: a request that does not share (a dry run) has its own copies.
    third = snapshot.host_states(manager, ledger, shared=False)
    assert not {id(s) for s in third} & {id(s) for s in first}


def test_a_reserved_node_gets_a_fresh_copy_with_the_reservation(
        manager, ledger, snapshot):
    before = _copies(manager, ledger, snapshot)
    token = ledger.reserve('uuid-h1', fakes.spec(memory_mb=4096))
    after = _copies(manager, ledger, snapshot)
    assert after['uuid-h0'] is before['uuid-h0']
    assert after['uuid-h1'] is not before['uuid-h1']
    assert after['uuid-h1'].free_ram_mb == 32768 - 4096
    assert before['uuid-h1'].free_ram_mb == 32768

    ledger.release(token)
    released = _copies(manager, ledger, snapshot)
    assert released['uuid-h1'] is not after['uuid-h1']
    assert released['uuid-h1'].free_ram_mb == 32768


def test_a_committed_reservation_keeps_the_copy(manager, ledger, snapshot):
    """Committing does not change what a copy made after the snapshot
    holds (the reservation applied either way).
    """
    token = ledger.reserve('uuid-h1', fakes.spec(memory_mb=4096))
    before = _copies(manager, ledger, snapshot)
    ledger.committed(token)
    after = _copies(manager, ledger, snapshot)
    assert after['uuid-h1'] is before['uuid-h1']
    assert after['uuid-h1'].free_ram_mb == 32768 - 4096


def test_reports_and_aggregate_changes_refresh_the_copies(manager, ledger,
                                                          snapshot):
    before = _copies(manager, ledger, snapshot)
    manager.update_instance_info('uuid-h2', {'i1': hs.InstanceInfo('i1')})
    after = _copies(manager, ledger, snapshot)
    assert after['uuid-h0'] is before['uuid-h0']
    assert after['uuid-h2'] is not before['uuid-h2']
    assert after['uuid-h2'].num_instances == 1

    manager.invalidate_aggregates()
    fresh = _copies(manager, ledger, snapshot)
    assert not {id(s) for s in fresh.values()} & {
        id(s) for s in after.values()}


def test_limits_of_one_request_never_reach_another(answers_kept_a_minute):
    """Two requests on one answer share host-state copies; a filter's
    limits are the request's own.
    """
    hosts = [fakes.host('h%d' % i, vcpus_total=4, cpu_allocation_ratio=4.0)
             for i in range(2)]
    scheduler, _placement = test_scheduling.make(hosts, ['CoreFilter'])
    first, _r = scheduler.select_destinations(None, fakes.spec(), ['a'])
    # NOTE: the second request runs no filter, as one whose flavor asks
    # for no limit would (the same placement query all the same).
    scheduler.filters = []
    second, record = scheduler.select_destinations(None, fakes.spec(),
                                                   ['b'])
    assert record['placement_answer_shared'] is True
    # NOTE: the host the first request did not take keeps its shared
    # copy, which its filter pass saw; it is among the second's
    # selections (chosen or alternate).
    assert [s.limits for s in first[0]] == [{'vcpu': 16.0}] * 2
    assert [s.limits for s in second[0]] == [{}, {}]


def test_a_burst_asks_placement_once_and_spreads(answers_kept_a_minute):
    """Back-to-back requests of one flavor share one answer and its
    copies, and still see each other's selections.
    """
    hosts = [fakes.host('h%d' % i, total_usable_ram_mb=2048,
                        free_ram_mb=2048) for i in range(4)]
    scheduler, placement = test_scheduling.make(hosts)
    chosen = []
    for index in range(4):
        selections, record = scheduler.select_destinations(
            None, fakes.spec(memory_mb=2048), ['i%d' % index])
        chosen.append(selections[0][0].service_host)
        assert record['placement_answer_shared'] is (index > 0)
    assert len(placement.queries) == 1
    assert sorted(chosen) == ['h0', 'h1', 'h2', 'h3']


def test_no_host_in_a_shared_answer_asks_placement_again(
        answers_kept_a_minute):
    """A host added after the shared answer was read: the request does
    not fail with NoValidHost on the old view.
    """
    hosts = [fakes.host('h1', total_usable_ram_mb=2048, free_ram_mb=2048)]
    scheduler, placement = test_scheduling.make(hosts)
    scheduler.select_destinations(None, fakes.spec(memory_mb=2048), ['a'])
    added = fakes.host('h2', total_usable_ram_mb=2048, free_ram_mb=2048)
    scheduler.host_manager.source.states[added.uuid] = added
    placement.add_provider(added.uuid, memory_mb=2048)

    selections, record = scheduler.select_destinations(
        None, fakes.spec(memory_mb=2048), ['b'])
    assert selections[0][0].service_host == 'h2'
    assert placement.claims['b'] == {'uuid-h2': {
        'VCPU': 1, 'MEMORY_MB': 2048, 'DISK_GB': 10}}
    assert record['placement_answer_shared'] is False
    assert len(placement.queries) == 2


def test_a_full_cloud_still_fails_after_asking_again(answers_kept_a_minute):
    hosts = [fakes.host('h1', total_usable_ram_mb=2048, free_ram_mb=2048)]
    scheduler, placement = test_scheduling.make(hosts)
    scheduler.select_destinations(None, fakes.spec(memory_mb=2048), ['a'])
    with pytest.raises(test_scheduling.scheduling.NoValidHost):
        scheduler.select_destinations(None, fakes.spec(memory_mb=2048),
                                      ['b'])
    assert set(placement.claims) == {'a'}


def test_one_snapshot_per_answer_while_it_may_be_shared():
    clock = [100.0]
    snapshots = answer_snapshot.Snapshots(lambda: clock[0], keep_for=0.0)
    assert snapshots.keep_for == answer_snapshot.MIN_AGE
    answer = fakes.answer(UUIDS, SUMMARIES)
    first = snapshots.of(answer, 100.0)
    assert snapshots.of(answer, 100.0) is first
    assert first.compute_uuids == UUIDS
    # NOTE: an older answer's snapshot (and its copies) goes once no
    # request can be handed that answer any more.
    clock[0] = 101.5
    snapshots.of(fakes.answer(UUIDS), 101.5)
    assert snapshots.of(answer, 100.0) is not first


def test_committed_reservations_are_forgotten_after_their_ttl():
    clock = [100.0]
    ledger = reservations.Reservations(lambda: clock[0])
    token = ledger.reserve('uuid-h1', fakes.spec(memory_mb=4096))
    ledger.committed(token)
    assert ledger.versions(['uuid-h1'])[1] == {'uuid-h1'}
    clock[0] += reservations.RESERVATION_TTL + 1
    ledger.committed(ledger.reserve('uuid-h2', fakes.spec()))
    assert ledger.versions(['uuid-h1', 'uuid-h2'])[1] == {'uuid-h2'}
