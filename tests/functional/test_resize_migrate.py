# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Resize and cold migration through every process.

Every service runs as its own process (tests/functional/stack.py) on the
real RabbitMQ and MariaDB, four simulated hosts; ``prep_resize`` always
fails on the last one (``[fake_driver] fail_actions``), so any move the
scheduler sends there is rescheduled to an alternate, and
``[DEFAULT] allow_resize_to_same_host`` is on. After every test,
placement's usage of each host is the sum of the flavors of the servers
on it and every consumer there is a server: no migration consumer is
left behind.
"""

import collections
import time

import pytest

from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack as stack_mod
from tests.functional import stack_fixture

HOSTS = tuple('stack-host%d' % i for i in range(4))
FAILING = HOSTS[3]
MIGRATE_HOST = 'compute 2.56'


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('resize')), hosts=len(HOSTS),
            extra_conf={('fake_driver', 'fail_actions'):
                        'prep_resize:%s' % FAILING,
                        ('DEFAULT', 'allow_resize_to_same_host'): True}
    ) as deployment:
        yield deployment


@pytest.fixture(scope='module')
def flavors(cloud):
    """(tiny, small, image): the boot flavor, a bigger one, the image."""
    return (cloud.compute.create_flavor('tiny', vcpus=1, ram=256, disk=1),
            cloud.compute.create_flavor('small', vcpus=2, ram=1024,
                                        disk=2),
            cloud.compute.create_image('cirros'))


def _action(cloud, server_id, body, version=None):
    headers = {'openstack-api-version': version} if version else {}
    resp = cloud.compute.http.post('/servers/%s/action' % server_id,
                                   json=body, headers=headers)
    return resp.status_code, (resp.json() if resp.content else None)


def _boot(cloud, flavors, name, host, hints=None):
    made = cloud.compute.create_server(name, flavors[0], flavors[2],
                                       zone='nova:%s' % host, hints=hints)
    shown = cloud.compute.wait_for_server(made['id'], 'ACTIVE')
    assert stack_mod.host_of(shown) == host
    return made['id']


def _wait(cloud, server_id, status):
    shown = cloud.compute.wait_for_server(server_id, (status, 'ERROR'))
    assert shown['status'] == status, shown
    # NOTE: the status word comes before the last step's own end.
    deadline = time.monotonic() + 30
    while shown.get('OS-EXT-STS:task_state') and \
            time.monotonic() < deadline:
        time.sleep(0.3)
        shown = cloud.compute.get_server(server_id)
    return shown


def _usage_by_host(cloud):
    """{host: ({rc: used}, {consumer uuids})} as placement has them."""
    found = {}
    for rp in cloud.placement.request(
            'GET', '/resource_providers')['resource_providers']:
        usages = cloud.placement.request(
            'GET', '/resource_providers/%s/usages' % rp['uuid'])['usages']
        consumers = cloud.placement.request(
            'GET', '/resource_providers/%s/allocations'
            % rp['uuid'])['allocations']
        found[rp['name']] = ({rc: n for rc, n in usages.items() if n},
                             set(consumers))
    return found


def _expected_by_host(cloud):
    expected = collections.defaultdict(lambda: ({}, set()))
    for server in cloud.compute.servers(all_tenants=1):
        used, consumers = expected[stack_mod.host_of(server)]
        flavor = server['flavor']
        for rc, n in (('VCPU', flavor['vcpus']),
                      ('MEMORY_MB', flavor['ram']),
                      ('DISK_GB', flavor['disk'] + flavor['ephemeral'])):
            if n:
                used[rc] = used.get(rc, 0) + n
        consumers.add(server['id'])
    return expected


def assert_placement_matches_servers(cloud, timeout=30):
    """Each host's usage is its servers' flavors; only servers consume.
    """
    deadline = time.monotonic() + timeout
    while True:
        found = _usage_by_host(cloud)
        expected = _expected_by_host(cloud)
        wrong = {host: (found[host], expected.get(host, ({}, set())))
                 for host in found
                 if found[host] != expected.get(host, ({}, set()))}
        if not wrong:
            return
        if time.monotonic() > deadline:
            raise AssertionError('placement differs from the servers: %s'
                                 % wrong)
        time.sleep(0.5)


@pytest.fixture
def clean(cloud):
    """Servers made by a test, deleted after it; then the check."""
    made = []
    yield made
    for server_id in made:
        cloud.compute.delete_server(server_id)
    assert_placement_matches_servers(cloud)


def _events(cloud, server_id, action):
    listed = cloud.compute.request(
        'GET', '/servers/%s/os-instance-actions' % server_id)
    for item in listed['instanceActions']:
        if item['action'] == action:
            shown = cloud.compute.request(
                'GET', '/servers/%s/os-instance-actions/%s'
                % (server_id, item['request_id']))['instanceAction']
            return sorted((e['event'], e['result'])
                          for e in shown['events'])
    raise AssertionError('no %s action: %s' % (action, listed))


def test_resize_then_confirm_keeps_only_the_new_flavor(cloud, flavors,
                                                       clean):
    server = _boot(cloud, flavors, 'resize-confirm', HOSTS[0])
    clean.append(server)
    status, body = _action(cloud, server, {'resize': {
        'flavorRef': flavors[1]}})
    assert status == 202, body
    shown = _wait(cloud, server, 'VERIFY_RESIZE')
    dest = stack_mod.host_of(shown)
    assert dest not in (HOSTS[0], FAILING)
    assert shown['flavor']['vcpus'] == 2
    status, body = _action(cloud, server, {'confirmResize': None})
    assert status == 204, body
    shown = _wait(cloud, server, 'ACTIVE')
    assert stack_mod.host_of(shown) == dest
    assert_placement_matches_servers(cloud)
    events = _events(cloud, server, 'resize')
    for event in ('conductor_migrate_server', 'compute_prep_resize',
                  'compute_resize_instance', 'compute_finish_resize'):
        assert (event, 'Success') in events, events


def test_resize_then_revert_gives_the_old_flavor_back(cloud, flavors,
                                                      clean):
    server = _boot(cloud, flavors, 'resize-revert', HOSTS[0])
    clean.append(server)
    assert _action(cloud, server, {'resize': {
        'flavorRef': flavors[1]}})[0] == 202
    _wait(cloud, server, 'VERIFY_RESIZE')
    status, body = _action(cloud, server, {'revertResize': None})
    assert status == 202, body
    shown = _wait(cloud, server, 'ACTIVE')
    assert stack_mod.host_of(shown) == HOSTS[0]
    assert shown['flavor']['vcpus'] == 1
    assert_placement_matches_servers(cloud)


def test_a_stopped_server_stays_stopped(cloud, flavors, clean):
    server = _boot(cloud, flavors, 'stopped', HOSTS[0])
    clean.append(server)
    assert _action(cloud, server, {'os-stop': None})[0] == 202
    _wait(cloud, server, 'SHUTOFF')
    assert _action(cloud, server, {'resize': {
        'flavorRef': flavors[1]}})[0] == 202
    shown = _wait(cloud, server, 'VERIFY_RESIZE')
    assert shown['OS-EXT-STS:power_state'] == 4
    assert _action(cloud, server, {'confirmResize': None})[0] == 204
    shown = _wait(cloud, server, 'SHUTOFF')
    assert shown['flavor']['vcpus'] == 2
    assert_placement_matches_servers(cloud)


def _set_hosts(cloud, hosts, status):
    services = cloud.compute.request(
        'GET', '/os-services?binary=berth-compute')['services']
    for service in services:
        if service['host'] in hosts:
            cloud.compute.http.put(
                '/os-services/%s' % service['id'], json={'status': status},
                headers={'openstack-api-version': 'compute 2.53'})


def test_same_host_resize_when_allowed(cloud, flavors, clean):
    server = _boot(cloud, flavors, 'same-host', HOSTS[0])
    clean.append(server)
    others = HOSTS[1:]
    _set_hosts(cloud, others, 'disabled')
    try:
        assert _action(cloud, server, {'resize': {
            'flavorRef': flavors[1]}})[0] == 202
        shown = _wait(cloud, server, 'VERIFY_RESIZE')
    finally:
        _set_hosts(cloud, others, 'enabled')
    assert stack_mod.host_of(shown) == HOSTS[0]
    assert _action(cloud, server, {'confirmResize': None})[0] == 204
    shown = _wait(cloud, server, 'ACTIVE')
    assert (stack_mod.host_of(shown), shown['flavor']['vcpus']) == (
        HOSTS[0], 2)
    assert_placement_matches_servers(cloud)


def test_cold_migrate_with_and_without_a_host(cloud, flavors, clean):
    server = _boot(cloud, flavors, 'migrate', HOSTS[0])
    clean.append(server)
    assert _action(cloud, server, {'migrate': None})[0] == 202
    shown = _wait(cloud, server, 'VERIFY_RESIZE')
    first = stack_mod.host_of(shown)
    assert first not in (HOSTS[0], FAILING)
    assert _action(cloud, server, {'confirmResize': None})[0] == 204
    _wait(cloud, server, 'ACTIVE')
    assert_placement_matches_servers(cloud)
    status, body = _action(cloud, server, {'migrate': {'host': HOSTS[0]}},
                           MIGRATE_HOST)
    assert status == 202, body
    shown = _wait(cloud, server, 'VERIFY_RESIZE')
    assert stack_mod.host_of(shown) == HOSTS[0]
    assert _action(cloud, server, {'confirmResize': None})[0] == 204
    shown = _wait(cloud, server, 'ACTIVE')
    assert shown['flavor']['vcpus'] == 1
    assert_placement_matches_servers(cloud)


def test_a_failing_destination_is_rescheduled_to_an_alternate(
        cloud, flavors, clean):
    # NOTE: the other hosts busier, so that the weighers prefer FAILING.
    for host in HOSTS[1:3]:
        clean.append(_boot(cloud, flavors, 'busy', host))
    server = _boot(cloud, flavors, 'rescheduled', HOSTS[0])
    clean.append(server)
    assert _action(cloud, server, {'migrate': None})[0] == 202
    shown = _wait(cloud, server, 'VERIFY_RESIZE')
    assert stack_mod.host_of(shown) in HOSTS[1:3]
    events = _events(cloud, server, 'migrate')
    assert ('compute_prep_resize', 'Error') in events, events
    assert ('compute_prep_resize', 'Success') in events, events
    assert _action(cloud, server, {'confirmResize': None})[0] == 204
    _wait(cloud, server, 'ACTIVE')
    assert_placement_matches_servers(cloud)


def test_anti_affinity_is_honoured(cloud, flavors, clean):
    group = cloud.compute.create_server_group('apart', 'anti-affinity')
    first = _boot(cloud, flavors, 'apart-0', HOSTS[0], {'group': group})
    clean.append(first)
    clean.append(_boot(cloud, flavors, 'apart-1', HOSTS[1],
                       {'group': group}))
    assert _action(cloud, first, {'migrate': None})[0] == 202
    shown = _wait(cloud, first, 'VERIFY_RESIZE')
    assert stack_mod.host_of(shown) == HOSTS[2]
    assert _action(cloud, first, {'confirmResize': None})[0] == 204
    _wait(cloud, first, 'ACTIVE')


def test_wrong_state_and_bad_hosts_are_refused(cloud, flavors, clean):
    server = _boot(cloud, flavors, 'refused', HOSTS[0])
    clean.append(server)
    status, body = _action(cloud, server, {'confirmResize': None})
    assert status == 409, body
    status, body = _action(cloud, server, {'revertResize': None})
    assert status == 409, body
    for host, message in (
            (HOSTS[0], 'Cannot migrate to the host where the server '
                       'exists.'),
            ('nowhere', 'Compute host nowhere could not be found.')):
        status, body = _action(cloud, server, {'migrate': {'host': host}},
                               MIGRATE_HOST)
        assert status == 400, body
        assert body['badRequest']['message'] == message
    _set_hosts(cloud, [HOSTS[1]], 'disabled')
    try:
        status, body = _action(cloud, server,
                               {'migrate': {'host': HOSTS[1]}},
                               MIGRATE_HOST)
    finally:
        _set_hosts(cloud, [HOSTS[1]], 'enabled')
    assert status == 400, body
    assert body['badRequest']['message'].startswith(
        'No valid host was found.')
    shown = _wait(cloud, server, 'ACTIVE')
    assert stack_mod.host_of(shown) == HOSTS[0]
    assert_placement_matches_servers(cloud)


def test_deleting_a_resized_server_leaves_nothing_behind(cloud, flavors):
    server = _boot(cloud, flavors, 'deleted-resized', HOSTS[0])
    assert _action(cloud, server, {'resize': {
        'flavorRef': flavors[1]}})[0] == 202
    _wait(cloud, server, 'VERIFY_RESIZE')
    cloud.compute.delete_server(server)
    assert_placement_matches_servers(cloud)


def _numa_nodes(cloud, server_id):
    topology = cloud.compute.request('GET', '/servers/%s/topology'
                                     % server_id)
    return [node['memory_mb'] for node in topology['nodes']]


def test_a_flavor_change_waits_for_a_resize(cloud, flavors, clean):
    """doc/behaviours.md B12: the server keeps the flavor it was built
    with; stop/start does not apply a changed extra spec, a resize does.
    """
    api = cloud.compute
    later = api.create_flavor('numa-later', vcpus=1, ram=256, disk=1)
    now = api.create_flavor('numa-now', vcpus=1, ram=512, disk=1,
                            extra_specs={'hw:numa_nodes': '1'})
    server = api.create_server('numa1', later, flavors[2],
                               zone='nova:%s' % HOSTS[0])
    clean.append(server['id'])
    _wait(cloud, server['id'], 'ACTIVE')
    assert _numa_nodes(cloud, server['id']) == []

    api.request('POST', '/flavors/%s/os-extra_specs' % later,
                {'extra_specs': {'hw:numa_nodes': '1'}})
    for action, status in (('os-stop', 'SHUTOFF'), ('os-start', 'ACTIVE')):
        assert _action(cloud, server['id'], {action: None})[0] == 202
        shown = _wait(cloud, server['id'], status)
    assert _numa_nodes(cloud, server['id']) == []
    assert 'hw:numa_nodes' not in shown['flavor']['extra_specs']

    fresh = api.create_server('numa2', later, flavors[2],
                              zone='nova:%s' % HOSTS[0])
    clean.append(fresh['id'])
    _wait(cloud, fresh['id'], 'ACTIVE')
    assert _numa_nodes(cloud, fresh['id']) == [256]

    assert _action(cloud, server['id'], {'resize': {'flavorRef': now}})[
        0] == 202
    _wait(cloud, server['id'], 'VERIFY_RESIZE')
    assert _action(cloud, server['id'], {'confirmResize': None})[0] == 204
    shown = _wait(cloud, server['id'], 'ACTIVE')
    assert shown['flavor']['extra_specs'] == {'hw:numa_nodes': '1'}
    assert _numa_nodes(cloud, server['id']) == [512]
