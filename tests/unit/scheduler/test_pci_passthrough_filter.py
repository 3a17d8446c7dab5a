# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""PciPassthroughFilter: hosts must have the requested PCI devices."""

import pytest

from common.pci import stats as pci_stats
from services.scheduler import filters
from services.scheduler.filters import pci_passthrough_filter
from tests.unit.scheduler import fakes

GPU_POOL = {'vendor_id': '10de', 'product_id': '1eb8', 'numa_node': 0,
            'dev_type': 'type-PCI', 'count': 2}
NIC_POOL = {'vendor_id': '8086', 'product_id': '154d', 'numa_node': 1,
            'dev_type': 'type-VF', 'physical_network': 'physnet1',
            'count': 4}


def gpu_request(count):
    """``count`` T4 GPUs through the alias ``t4``."""
    return {'count': count, 'alias_name': 't4', 'numa_policy': 'legacy',
            'spec': [{'vendor_id': '10de', 'product_id': '1eb8'}]}


@pytest.mark.parametrize('pools, requests, passes', [
    ([], [], True),                         # no PCI request: any host
    ([GPU_POOL], [], True),
    ([], [gpu_request(1)], False),          # no devices at all
    ([NIC_POOL], [gpu_request(1)], False),  # other devices only
    ([GPU_POOL, NIC_POOL], [gpu_request(2)], True),
    ([GPU_POOL, NIC_POOL], [gpu_request(3)], False),
])
def test_pci_passthrough_filter(pools, requests, passes):
    host = fakes.host('h1', pci_stats=[dict(item) for item in pools])
    spec = fakes.spec(pci_requests=requests)
    with filters.Rejections() as rejections:
        result = pci_passthrough_filter.PciPassthroughFilter().host_passes(
            host, spec)
    assert result is passes
    if not passes:
        assert rejections.by_host[('h1', 'h1')] == (
            'PciPassthroughFilter',
            "doesn't have the required PCI devices (%d x t4)"
            % requests[0]['count'])


def test_multi_create_runs_out_of_devices():
    host = fakes.host('h1', pci_stats=[dict(GPU_POOL)])
    spec = fakes.spec(pci_requests=[gpu_request(1)])
    filter_ = pci_passthrough_filter.PciPassthroughFilter()
    assert not filter_.run_filter_once_per_request
    placed = 0
    while filter_.host_passes(host, spec):
        host.consume_from_request(
            spec, pci_consume=pci_stats.consume_from_request)
        placed += 1
    assert placed == 2
