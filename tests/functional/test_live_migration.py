# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Live migration through every service, on RabbitMQ + MariaDB.

Each service is its own process (tests/functional/stack.py); the fake
driver simulates four hosts. A copy takes ``COPY_TIME`` seconds, but one
to ``SLOW`` takes ``SLOW_COPY_TIME`` (long enough to abort or
force-complete it, even from the ``openstack`` client, seconds to start
on a busy machine); the destination checks of ``FAILING`` always fail
(``[fake_driver] fail_live_migrations``). The REST API drives each
migration; the test checks where the server ends, its task state, its
migration record, its instance actions and events, a pinned server's new
pins (the server topology API), the real ``openstack`` client's ``server
migrate --live-migration [--host]`` and ``server migration force
complete|abort`` and, after each test, that placement holds for each
host exactly the flavors of the servers on it and no migration consumer.
"""

import time

import pytest

from tests.functional import moves_helpers as moves
from tests.functional import osc as osc_mod
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack_fixture

HOSTS = ('stack-host0', 'stack-host1', 'stack-host2', 'stack-host3')
SLOW = 'stack-host2'
FAILING = 'stack-host3'
# NOTE: a copy long enough that a server is still MIGRATING when the API
# has answered; the slow one for the aborts and force-completes.
COPY_TIME = 1.0
SLOW_COPY_TIME = 10.0
DEDICATED = {'hw:cpu_policy': 'dedicated'}


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('live')), hosts=len(HOSTS),
            extra_conf={
                ('fake_driver', 'live_migration_time'): COPY_TIME,
                ('fake_driver', 'live_migration_time_by_host'):
                '%s:%s' % (SLOW, SLOW_COPY_TIME),
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
    moves.assert_placement_matches_servers(cloud)
    for server_id in made:
        cloud.compute.delete_server(server_id, wait=False)
    for server_id in made:
        cloud.compute.wait_until_gone(server_id)


def _boot(cloud, servers, host, flavor=None, hints=None):
    server_id = moves.boot(cloud, flavor or cloud.flavor, cloud.image, host,
                           hints=hints)
    servers.append(server_id)
    return cloud.compute.get_server(server_id)


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


def _pins(cloud, server_id):
    topology = cloud.compute.request('GET', '/servers/%s/topology'
                                     % server_id)
    return sorted(pin for node in topology['nodes']
                  for pin in node['cpu_pinning'].values())


def test_live_migrate_to_a_named_host(cloud, servers):
    server = _boot(cloud, servers, 'stack-host0')
    _live(cloud, server['id'], host='stack-host1')
    migrating = cloud.compute.get_server(server['id'])
    assert migrating['status'] == 'MIGRATING'
    server = moves.settled(cloud, server['id'])
    assert (server['status'], _host(server)) == ('ACTIVE', 'stack-host1')
    [migration] = moves.migrations(cloud, server['id'])
    assert (migration['migration_type'], migration['status'],
            migration['source_compute'], migration['dest_compute']) == (
        'live-migration', 'completed', 'stack-host0', 'stack-host1')
    assert migration['memory_total'] == migration['memory_processed'] == \
        256 * 1024 * 1024
    events = moves.events(cloud, server['id'], 'live-migration')
    assert ('conductor_live_migrate_instance', 'Success', None) in [
        (e, r, None) for e, r, _h in events]
    assert ('compute_live_migration', 'Success', 'stack-host1') in events


def test_a_refused_destination_gives_way_to_the_next_one(cloud, servers):
    # NOTE: every other host carries a server, so the empty FAILING host
    # weighs best and is tried first; its check fails.
    _boot(cloud, servers, 'stack-host0')
    _boot(cloud, servers, 'stack-host1')
    server = _boot(cloud, servers, SLOW)
    _live(cloud, server['id'])
    server = moves.settled(cloud, server['id'])
    assert server['status'] == 'ACTIVE'
    assert _host(server) in ('stack-host0', 'stack-host1')
    events = moves.events(cloud, server['id'], 'live-migration')
    checks = [(r, h) for e, r, h in events
              if e == 'compute_check_can_live_migrate_destination']
    assert ('Error', FAILING) in checks
    assert ('Success', _host(server)) in checks


def test_a_named_host_that_refuses_ends_cleanly(cloud, servers):
    server = _boot(cloud, servers, 'stack-host0')
    _live(cloud, server['id'], host=FAILING)
    server = moves.settled(cloud, server['id'])
    assert (server['status'], _host(server)) == ('ACTIVE', 'stack-host0')
    [migration] = moves.migrations(cloud, server['id'])
    assert migration['status'] == 'error'
    events = moves.events(cloud, server['id'], 'live-migration')
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
    server = moves.settled(cloud, server['id'])
    assert (server['status'], _host(server)) == ('ACTIVE', 'stack-host1')
    after = _pins(cloud, server['id'])
    assert len(after) == 2 and set(after).isdisjoint(before)


def test_abort_a_slow_migration(cloud, servers):
    server = _boot(cloud, servers, 'stack-host0')
    _live(cloud, server['id'], host=SLOW)
    migration = moves.wait_for_migration(cloud, server['id'], ('running',))
    cloud.compute.request('DELETE', '/servers/%s/migrations/%d'
                          % (server['id'], migration['id']), expect=(202,))
    server = moves.settled(cloud, server['id'])
    assert (server['status'], _host(server)) == ('ACTIVE', 'stack-host0')
    assert moves.wait_for_migration(cloud, server['id'], ('cancelled',))
    assert ('compute_live_migration_abort', 'Success', 'stack-host0') in \
        moves.events(cloud, server['id'], 'live_migration_cancel')


def test_force_complete_ends_the_copy_early(cloud, servers):
    server = _boot(cloud, servers, 'stack-host0')
    _live(cloud, server['id'], host=SLOW)
    migration = moves.wait_for_migration(cloud, server['id'], ('running',))
    forced_at = time.monotonic()
    cloud.compute.request('POST', '/servers/%s/migrations/%d/action'
                          % (server['id'], migration['id']),
                          {'force_complete': None}, expect=(202,))
    server = moves.settled(cloud, server['id'])
    assert (server['status'], _host(server)) == ('ACTIVE', SLOW)
    assert moves.wait_for_migration(cloud, server['id'], ('completed',))
    assert time.monotonic() - forced_at < SLOW_COPY_TIME
    assert ('compute_live_migration_force_complete', 'Success',
            'stack-host0') in moves.events(
                cloud, server['id'], 'live_migration_force_complete')


def test_anti_affinity_is_honoured(cloud, servers):
    group = cloud.compute.create_server_group('apart', 'anti-affinity')
    hints = {'group': group}
    first = _boot(cloud, servers, 'stack-host0', hints=hints)
    second = _boot(cloud, servers, SLOW, hints=hints)
    # a named host holding the other member is refused by the filters
    _live(cloud, first['id'], host=_host(second))
    first = moves.settled(cloud, first['id'])
    assert (first['status'], _host(first)) == ('ACTIVE', 'stack-host0')
    assert moves.migrations(cloud, first['id'])[-1]['status'] == 'error'
    # the scheduler's choice avoids it too
    _live(cloud, first['id'])
    first = moves.settled(cloud, first['id'])
    assert first['status'] == 'ACTIVE'
    assert _host(first) == 'stack-host1'


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
    moves.settled(cloud, server['id'])
    for host, message in (
            ('stack-host0', 'Unable to migrate instance (%s) to current '
                            'host (stack-host0).' % server['id']),
            ('nowhere', 'Compute host nowhere could not be found.')):
        resp = _live(cloud, server['id'], host=host, expect=(400,))
        assert resp.json()['badRequest']['message'] == message
    assert moves.migrations(cloud, server['id']) == []


@osc_mod.skip_without_cli
def test_the_openstack_client(cloud, servers):
    cli = moves.openstack_client(cloud)
    server = _boot(cloud, servers, 'stack-host0')
    cli.run('server', 'migrate', '--live-migration', '--host', SLOW,
            server['id'])
    migration = moves.wait_for_migration(cloud, server['id'], ('running',))
    cli.run('server', 'migration', 'force', 'complete', server['id'],
            str(migration['id']))
    server = moves.settled(cloud, server['id'])
    assert (server['status'], _host(server)) == ('ACTIVE', SLOW)
    assert moves.migrations(cloud, server['id'])[-1]['status'] == \
        'completed'
    # NOTE: FAILING refuses: the scheduler's choice is one of the others.
    cli.run('server', 'migrate', '--live-migration', server['id'])
    server = moves.settled(cloud, server['id'])
    assert server['status'] == 'ACTIVE'
    assert _host(server) in ('stack-host0', 'stack-host1')
    source = _host(server)
    cli.run('server', 'migrate', '--live-migration', '--host', SLOW,
            server['id'])
    migration = moves.wait_for_migration(cloud, server['id'], ('running',))
    cli.run('server', 'migration', 'abort', server['id'],
            str(migration['id']))
    server = moves.settled(cloud, server['id'])
    assert (server['status'], _host(server)) == ('ACTIVE', source)
    assert moves.wait_for_migration(cloud, server['id'], ('cancelled',))
