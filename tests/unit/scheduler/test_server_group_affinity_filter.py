# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ServerGroupAffinityFilter: keeping an affinity group together."""

import pytest

from common.objects import instance_group
from services.scheduler import filters
from services.scheduler.filters import server_group_affinity_filter
from tests.unit.scheduler import fakes

LAB_A = ('osdev-01', 'osdev-02', 'osdev-03', 'osdev-ceph', 'osdev-gpu')


def _passes(host, spec):
    filter_ = server_group_affinity_filter.ServerGroupAffinityFilter()
    return filter_.host_passes(host, spec)


@pytest.mark.parametrize('policy, group_hosts, passes', [
    # Not this filter's policy (soft-affinity is a weigher).
    (instance_group.ANTI_AFFINITY, ['h2'], True),
    (instance_group.SOFT_AFFINITY, ['h2'], True),
    # First member: anywhere.
    (instance_group.AFFINITY, [], True),
    (instance_group.AFFINITY, ['h1'], True),
    (instance_group.AFFINITY, ['h1', 'h1'], True),
    (instance_group.AFFINITY, ['h2'], False),
    (instance_group.AFFINITY, ['h2', 'h3'], False),
])
def test_affinity(policy, group_hosts, passes):
    group = fakes.group(policy, hosts=group_hosts)
    assert _passes(fakes.host('h1'), fakes.spec(group=group)) is passes


def test_no_group_passes():
    assert _passes(fakes.host('h1'), fakes.spec())


def test_rejection_reason():
    group = fakes.group(instance_group.AFFINITY, hosts=['h2'])
    with filters.Rejections() as rejections:
        _passes(fakes.host('h1'), fakes.spec(group=group))
    assert rejections.by_host[('h1', 'h1')] == (
        'ServerGroupAffinityFilter',
        "is not among the affinity group's hosts h2")


def test_a6_members_follow_the_first():
    """a1 lands anywhere; a2 and a3 only pass on a1's host."""
    group = fakes.group(instance_group.AFFINITY)
    hosts = [fakes.host(name) for name in LAB_A]
    spec = fakes.spec(group=group)
    assert all(_passes(host, spec) for host in hosts)
    group.hosts.append('osdev-gpu')
    for _ in range(2):
        spec = fakes.spec(group=group)
        assert [host.host for host in hosts
                if _passes(host, spec)] == ['osdev-gpu']
        group.hosts.append('osdev-gpu')
