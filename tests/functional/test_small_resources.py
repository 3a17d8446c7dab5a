# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Small resources across processes: diagnostics over RabbitMQ from the
fake driver, a power-update event, and the default quota class.

Every service runs as its own process (tests/functional/stack.py) on the
real RabbitMQ and MariaDB.
"""

import pytest

from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack_fixture


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('small')), hosts=1) as deployment:
        yield deployment


def _get(cloud, path, version):
    resp = cloud.compute.http.get(
        path, headers={'openstack-api-version': 'compute %s' % version})
    return resp.status_code, resp.json()


def test_diagnostics_come_from_the_driver(cloud):
    api = cloud.compute
    flavor = api.create_flavor('diag', vcpus=2, ram=256)
    image = api.create_image('diag-img')
    server = api.create_server('diag-vm', flavor, image)
    assert api.wait_for_server(server['id'])['status'] == 'ACTIVE'
    path = '/servers/%s/diagnostics' % server['id']
    status, body = _get(cloud, path, '2.48')
    assert status == 200, body
    assert body['driver'] == 'fake' and body['num_cpus'] == 2
    assert body['memory_details']['maximum'] == 256
    status, body = _get(cloud, path, '2.47')
    assert status == 200 and body['memory'] == 256 * 1024

    # An external power-off, then diagnostics are refused.
    events = api.request('POST', '/os-server-external-events', {
        'events': [{'name': 'power-update', 'server_uuid': server['id'],
                    'tag': 'POWER_OFF'}]})
    assert events['events'][0]['code'] == 200
    shown = api.get_server(server['id'])
    assert shown['OS-EXT-STS:vm_state'] == 'stopped'
    assert shown['OS-EXT-STS:power_state'] == 4
    status, body = _get(cloud, path, '2.48')
    assert status == 409, body
    api.delete_server(server['id'])


def test_default_quota_class_is_every_projects_default(cloud):
    api = cloud.compute
    api.request('PUT', '/os-quota-class-sets/default',
                {'quota_class_set': {'key_pairs': 7}})
    status, body = _get(cloud, '/os-quota-sets/someproject/defaults',
                        '2.79')
    assert status == 200 and body['quota_set']['key_pairs'] == 7
