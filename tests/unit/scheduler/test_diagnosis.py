# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Explanations that name why placement left no host, over the real
placement service in-process; and the hints no enabled filter reads.
"""

import logging
import uuid

import pytest

from common.conf import CONF
from common.objects import request_spec as spec_obj
from common.placement import client as placement_client
from common.placement import microversions
from services.scheduler.client import placement as scheduler_placement
from services.scheduler.filters import simple_cidr_affinity_filter
from services.scheduler import host_manager
from services.scheduler import loading
from services.scheduler import scheduling
from tests.unit.compute import fakes as compute_fakes
from tests.unit.placement import fixtures as placement_fixtures
from tests.unit.scheduler import fakes
from tests.unit.scheduler import test_scheduling

V = microversions.PROVIDER_TREE


@pytest.fixture
def adapter():
    app = placement_fixtures.setup_app()
    placement_fixtures.wipe_database()
    return compute_fakes.WsgiAdapter(app)


def _filters(names):
    # NOTE: a new filter by its class: a development venv's installed
    # entry points may predate it (see test_packaging).
    cidr = simple_cidr_affinity_filter.SimpleCIDRAffinityFilter
    return [cidr() if name == cidr.__name__ else
            loading.load_filters([name])[0] for name in names]


def _uuid(name):
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, name))


class Cloud(object):
    """Compute nodes in placement and in the scheduler's host states."""

    def __init__(self, adapter):
        self.adapter = adapter
        self.client = placement_client.PlacementClient(CONF,
                                                       adapter=adapter)
        self.states = []

    def node(self, name, vcpus=8, max_unit=None, ratio=16.0, traits=()):
        state = fakes.host(name, vcpus_total=vcpus,
                           uuid=_uuid(name))
        resp = self.client.create_provider(None, state.uuid, name,
                                           version=V)
        assert resp.ok, resp.body
        inventories = {
            'VCPU': {'total': vcpus, 'max_unit': max_unit or vcpus,
                     'allocation_ratio': ratio},
            'MEMORY_MB': {'total': 32768, 'max_unit': 32768},
            'DISK_GB': {'total': 1024, 'max_unit': 1024}}
        resp = self.client.put_inventories(None, state.uuid, 0, inventories,
                                           version=V)
        assert resp.ok, resp.body
        if traits:
            resp = self.client.put_provider_traits(
                None, state.uuid, 1, sorted(traits), version=V)
            assert resp.ok, resp.body
        self.states.append(state)
        return state

    def scheduler(self, filters=None):
        manager = host_manager.HostManager(
            test_scheduling.Source(self.states))
        return scheduling.Scheduler(
            manager, scheduler_placement.SchedulerPlacementClient(
                self.client),
            _filters(filters if filters is not None else ['ComputeFilter']),
            loading.load_weighers(['all']))

    def fail(self, spec, filters=None):
        """The NoValidHost of scheduling ``spec``: (summary, record)."""
        with pytest.raises(scheduling.NoValidHost) as caught:
            self.scheduler(filters).select_destinations(
                None, spec, [_uuid('i1')])
        record = caught.value.explanation
        assert str(caught.value).endswith(record['summary'])
        return record['summary'], record

    def reads(self):
        """The placement requests other than candidates and claims."""
        return [(m, u) for m, u in self.adapter.requests
                if '/allocation_candidates' not in u and
                not u.startswith('/allocations/')]


@pytest.fixture
def cloud(adapter):
    return Cloud(adapter)


def test_a_requested_disabled_host_is_named_with_its_trait(cloud):
    cloud.node('h1', traits=['COMPUTE_STATUS_DISABLED'])
    cloud.node('h2')
    spec = fakes.spec(requested_destination=spec_obj.Destination(host='h1'))
    summary, record = cloud.fail(spec)
    assert summary.startswith('placement found no candidate for ')
    assert ('requested host h1 is disabled: its provider has the '
            'COMPUTE_STATUS_DISABLED trait, which every request forbids'
            in summary)
    assert record['notes'] == [summary.split('; ', 1)[1]]


def test_a_forced_disabled_host_is_named_with_its_trait(cloud):
    cloud.node('h1', traits=['COMPUTE_STATUS_DISABLED'])
    cloud.node('h2')
    summary, _record = cloud.fail(fakes.spec(force_hosts=['h1']))
    assert summary.startswith('0 hosts; forced hosts')
    assert ('forced host h1 is disabled: its provider has the '
            'COMPUTE_STATUS_DISABLED trait' in summary)


def test_a_forced_unknown_host_is_named(cloud):
    cloud.node('h1')
    summary, _record = cloud.fail(fakes.spec(force_hosts=['nope']))
    assert 'forced host nope is unknown' in summary


def test_requested_host_above_max_unit(cloud):
    cloud.node('h1', vcpus=8)
    spec = fakes.spec(vcpus=64,
                      requested_destination=spec_obj.Destination(host='h1'))
    summary, _record = cloud.fail(spec)
    assert 'VCPU:64 is above the max_unit 8 of requested host h1' in summary


def test_requested_host_without_free_capacity(cloud):
    cloud.node('h1', vcpus=4, max_unit=4, ratio=1.0)
    first = fakes.spec(vcpus=3)
    cloud.scheduler().select_destinations(None, first, [_uuid('i0')])
    spec = fakes.spec(vcpus=2,
                      requested_destination=spec_obj.Destination(host='h1'))
    summary, _record = cloud.fail(spec)
    assert ('VCPU:2 exceeds the free capacity of requested host h1 '
            '(3 of 4 used)' in summary)


def test_anywhere_above_every_max_unit(cloud):
    """The issue's example: VCPU:64 against max_unit 8."""
    cloud.node('h1', vcpus=8)
    cloud.node('h2', vcpus=8)
    summary, _record = cloud.fail(fakes.spec(vcpus=64))
    assert summary.startswith('placement found no candidate for '
                              'resources=DISK_GB:10,MEMORY_MB:512,VCPU:64')
    assert summary.endswith('VCPU:64 is above the max_unit of every '
                            'resource provider with VCPU free (the largest '
                            'is 8)')


def test_anywhere_above_every_free_capacity(cloud):
    cloud.node('h1', vcpus=4, ratio=1.0)
    cloud.scheduler().select_destinations(None, fakes.spec(vcpus=3),
                                          [_uuid('i0')])
    summary, _record = cloud.fail(fakes.spec(vcpus=2))
    assert summary.endswith('VCPU:2 exceeds the free capacity of every '
                            'resource provider with VCPU free')


def test_anywhere_when_no_provider_has_the_class_free(cloud):
    cloud.node('h1', vcpus=2, ratio=1.0)
    cloud.scheduler().select_destinations(None, fakes.spec(vcpus=2),
                                          [_uuid('i0')])
    summary, _record = cloud.fail(fakes.spec(vcpus=1))
    assert summary.endswith('no resource provider can take VCPU:1: none has '
                            'any VCPU free')


def test_many_providers_are_not_all_read(cloud, monkeypatch):
    from services.scheduler import diagnosis
    monkeypatch.setattr(diagnosis, 'SAMPLE', 1)
    cloud.node('h1', vcpus=8)
    cloud.node('h2', vcpus=8)
    summary, _record = cloud.fail(fakes.spec(vcpus=64))
    assert summary.endswith('no resource provider can take VCPU:64: it is '
                            'above the max_unit or the free capacity of '
                            'every provider of VCPU')
    assert not [u for _m, u in cloud.reads() if u.endswith('/inventories')
                and u.startswith('/resource_providers/')][2:]


def test_the_success_path_reads_nothing_more(cloud):
    cloud.node('h1')
    cloud.node('h2', traits=['COMPUTE_STATUS_DISABLED'])
    scheduler = cloud.scheduler()
    before = len(cloud.reads())
    scheduler.select_destinations(None, fakes.spec(), [_uuid('i1')])
    scheduler.select_destinations(None, fakes.spec(force_hosts=['h1']),
                                  [_uuid('i2')])
    scheduler.select_destinations(None, fakes.spec(
        requested_destination=spec_obj.Destination(host='h1')), [_uuid('i3')])
    assert len(cloud.reads()) == before


# ------------------------------------------------------- hints ignored


@pytest.mark.parametrize('hints,filters,note', [
    ({'same_host': ['11111111-2222-3333-4444-555555555555']},
     ['ComputeFilter'],
     'hint same_host ignored: SameHostFilter is not enabled'),
    ({'different_host': ['11111111-2222-3333-4444-555555555555']},
     ['ComputeFilter'],
     'hint different_host ignored: DifferentHostFilter is not enabled'),
    ({'build_near_host_ip': ['192.0.2.1'], 'cidr': ['/24']},
     ['ComputeFilter'],
     'hint build_near_host_ip ignored: SimpleCIDRAffinityFilter is not '
     'enabled'),
    ({'query': ['[">=", "$free_ram_mb", 1]']}, [],
     'hint query ignored: JsonFilter is not enabled'),
])
def test_a_hint_whose_filter_is_off_is_ignored_and_said(
        cloud, caplog, hints, filters, note):
    cloud.node('h1', vcpus=8)
    caplog.set_level(logging.INFO, logger='services.scheduler.hints')
    spec = fakes.spec(scheduler_hints=hints)
    selections, record = cloud.scheduler(filters).select_destinations(
        None, spec, [_uuid('i1')])
    # NOTE: ignored, as in Nova: the host is chosen anyway.
    assert selections[0][0].service_host == 'h1'
    assert record['notes'] == [note]
    assert note in record['summary']
    assert ['Scheduler ' + note] == [r.getMessage() for r in caplog.records
                                     if r.levelno == logging.INFO]


def test_an_ignored_hint_is_in_the_fault(cloud):
    cloud.node('h1', vcpus=8)
    spec = fakes.spec(vcpus=64, scheduler_hints={
        'same_host': ['11111111-2222-3333-4444-555555555555']})
    summary, _record = cloud.fail(spec)
    assert 'hint same_host ignored: SameHostFilter is not enabled' in summary


def test_a_hint_with_its_filter_enabled_is_not_noted(cloud):
    cloud.node('h1', vcpus=8, traits=[])
    state = cloud.states[0]
    state.host_ip = '192.0.2.5'
    spec = fakes.spec(scheduler_hints={'build_near_host_ip': ['192.0.2.1']})
    _sel, record = cloud.scheduler(
        ['SimpleCIDRAffinityFilter']).select_destinations(
            None, spec, [_uuid('i1')])
    assert record['notes'] == []


@pytest.mark.parametrize('policy,filters,note', [
    ('affinity', ['ServerGroupAntiAffinityFilter'],
     'hint group ignored: ServerGroupAffinityFilter is not enabled'),
    ('anti-affinity', ['ServerGroupAffinityFilter'],
     'hint group ignored: ServerGroupAntiAffinityFilter is not enabled'),
    ('anti-affinity', ['ServerGroupAntiAffinityFilter'], None),
])
def test_group_hint_needs_its_policy_filter(cloud, policy, filters, note):
    cloud.node('h1', vcpus=8)
    group = fakes.group(policy)
    spec = fakes.spec(group=group, scheduler_hints={'group': [group.uuid]})
    _sel, record = cloud.scheduler(filters).select_destinations(
        None, spec, [_uuid('i1')])
    assert record['notes'] == ([note] if note else [])
