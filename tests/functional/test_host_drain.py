# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage host drain`` on a whole deployment: the what-if plan,
followed.

Every service is its own process on MariaDB and RabbitMQ
(tests/functional/stack.py), four fake hosts whose live migrations copy
for ``LIVE_MIGRATION_TIME`` seconds; berth-manage reaches the compute
API through ``[compute_api]`` (noauth2's admin token). Each test takes
``capacity what-if --lose H`` first, drains H, and checks that every
server went where the plan said, that H ends empty and disabled with
the drain's reason, and that placement holds for each host exactly the
flavors of its servers and no migration consumer. A server whose flavor
fits on no other host is reported and left where it is; a drain killed
after its first move started finishes when run again.
"""

import json
import subprocess
import sys

import pytest

from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack as stack_mod
from tests.functional import stack_fixture

HOSTS = ('stack-host0', 'stack-host1', 'stack-host2', 'stack-host3')
# NOTE: long enough to kill the drain while its first move copies.
LIVE_MIGRATION_TIME = 3.0
FILTERS = ('ComputeFilter', 'ComputeCapabilitiesFilter',
           'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
           'ServerGroupAffinityFilter', 'AggregateInstanceExtraSpecsFilter')
TIMEOUT = 180


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql', str(tmp_path_factory.mktemp('drain')),
            hosts=len(HOSTS), extra_conf={
                ('fake_driver', 'live_migration_time'): LIVE_MIGRATION_TIME,
                ('filter_scheduler', 'enabled_filters'): ','.join(FILTERS),
            }) as deployment:
        api = deployment.compute
        deployment.flavor = api.create_flavor('small', vcpus=1, ram=256,
                                              disk=1)
        deployment.big = api.create_flavor('medium', vcpus=2, ram=512,
                                           disk=1)
        # NOTE: fits only where an aggregate says pool=solo (one host).
        deployment.solo = api.create_flavor(
            'solo', vcpus=1, ram=256, disk=1,
            extra_specs={'aggregate_instance_extra_specs:pool': 'solo'})
        api.create_aggregate('solo', ['stack-host1'],
                             metadata={'pool': 'solo'})
        deployment.image = api.create_image('cirros')
        yield deployment


@pytest.fixture
def servers(cloud):
    """The servers a test boots: placement checked, then deleted; every
    host enabled again.
    """
    made = []
    yield made
    _assert_placement_matches_servers(cloud)
    for server_id in made:
        cloud.compute.delete_server(server_id, wait=False)
    for server_id in made:
        cloud.compute.wait_until_gone(server_id)
    for host in HOSTS:
        service = _service(cloud, host)
        if service['status'] == 'disabled':
            cloud.compute.request('PUT', '/os-services/%s' % service['id'],
                                  {'status': 'enabled'})


def _boot(cloud, servers, name, host, flavor=None, hints=None,
          stopped=False):
    server = cloud.compute.create_server(
        name, flavor or cloud.flavor, cloud.image, zone='nova:%s' % host,
        hints=hints)
    servers.append(server['id'])
    server = cloud.compute.wait_for_server(server['id'])
    assert server['status'] == 'ACTIVE', server
    if stopped:
        cloud.compute.request('POST', '/servers/%s/action' % server['id'],
                              {'os-stop': None})
        server = cloud.compute.wait_for_server(server['id'], 'SHUTOFF')
    return server['id']


def _manage(cloud, *args):
    """(exit code, stdout, stderr) of berth-manage."""
    result = subprocess.run(
        [sys.executable, '-m', 'services.manage.main', '--config-file',
         cloud.conf_file] + list(args), capture_output=True, text=True,
        timeout=TIMEOUT)
    return result.returncode, result.stdout, result.stderr


def _what_if(cloud, host):
    """The planned destination of each server of ``host``."""
    code, out, err = _manage(cloud, 'capacity', 'what-if', '--lose', host,
                             '--json')
    assert code in (0, 1), out + err
    return {m['server']: m['destination']
            for m in json.loads(out)['moves']}


def _hosts(cloud, server_ids):
    return {s: stack_mod.host_of(cloud.compute.get_server(s))
            for s in server_ids}


def _service(cloud, host):
    [service] = cloud.compute.request(
        'GET', '/os-services?binary=nova-compute&host=%s' % host)['services']
    return service


def _assert_drained(cloud, host, reason_start='drained by berth-manage at '):
    service = _service(cloud, host)
    assert service['status'] == 'disabled', service
    assert service['disabled_reason'].startswith(reason_start), service
    assert cloud.compute.servers(host=host, all_tenants=1) == []


def _expected_usage(server):
    flavor = server['flavor']
    return {'VCPU': flavor['vcpus'], 'MEMORY_MB': flavor['ram'],
            'DISK_GB': flavor['disk']}


def _assert_placement_matches_servers(cloud):
    """Each host's usage is the sum of its servers' flavors, and every
    consumer on it is one of those servers (no migration consumer).
    """
    expected = {host: {} for host in HOSTS}
    on_host = {host: set() for host in HOSTS}
    for server in cloud.compute.servers(all_tenants=1):
        host = stack_mod.host_of(server)
        if not host:
            continue
        on_host[host].add(server['id'])
        for rc, amount in _expected_usage(server).items():
            expected[host][rc] = expected[host].get(rc, 0) + amount
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


def test_the_drain_follows_the_what_if_plan(cloud, servers):
    # NOTE: at most two members of the group a host (2.64 rules): host1
    # is full of them, so host0's members must go to host2 or host3.
    group = cloud.compute.create_server_group(
        'pairs', 'anti-affinity', rules={'max_server_per_host': 2})
    hint = {'group': group}
    members = [_boot(cloud, servers, 'member-%d' % i, host, hints=hint)
               for i, host in enumerate(HOSTS[:1] * 2 + HOSTS[1:2] * 2)]
    web = _boot(cloud, servers, 'web', HOSTS[0], flavor=cloud.big)
    db = _boot(cloud, servers, 'db', HOSTS[0], stopped=True)
    on_host0 = [web, db] + members[:2]
    plan = _what_if(cloud, HOSTS[0])
    assert set(plan) == set(on_host0), plan
    assert {plan[m] for m in members[:2]} <= set(HOSTS[2:]), plan

    code, out, err = _manage(cloud, 'host', 'drain', HOSTS[0],
                             '--parallel', '2', '--json')
    assert code == 0, out + err
    answer = json.loads(out)
    assert {s['server']: s['outcome'] for s in answer['servers']} == \
        {s: 'moved' for s in on_host0}
    assert _hosts(cloud, on_host0) == plan
    assert cloud.compute.get_server(db)['status'] == 'SHUTOFF'
    assert cloud.compute.get_server(web)['status'] == 'ACTIVE'
    _assert_drained(cloud, HOSTS[0])
    assert 'moved web (%s) %s -> %s [live' % (web, HOSTS[0], plan[web]) \
        in err
    assert 'confirming db (%s) on %s' % (db, plan[db]) in err

    code, out, err = _manage(cloud, 'host', 'drain', HOSTS[0])
    assert code == 0, out + err
    assert out.splitlines()[-1] == \
        'Host %s has no servers: nothing to drain.' % HOSTS[0]


def test_a_server_that_fits_nowhere_else_is_left_in_place(cloud, servers):
    solo = _boot(cloud, servers, 'solo', HOSTS[1], flavor=cloud.solo)
    web = _boot(cloud, servers, 'web', HOSTS[1])
    plan = _what_if(cloud, HOSTS[1])
    code, out, err = _manage(cloud, 'host', 'drain', HOSTS[1], '--reason',
                             'RAM test')
    assert code == 1, out + err
    lines = out.splitlines()
    assert lines[0] == 'Disabled the compute service of %s: RAM test' \
        % HOSTS[1]
    assert lines[-3] == 'Left where they are (1):'
    assert lines[-2].startswith('  solo (%s) on %s: left: 3 host(s), '
                                'rejected: AggregateInstanceExtraSpecsFilter'
                                % (solo, HOSTS[1])), lines
    assert lines[-1] == 'Result: 1 server(s) remain on %s.' % HOSTS[1]
    assert _hosts(cloud, [solo, web]) == {solo: HOSTS[1], web: plan[web]}
    assert cloud.compute.get_server(solo)['status'] == 'ACTIVE'
    assert _service(cloud, HOSTS[1])['disabled_reason'] == 'RAM test'


def test_an_interrupted_drain_finishes_when_run_again(cloud, servers):
    # NOTE: the plan goes biggest first, then by name: 'a-first' (live)
    # is the move the drain is killed in.
    moved = [_boot(cloud, servers, 'a-first', HOSTS[2], flavor=cloud.big)]
    moved += [_boot(cloud, servers, name, HOSTS[2]) for name in ('b', 'c')]
    moved.append(_boot(cloud, servers, 'd-stopped', HOSTS[2], stopped=True))
    plan = _what_if(cloud, HOSTS[2])
    drain = subprocess.Popen(
        [sys.executable, '-m', 'services.manage.main', '--config-file',
         cloud.conf_file, 'host', 'drain', HOSTS[2]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        for line in drain.stderr:
            seen.append(line)
            if line.startswith('moving a-first'):
                break
        else:
            pytest.fail('no move started:\n%s' % ''.join(seen))
    finally:
        drain.kill()
        drain.communicate(timeout=TIMEOUT)
    assert cloud.compute.get_server(moved[0])['OS-EXT-STS:task_state'] == \
        'migrating'

    code, out, err = _manage(cloud, 'host', 'drain', HOSTS[2])
    assert code == 0, out + err
    lines = out.splitlines()
    assert lines[0].startswith('The compute service of %s is already '
                               'disabled: drained by' % HOSTS[2])
    assert lines[1] == '1 move(s) from %s already under way:' % HOSTS[2]
    assert lines[-1] == 'Result: %s is empty.' % HOSTS[2]
    assert _hosts(cloud, moved) == plan
    _assert_drained(cloud, HOSTS[2])
