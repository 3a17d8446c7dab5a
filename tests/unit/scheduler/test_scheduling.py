# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The scheduling pipeline end to end, over a fake placement."""

import json
import threading
import time

import pytest

from common.conf import CONF
from common.objects import instance_group as group_obj
from common import service
from services.scheduler import host_manager
from services.scheduler import loading
from services.scheduler import placing
from services.scheduler import reservations
from services.scheduler import scheduling
from services.scheduler.weighers import ram as ram_weigher
from tests.unit.scheduler import fake_placement
from tests.unit.scheduler import fakes


class Source(host_manager.HostSource):
    """Host states handed in by the test."""

    def __init__(self, states, aggregates=()):
        self.states = {s.uuid: s for s in states}
        self.aggregates = list(aggregates)

    def get_host_states(self, context, uuids):
        return [self.states[u] for u in uuids if u in self.states]

    def get_updated_since(self, context, uuids):
        return {u: self.states[u].updated for u in uuids}

    def get_aggregates(self, context):
        return self.aggregates

    def compute_uuids_for_host(self, context, host, node=None):
        return [s.uuid for s in self.states.values() if s.host == host]


def make(hosts, filters=None, placement=None, aggregates=()):
    placement = placement or fake_placement.FakePlacement()
    for state in hosts:
        if state.uuid not in placement.inventory:
            placement.add_provider(state.uuid,
                                   vcpu=state.vcpus_total,
                                   memory_mb=state.total_usable_ram_mb,
                                   disk_gb=state.total_usable_disk_gb)
    manager = host_manager.HostManager(Source(hosts, aggregates))
    names = filters if filters is not None else (
        CONF.filter_scheduler.enabled_filters)
    return scheduling.Scheduler(
        manager, placement, loading.load_filters(names),
        loading.load_weighers(['all'])), placement


def test_selections_name_their_hosts_zones():
    """Scheduler RPC 1.1: the conductor records the zone it is told."""
    zone = fakes.aggregate(metadata={'availability_zone': 'az1'})
    other = fakes.aggregate(metadata={'availability_zone': 'az0'})
    hosts = [fakes.host('zoned', aggregates=[zone, other]),
             fakes.host('plain')]
    scheduler, _placement = make(hosts, filters=[])
    selections, _record = scheduler.select_destinations(
        None, fakes.spec(), ['i1'])
    assert {s.service_host: s.availability_zone
            for s in selections[0]} == {'zoned': 'az0,az1', 'plain': 'nova'}


def test_selects_the_host_with_most_free_ram_and_claims_it():
    hosts = [fakes.host('small', total_usable_ram_mb=4096),
             fakes.host('big', total_usable_ram_mb=65536)]
    scheduler, placement = make(hosts)
    selections, record = scheduler.select_destinations(
        None, fakes.spec(memory_mb=1024), ['i1'])
    assert selections[0][0].service_host == 'big'
    assert placement.claims['i1'] == {'uuid-big': {
        'VCPU': 1, 'MEMORY_MB': 1024, 'DISK_GB': 10}}
    assert record['selected'] == [['big', 'big']]
    alt = selections[0][1]
    assert alt.service_host == 'small'
    assert json.loads(alt.allocation_request)['allocations'] == {
        'uuid-small': {'resources': {'VCPU': 1, 'MEMORY_MB': 1024,
                                     'DISK_GB': 10}}}


def test_alternates_are_capped_by_max_attempts():
    hosts = [fakes.host('h%d' % i) for i in range(6)]
    scheduler, _p = make(hosts)
    selections, _r = scheduler.select_destinations(None, fakes.spec(), ['i'])
    assert len(selections[0]) == CONF.scheduler.max_attempts
    assert len({s.service_host for s in selections[0]}) == len(selections[0])


def test_multi_create_spreads_with_its_own_consumption():
    hosts = [fakes.host('h%d' % i, total_usable_ram_mb=8192,
                        free_ram_mb=8192) for i in range(3)]
    scheduler, placement = make(hosts)
    selections, _r = scheduler.select_destinations(
        None, fakes.spec(memory_mb=2048), ['a', 'b', 'c'])
    assert sorted(s[0].service_host for s in selections) == ['h0', 'h1',
                                                             'h2']
    assert len(placement.claims) == 3


def test_multi_create_is_all_or_nothing():
    hosts = [fakes.host('h1', total_usable_ram_mb=4096, free_ram_mb=4096)]
    scheduler, placement = make(hosts)
    with pytest.raises(scheduling.NoValidHost) as caught:
        scheduler.select_destinations(None, fakes.spec(memory_mb=3000),
                                      ['a', 'b'])
    assert placement.claims == {}
    assert 'only 1 of 2 instances could be placed' in str(caught.value)


def test_a_lost_claim_moves_on_to_the_next_host():
    hosts = [fakes.host('best', total_usable_ram_mb=65536,
                        free_ram_mb=65536), fakes.host('other')]
    scheduler, placement = make(hosts)
    placement.refuse.add('uuid-best')
    selections, _r = scheduler.select_destinations(None, fakes.spec(), ['i'])
    assert selections[0][0].service_host == 'other'


def test_no_valid_host_explains_which_filter_rejected_what():
    zone = fakes.aggregate(metadata={'availability_zone': 'az1'})
    hosts = [fakes.host('h1', aggregates=[zone]),
             fakes.host('h2', aggregates=[zone]),
             fakes.host('h3', service={'disabled': True, 'up': True,
                                       'forced_down': False})]
    scheduler, placement = make(
        hosts, filters=['ComputeFilter', 'AvailabilityZoneFilter'])
    CONF.set_override('query_placement_for_availability_zone', False,
                      group='scheduler')
    try:
        with pytest.raises(scheduling.NoValidHost) as caught:
            scheduler.select_destinations(
                None, fakes.spec(availability_zone='az2'), ['i'])
    finally:
        CONF.clear_override('query_placement_for_availability_zone',
                            group='scheduler')
    summary = caught.value.explanation['summary']
    assert summary.startswith('3 hosts: 1 rejected by ComputeFilter')
    assert '2 by AvailabilityZoneFilter' in summary
    assert caught.value.explanation['filters'][0]['hosts_out'] == 2
    assert placement.claims == {}


def test_no_candidates_names_the_placement_query():
    scheduler, _p = make([fakes.host('h1', total_usable_ram_mb=1024)])
    with pytest.raises(scheduling.NoValidHost) as caught:
        scheduler.select_destinations(None, fakes.spec(memory_mb=4096),
                                      ['i'])
    assert 'placement found no candidate for resources=' in str(
        caught.value)


def test_anti_affinity_within_one_request():
    hosts = [fakes.host('h1'), fakes.host('h2')]
    group = fakes.group(group_obj.ANTI_AFFINITY)
    scheduler, placement = make(hosts)
    selections, _r = scheduler.select_destinations(
        None, fakes.spec(group=group), ['a', 'b'])
    assert {s[0].service_host for s in selections} == {'h1', 'h2'}
    with pytest.raises(scheduling.NoValidHost):
        scheduler.select_destinations(
            None, fakes.spec(group=fakes.group(group_obj.ANTI_AFFINITY)),
            ['c', 'd', 'e'])
    assert set(placement.claims) == {'a', 'b'}


def test_forced_host_skips_filters_and_dry_run_claims_nothing():
    hosts = [fakes.host('h1'), fakes.host('h2', service={'disabled': True})]
    scheduler, placement = make(hosts)
    selections, record = scheduler.select_destinations(
        None, fakes.spec(force_hosts=['h2']), [], dry_run=True)
    assert selections[0][0].service_host == 'h2'
    assert placement.claims == {}
    assert 'forced hosts' in record['summary']


def test_an_ignored_source_host_is_noted_in_the_record():
    hosts = [fakes.host('source', total_usable_ram_mb=65536),
             fakes.host('other')]
    scheduler, _placement = make(hosts)
    selections, record = scheduler.select_destinations(
        None, fakes.spec(ignore_hosts=['source', 'gone']), ['i1'])
    assert selections[0][0].service_host == 'other'
    assert record['candidates'] == 2 and record['hosts'] == 1
    assert "ignored hosts ['source']" in record['notes']


def test_no_valid_host_survives_rpc_serialization():
    from oslo_messaging._drivers import common as driver_common

    from common import exception
    original = exception.NoValidHost(reason='0 hosts',
                                     explanation={'summary': '0 hosts'})
    try:
        raise original
    except exception.NoValidHost:
        import sys
        failure = driver_common.serialize_remote_exception(sys.exc_info())
    rebuilt = driver_common.deserialize_remote_exception(
        failure, ['common.exception'])
    assert isinstance(rebuilt, exception.NoValidHost)
    assert rebuilt.explanation == {'summary': '0 hosts'}
    assert 'No valid host was found. 0 hosts' in str(rebuilt)


def test_a_refused_claim_is_not_retried_on_every_host():
    hosts = [fakes.host('h%d' % i) for i in range(5)]
    scheduler, placement = make(hosts)
    placement.refuse_consumers.add('taken')
    with pytest.raises(scheduling.NoValidHost) as caught:
        scheduler.select_destinations(None, fakes.spec(), ['taken'])
    assert placement.attempts == 1
    assert 'placement refused the claim' in caught.value.explanation[
        'summary']


def test_explain_leaves_the_cached_host_state_alone():
    hosts = [fakes.host('h1')]
    scheduler, placement = make(hosts)
    scheduler.host_manager.refresh(None, ['uuid-h1'])
    with scheduler.host_manager.reading() as (cached, _changes, _epoch):
        state = cached['uuid-h1']
    before = (state.num_instances, state.num_io_ops, state.free_ram_mb)
    scheduler.select_destinations(None, fakes.spec(), [], dry_run=True)
    with scheduler.host_manager.reading() as (cached, _changes, _epoch):
        assert cached['uuid-h1'] is state
    assert (state.num_instances, state.num_io_ops,
            state.free_ram_mb) == before
    assert placement.claims == {}


def test_requests_see_this_workers_claims_not_yet_in_placement():
    clock = [100.0]
    source = Source([fakes.host('h1', total_usable_ram_mb=8192,
                                free_ram_mb=8192)])
    manager = host_manager.HostManager(source, clock=lambda: clock[0])
    ledger = reservations.Reservations(manager.now)
    summary = {'uuid-h1': {'resources': {
        'MEMORY_MB': {'capacity': 8192, 'used': 0}}}}
    token = ledger.reserve('uuid-h1', fakes.spec(memory_mb=2048))
    in_flight = fakes.request_host_states(manager, ['uuid-h1'], summary,
                                          100.0, ledger)
    assert in_flight[0].free_ram_mb == 6144
    clock[0] = 101.0
    ledger.committed(token)
    # A snapshot read before the commit cannot contain it...
    before = fakes.request_host_states(manager, ['uuid-h1'], summary,
                                       100.5, ledger)
    assert before[0].free_ram_mb == 6144
    # ...one read after it does, so it is not counted twice.
    after = fakes.request_host_states(manager, ['uuid-h1'], summary, 101.5,
                                      ledger)
    assert after[0].free_ram_mb == 8192
    # Each request has its own copy: limits written into one never leak.
    after[0].limits['vcpu'] = 1
    assert fakes.request_host_states(manager, ['uuid-h1'])[0].limits == {}


class _MeetingRamWeigher(ram_weigher.RAMWeigher):
    """Waits (briefly) in weighing until a second request is weighing too.

    Two requests of one worker that weigh at once would both see the same
    best host free; the scheduler lets one decide at a time, so the second
    never arrives while the first waits.
    """

    def __init__(self):
        super().__init__()
        self.changed = threading.Condition()
        self.inside = 0
        self.most_inside = 0

    def weigh_objects(self, weighed_obj_list, spec_obj):
        with self.changed:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
            self.changed.notify_all()
            self.changed.wait_for(lambda: self.most_inside > 1, timeout=0.3)
            self.inside -= 1
        return super().weigh_objects(weighed_obj_list, spec_obj)


def test_concurrent_requests_of_one_worker_decide_one_at_a_time():
    hosts = [fakes.host('best', total_usable_ram_mb=65536,
                        free_ram_mb=65536),
             fakes.host('other', total_usable_ram_mb=60000,
                        free_ram_mb=60000)]
    scheduler, placement = make(hosts)
    weigher = _MeetingRamWeigher()
    scheduler.weighers = [weigher]
    # NOTE: both placement answers are read before either claim.
    both_asked = threading.Barrier(2, timeout=5)
    ask = placement.get_allocation_candidates

    def asked_together(context, params):
        answer = ask(context, params)
        both_asked.wait()
        return answer

    placement.get_allocation_candidates = asked_together
    chosen = {}

    def boot(name):
        selections, _r = scheduler.select_destinations(
            None, fakes.spec(memory_mb=32768), [name])
        chosen[name] = selections[0][0].service_host

    threads = [threading.Thread(target=boot, args=(n,)) for n in 'ab']
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert weigher.most_inside == 1
    # The second to decide saw the first's reservation: best had 32768 MB
    # left, less than other's 60000.
    assert sorted(chosen.values()) == ['best', 'other']
    assert set(placement.claims) == {'a', 'b'}


@pytest.mark.parametrize('slot', [0, 1, 2])
def test_each_worker_prefers_its_own_share_of_equal_hosts(monkeypatch,
                                                          slot):
    hosts = [fakes.host('h%02d' % i) for i in range(9)]
    uuids = sorted(h.uuid for h in hosts)
    monkeypatch.setattr(service, '_worker', (slot, 3))
    mine, owner = placing._worker_shares(uuids)
    own = {u for u in uuids if owner[u] == mine}
    assert mine == slot and own == set(uuids[slot::3])
    scheduler, placement = make(hosts)
    picked = set()
    for index in range(3):
        selections, _r = scheduler.select_destinations(
            None, fakes.spec(), ['i%d' % index])
        picked.add(selections[0][0].service_host)
    # Three requests fill this worker's three hosts, one each; the other
    # workers' shares are left to them.
    assert {'uuid-%s' % h for h in picked} == own
    # Once its share is no longer among the best, it takes the others'.
    selections, _r = scheduler.select_destinations(None, fakes.spec(),
                                                   ['i3'])
    assert 'uuid-%s' % selections[0][0].service_host not in own


def test_a_single_worker_has_no_share():
    assert service.worker_slot() == (0, 1)
    assert placing._worker_shares(['a', 'b']) is None


def test_without_own_hosts_a_worker_picks_from_the_fullest_share():
    class Weighed(object):
        def __init__(self, uuid):
            self.obj = fakes.host(uuid)
            self.obj.uuid = uuid

    owner = {'a': 1, 'b': 1, 'c': 2, 'd': 2, 'e': 2, 'f': 0}
    pool = [Weighed(u) for u in 'abcde']
    picked = placing._prefer_own_share(pool, (0, owner))
    assert [w.obj.uuid for w in picked] == ['c', 'd', 'e']
    mine = placing._prefer_own_share(pool + [Weighed('f')], (0, owner))
    assert [w.obj.uuid for w in mine] == ['f']


class _SlowSource(Source):
    """Counts loads; the first one waits until released."""

    def __init__(self, states, fail_first=False):
        super().__init__(states)
        self.loads = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.fail_first = fail_first

    def get_host_states(self, context, uuids):
        self.loads.append(sorted(uuids))
        if len(self.loads) == 1:
            self.entered.set()
            assert self.release.wait(5)
            if self.fail_first:
                raise RuntimeError('database went away')
        return super().get_host_states(context, uuids)


def _refresh_in_threads(manager, uuid_lists):
    errors = []

    def run(uuids):
        try:
            manager.refresh(None, uuids)
        except Exception as exc:
            errors.append(exc)

    first = threading.Thread(target=run, args=(uuid_lists[0],))
    first.start()
    assert manager.source.entered.wait(5)
    others = [threading.Thread(target=run, args=(u,))
              for u in uuid_lists[1:]]
    for thread in others:
        thread.start()
    # NOTE: give the others time to reach the first load and wait on it.
    time.sleep(0.2)
    manager.source.release.set()
    for thread in [first] + others:
        thread.join(5)
    return errors


def test_concurrent_requests_load_a_cold_cache_once():
    hosts = [fakes.host('h%d' % i) for i in range(4)]
    manager = host_manager.HostManager(_SlowSource(hosts))
    everything = [h.uuid for h in hosts]
    errors = _refresh_in_threads(manager, [everything] * 4)
    assert errors == []
    assert manager.source.loads == [sorted(everything)]
    with manager.reading() as (cached, _changes, _epoch):
        assert all(uuid in cached for uuid in everything)


def test_a_request_loads_only_the_nodes_nobody_else_is_loading():
    hosts = [fakes.host('h%d' % i) for i in range(4)]
    manager = host_manager.HostManager(_SlowSource(hosts))
    uuids = [h.uuid for h in hosts]
    errors = _refresh_in_threads(manager, [uuids[:2], uuids])
    assert errors == []
    assert manager.source.loads == [sorted(uuids[:2]), sorted(uuids[2:])]


def test_a_failed_load_is_retried_by_the_requests_that_waited():
    hosts = [fakes.host('h%d' % i) for i in range(2)]
    manager = host_manager.HostManager(_SlowSource(hosts, fail_first=True))
    uuids = [h.uuid for h in hosts]
    errors = _refresh_in_threads(manager, [uuids, uuids])
    assert [str(e) for e in errors] == ['database went away']
    assert manager.source.loads == [sorted(uuids), sorted(uuids)]
    with manager.reading() as (cached, _changes, _epoch):
        assert all(uuid in cached for uuid in uuids)
