# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Key pairs, server metadata, tags and descriptions through the real
``openstack`` CLI (issue 23, done-when 2).

Every service runs as its own process (tests/functional/stack.py) on the
real RabbitMQ and MariaDB; the CLI talks to berth-api with noauth2, as
test_api_cli.py does. The tests skip only when the ``openstack`` command
is not installed.
"""

import time

import pytest

from tests.functional import osc
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack_fixture

pytestmark = osc.skip_without_cli
VERSION = ('--os-compute-api-version', '2.79')


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('user-resources')),
            hosts=1) as deployment:
        yield deployment


class OSC(osc.Client):
    """``openstack`` against berth-api with the noauth2 settings."""

    def __init__(self, url):
        super().__init__(
            OS_AUTH_TYPE='admin_token', OS_TOKEN='admin',
            OS_ENDPOINT=url + '/v2.1',
            OS_IMAGE_ENDPOINT_OVERRIDE=url + '/image',
            OS_IDENTITY_API_VERSION='3',
            OS_IDENTITY_ENDPOINT_OVERRIDE=url + '/identity')

    def compute(self, *args, **kwargs):
        return self.run(*(VERSION + args), **kwargs)

    def compute_json(self, *args):
        return self.json(*(VERSION + args))


def _wait(client, name, status, timeout=90):
    deadline = time.monotonic() + timeout
    while True:
        server = client.compute_json('server', 'show', name)
        if server['status'] == status or time.monotonic() > deadline:
            return server
        time.sleep(0.5)


def test_key_pairs(cloud, tmp_path):
    client = OSC(cloud.api_url)
    private = tmp_path / 'made.pem'
    made = client.compute_json('keypair', 'create', '--private-key',
                               str(private), 'made')
    assert made['name'] == 'made'
    assert 'PRIVATE KEY-----' in private.read_text()
    key_file = tmp_path / 'id.pub'
    key_file.write_text('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINviFH8ZSPBDe'
                        'r4G0rYTkRJHwks11Q3mkDHH/425iIle me@host\n')
    imported = client.compute_json('keypair', 'create', '--public-key',
                                   str(key_file), 'imported')
    assert imported['fingerprint'] == (
        'd0:f6:cb:41:29:e4:b8:0d:91:a4:a3:ee:f5:f1:1e:a5')
    names = {k['Name'] for k in client.compute_json('keypair', 'list')}
    assert names == {'made', 'imported'}
    again = client.compute('keypair', 'create', '--public-key',
                           str(key_file), 'imported', expect_ok=False)
    assert again.returncode != 0
    assert "Key pair 'imported' already exists." in again.stderr
    client.compute('keypair', 'delete', 'made')
    names = {k['Name'] for k in client.compute_json('keypair', 'list')}
    assert names == {'imported'}


def test_servers_with_key_tags_metadata_description(cloud):
    client = OSC(cloud.api_url)
    client.run('flavor', 'create', '--vcpus', '1', '--ram', '256', '--disk',
               '1', 'tiny')
    client.run('image', 'create', 'cirros')
    if 'imported' not in {k['Name'] for k in client.compute_json(
            'keypair', 'list')}:
        client.compute('keypair', 'create', '--private-key',
                       '/dev/null', 'imported')
    bad = client.compute('server', 'create', '--flavor', 'tiny', '--image',
                         'cirros', '--key-name', 'no-such-key', 'bad',
                         expect_ok=False)
    assert bad.returncode != 0
    assert 'Invalid key_name provided.' in bad.stderr
    client.compute('server', 'create', '--flavor', 'tiny', '--image',
                   'cirros', '--key-name', 'imported', '--tag', 'boot',
                   '--description', 'at boot', 'keyed')
    client.compute('server', 'create', '--flavor', 'tiny', '--image',
                   'cirros', 'plain')
    keyed = _wait(client, 'keyed', 'ACTIVE')
    assert keyed['key_name'] == 'imported'
    assert keyed['tags'] == ['boot']
    assert keyed['description'] == 'at boot'
    assert _wait(client, 'plain', 'ACTIVE')['status'] == 'ACTIVE'
    client.compute('server', 'set', '--property', 'role=web', '--tag', 'web',
                   '--description', 'the web server', 'keyed')
    keyed = client.compute_json('server', 'show', 'keyed')
    assert keyed['properties'] == {'role': 'web'}
    assert sorted(keyed['tags']) == ['boot', 'web']
    assert keyed['description'] == 'the web server'
    listed = client.compute_json('server', 'list', '--tags', 'web')
    assert [s['Name'] for s in listed] == ['keyed']
    listed = client.compute_json('server', 'list', '--not-tags', 'web')
    assert [s['Name'] for s in listed] == ['plain']
    client.compute('server', 'unset', '--property', 'role', '--tag', 'boot',
                   'keyed')
    keyed = client.compute_json('server', 'show', 'keyed')
    assert keyed['properties'] == {}
    assert keyed['tags'] == ['web']
    client.compute('server', 'delete', '--wait', 'keyed')
    deleted = client.compute_json('server', 'list', '--deleted')
    assert [s['Name'] for s in deleted] == ['keyed']
    assert deleted[0]['Status'] == 'DELETED'
