# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""RetryFilter: nodes already tried for the request fail."""

import pytest

from common.objects import request_spec
from services.scheduler import filters
from services.scheduler.filters import retry_filter
from tests.unit.scheduler import fakes

FILTER = retry_filter.RetryFilter()


def _retry(*pairs):
    return request_spec.SchedulerRetries(num_attempts=len(pairs) + 1,
                                         hosts=[list(p) for p in pairs])


@pytest.mark.parametrize('host,node,retry,expected', [
    ('h1', 'h1', None, True),
    ('h1', 'h1', _retry(), True),
    ('h1', 'h1', _retry(('h1', 'h1')), False),
    ('h1', 'h1', _retry(('h2', 'h2')), True),
    ('h1', 'h1', _retry(('h2', 'h2'), ('h1', 'h1')), False),
    # the same host, another node (ironic-style) is a different target
    ('h1', 'n2', _retry(('h1', 'n1')), True),
    ('h1', 'n1', _retry(('h1', 'n1')), False),
])
def test_tried_nodes(host, node, retry, expected):
    state = fakes.host(host, node=node)
    assert FILTER.host_passes(state, fakes.spec(retry=retry)) is expected


def test_reason_and_tuple_pairs():
    retry = request_spec.SchedulerRetries(num_attempts=2,
                                          hosts=[('h1', 'h1')])
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(fakes.host('h1'),
                                      fakes.spec(retry=retry))
    assert rejections.by_host[('h1', 'h1')] == (
        'RetryFilter', 'node already tried for this request (attempt 2)')
