# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""SameHostFilter: the same_host hint (doc/behaviours.md A4)."""

import pytest

from services.scheduler import filters
from services.scheduler.filters import same_host_filter
from services.scheduler import host_state as hs
from tests.unit.scheduler import fakes

FILTER = same_host_filter.SameHostFilter()

VM = '6a928cc0-1509-4e00-91c8-6b43ceb05373'
OTHER = '11111111-2222-3333-4444-555555555555'
LAB_A = ('osdev-01', 'osdev-02', 'osdev-03', 'osdev-ceph', 'osdev-gpu')


def _lab():
    # A4: server.az02-ha02 runs on osdev-gpu.
    return [fakes.host(name, instances=(
        {VM: hs.InstanceInfo(uuid=VM)} if name == 'osdev-gpu' else {}))
        for name in LAB_A]


def _passing(hints):
    spec = fakes.spec(scheduler_hints=hints)
    return [h.host for h in FILTER.filter_all(_lab(), spec)]


@pytest.mark.parametrize('hints,expected', [
    ({}, list(LAB_A)),
    ({'same_host': [VM]}, ['osdev-gpu']),
    ({'same_host': VM}, ['osdev-gpu']),
    ({'same_host': [OTHER, VM]}, ['osdev-gpu']),
    # A4 extra: a uuid on no host leaves no host (NoValidHost).
    ({'same_host': [OTHER]}, []),
    ({'same_host': []}, list(LAB_A)),
])
def test_a4_same_host(hints, expected):
    assert _passing(hints) == expected


def test_reason():
    spec = fakes.spec(scheduler_hints={'same_host': [OTHER]})
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(fakes.host('h1'), spec)
    assert rejections.by_host[('h1', 'h1')] == (
        'SameHostFilter', 'runs none of the same_host instances ' + OTHER)
