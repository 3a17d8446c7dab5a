# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateMultiTenancyIsolation: filter_tenant_id aggregate metadata."""

import pytest

from services.scheduler import filters
from services.scheduler.filters import aggregate_multitenancy_isolation
from tests.unit.scheduler import fakes

FILTER = aggregate_multitenancy_isolation.AggregateMultiTenancyIsolation()


def _host(name, *metadata):
    return fakes.host(name, aggregates=[
        fakes.aggregate(metadata=m) for m in metadata])


@pytest.mark.parametrize('metadata,project,expected', [
    ([], 'X', True),
    ([{'io': 'fast'}], 'X', True),
    ([{'filter_tenant_id': 'X'}], 'X', True),
    ([{'filter_tenant_id': 'X'}], 'Y', False),
    ([{'filter_tenant_id': 'X,Y'}], 'Y', True),
    ([{'filter_tenant_id': 'X, Y'}], 'Y', True),
    ([{'filter_tenant_id': 'X,Y'}], 'Z', False),
    # suffixed keys add projects (more than one value can hold)
    ([{'filter_tenant_id': 'X', 'filter_tenant_id2': 'Y'}], 'Y', True),
    ([{'filter_tenant_id_a': 'X', 'filter_tenant_id_b': 'Y'}], 'Y', True),
    ([{'filter_tenant_id3': 'Y'}], 'X', False),
    # two isolated aggregates: the union of their projects
    ([{'filter_tenant_id': 'X'}, {'filter_tenant_id': 'Y'}], 'Y', True),
    ([{'filter_tenant_id': 'X'}, {'io': 'fast'}], 'Y', False),
    ([{'tenant': 'X'}], 'Y', True),
])
def test_isolation(metadata, project, expected):
    spec = fakes.spec(project_id=project)
    assert FILTER.host_passes(_host('h1', *metadata), spec) is expected


def test_documented_example_hosta_hostb():
    """HostB isolated to tenant X: X may use both, Y only HostA."""
    hosts = [_host('HostA'), _host('HostB', {'filter_tenant_id': 'X'})]
    for project, expected in (('X', ['HostA', 'HostB']), ('Y', ['HostA'])):
        spec = fakes.spec(project_id=project)
        assert [h.host for h in FILTER.filter_all(hosts, spec)] == expected


def test_reason():
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(
            _host('h1', {'filter_tenant_id': 'b,a'}),
            fakes.spec(project_id='Y'))
    assert rejections.by_host[('h1', 'h1')] == (
        'AggregateMultiTenancyIsolation',
        'project Y is not among the projects its aggregates are isolated '
        'to (a, b)')
