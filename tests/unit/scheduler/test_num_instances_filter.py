# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""NumInstancesFilter: the per-host instance cap."""

import pytest

from common.conf import CONF
from services.scheduler import filters
from services.scheduler.filters import num_instances_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def max_instances():
    """Set ``[filter_scheduler] max_instances_per_host`` for one test."""
    def override(value):
        CONF.set_override('max_instances_per_host', value,
                          group='filter_scheduler')
    yield override
    CONF.clear_override('max_instances_per_host', group='filter_scheduler')


@pytest.mark.parametrize('limit, num_instances, passes', [
    (None, 49, True),     # default cap 50
    (None, 50, False),
    (3, 2, True),
    (3, 3, False),
    (3, 7, False),
])
def test_num_instances_filter(max_instances, limit, num_instances, passes):
    if limit is not None:
        max_instances(limit)
    host = fakes.host('h1', num_instances=num_instances)
    with filters.Rejections() as rejections:
        result = num_instances_filter.NumInstancesFilter().host_passes(
            host, fakes.spec())
    assert result is passes
    if not passes:
        assert rejections.by_host[('h1', 'h1')] == (
            'NumInstancesFilter',
            'has %d instances; max instances per host is set to %d'
            % (num_instances, limit or 50))


def test_multi_create_stops_at_the_cap(max_instances):
    max_instances(2)
    host = fakes.host('h1', num_instances=0)
    spec = fakes.spec()
    filter_ = num_instances_filter.NumInstancesFilter()
    assert not filter_.run_filter_once_per_request
    placed = 0
    while filter_.host_passes(host, spec):
        host.consume_from_request(spec)
        placed += 1
    assert placed == 2
