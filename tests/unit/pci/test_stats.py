# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""PCI pool matching: counts, several pools, several requests, NUMA."""

import copy

import pytest

from common.pci import stats as pci_stats
from tests.unit.scheduler import fakes

INTEL, NVIDIA = '8086', '10de'


def pool(vendor=INTEL, product='154d', count=1, numa_node=0,
         dev_type='type-VF', **tags):
    """One PCI device pool."""
    values = dict(vendor_id=vendor, product_id=product, count=count,
                  numa_node=numa_node, dev_type=dev_type)
    values.update(tags)
    return values


def request(count=1, policy=None, *specs):
    """One PCI request; each spec is a dict of attributes."""
    return {'count': count, 'alias_name': 'a', 'numa_policy': policy,
            'spec': list(specs) or [{'vendor_id': INTEL}]}


@pytest.mark.parametrize('pools, requests, supported', [
    # No request: always.
    ([], [], True),
    ([], [request()], False),
    ([pool(count=2)], [request(2)], True),
    ([pool(count=2)], [request(3)], False),
    # One request served from two pools.
    ([pool(count=2), pool(product='1572', count=1)], [request(3)], True),
    ([pool(count=2), pool(product='1572', count=1)], [request(4)], False),
    # Attributes must all match; ids compare without case.
    ([pool(vendor=NVIDIA, product='1EB8')],
     [request(1, None, {'vendor_id': '10DE', 'product_id': '1eb8'})], True),
    ([pool(vendor=NVIDIA)], [request()], False),
    # Any one of the request's specs is enough.
    ([pool(vendor=NVIDIA)],
     [request(1, None, {'vendor_id': INTEL}, {'vendor_id': NVIDIA})], True),
    # Tags, flat or nested, and the alias spelling device_type.
    ([pool(physical_network='physnet1')],
     [request(1, None, {'physical_network': 'physnet1'})], True),
    ([pool(tags={'physical_network': 'physnet2'})],
     [request(1, None, {'physical_network': 'physnet1'})], False),
    ([pool()], [request(1, None, {'device_type': 'type-VF'})], True),
    # A PF pool serves only requests that ask for a PF.
    ([pool(dev_type='type-PF')], [request()], False),
    ([pool(dev_type='type-PF')],
     [request(1, None, {'vendor_id': INTEL, 'dev_type': 'type-PF'})], True),
    # Two requests compete: the wide one must leave the narrow one its
    # only device (a greedy first-fit would refuse this host).
    ([pool(product='154d'), pool(product='1572')],
     [request(1), request(1, None, {'product_id': '154d'})], True),
    ([pool(product='154d', count=2), pool(product='1572')],
     [request(2), request(1, None, {'product_id': '154d'})], True),
    ([pool(product='154d'), pool(product='1572')],
     [request(2), request(1, None, {'product_id': '154d'})], False),
])
def test_support_requests(pools, requests, supported):
    before = copy.deepcopy(pools)
    assert pci_stats.support_requests(pools, requests) is supported
    assert pools == before


@pytest.mark.parametrize('policy, pools, cells, supported', [
    # No instance NUMA topology: locality is not checked.
    ('required', [pool(numa_node=1)], None, True),
    # legacy: local or unknown node.
    (None, [pool(numa_node=0)], [0], True),
    (None, [pool(numa_node=None)], [0], True),
    (None, [pool(numa_node=1)], [0], False),
    ('legacy', [pool(numa_node=1, count=2)], [0, 1], True),
    # required: local only.
    ('required', [pool(numa_node=None)], [0], False),
    ('required', [pool(numa_node=0), pool(numa_node=1)], [{'id': 1}],
     True),
    # preferred: anywhere when nothing local is left.
    ('preferred', [pool(numa_node=1)], [0], True),
    # socket: held to the required rule.
    ('socket', [pool(numa_node=1)], [0], False),
])
def test_numa_policies(policy, pools, cells, supported):
    requests = [request(1, policy)]
    assert pci_stats.support_requests(pools, requests, cells) is supported


def test_apply_requests_takes_the_devices():
    pools = [pool(product='154d'), pool(product='1572', count=3)]
    pci_stats.apply_requests(
        pools, [request(2), request(1, None, {'product_id': '154d'})])
    # NOTE: the wide request leaves 154d to the narrow one.
    assert [item['count'] for item in pools] == [0, 1]


def test_apply_requests_spans_pools():
    pools = [pool(count=2), pool(product='1572', count=2)]
    pci_stats.apply_requests(pools, [request(3)])
    assert sum(item['count'] for item in pools) == 1


def test_apply_requests_failure_leaves_pools_unchanged():
    pools = [pool(count=2)]
    with pytest.raises(pci_stats.PciDeviceRequestFailed):
        pci_stats.apply_requests(pools, [request(1), request(2)])
    assert pools[0]['count'] == 2


def test_preferred_takes_local_devices_first():
    pools = [pool(numa_node=1, count=2), pool(numa_node=0, count=2)]
    pci_stats.apply_requests(pools, [request(2, 'preferred')], [0])
    assert [item['count'] for item in pools] == [2, 0]


def test_preferred_falls_back_to_remote_devices():
    pools = [pool(numa_node=1, count=2), pool(numa_node=0, count=1)]
    pci_stats.apply_requests(pools, [request(2, 'preferred')], [0])
    assert sum(item['count'] for item in pools) == 1


def test_consume_from_request_until_the_host_is_out():
    host = fakes.host('h1', pci_stats=[pool(count=1), pool(count=2)])
    spec = fakes.spec(pci_requests=[request(1)])
    placed = 0
    while pci_stats.support_requests(host.pci_stats, spec.pci_requests):
        host.consume_from_request(
            spec, pci_consume=pci_stats.consume_from_request)
        placed += 1
    assert placed == 3
    assert [item['count'] for item in host.pci_stats] == [0, 0]
