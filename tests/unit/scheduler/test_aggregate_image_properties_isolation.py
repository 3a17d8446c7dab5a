# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateImagePropertiesIsolation: image properties vs aggregates."""

import pytest

from common.conf import CONF
from services.scheduler import filters
from services.scheduler.filters import (
    aggregate_image_properties_isolation as aipi)
from tests.unit.scheduler import fakes

FILTER = aipi.AggregateImagePropertiesIsolation()


@pytest.fixture
def conf():
    """Set options for one test; every override is cleared afterwards."""
    overridden = []

    def override(name, value, group=None):
        CONF.set_override(name, value, group=group)
        overridden.append((name, group))

    yield override
    for name, group in overridden:
        CONF.clear_override(name, group=group)


def _host(*metadata):
    return fakes.host('h1', aggregates=[
        fakes.aggregate(metadata=m) for m in metadata])


WIN = {'os_distro': 'windows'}


@pytest.mark.parametrize('metadata,props,expected', [
    # the documented myWinAgg example
    ([WIN], {'os_distro': 'windows'}, True),
    ([WIN], {'os_distro': 'ubuntu'}, False),
    # an image not setting the key asks nothing of the host
    ([WIN], {}, True),
    ([WIN], {'hw_architecture': 'x86_64'}, True),
    # a host in no aggregate takes every image
    ([], {'os_distro': 'ubuntu'}, True),
    # values are merged across aggregates and comma-split
    ([WIN, {'os_distro': 'ubuntu'}], {'os_distro': 'ubuntu'}, True),
    ([{'os_distro': 'windows, ubuntu'}], {'os_distro': 'ubuntu'}, True),
    ([{'os_distro': 'windows', 'hw_architecture': 'x86_64'}],
     {'os_distro': 'windows', 'hw_architecture': 'aarch64'}, False),
    # metadata keys the image lacks (zones, ratios) are ignored
    ([{'availability_zone': 'az1', 'cpu_allocation_ratio': '2.0'}],
     {'os_distro': 'windows'}, True),
])
def test_isolation(metadata, props, expected):
    spec = fakes.spec(image_properties=props)
    assert FILTER.host_passes(_host(*metadata), spec) is expected


@pytest.mark.parametrize('namespace,separator,props,expected', [
    # only keys in the namespace are compared
    ('isolation', '.', {'os_distro': 'ubuntu'}, True),
    ('isolation', '.', {'isolation.os': 'ubuntu'}, False),
    ('isolation', '.', {'isolation.os': 'linux'}, True),
    ('isolation', '_', {'isolation.os': 'ubuntu'}, True),
    (None, '.', {'os_distro': 'ubuntu'}, False),
])
def test_namespace(conf, namespace, separator, props, expected):
    conf('aggregate_image_properties_isolation_namespace', namespace,
         group='filter_scheduler')
    conf('aggregate_image_properties_isolation_separator', separator,
         group='filter_scheduler')
    host = _host({'os_distro': 'windows', 'isolation.os': 'linux'})
    assert FILTER.host_passes(host, fakes.spec(
        image_properties=props)) is expected


def test_reason():
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(_host(WIN), fakes.spec(
            image_properties={'os_distro': 'ubuntu'}))
    assert rejections.by_host[('h1', 'h1')] == (
        'AggregateImagePropertiesIsolation',
        "image property os_distro=ubuntu is not in the aggregate values "
        "['windows']")
