# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Microversion parsing, the version documents and response headers."""

import pytest

from services.api import microversion
from tests.unit.api.helpers import V


def test_versions_are_contiguous():
    """Guard: every minor version from 2.1 to the maximum, once each."""
    parsed = [microversion.parse(v) for v in microversion.VERSIONS]
    assert parsed == [(2, minor) for minor in range(1, len(parsed) + 1)]
    assert microversion.MAX_VERSION == (2, 95)


@pytest.mark.parametrize('headers,expected', [
    ({}, (2, 1)),
    ({'openstack-api-version': 'compute 2.47'}, (2, 47)),
    ({'openstack-api-version': 'placement 1.3, compute 2.60'}, (2, 60)),
    ({'openstack-api-version': 'placement 1.3'}, (2, 1)),
    ({'x-openstack-nova-api-version': '2.12'}, (2, 12)),
    ({'openstack-api-version': 'compute 2.20',
      'x-openstack-nova-api-version': '2.12'}, (2, 20)),
    ({'openstack-api-version': 'compute latest'}, (2, 95)),
])
def test_from_headers(headers, expected):
    assert microversion.from_headers(headers) == expected


@pytest.mark.parametrize('value,status', [
    ('compute 2.x', 400), ('compute 3.0', 406), ('compute 2.96', 406),
    ('compute 2.0', 406)])
def test_bad_versions(value, status):
    with pytest.raises(microversion.MicroversionError) as info:
        microversion.from_headers({'openstack-api-version': value})
    assert info.value.status == status


def test_documents_and_headers(world):
    status, body, resp = world.client.get('/', token=None, version=None)
    assert status == 200
    # NOTE: as Nova, v2.0 is listed too (SUPPORTED, no microversions).
    v20, doc = body['versions']
    assert (v20['id'], v20['status'], v20['version']) == (
        'v2.0', 'SUPPORTED', '')
    assert (doc['id'], doc['version'], doc['min_version']) == (
        'v2.1', '2.95', '2.1')
    assert resp.headers['OpenStack-API-Version'] == 'compute 2.1'
    assert resp.headers['X-OpenStack-Nova-API-Version'] == '2.1'
    assert 'OpenStack-API-Version' in resp.headers['Vary']
    status, body, _ = world.client.get(V, token=None)
    assert body['version']['links'][0]['href'].endswith('/v2.1/')
    status, body, resp = world.client.get(V + '/flavors', version='2.61')
    assert resp.headers['OpenStack-API-Version'] == 'compute 2.61'
    status, body, resp = world.client.get(V + '/flavors', version='2.99')
    assert status == 406 and 'notAcceptable' in body


def test_errors_are_nova_faults(world):
    status, body, _ = world.client.get(V + '/nothing-here')
    assert status == 404 and body['itemNotFound']['code'] == 404
    status, body, resp = world.client.request('PATCH', V + '/flavors')
    assert status == 405 and 'GET' in resp.headers['Allow']
    status, body, _ = world.client.get(V + '/flavors', token=None)
    assert status == 401 and 'unauthorized' in body
    status, body, _ = world.client.request(
        'POST', V + '/flavors', raw=b'{not json')
    assert status == 400 and 'badRequest' in body
