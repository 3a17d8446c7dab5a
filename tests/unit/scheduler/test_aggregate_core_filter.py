# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateCoreFilter: per-aggregate CPU ratios, the minimum wins."""

import logging

import pytest

from services.scheduler import filters
from services.scheduler.filters import aggregate_core_filter
from services.scheduler.filters import core_filter
from tests.unit.scheduler import fakes


def _host(ratios, **fields):
    """A 4-pCPU host (own ratio 16) in one aggregate per ratio."""
    aggregates = [fakes.aggregate(metadata={'cpu_allocation_ratio': ratio})
                  for ratio in ratios]
    values = dict(vcpus_total=4, vcpus_used=0, cpu_allocation_ratio=16.0,
                  aggregates=aggregates)
    values.update(fields)
    return fakes.host('h1', **values)


@pytest.mark.parametrize('ratios, vcpus_used, passes, limit', [
    # No aggregate value: the host's own ratio (4 x 16 = 64).
    ((), 60, True, 64.0),
    # Seeds A22: aggregates with 4.0 and 2.0 -> 2.0 (capacity 8, not 16).
    (('4.0', '2.0'), 5, True, 8.0),
    (('4.0', '2.0'), 7, False, 8.0),
    # A single aggregate value replaces the host's ratio.
    (('1.5',), 2, True, 6.0),
    # Seeds A22: an undecodable value falls back to the host's ratio.
    (('abc',), 60, True, 64.0),
])
def test_aggregate_core_filter(ratios, vcpus_used, passes, limit):
    host = _host(ratios, vcpus_used=vcpus_used)
    with filters.Rejections() as rejections:
        result = aggregate_core_filter.AggregateCoreFilter().host_passes(
            host, fakes.spec(vcpus=2))
    assert result is passes
    assert host.limits['vcpu'] == limit
    if not passes:
        assert rejections.by_host[('h1', 'h1')] == (
            'AggregateCoreFilter',
            'does not have 2 usable vcpus, it only has 1 usable vcpus')


def test_minimum_rule_is_logged(caplog):
    """Seeds A22: the INFO line names the number of values found."""
    host = _host(('4.0', '2.0'))
    with caplog.at_level(logging.INFO):
        aggregate_core_filter.AggregateCoreFilter().host_passes(
            host, fakes.spec(vcpus=1))
    assert '2 values found, of which the minimum value will be used.' in (
        caplog.text)


def test_undecodable_value_is_warned(caplog):
    host = _host(('abc',))
    with caplog.at_level(logging.WARNING):
        aggregate_core_filter.AggregateCoreFilter().host_passes(
            host, fakes.spec(vcpus=1))
    assert "Could not decode cpu_allocation_ratio: '" in caplog.text


def test_overcommit_against_itself_still_applies():
    host = _host(('100',))
    assert not aggregate_core_filter.AggregateCoreFilter().host_passes(
        host, fakes.spec(vcpus=5))


def test_is_a_core_filter():
    """Only the ratio lookup differs from CoreFilter."""
    assert issubclass(aggregate_core_filter.AggregateCoreFilter,
                      core_filter.CoreFilter)
    assert 'host_passes' not in vars(
        aggregate_core_filter.AggregateCoreFilter)
