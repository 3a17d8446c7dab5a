# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Live migration through every service, on RabbitMQ + MariaDB.

Each service is its own process (tests/functional/stack.py); the fake
driver simulates four hosts. Its copy takes ``LIVE_MIGRATION_TIME``
seconds (long enough to abort or force-complete it) and the destination
checks of ``FAILING`` always fail (``[fake_driver]
fail_live_migrations``). The REST API drives each migration; the test
checks where the server ends, its task state, its migration record, its
instance actions and events, a pinned server's new pins (the server
topology API), the real ``openstack`` client's ``server migrate
--live-migration [--host]`` and ``server migration force complete|abort``
and, after each test, that placement holds for each host
exactly the flavors of the servers on it and no migration consumer.
"""

import time

import pytest
import sqlalchemy as sa

from tests.functional import osc as osc_mod
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack_fixture

HOSTS = ('stack-host0', 'stack-host1', 'stack-host2', 'stack-host3')
FAILING = 'stack-host3'
# NOTE: long enough for the openstack client (seconds to start on a busy
# machine) to reach a copy still running.
LIVE_MIGRATION_TIME = 10.0
TIMEOUT = 90
DEDICATED = {'hw:cpu_policy': 'dedicated'}


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('live')), hosts=len(HOSTS),
            extra_conf={
                ('fake_driver', 'live_migration_time'): LIVE_MIGRATION_TIME,
                ('fake_driver', 'fail_live_migrations'): 'check:%s'
                % FAILING,
                ('compute', 'cpu_dedicated_set'): '0-7',
            }) as deployment:
        deployment.flavor = deployment.compute.create_flavor(
            'small', vcpus=1, ram=256, disk=1)
        deployment.pinned = deployment.compute.create_flavor(
            'pinned', vcpus=2, ram=256, disk=1, extra_specs=DEDICATED)
        deployment.image = deployment.compute.create_image('cirros')
        yield deployment


@pytest.fixture
def servers(cloud):
    """The servers a test boots: deleted afterwards, placement checked
    before (every test ends with placement matching the servers).
    """
    made = []
    yield made
    _assert_placement_matches_servers(cloud)
    for server_id in made:
        cloud.compute.delete_server(server_id, wait=False)
    for server_id in made:
        cloud.compute.wait_until_gone(server_id)


def _boot(cloud, servers, host, flavor=None, hints=None):
    server = cloud.compute.create_server(
        'vm', flavor or cloud.flavor, cloud.image, zone='nova:%s' % host,
        hints=hints)
    servers.append(server['id'])
    server = cloud.compute.wait_for_server(server['id'])
    assert server['status'] == 'ACTIVE', server
    return server


def _host(server):
    return server['OS-EXT-SRV-ATTR:host']


def _live(cloud, server_id, host=None, expect=(202,), version=None,
          **extra):
    body = {'os-migrateLive': dict({'host': host,
                                    'block_migration': 'auto'}, **extra)}
    headers = {'openstack-api-version': 'compute %s' % version} \
        if version else {}
    resp = cloud.compute.http.post('/servers/%s/action' % server_id,
                                   json=body, headers=headers)
    assert resp.status_code in expect, resp.text
    return resp


def _settled(cloud, server_id, timeout=TIMEOUT):
    """The server once its task state is None again."""
    deadline = time.monotonic() + timeout
    while True:
        server = cloud.compute.get_server(server_id)
        if server['OS-EXT-STS:task_state'] is None:
            return server
        assert time.monotonic() < deadline, server
        time.sleep(0.3)


def _migrations(cloud, server_id):
    """The server's migration rows (the cell database), oldest first."""
    engine = sa.create_engine(cloud.urls['cell1'])
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                'SELECT id, uuid, status, source_compute, dest_compute, '
                'migration_type, memory_total, memory_processed '
                'FROM migrations WHERE instance_uuid = :uuid ORDER BY id'),
                {'uuid': server_id})
            return [dict(r._mapping) for r in rows]
    finally:
        engine.dispose()


def _wait_migration(cloud, server_id, statuses, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        found = _migrations(cloud, server_id)
        if found and found[-1]['status'] in statuses:
            return found[-1]
        assert time.monotonic() < deadline, found
        time.sleep(0.1)


def _events(cloud, server_id, action_name):
    """(event, result, host) of the server's latest ``action_name``."""
    listed = cloud.compute.request(
        'GET', '/servers/%s/os-instance-actions' % server_id)
    for action in listed['instanceActions']:
        if action['action'] == action_name:
            shown = cloud.compute.request(
                'GET', '/servers/%s/os-instance-actions/%s'
                % (server_id, action['request_id']))['instanceAction']
            return sorted((e['event'], e['result'], e.get('host'))
                          for e in shown['events'])
    return []


def _pins(cloud, server_id):
    topology = cloud.compute.request('GET', '/servers/%s/topology'
                                     % server_id)
    return sorted(pin for node in topology['nodes']
                  for pin in node['cpu_pinning'].values())


def _expected_usage(server):
    flavor = server['flavor']
    pinned = (flavor.get('extra_specs') or {}).get(
        'hw:cpu_policy') == 'dedicated'
    return {'PCPU' if pinned else 'VCPU': flavor['vcpus'],
            'MEMORY_MB': flavor['ram'], 'DISK_GB': flavor['disk']}


def _assert_placement_matches_servers(cloud):
    """Each host's usage is the sum of its servers' flavors, and every
    consumer on it is one of those servers (no migration consumer).
    """
    expected = {host: {} for host in HOSTS}
    on_host = {host: set() for host in HOSTS}
    for server in cloud.compute.servers(all_tenants=1):
        if server['status'] == 'DELETED' or not _host(server):
            continue
        on_host[_host(server)].add(server['id'])
        for rc, amount in _expected_usage(server).items():
            usage = expected[_host(server)]
            usage[rc] = usage.get(rc, 0) + amount
    providers = cloud.placement.request(
        'GET', '/resource_providers')['resource_providers']
    for provider in providers:
        host = provider['name']
        if host not in expected:
            continue
        usages = cloud.placement.request(
            'GET', '/resource_providers/%s/usages' % provider['uuid'])
        used = {rc: n for rc, n in usages['usages'].items() if n}
        assert used == expected[host], (host, used, expected[host])
        consumers = cloud.placement.request(
            'GET', '/resource_providers/%s/allocations'
            % provider['uuid'])['allocations']
        assert set(consumers) == on_host[host], (host, consumers)


def test_live_migrate_to_a_named_host(cloud, servers):
    server = _boot(cloud, servers, 'stack-host0')
    _live(cloud, server['id'], host='stack-host1')
    migrating = cloud.compute.get_server(server['id'])
    assert migrating['status'] == 'MIGRATING'
    server = _settled(cloud, server['id'])
    assert (server['status'], _host(server)) == ('ACTIVE', 'stack-host1')
    [migration] = _migrations(cloud, server['id'])
    assert (migration['migration_type'], migration['status'],
            migration['source_compute'], migration['dest_compute']) == (
        'live-migration', 'completed', 'stack-host0', 'stack-host1')
    assert migration['memory_total'] == migration['memory_processed'] == \
        256 * 1024 * 1024
    events = _events(cloud, server['id'], 'live-migration')
    assert ('conductor_live_migrate_instance', 'Success', None) in [
        (e, r, None) for e, r, _h in events]
    assert ('compute_live_migration', 'Success', 'stack-host1') in events


def test_a_refused_destination_gives_way_to_the_next_one(cloud, servers):
    # NOTE: every other host carries a server, so the empty FAILING host
    # weighs best and is tried first; its check fails.
    _boot(cloud, servers, 'stack-host1')
    _boot(cloud, servers, 'stack-host2')
    server = _boot(cloud, servers, 'stack-host0')
    _live(cloud, server['id'])
    server = _settled(cloud, server['id'])
    assert server['status'] == 'ACTIVE'
    assert _host(server) in ('stack-host1', 'stack-host2')
    events = _events(cloud, server['id'], 'live-migration')
    checks = [(r, h) for e, r, h in events
              if e == 'compute_check_can_live_migrate_destination']
    assert ('Error', FAILING) in checks
    assert ('Success', _host(server)) in checks


def test_a_named_host_that_refuses_ends_cleanly(cloud, servers):
    server = _boot(cloud, servers, 'stack-host0')
    _live(cloud, server['id'], host=FAILING)
    server = _settled(cloud, server['id'])
    assert (server['status'], _host(server)) == ('ACTIVE', 'stack-host0')
    [migration] = _migrations(cloud, server['id'])
    assert migration['status'] == 'error'
    events = _events(cloud, server['id'], 'live-migration')
    assert ('conductor_live_migrate_instance', 'Error') in [
        (e, r) for e, r, _h in events]


def test_below_2_34_the_refusal_is_the_answer(cloud, servers):
    server = _boot(cloud, servers, 'stack-host0')
    resp = _live(cloud, server['id'], host=FAILING, expect=(400,),
                 version='2.30')
    assert 'No valid host was found' in resp.json()['badRequest']['message']
    server = cloud.compute.get_server(server['id'])
    assert (server['status'], server['OS-EXT-STS:task_state'],
            _host(server)) == ('ACTIVE', None, 'stack-host0')


def test_a_pinned_server_gets_the_destinations_cpus(cloud, servers):
    # NOTE: a pinned server on stack-host1 first holds the CPUs the
    # migrating one has on stack-host0: its pins must change.
    _boot(cloud, servers, 'stack-host1', flavor=cloud.pinned)
    server = _boot(cloud, servers, 'stack-host0', flavor=cloud.pinned)
    before = _pins(cloud, server['id'])
    _live(cloud, server['id'], host='stack-host1')
    server = _settled(cloud, server['id'])
    assert (server['status'], _host(server)) == ('ACTIVE', 'stack-host1')
    after = _pins(cloud, server['id'])
    assert len(after) == 2 and set(after).isdisjoint(before)


def test_abort_a_slow_migration(cloud, servers):
    server = _boot(cloud, servers, 'stack-host0')
    _live(cloud, server['id'], host='stack-host2')
    migration = _wait_migration(cloud, server['id'], ('running',))
    cloud.compute.request('DELETE', '/servers/%s/migrations/%d'
                          % (server['id'], migration['id']), expect=(202,))
    server = _settled(cloud, server['id'])
    assert (server['status'], _host(server)) == ('ACTIVE', 'stack-host0')
    assert _wait_migration(cloud, server['id'], ('cancelled',))
    assert ('compute_live_migration_abort', 'Success', 'stack-host0') in \
        _events(cloud, server['id'], 'live_migration_cancel')


def test_force_complete_ends_the_copy_early(cloud, servers):
    server = _boot(cloud, servers, 'stack-host0')
    _live(cloud, server['id'], host='stack-host2')
    migration = _wait_migration(cloud, server['id'], ('running',))
    forced_at = time.monotonic()
    cloud.compute.request('POST', '/servers/%s/migrations/%d/action'
                          % (server['id'], migration['id']),
                          {'force_complete': None}, expect=(202,))
    server = _settled(cloud, server['id'])
    assert (server['status'], _host(server)) == ('ACTIVE', 'stack-host2')
    assert _wait_migration(cloud, server['id'], ('completed',))
    assert time.monotonic() - forced_at < LIVE_MIGRATION_TIME
    assert ('compute_live_migration_force_complete', 'Success',
            'stack-host0') in _events(cloud, server['id'],
                                      'live_migration_force_complete')


def test_anti_affinity_is_honoured(cloud, servers):
    group = cloud.compute.create_server_group('apart', 'anti-affinity')
    hints = {'group': group}
    first = _boot(cloud, servers, 'stack-host0', hints=hints)
    second = _boot(cloud, servers, 'stack-host1', hints=hints)
    # a named host holding the other member is refused by the filters
    _live(cloud, first['id'], host=_host(second))
    first = _settled(cloud, first['id'])
    assert (first['status'], _host(first)) == ('ACTIVE', 'stack-host0')
    assert _migrations(cloud, first['id'])[-1]['status'] == 'error'
    # the scheduler's choice avoids it too
    _live(cloud, first['id'])
    first = _settled(cloud, first['id'])
    assert first['status'] == 'ACTIVE'
    assert _host(first) == 'stack-host2'


def test_wrong_state_and_bad_hosts_are_refused(cloud, servers):
    server = _boot(cloud, servers, 'stack-host0')
    cloud.compute.request('POST', '/servers/%s/action' % server['id'],
                          {'os-stop': None}, expect=(202,))
    cloud.compute.wait_for_server(server['id'], 'SHUTOFF')
    resp = _live(cloud, server['id'], expect=(409,))
    assert resp.json()['conflictingRequest']['message'] == (
        "Cannot 'os-migrateLive' instance %s while it is in vm_state "
        "stopped" % server['id'])
    cloud.compute.request('POST', '/servers/%s/action' % server['id'],
                          {'os-start': None}, expect=(202,))
    cloud.compute.wait_for_server(server['id'], 'ACTIVE')
    _settled(cloud, server['id'])
    for host, message in (
            ('stack-host0', 'Unable to migrate instance (%s) to current '
                            'host (stack-host0).' % server['id']),
            ('nowhere', 'Compute host nowhere could not be found.')):
        resp = _live(cloud, server['id'], host=host, expect=(400,))
        assert resp.json()['badRequest']['message'] == message
    assert _migrations(cloud, server['id']) == []


@osc_mod.skip_without_cli
def test_the_openstack_client(cloud, servers):
    url = cloud.api_url
    cli = osc_mod.Client(
        OS_AUTH_TYPE='admin_token', OS_TOKEN='admin',
        OS_ENDPOINT=url + '/v2.1',
        OS_IMAGE_ENDPOINT_OVERRIDE=url + '/image',
        OS_IDENTITY_API_VERSION='3',
        OS_IDENTITY_ENDPOINT_OVERRIDE=url + '/identity',
        OS_COMPUTE_API_VERSION='2.79')
    server = _boot(cloud, servers, 'stack-host0')
    cli.run('server', 'migrate', '--live-migration', '--host',
            'stack-host1', server['id'])
    server = _settled(cloud, server['id'])
    assert (server['status'], _host(server)) == ('ACTIVE', 'stack-host1')
    cli.run('server', 'migrate', '--live-migration', server['id'])
    migration = _wait_migration(cloud, server['id'], ('running',))
    cli.run('server', 'migration', 'force', 'complete', server['id'],
            str(migration['id']))
    server = _settled(cloud, server['id'])
    assert server['status'] == 'ACTIVE'
    assert _host(server) in ('stack-host0', 'stack-host2')
    source = _host(server)
    cli.run('server', 'migrate', '--live-migration', server['id'])
    migration = _wait_migration(cloud, server['id'], ('running',))
    cli.run('server', 'migration', 'abort', server['id'],
            str(migration['id']))
    server = _settled(cloud, server['id'])
    assert (server['status'], _host(server)) == ('ACTIVE', source)
    assert _wait_migration(cloud, server['id'], ('cancelled',))
