# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``openstack usage list|show`` against a running Berth (issue 23).

Every service runs as its own process on the real RabbitMQ and MariaDB
(tests/functional/stack.py); the CLI authenticates as test_api_cli.py's
does (noauth2). A server that ran and was deleted still counts.
"""

import time

import pytest

from tests.functional import osc
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack_fixture
from tests.functional.test_api_cli import OSC

pytestmark = osc.skip_without_cli


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('usage')), hosts=1) as deployment:
        yield deployment


def _wait(client, name, status, timeout=90):
    deadline = time.monotonic() + timeout
    while True:
        server = client.json('server', 'show', name)
        if server['status'] == status or time.monotonic() > deadline:
            return server
        time.sleep(0.5)


def _wait_gone(client, name, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        names = {s['Name'] for s in client.json('server', 'list')}
        if name not in names:
            return
        time.sleep(0.5)
    pytest.fail('server %s was not deleted' % name)


def test_usage_list_and_show(cloud):
    client = OSC(cloud.api_url)
    client.run('flavor', 'create', '--vcpus', '2', '--ram', '256', '--disk',
               '1', 'small')
    client.run('image', 'create', 'cirros')
    for name in ('kept', 'gone'):
        client.run('server', 'create', '--flavor', 'small', '--image',
                   'cirros', '--nic', 'none', name)
    for name in ('kept', 'gone'):
        assert _wait(client, name, 'ACTIVE')['status'] == 'ACTIVE'
    client.run('server', 'delete', 'gone')
    _wait_gone(client, 'gone')
    [usage] = client.json('usage', 'list')
    assert usage['Project'] == 'admin'
    # NOTE: both servers count, the deleted one for the time it ran.
    servers = {s['name']: s for s in usage['Servers']}
    assert set(servers) == {'kept', 'gone'}
    assert servers['gone']['state'] == 'terminated'
    assert servers['kept']['state'] == 'active'
    # NOTE: the CLI's default period ends tomorrow: as in Nova, a running
    # server counts up to the end of the period.
    assert servers['kept']['hours'] > servers['gone']['hours'] > 0
    shown = client.json('usage', 'show', '--project', 'admin')
    assert float(shown['CPU Hours']) == pytest.approx(
        2 * sum(s['hours'] for s in servers.values()), rel=0.01)
