# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateTypeAffinityFilter: instance_type aggregate metadata."""

import pytest

from services.scheduler import filters
from services.scheduler.filters import aggregate_type_affinity_filter
from tests.unit.scheduler import fakes

FILTER = aggregate_type_affinity_filter.AggregateTypeAffinityFilter()


def _host(name, *metadata):
    return fakes.host(name, aggregates=[
        fakes.aggregate(metadata=m) for m in metadata])


def _spec(flavor_name):
    spec = fakes.spec()
    spec.flavor.name = flavor_name
    return spec


@pytest.mark.parametrize('metadata,flavor,expected', [
    # a host in no flavor-bound aggregate takes every flavor
    ([], 'm1.small', True),
    ([{'io': 'fast'}], 'm1.small', True),
    ([{'instance_type': 'm1.small'}], 'm1.small', True),
    ([{'instance_type': 'm1.small'}], 'm1.large', False),
    ([{'instance_type': 'm1.small,m1.large'}], 'm1.large', True),
    ([{'instance_type': 'm1.small , m1.large'}], 'm1.large', True),
    ([{'instance_type': 'm1.small,m1.large'}], 'm1.tiny', False),
    # names, not prefixes or substrings
    ([{'instance_type': 'm1.small'}], 'm1', False),
    ([{'instance_type': 'm1'}], 'm1.small', False),
    # several bound aggregates: the flavors any of them takes
    ([{'instance_type': 'a'}, {'instance_type': 'b'}], 'b', True),
    ([{'instance_type': 'a'}, {'io': 'fast'}], 'b', False),
    # an empty list takes no flavor
    ([{'instance_type': ''}], 'm1.small', False),
    # other keys are not read
    ([{'instance_type_x': 'a'}], 'b', True),
])
def test_type_affinity(metadata, flavor, expected):
    assert FILTER.host_passes(_host('h1', *metadata),
                              _spec(flavor)) is expected


def test_bound_and_free_hosts():
    """gpu1 takes only g1.large; free1 takes every flavor."""
    hosts = [_host('free1'), _host('gpu1', {'instance_type': 'g1.large'})]
    for flavor, expected in (('g1.large', ['free1', 'gpu1']),
                             ('m1.small', ['free1'])):
        assert [h.host for h in FILTER.filter_all(
            hosts, _spec(flavor))] == expected


def test_reason():
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(
            _host('h1', {'instance_type': 'b,a'}), _spec('m1.small'))
    assert rejections.by_host[('h1', 'h1')] == (
        'AggregateTypeAffinityFilter',
        'flavor m1.small is not among the flavors its aggregates take '
        '(instance_type a, b)')
