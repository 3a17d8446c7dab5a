# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateInstanceExtraSpecsFilter (doc/behaviours.md A1, A3, A12,
§extra-specs)."""

import pytest

from services.scheduler import filters
from services.scheduler.filters import (
    aggregate_instance_extra_specs_filter as aies)
from services.scheduler.filters import availability_zone_filter
from services.scheduler.filters import compute_capabilities_filter
from tests.unit.scheduler import fakes

FILTER = aies.AggregateInstanceExtraSpecsFilter()

LAB_A = ['osdev-01', 'osdev-02', 'osdev-03', 'osdev-ceph', 'osdev-gpu']


def _lab_a1(extra_host=False):
    """A1: io-fast = osdev-01/02/03, io-slow = osdev-gpu/ceph."""
    io_fast = fakes.aggregate('io-fast', metadata={'io': 'fast'})
    io_slow = fakes.aggregate('io-slow', metadata={'io': 'slow'})
    hosts = [fakes.host(name, aggregates=[
        io_slow if name in ('osdev-ceph', 'osdev-gpu') else io_fast])
        for name in LAB_A]
    if extra_host:
        hosts.append(fakes.host('osdev-new'))
    return hosts


def _passing(hosts, extra_specs):
    spec = fakes.spec(vcpus=1, memory_mb=64, root_gb=1,
                      extra_specs=extra_specs)
    return [h.host for h in FILTER.filter_all(hosts, spec)]


@pytest.mark.parametrize('extra_specs,expected', [
    ({'io': 'fast'}, ['osdev-01', 'osdev-02', 'osdev-03']),       # fast*
    ({'io': 'slow'}, ['osdev-ceph', 'osdev-gpu']),                # slow*
    ({'aggregate_instance_extra_specs:io': 'fast'},
     ['osdev-01', 'osdev-02', 'osdev-03']),
    ({'io': 'medium'}, []),                           # NoValidHost
    ({}, LAB_A + ['osdev-new']),                      # m1.tiny anywhere
    ({'io': '<or> fast <or> slow'}, LAB_A),
    ({'io': 's!= fast'}, ['osdev-ceph', 'osdev-gpu']),
    # other scopes are not this filter's business
    ({'hw:numa_nodes': '1', 'trait:CUSTOM_X': 'required',
      'resources:VGPU': '1', 'quota:cpu_shares': '2048',
      'capabilities:hypervisor_type': 's== QEMU'}, LAB_A + ['osdev-new']),
    ({'hw:cpu_policy': 'dedicated', 'io': 'slow'},
     ['osdev-ceph', 'osdev-gpu']),
])
def test_a1_io_fast_slow(extra_specs, expected):
    assert _passing(_lab_a1(extra_host=True), extra_specs) == expected


def _lab_a3():
    """A3: zone aggregates 3-6 carry addr=11/12/21/22."""
    aggs = {addr: fakes.aggregate(metadata={
        'availability_zone': 'az0%s' % addr[0], 'addr': addr})
        for addr in ('11', '12', '21', '22')}
    return [fakes.host('osdev-01', aggregates=[aggs['11']]),
            fakes.host('osdev-02', aggregates=[aggs['12']]),
            fakes.host('osdev-03', aggregates=[aggs['21']]),
            fakes.host('osdev-ceph', aggregates=[aggs['22']]),
            fakes.host('osdev-gpu', aggregates=[aggs['22']])]


@pytest.mark.parametrize('addr,expected', [
    ('11', ['osdev-01']),
    ('12', ['osdev-02']),
    ('21', ['osdev-03']),
    ('22', ['osdev-ceph', 'osdev-gpu']),
])
def test_a3_rack_aggregates(addr, expected):
    assert _passing(_lab_a3(), {'addr': addr}) == expected


def test_values_merge_over_aggregates_and_split_on_commas():
    host = fakes.host('h1', aggregates=[
        fakes.aggregate(metadata={'io': 'fast'}),
        fakes.aggregate(metadata={'io': 'slow, medium'})])
    for value in ('fast', 'slow', 'medium'):
        assert _passing([host], {'io': value}) == ['h1']
    assert _passing([host], {'io': 'fast,slow'}) == []


def test_every_key_must_match():
    host = fakes.host('h1', aggregates=[
        fakes.aggregate(metadata={'io': 'fast', 'gpu': 'yes'})])
    assert _passing([host], {'io': 'fast', 'gpu': 'yes'}) == ['h1']
    assert _passing([host], {'io': 'fast', 'gpu': 'no'}) == []
    assert _passing([host], {'io': 'fast', 'ssd': 'true'}) == []


def test_numeric_operators_against_metadata():
    host = fakes.host('h1', aggregates=[
        fakes.aggregate(metadata={'cpu_gen': '9'})])
    assert _passing([host], {'cpu_gen': '= 8'}) == ['h1']
    assert _passing([host], {'cpu_gen': '>= 10'}) == []


def test_a12_reasons():
    host = fakes.host('sh11-compute-m3-10e5e12e22', aggregates=[
        fakes.aggregate(metadata={'tier': 'cm3-optimized'})])
    spec = fakes.spec(extra_specs={
        'aggregate_instance_extra_specs:tier': 's3-public'})
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(host, spec)
    assert rejections.by_host[(host.host, host.nodename)] == (
        'AggregateInstanceExtraSpecsFilter',
        "extra spec aggregate_instance_extra_specs:tier: aggregate values "
        "['cm3-optimized'] do not match 's3-public'")
    bare = fakes.host('bare')
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(bare, fakes.spec(
            extra_specs={'io': 'fast'}))
    assert rejections.by_host[('bare', 'bare')][1] == (
        "extra spec io: no aggregate of the host has metadata 'io'")


def test_no_flavor_passes():
    assert FILTER.host_passes(fakes.host('h1'), fakes.spec(flavor=None))


def test_a12_filter_counts():
    """16 hosts -> AvailabilityZoneFilter 11 -> this filter 4."""
    def zone(name):
        return fakes.aggregate(metadata={'availability_zone': name})
    series3 = zone('SERIES-3-ZONE')
    optimized = fakes.aggregate(metadata={'tier': 'cm3-optimized'})
    public = fakes.aggregate(metadata={'tier': 's3-public'})
    hosts = (
        [fakes.host('sh11-compute-m3-%d' % i, aggregates=[series3, optimized])
         for i in range(7)]
        + [fakes.host('sh11-compute-s3-e%d' % i, aggregates=[series3, public])
           for i in (25, 26, 28, 29)]
        + [fakes.host('sh11-nfvm-compute-33',
                      aggregates=[zone('cnp_sdn-NOVA-AZ2')]),
           fakes.host('sh11-nfvm-compute-34',
                      aggregates=[zone('cnp_sdn-NOVA-AZ1')])]
        + [fakes.host('sh11-compute-fc1-%d' % i,
                      aggregates=[zone('FEITENG-ZONE')]) for i in range(3)])
    assert len(hosts) == 16
    spec = fakes.spec(vcpus=1, memory_mb=1024, availability_zone=(
        'SERIES-3-ZONE'), extra_specs={
            'aggregate_instance_extra_specs:tier': 's3-public',
            'hw:mem_page_size': '1GB'})
    counts = []
    chain = (availability_zone_filter.AvailabilityZoneFilter(),
             compute_capabilities_filter.ComputeCapabilitiesFilter(),
             FILTER)
    for host_filter in chain:
        hosts = list(host_filter.filter_all(hosts, spec))
        counts.append(len(hosts))
    assert counts == [11, 11, 4]
    assert [h.host for h in hosts] == [
        'sh11-compute-s3-e25', 'sh11-compute-s3-e26', 'sh11-compute-s3-e28',
        'sh11-compute-s3-e29']
