# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ServerGroupAntiAffinityFilter: spreading an anti-affinity group."""

import collections

import pytest

from common.objects import instance_group
from services.scheduler import filters
from services.scheduler.filters import server_group_anti_affinity_filter
from services.scheduler import host_state as hs
from tests.unit.scheduler import fakes

LAB_A = ('osdev-01', 'osdev-02', 'osdev-03', 'osdev-ceph', 'osdev-gpu')


def _passes(host, spec):
    filter_ = server_group_anti_affinity_filter.ServerGroupAntiAffinityFilter()
    return filter_.host_passes(host, spec)


@pytest.mark.parametrize('policy, group_hosts, rules, passes', [
    # Not this filter's policy (soft-anti-affinity is a weigher).
    (instance_group.AFFINITY, ['h1'], {}, True),
    (instance_group.SOFT_ANTI_AFFINITY, ['h1', 'h1'], {}, True),
    # First member: anywhere.
    (instance_group.ANTI_AFFINITY, [], {}, True),
    (instance_group.ANTI_AFFINITY, ['h2', 'h3'], {}, True),
    (instance_group.ANTI_AFFINITY, ['h1'], {}, False),
    # max_server_per_host=2: a second member may join, a third may not.
    (instance_group.ANTI_AFFINITY, ['h1', 'h2'],
     {'max_server_per_host': 2}, True),
    (instance_group.ANTI_AFFINITY, ['h1', 'h2', 'h1'],
     {'max_server_per_host': 2}, False),
])
def test_anti_affinity(policy, group_hosts, rules, passes):
    group = fakes.group(policy, hosts=group_hosts, rules=rules)
    assert _passes(fakes.host('h1'), fakes.spec(group=group)) is passes


def test_no_group_passes():
    assert _passes(fakes.host('h1'), fakes.spec())


def test_rejection_reason():
    group = fakes.group(instance_group.ANTI_AFFINITY, hosts=['h1'])
    with filters.Rejections() as rejections:
        _passes(fakes.host('h1'), fakes.spec(group=group))
    assert rejections.by_host[('h1', 'h1')] == (
        'ServerGroupAntiAffinityFilter',
        'already runs 1 member(s) of the anti-affinity group, '
        'max_server_per_host is 1')


def test_a_member_being_moved_may_stay():
    """Resize of a member keeps its own host available."""
    group = fakes.group(instance_group.ANTI_AFFINITY, hosts=['h1'])
    spec = fakes.spec(group=group, instance_uuid='member-1')
    host = fakes.host('h1', instances={
        'member-1': hs.InstanceInfo(uuid='member-1')})
    assert _passes(host, spec)


def _boot_members(count, rules=None):
    """Boot ``count`` members one by one on Lab A; None when no host fits.

    The first passing host is taken, and the group's hosts grow by one
    entry per placed member, as the scheduler records them.
    """
    group = fakes.group(instance_group.ANTI_AFFINITY, rules=rules)
    hosts = [fakes.host(name) for name in LAB_A]
    placed = []
    for _ in range(count):
        spec = fakes.spec(group=group)
        passing = [host for host in hosts if _passes(host, spec)]
        if not passing:
            placed.append(None)
            continue
        chosen = passing[0]
        chosen.consume_from_request(spec)
        group.hosts.append(chosen.host)
        placed.append(chosen.host)
    return placed


def test_a5_group_larger_than_the_cloud():
    """aa1-aa5 land on 5 distinct hosts; aa6-aa8 find no valid host."""
    placed = _boot_members(8)
    assert sorted(placed[:5]) == sorted(LAB_A)
    assert placed[5:] == [None, None, None]


def test_max_server_per_host_two_allows_two_members_per_host():
    placed = _boot_members(11, rules={'max_server_per_host': 2})
    assert collections.Counter(placed[:10]) == {name: 2 for name in LAB_A}
    assert placed[10] is None
