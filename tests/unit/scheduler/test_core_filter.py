# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""CoreFilter: vCPU capacity under the host's allocation ratio."""

import logging

import pytest

from services.scheduler import filters
from services.scheduler.filters import core_filter
from tests.unit.scheduler import fakes


@pytest.mark.parametrize('host_fields, vcpus, passes, reason', [
    # 4 pCPUs x 2.0 = 8 vCPUs, 5 used: 3 free.
    (dict(vcpus_total=4, vcpus_used=5, cpu_allocation_ratio=2.0), 3,
     True, None),
    (dict(vcpus_total=4, vcpus_used=6, cpu_allocation_ratio=2.0), 3,
     False, 'does not have 3 usable vcpus, it only has 2 usable vcpus'),
    # Seeds A10: 10 pCPUs at ratio 2 take a 10-vCPU guest, never an 11.
    (dict(vcpus_total=10, vcpus_used=0, cpu_allocation_ratio=2.0), 10,
     True, None),
    (dict(vcpus_total=10, vcpus_used=0, cpu_allocation_ratio=2.0), 11,
     False, 'does not have 11 total cpus before overcommit, it only has 10'),
    # Seeds B9/A9: 2 pCPUs at ratio 4, 3 used: a 3-vCPU guest never fits.
    (dict(vcpus_total=2, vcpus_used=3, cpu_allocation_ratio=4.0), 3,
     False, 'does not have 3 total cpus before overcommit, it only has 2'),
    (dict(vcpus_total=2, vcpus_used=3, cpu_allocation_ratio=4.0), 1,
     True, None),
])
def test_core_filter(host_fields, vcpus, passes, reason):
    host = fakes.host('h1', **host_fields)
    with filters.Rejections() as rejections:
        result = core_filter.CoreFilter().host_passes(
            host, fakes.spec(vcpus=vcpus))
    assert result is passes
    if reason:
        assert rejections.by_host[('h1', 'h1')] == ('CoreFilter', reason)
    else:
        assert not rejections.by_host


@pytest.mark.parametrize('vcpus', [1, 3])
def test_limit_is_set_for_the_compute_claim(vcpus):
    host = fakes.host('h1', vcpus_total=10, cpu_allocation_ratio=2.0)
    core_filter.CoreFilter().host_passes(host, fakes.spec(vcpus=vcpus))
    assert host.limits['vcpu'] == 20.0


def test_limit_is_set_even_when_rejected():
    host = fakes.host('h1', vcpus_total=2, vcpus_used=8,
                      cpu_allocation_ratio=4.0)
    assert not core_filter.CoreFilter().host_passes(host, fakes.spec(2))
    assert host.limits['vcpu'] == 8.0


def test_unknown_vcpus_passes_with_a_warning(caplog):
    host = fakes.host('h1', vcpus_total=0)
    with caplog.at_level(logging.WARNING):
        assert core_filter.CoreFilter().host_passes(host, fakes.spec(64))
    assert 'VCPUs not set; assuming CPU collection broken' in caplog.text
    assert 'vcpu' not in host.limits


def test_consumption_fills_the_host():
    """A multi-create stops at the overcommitted capacity."""
    host = fakes.host('h1', vcpus_total=2, cpu_allocation_ratio=4.0)
    spec = fakes.spec(vcpus=2)
    placed = 0
    while core_filter.CoreFilter().host_passes(host, spec):
        host.consume_from_request(spec)
        placed += 1
    assert placed == 4
