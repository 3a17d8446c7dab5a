# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateNumInstancesFilter: per-aggregate instance caps."""

import pytest

from common.conf import CONF
from services.scheduler.filters import aggregate_num_instances_filter
from services.scheduler.filters import num_instances_filter
from tests.unit.scheduler import fakes


@pytest.fixture(autouse=True)
def max_instances():
    """A configured cap of 10 for every test here."""
    CONF.set_override('max_instances_per_host', 10,
                      group='filter_scheduler')
    yield
    CONF.clear_override('max_instances_per_host', group='filter_scheduler')


@pytest.mark.parametrize('caps, num_instances, passes', [
    ((), 9, True),             # configured 10
    ((), 10, False),
    (('5',), 4, True),
    (('5',), 5, False),
    (('20',), 15, True),       # an aggregate may raise the cap
    (('20', '5'), 5, False),   # the minimum wins
    (('many',), 9, True),      # undecodable: configured 10
    (('many',), 10, False),
])
def test_aggregate_num_instances_filter(caps, num_instances, passes):
    aggregates = [fakes.aggregate(metadata={'max_instances_per_host': cap})
                  for cap in caps]
    host = fakes.host('h1', num_instances=num_instances,
                      aggregates=aggregates)
    filter_ = aggregate_num_instances_filter.AggregateNumInstancesFilter()
    assert filter_.host_passes(host, fakes.spec()) is passes


def test_only_the_cap_lookup_differs():
    cls = aggregate_num_instances_filter.AggregateNumInstancesFilter
    assert issubclass(cls, num_instances_filter.NumInstancesFilter)
    assert 'host_passes' not in vars(cls)
