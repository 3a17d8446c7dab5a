# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Evacuate, shelve, shelveOffload and unshelve through every process.

Every service runs as its own process (tests/functional/stack.py) on the
real RabbitMQ and MariaDB. The four simulated hosts share one compute
agent, so a "failed" host is one forced down through ``os-services``
(Nova's way to declare a host fenced), and "the source agent comes back"
is that agent restarted. ``[DEFAULT] shelved_offload_time = -1`` keeps
shelved servers on their host until ``shelveOffload``.

After each scenario placement is checked against the servers: on every
host the usage is the sum of the flavors of the servers placed there,
and no consumer but those servers holds anything (no migration consumer
left behind), unless the scenario says which migration still holds a
down source host.
"""

import time

import pytest

from tests.functional import osc as osc_mod
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack_fixture

HOSTS = ('stack-host0', 'stack-host1', 'stack-host2', 'stack-host3')
FLAVOR = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('evacshelve')), hosts=len(HOSTS),
            extra_conf={('DEFAULT', 'shelved_offload_time'): -1}
    ) as deployment:
        yield deployment


@pytest.fixture(scope='module')
def boot_args(cloud):
    return (cloud.compute.create_flavor('tiny'),
            cloud.compute.create_image('cirros'))


def _call(cloud, method, path, body=None, version=None):
    headers = {}
    if version:
        headers['openstack-api-version'] = 'compute %s' % version
    resp = cloud.compute.http.request(method, path, json=body,
                                      headers=headers)
    return resp.status_code, (resp.json() if resp.content else None)


def _action(cloud, server_id, body, version=None):
    return _call(cloud, 'POST', '/servers/%s/action' % server_id, body,
                 version)


def _boot(cloud, boot_args, name, host, group=None):
    made = cloud.compute.create_server(
        name, *boot_args, zone='nova:%s' % host,
        hints={'group': group} if group else None)
    shown = cloud.compute.wait_for_server(made['id'], 'ACTIVE')
    assert shown['OS-EXT-SRV-ATTR:host'] == host
    return made['id']


def _wait(cloud, server_id, status, task=None, timeout=90):
    deadline = time.monotonic() + timeout
    shown = None
    while time.monotonic() < deadline:
        shown = cloud.compute.get_server(server_id)
        if shown['status'] == status and (
                shown['OS-EXT-STS:task_state'] == task):
            return shown
        time.sleep(0.3)
    raise AssertionError('%s never reached %s/%s: %s' % (
        server_id, status, task, shown and (
            shown['status'], shown['OS-EXT-STS:task_state'])))


def _providers(cloud):
    """host -> compute node (= resource provider) uuid."""
    hypervisors = cloud.compute.request(
        'GET', '/os-hypervisors/detail')['hypervisors']
    return {h['service']['host']: h['id'] for h in hypervisors}


def _service_id(cloud, host):
    services = cloud.compute.request(
        'GET', '/os-services?binary=berth-compute&host=%s' % host)
    return services['services'][0]['id']


def _force_down(cloud, host, down=True):
    status, body = _call(cloud, 'PUT', '/os-services/%s'
                         % _service_id(cloud, host),
                         {'forced_down': down}, version='2.53')
    assert status == 200, body


def _actions(cloud, server_id):
    listed = cloud.compute.request(
        'GET', '/servers/%s/os-instance-actions' % server_id)
    return [a['action'] for a in listed['instanceActions']]


def check_placement(cloud, held_by_migrations=None):
    """Placement matches the servers (see the module doc).

    :param held_by_migrations: {host: number of flavors} still held there
        by migration consumers (an evacuated server's down source).
    """
    held_by_migrations = held_by_migrations or {}
    servers = {s['id']: s for s in cloud.compute.servers(all_tenants=1)}
    for host, rp in _providers(cloud).items():
        placed = [s for s in servers.values()
                  if s['OS-EXT-SRV-ATTR:host'] == host and
                  s['status'] != 'SHELVED_OFFLOADED']
        count = len(placed) + held_by_migrations.get(host, 0)
        usages = cloud.placement.usages(rp)
        assert {rc: usages.get(rc, 0) for rc in FLAVOR} == {
            rc: amount * count for rc, amount in FLAVOR.items()}, (
            host, usages, [s['id'] for s in placed])
        consumers = cloud.placement.request(
            'GET', '/resource_providers/%s/allocations' % rp)['allocations']
        strangers = set(consumers) - {s['id'] for s in placed}
        assert len(strangers) == held_by_migrations.get(host, 0), (
            host, strangers)


# --- evacuate ---------------------------------------------------------------

def test_evacuate_is_refused_while_the_source_is_up(cloud, boot_args):
    server = _boot(cloud, boot_args, 'up', HOSTS[0])
    status, body = _action(cloud, server, {'evacuate': {}})
    assert status == 400, body
    assert body['badRequest']['message'] == (
        'Compute service of %s is still in use.' % HOSTS[0])
    assert cloud.compute.get_server(server)['status'] == 'ACTIVE'
    assert 'evacuate' not in _actions(cloud, server)
    cloud.compute.delete_server(server)
    check_placement(cloud)


def test_evacuate_from_a_forced_down_host_and_clean_up_at_restart(
        cloud, boot_args):
    chosen = _boot(cloud, boot_args, 'evac-any', HOSTS[1])
    targeted = _boot(cloud, boot_args, 'evac-to', HOSTS[1])
    stopped = _boot(cloud, boot_args, 'evac-stopped', HOSTS[1])
    _action(cloud, stopped, {'os-stop': None})
    _wait(cloud, stopped, 'SHUTOFF')
    _force_down(cloud, HOSTS[1])
    try:
        status, body = _action(cloud, targeted,
                               {'evacuate': {'host': HOSTS[1]}})
        assert status == 400, body
        assert body['badRequest']['message'] == (
            "The target host can't be the same one.")
        status, body = _action(cloud, targeted,
                               {'evacuate': {'host': 'no-such-host'}})
        assert status == 404, body

        status, body = _action(cloud, chosen, {'evacuate': {}})
        assert (status, body) == (200, None)
        status, body = _action(cloud, targeted,
                               {'evacuate': {'host': HOSTS[2]}})
        assert status == 200, body
        status, body = _action(cloud, stopped, {'evacuate': {}})
        assert status == 200, body

        shown = _wait(cloud, chosen, 'ACTIVE')
        assert shown['OS-EXT-SRV-ATTR:host'] not in (HOSTS[1], None)
        assert _wait(cloud, targeted, 'ACTIVE')[
            'OS-EXT-SRV-ATTR:host'] == HOSTS[2]
        assert _wait(cloud, stopped, 'SHUTOFF')[
            'OS-EXT-SRV-ATTR:host'] != HOSTS[1]
        for server in (chosen, targeted, stopped):
            assert _actions(cloud, server)[0] == 'evacuate'
        # NOTE: the down source stays accounted, under the migrations.
        check_placement(cloud, held_by_migrations={HOSTS[1]: 3})
        # NOTE: berth-manage fails the call on any exit code but 0 (3:
        # orphans found): the migrations' allocations are no orphans.
        cloud.manage('placement', 'audit')
    finally:
        _force_down(cloud, HOSTS[1], down=False)
    # The agent comes back: it destroys the evacuated guests and deletes
    # the source allocations.
    cloud.restart('berth-compute')
    cloud.wait_for_hosts()
    deadline = time.monotonic() + 60
    while True:
        try:
            check_placement(cloud)
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    for server in (chosen, targeted, stopped):
        cloud.compute.delete_server(server)
    check_placement(cloud)


def test_evacuate_honours_anti_affinity(cloud, boot_args):
    group = cloud.compute.create_server_group('apart', 'anti-affinity')
    first = _boot(cloud, boot_args, 'apart-0', HOSTS[0], group)
    second = _boot(cloud, boot_args, 'apart-3', HOSTS[3], group)
    _force_down(cloud, HOSTS[3])
    try:
        # The group's other member is on the only host named: no host.
        status, body = _action(cloud, second,
                               {'evacuate': {'host': HOSTS[0]}})
        assert status == 200, body
        shown = _wait(cloud, second, 'ERROR')
        assert shown['OS-EXT-SRV-ATTR:host'] == HOSTS[3]
        assert 'No valid host' in shown['fault']['message']
        check_placement(cloud)
        status, body = _action(cloud, second, {'os-resetState': {
            'state': 'active'}})
        assert status == 202, body
        status, body = _action(cloud, second, {'evacuate': {}})
        assert status == 200, body
        shown = _wait(cloud, second, 'ACTIVE')
        assert shown['OS-EXT-SRV-ATTR:host'] not in (HOSTS[0], HOSTS[3])
    finally:
        _force_down(cloud, HOSTS[3], down=False)
    cloud.restart('berth-compute')
    cloud.wait_for_hosts()
    for server in (first, second):
        cloud.compute.delete_server(server)
    check_placement(cloud)


# --- shelve and unshelve ----------------------------------------------------

def test_shelve_unshelve_in_place_then_offload(cloud, boot_args):
    server = _boot(cloud, boot_args, 'shelf', HOSTS[0])
    status, body = _action(cloud, server, {'shelve': None})
    assert (status, body) == (202, None)
    shown = _wait(cloud, server, 'SHELVED')
    assert shown['OS-EXT-SRV-ATTR:host'] == HOSTS[0]
    check_placement(cloud)

    status, body = _action(cloud, server, {'unshelve': None})
    assert status == 202, body
    assert _wait(cloud, server, 'ACTIVE')['OS-EXT-SRV-ATTR:host'] == \
        HOSTS[0]

    _action(cloud, server, {'shelve': None})
    _wait(cloud, server, 'SHELVED')
    status, body = _action(cloud, server, {'shelveOffload': None})
    assert status == 202, body
    shown = _wait(cloud, server, 'SHELVED_OFFLOADED')
    assert shown['OS-EXT-SRV-ATTR:host'] is None
    assert cloud.placement.allocations(server) == {}
    check_placement(cloud)
    assert _actions(cloud, server)[:4] == [
        'shelveOffload', 'shelve', 'unshelve', 'shelve']

    status, body = _action(cloud, server, {'unshelve': None})
    assert status == 202, body
    shown = _wait(cloud, server, 'ACTIVE')
    assert shown['OS-EXT-SRV-ATTR:host'] is not None
    check_placement(cloud)
    cloud.compute.delete_server(server)
    check_placement(cloud)


def test_unshelve_into_a_zone_and_anti_affinity(cloud, boot_args):
    group = cloud.compute.create_server_group('shelf-apart',
                                              'anti-affinity')
    keeper = _boot(cloud, boot_args, 'keeper', HOSTS[0], group)
    mover = _boot(cloud, boot_args, 'mover', HOSTS[1], group)
    cloud.compute.create_aggregate('zone-a', [HOSTS[0]], zone='zone-a')
    cloud.compute.create_aggregate('zone-b', [HOSTS[2]], zone='zone-b')
    for action in ('shelve', 'shelveOffload'):
        _action(cloud, mover, {action: None})
        _wait(cloud, mover, 'SHELVED' if action == 'shelve'
              else 'SHELVED_OFFLOADED')

    status, body = _action(cloud, mover, {'unshelve': {
        'availability_zone': 'no-such-zone'}}, version='2.77')
    assert status == 400, body
    # zone-a holds only the group's other member's host: no valid host,
    # the server stays offloaded with no task and holds nothing.
    status, body = _action(cloud, mover, {'unshelve': {
        'availability_zone': 'zone-a'}}, version='2.77')
    assert status == 202, body
    _wait(cloud, mover, 'SHELVED_OFFLOADED')
    assert cloud.placement.allocations(mover) == {}
    check_placement(cloud)

    status, body = _action(cloud, mover, {'unshelve': {
        'availability_zone': 'zone-b'}}, version='2.77')
    assert status == 202, body
    shown = _wait(cloud, mover, 'ACTIVE')
    assert shown['OS-EXT-SRV-ATTR:host'] == HOSTS[2]
    assert shown['OS-EXT-AZ:availability_zone'] == 'zone-b'
    check_placement(cloud)
    for server in (keeper, mover):
        cloud.compute.delete_server(server)
    check_placement(cloud)


# --- the openstack client ---------------------------------------------------

class OSC(osc_mod.Client):
    """``openstack`` against berth-api with the noauth2 settings."""

    def __init__(self, url):
        super().__init__(
            OS_AUTH_TYPE='admin_token', OS_TOKEN='admin',
            OS_ENDPOINT=url + '/v2.1',
            OS_IMAGE_ENDPOINT_OVERRIDE=url + '/image',
            OS_IDENTITY_API_VERSION='3',
            OS_IDENTITY_ENDPOINT_OVERRIDE=url + '/identity',
            OS_COMPUTE_API_VERSION='2.79')


@osc_mod.skip_without_cli
def test_the_openstack_client(cloud, boot_args):
    """Runs after the zone test: zone-a is stack-host0, zone-b
    stack-host2, the default zone the other two.
    """
    cli = OSC(cloud.api_url)
    shelf = _boot(cloud, boot_args, 'cli-shelf', HOSTS[1])
    cli.run('server', 'shelve', '--offload', '--wait', shelf)
    _wait(cloud, shelf, 'SHELVED_OFFLOADED')
    check_placement(cloud)
    cli.run('server', 'unshelve', '--availability-zone', 'zone-b',
            '--wait', shelf)
    assert _wait(cloud, shelf, 'ACTIVE')['OS-EXT-SRV-ATTR:host'] == \
        HOSTS[2]

    moving = _boot(cloud, boot_args, 'cli-evac', HOSTS[1])
    _force_down(cloud, HOSTS[1])
    try:
        cli.run('server', 'evacuate', moving)
        shown = _wait(cloud, moving, 'ACTIVE')
        assert shown['OS-EXT-SRV-ATTR:host'] == HOSTS[3]
    finally:
        _force_down(cloud, HOSTS[1], down=False)
    cloud.restart('berth-compute')
    cloud.wait_for_hosts()
    for server in (shelf, moving):
        cloud.compute.delete_server(server)
    check_placement(cloud)
