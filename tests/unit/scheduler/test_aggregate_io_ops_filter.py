# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateIoOpsFilter: per-aggregate caps on I/O operations."""

import logging

import pytest

from common.conf import CONF
from services.scheduler.filters import aggregate_io_ops_filter
from services.scheduler.filters import io_ops_filter
from tests.unit.scheduler import fakes


@pytest.fixture(autouse=True)
def max_io_ops():
    """A configured cap of 4 for every test here."""
    CONF.set_override('max_io_ops_per_host', 4, group='filter_scheduler')
    yield
    CONF.clear_override('max_io_ops_per_host', group='filter_scheduler')


@pytest.mark.parametrize('caps, num_io_ops, passes', [
    ((), 3, True),             # configured 4
    ((), 4, False),
    (('2',), 1, True),
    (('2',), 2, False),
    (('10',), 9, True),        # an aggregate may raise the cap
    (('10', '2'), 2, False),   # the minimum wins
    (('2.5',), 3, True),       # not an int: configured 4
    (('2.5',), 4, False),
])
def test_aggregate_io_ops_filter(caps, num_io_ops, passes):
    aggregates = [fakes.aggregate(metadata={'max_io_ops_per_host': cap})
                  for cap in caps]
    host = fakes.host('h1', num_io_ops=num_io_ops, aggregates=aggregates)
    filter_ = aggregate_io_ops_filter.AggregateIoOpsFilter()
    assert filter_.host_passes(host, fakes.spec()) is passes


def test_undecodable_cap_is_warned(caplog):
    host = fakes.host('h1', aggregates=[
        fakes.aggregate(metadata={'max_io_ops_per_host': 'x'})])
    with caplog.at_level(logging.WARNING):
        aggregate_io_ops_filter.AggregateIoOpsFilter().host_passes(
            host, fakes.spec())
    assert "Could not decode max_io_ops_per_host: '" in caplog.text


def test_only_the_cap_lookup_differs():
    cls = aggregate_io_ops_filter.AggregateIoOpsFilter
    assert issubclass(cls, io_ops_filter.IoOpsFilter)
    assert 'host_passes' not in vars(cls)
