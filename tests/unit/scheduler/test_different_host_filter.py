# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""DifferentHostFilter: the different_host hint (doc/behaviours.md A4)."""

import pytest

from services.scheduler import filters
from services.scheduler.filters import different_host_filter
from services.scheduler import host_state as hs
from tests.unit.scheduler import fakes

FILTER = different_host_filter.DifferentHostFilter()

VM = '6a928cc0-1509-4e00-91c8-6b43ceb05373'
VM2 = '22222222-2222-3333-4444-555555555555'
OTHER = '11111111-2222-3333-4444-555555555555'
LAB_A = ('osdev-01', 'osdev-02', 'osdev-03', 'osdev-ceph', 'osdev-gpu')


def _lab():
    placed = {'osdev-gpu': VM, 'osdev-03': VM2}
    return [fakes.host(name, instances=(
        {placed[name]: hs.InstanceInfo(uuid=placed[name])}
        if name in placed else {})) for name in LAB_A]


@pytest.mark.parametrize('hints,expected', [
    ({}, list(LAB_A)),
    # A4: server.different goes anywhere but osdev-gpu.
    ({'different_host': [VM]},
     ['osdev-01', 'osdev-02', 'osdev-03', 'osdev-ceph']),
    ({'different_host': VM},
     ['osdev-01', 'osdev-02', 'osdev-03', 'osdev-ceph']),
    ({'different_host': [VM, VM2]}, ['osdev-01', 'osdev-02', 'osdev-ceph']),
    ({'different_host': [OTHER]}, list(LAB_A)),
])
def test_a4_different_host(hints, expected):
    spec = fakes.spec(scheduler_hints=hints)
    assert [h.host for h in FILTER.filter_all(_lab(), spec)] == expected


def test_reason():
    host = fakes.host('h1', instances={VM: hs.InstanceInfo(uuid=VM)})
    spec = fakes.spec(scheduler_hints={'different_host': [OTHER, VM]})
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(host, spec)
    assert rejections.by_host[('h1', 'h1')] == (
        'DifferentHostFilter', 'runs the different_host instance(s) ' + VM)
