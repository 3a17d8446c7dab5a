# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""IsolatedHostsFilter: the documented result matrices."""

import pytest

from common.conf import CONF
from services.scheduler import filters
from services.scheduler.filters import isolated_hosts_filter
from tests.unit.scheduler import fakes

FILTER = isolated_hosts_filter.IsolatedHostsFilter()

ISO_IMAGE = '342b492c-128f-4a42-8d3a-c5088cf27d13'
OTHER_IMAGE = 'ebd267a6-ca86-4d6c-9a0e-bd132d6b7d09'


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


def _spec(image_id, is_bfv=False):
    spec = fakes.spec(is_bfv=is_bfv)
    spec.image.id = image_id
    return spec


@pytest.mark.parametrize('restrict,host,image,expected', [
    (True, 'server1', ISO_IMAGE, True),
    (True, 'server1', OTHER_IMAGE, False),
    (True, 'plain', ISO_IMAGE, False),
    (True, 'plain', OTHER_IMAGE, True),
    (False, 'server1', ISO_IMAGE, True),
    (False, 'server1', OTHER_IMAGE, True),
    (False, 'plain', ISO_IMAGE, False),
    (False, 'plain', OTHER_IMAGE, True),
    # an image-less request is never an isolated image
    (True, 'server1', None, False),
    (False, 'server1', None, True),
    (True, 'plain', None, True),
])
def test_matrix(conf, restrict, host, image, expected):
    conf('isolated_hosts', ['server1', 'server2'], group='filter_scheduler')
    conf('isolated_images', [ISO_IMAGE], group='filter_scheduler')
    conf('restrict_isolated_hosts_to_isolated_images', restrict,
         group='filter_scheduler')
    assert FILTER.host_passes(fakes.host(host), _spec(image)) is expected


@pytest.mark.parametrize('restrict,host,expected', [
    (True, 'server1', False), (True, 'plain', True),
    (False, 'server1', True), (False, 'plain', True)])
def test_volume_backed(conf, restrict, host, expected):
    """Volume-backed requests never go to isolated hosts when restricted."""
    conf('isolated_hosts', ['server1'], group='filter_scheduler')
    conf('isolated_images', [ISO_IMAGE], group='filter_scheduler')
    conf('restrict_isolated_hosts_to_isolated_images', restrict,
         group='filter_scheduler')
    spec = _spec(ISO_IMAGE, is_bfv=True)
    assert FILTER.host_passes(fakes.host(host), spec) is expected


@pytest.mark.parametrize('restrict,host,expected', [
    (True, 'server1', False), (True, 'plain', True),
    (False, 'server1', True), (False, 'plain', True)])
def test_no_isolated_images(conf, restrict, host, expected):
    conf('isolated_hosts', ['server1'], group='filter_scheduler')
    conf('restrict_isolated_hosts_to_isolated_images', restrict,
         group='filter_scheduler')
    assert FILTER.host_passes(fakes.host(host),
                              _spec(OTHER_IMAGE)) is expected


def test_unconfigured_passes_everything():
    assert FILTER.host_passes(fakes.host('server1'), _spec(ISO_IMAGE))


def test_reasons(conf):
    conf('isolated_hosts', ['server1'], group='filter_scheduler')
    conf('isolated_images', [ISO_IMAGE], group='filter_scheduler')
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(fakes.host('plain'), _spec(ISO_IMAGE))
        assert not FILTER.host_passes(fakes.host('server1'),
                                      _spec(OTHER_IMAGE))
    assert rejections.by_host[('plain', 'plain')][1] == (
        'image %s is isolated to hosts server1' % ISO_IMAGE)
    assert rejections.by_host[('server1', 'server1')][1] == (
        'is an isolated host and image %s is not an isolated image'
        % OTHER_IMAGE)
