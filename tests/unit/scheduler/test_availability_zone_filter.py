# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AvailabilityZoneFilter, zone options (doc/behaviours.md A2, A12, §zones)."""

import pytest

from common.conf import CONF
from services.scheduler import filters
from services.scheduler.filters import availability_zone_filter
from tests.unit.scheduler import fakes

FILTER = availability_zone_filter.AvailabilityZoneFilter()


@pytest.fixture
def conf():
    """Set options for one test; every override is cleared afterwards."""
    overridden = []

    def override(name, value, group=None):
        CONF.set_override(name, value, group=group)
        overridden.append((name, group))

    yield override
    for name, group in overridden:
        CONF.clear_override(name, group=group)


def _lab_a():
    """Lab A after A2: az01 = osdev-01/02, az02 = osdev-03/ceph/gpu."""
    az01_ha01 = fakes.aggregate('az01-ha01', metadata={
        'availability_zone': 'az01', 'addr': '11'})
    az01_ha02 = fakes.aggregate('az01-ha02', metadata={
        'availability_zone': 'az01', 'addr': '12'})
    az02_ha01 = fakes.aggregate('az02-ha01', metadata={
        'availability_zone': 'az02', 'addr': '21'})
    az02_ha02 = fakes.aggregate('az02-ha02', metadata={
        'availability_zone': 'az02', 'addr': '22'})
    return [fakes.host('osdev-01', aggregates=[az01_ha01]),
            fakes.host('osdev-02', aggregates=[az01_ha02]),
            fakes.host('osdev-03', aggregates=[az02_ha01]),
            fakes.host('osdev-ceph', aggregates=[az02_ha02]),
            fakes.host('osdev-gpu', aggregates=[az02_ha02])]


def _passing(hosts, zone):
    spec = fakes.spec(availability_zone=zone)
    return [h.host for h in FILTER.filter_all(hosts, spec)]


@pytest.mark.parametrize('zone,expected', [
    ('az02', ['osdev-03', 'osdev-ceph', 'osdev-gpu']),   # demo1
    ('az01', ['osdev-01', 'osdev-02']),                  # demo2
    (None, ['osdev-01', 'osdev-02', 'osdev-03', 'osdev-ceph', 'osdev-gpu']),
    ('', ['osdev-01', 'osdev-02', 'osdev-03', 'osdev-ceph', 'osdev-gpu']),
    # every host is in a zone aggregate, so 'nova' is empty (A2).
    ('nova', []),
    ('az99', []),
])
def test_a2_zones(zone, expected):
    assert _passing(_lab_a(), zone) == expected


@pytest.mark.parametrize('zone,default,expected', [
    ('nova', None, ['free-1', 'free-2']),
    ('az01', None, ['zoned']),
    ('other', 'other', ['free-1', 'free-2']),
    ('nova', 'other', []),
])
def test_hosts_in_no_zone_are_in_the_default_zone(
        conf, zone, default, expected):
    if default is not None:
        conf('default_availability_zone', default)
    hosts = [fakes.host('free-1'),
             fakes.host('free-2', aggregates=[
                 fakes.aggregate(metadata={'io': 'fast'})]),
             fakes.host('zoned', aggregates=[
                 fakes.aggregate(metadata={'availability_zone': 'az01'})])]
    assert _passing(hosts, zone) == expected


def test_host_in_two_zones_serves_both():
    host = fakes.host('h1', aggregates=[
        fakes.aggregate(metadata={'availability_zone': 'az1'}),
        fakes.aggregate(metadata={'availability_zone': 'az2'})])
    assert _passing([host], 'az1') == ['h1']
    assert _passing([host], 'az2') == ['h1']
    assert _passing([host], 'nova') == []


def test_a12_reason():
    host = fakes.host('sh11-nfvm-compute-10e5e12e33', aggregates=[
        fakes.aggregate(metadata={'availability_zone': 'cnp_sdn-NOVA-AZ2'})])
    spec = fakes.spec(availability_zone='SERIES-3-ZONE')
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(host, spec)
    assert rejections.by_host[(host.host, host.nodename)] == (
        'AvailabilityZoneFilter',
        "availability zone 'SERIES-3-ZONE' requested, host has AZs: "
        "cnp_sdn-NOVA-AZ2")


def test_reason_for_a_host_in_no_zone():
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(fakes.host('h1'),
                                      fakes.spec(availability_zone='az1'))
    assert rejections.by_host[('h1', 'h1')][1] == (
        "availability zone 'az1' requested, host is in no zone aggregate "
        "(default zone 'nova')")


def test_zone_options_defaults():
    assert CONF.default_availability_zone == 'nova'
    assert CONF.default_schedule_zone is None


def test_flags():
    assert FILTER.run_filter_once_per_request
    assert not FILTER.RUN_ON_REBUILD
