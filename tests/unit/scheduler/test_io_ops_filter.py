# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""IoOpsFilter: the per-host cap on concurrent I/O operations."""

import pytest

from common.conf import CONF
from services.scheduler import filters
from services.scheduler.filters import io_ops_filter
from tests.unit.scheduler import fakes


@pytest.fixture
def max_io_ops():
    """Set ``[filter_scheduler] max_io_ops_per_host`` for one test."""
    def override(value):
        CONF.set_override('max_io_ops_per_host', value,
                          group='filter_scheduler')
    yield override
    CONF.clear_override('max_io_ops_per_host', group='filter_scheduler')


@pytest.mark.parametrize('limit, num_io_ops, passes', [
    (None, 7, True),      # default cap 8
    (None, 8, False),
    (2, 1, True),
    (2, 2, False),
    (0, 0, False),        # 0 keeps every build away
])
def test_io_ops_filter(max_io_ops, limit, num_io_ops, passes):
    if limit is not None:
        max_io_ops(limit)
    host = fakes.host('h1', num_io_ops=num_io_ops)
    with filters.Rejections() as rejections:
        result = io_ops_filter.IoOpsFilter().host_passes(host, fakes.spec())
    assert result is passes
    if not passes:
        assert rejections.by_host[('h1', 'h1')] == (
            'IoOpsFilter',
            'has %d I/O operations; max I/O ops per host is set to %d'
            % (num_io_ops, 8 if limit is None else limit))


def test_each_selection_is_one_more_io_op(max_io_ops):
    max_io_ops(3)
    host = fakes.host('h1', num_io_ops=1)
    spec = fakes.spec()
    placed = 0
    while io_ops_filter.IoOpsFilter().host_passes(host, spec):
        host.consume_from_request(spec)
        placed += 1
    assert placed == 2
