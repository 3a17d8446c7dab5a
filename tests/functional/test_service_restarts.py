# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Restarting services under load loses no build and leaks no allocation.

Every service runs as its own process exactly as its systemd unit runs it
(tests/functional/stack.py) on the real RabbitMQ and MariaDB. While a burst
of boots is in flight, each service in turn gets SIGTERM (it stops taking
messages, finishes those it has, exits) and is started again. Afterwards
every server must be ACTIVE with exactly its flavor allocated on its host,
and once they are deleted every provider must be empty.
"""

import time
import uuid

import pytest

from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack as stack_mod
from tests.functional import stack_fixture

HOSTS = 4
SERVERS_PER_ROUND = 4
# NOTE: long enough that builds are still spawning when the compute agent
# is told to stop, short enough to keep the test quick.
SPAWN_LATENCY = 1.0
RESTART_ORDER = ('berth-conductor', 'berth-scheduler', 'berth-compute',
                 'berth-api', 'berth-placement-api')


@pytest.fixture(scope='module')
def stack(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('restarts')), hosts=HOSTS,
            extra_conf={('fake_driver', 'spawn_latency'): SPAWN_LATENCY}
    ) as deployment:
        yield deployment


def _flavor_resources(flavor):
    return {'VCPU': flavor['vcpus'], 'MEMORY_MB': flavor['ram'],
            'DISK_GB': flavor['disk']}


def _create_with_retry(api, *args, **kwargs):
    """POST /servers, retried while berth-api itself is restarting."""
    deadline = time.monotonic() + stack_mod.START_TIMEOUT
    while True:
        try:
            return api.create_server(*args, **kwargs)
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_sigterm_and_restart_each_service_under_load(stack):
    api = stack.compute
    flavor = {'vcpus': 1, 'ram': 256, 'disk': 1}
    flavor_id = api.create_flavor('restart-small', **flavor)
    image_id = api.create_image('restart-image')
    server_ids = []
    exit_codes = {}
    for binary in RESTART_ORDER:
        for _ in range(SERVERS_PER_ROUND):
            server = _create_with_retry(
                api, 'r-%s' % uuid.uuid4().hex[:6], flavor_id, image_id)
            server_ids.append(server['id'])
        exit_codes[binary] = stack.restart(binary)
        if binary == 'berth-compute':
            stack.wait_for_hosts()

    # NOTE: a clean stop exits 0; a process that had to be killed
    # (None) would have dropped what it held.
    assert exit_codes == {b: 0 for b in RESTART_ORDER}, stack.log_tails()
    servers = [api.wait_for_server(i, timeout=180) for i in server_ids]
    not_active = [(s['id'], s['status'], s.get('fault')) for s in servers
                  if s['status'] != 'ACTIVE']
    assert not not_active, stack.log_tails()

    providers = {
        p['name']: p['uuid'] for p in stack.placement.request(
            'GET', '/resource_providers')['resource_providers']}
    for server in servers:
        allocations = stack.placement.allocations(server['id'])
        host = stack_mod.host_of(server)
        assert allocations == {providers[host]: _flavor_resources(flavor)}

    for server_id in server_ids:
        api.delete_server(server_id, wait=False)
    for server_id in server_ids:
        api.wait_until_gone(server_id)
    for name, provider in providers.items():
        usages = stack.placement.usages(provider)
        assert not any(usages.values()), (name, usages)
