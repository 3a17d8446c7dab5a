# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Boots through the REST API, every service its own process.

The stack (tests/functional/stack.py) runs berth-placement-api, berth-api,
berth-scheduler, berth-conductor and one berth-compute simulating five
hosts, on the real RabbitMQ and on MariaDB (and once more on PostgreSQL).
Each test boots servers as a user would and checks where they landed, in
the API and in placement; each cleans up after itself, so that the hosts
start every test empty.

Host layout:

* stack-host0, stack-host1: aggregate ``fast`` (io=fast)
* stack-host2, stack-host3: aggregate ``slow`` (io=slow)
* stack-host2: also zone ``az1``
* stack-host3, stack-host4: zone ``az-flaky``; stack-host4's spawns fail
"""

import uuid

import pytest

from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack as stack_mod
from tests.functional import stack_fixture

HOSTS = 5
FAILING_HOST = 'stack-host4'
HOST_VCPUS = 8
HOST_MEMORY_MB = 16384
FILTERS = ('AvailabilityZoneFilter', 'ComputeFilter',
           'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
           'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter',
           'AggregateInstanceExtraSpecsFilter', 'SameHostFilter',
           'DifferentHostFilter', 'NUMATopologyFilter')


def _host(n):
    return 'stack-host%d' % n


@pytest.fixture(scope='module', params=['mysql', 'postgresql'])
def stack(request, database_servers, tmp_path_factory):  # noqa: F811
    """The running deployment with its aggregates, flavors and image."""
    with stack_fixture.deployed(
            database_servers, request.param,
            str(tmp_path_factory.mktemp('stack-%s' % request.param)),
            seed=_seed, hosts=HOSTS, extra_conf={
                ('filter_scheduler', 'enabled_filters'): ','.join(FILTERS),
                ('filter_scheduler', 'host_subset_size'): 1,
                ('fake_driver', 'vcpus'): HOST_VCPUS,
                ('fake_driver', 'memory_mb'): HOST_MEMORY_MB,
                ('fake_driver', 'numa_cells'): 2,
                ('fake_driver', 'fail_hosts'): FAILING_HOST,
                ('compute', 'cpu_dedicated_set'): '4-7',
                ('compute', 'cpu_shared_set'): '0-3',
            }) as deployment:
        yield deployment


def _seed(deployment):
    api = deployment.compute
    api.create_aggregate('fast', [_host(0), _host(1)], {'io': 'fast'})
    api.create_aggregate('slow', [_host(2), _host(3)], {'io': 'slow'})
    api.create_aggregate('zone1', [_host(2)], zone='az1')
    api.create_aggregate('flaky', [_host(3), _host(4)], zone='az-flaky')
    deployment.flavors = {
        'small': api.create_flavor('small', vcpus=1, ram=512, disk=1),
        'fast': api.create_flavor(
            'fast', vcpus=1, ram=512, disk=1,
            extra_specs={'aggregate_instance_extra_specs:io': 'fast'}),
        'whole-host': api.create_flavor('whole-host', vcpus=HOST_VCPUS // 2,
                                        ram=HOST_MEMORY_MB // 2, disk=1),
        'pinned': api.create_flavor(
            'pinned', vcpus=2, ram=1024, disk=1,
            extra_specs={'hw:cpu_policy': 'dedicated'}),
        'pinned-isolated-emulator': api.create_flavor(
            'pinned-isolated-emulator', vcpus=2, ram=1024, disk=1,
            extra_specs={'hw:cpu_policy': 'dedicated',
                         'hw:emulator_threads_policy': 'isolate'}),
        'big-ram': api.create_flavor('big-ram', vcpus=1,
                                     ram=HOST_MEMORY_MB // 4 * 3, disk=1),
    }
    deployment.image = api.create_image('cirros')


@pytest.fixture
def boot(stack):
    """Boot helper that deletes what it booted when the test ends."""
    booted = []

    def _boot(flavor='small', wait=True, **kwargs):
        name = 'vm-%s' % uuid.uuid4().hex[:8]
        server = stack.compute.create_server(
            name, stack.flavors[flavor], stack.image, **kwargs)
        if kwargs.get('max_count', 1) > 1:
            ids = [s['id'] for s in stack.compute.servers(
                reservation_id=server['reservation_id'])]
        else:
            ids = [server['id']]
        booted.extend(ids)
        if not wait:
            return ids
        servers = [stack.compute.wait_for_server(i) for i in ids]
        return servers if len(servers) > 1 else servers[0]

    yield _boot
    for server_id in booted:
        if stack.compute.get_server(server_id) is not None:
            stack.compute.delete_server(server_id)


def _allocations(stack, server_id):
    """Provider uuid -> resources of the server's placement allocation."""
    return stack.placement.allocations(server_id)


def _provider(stack, host):
    providers = stack.placement.request(
        'GET', '/resource_providers?name=%s' % host)['resource_providers']
    assert providers, 'no provider for %s' % host
    return providers[0]['uuid']


def _assert_active_on(server, hosts):
    assert server['status'] == 'ACTIVE', server.get('fault')
    assert stack_mod.host_of(server) in hosts, server


def test_io_fast_flavor_lands_in_the_fast_aggregate(stack, boot):
    servers = [boot('fast') for _ in range(3)]
    for server in servers:
        _assert_active_on(server, {_host(0), _host(1)})


def test_zone_and_forced_host(stack, boot):
    _assert_active_on(boot(zone='az1'), {_host(2)})
    _assert_active_on(boot(zone='nova:%s' % _host(1)), {_host(1)})


def test_affinity_keeps_servers_together(stack, boot):
    group = stack.compute.create_server_group('together', 'affinity')
    first = boot(hints={'group': group})
    second = boot(hints={'group': group})
    _assert_active_on(first, {_host(n) for n in range(HOSTS - 1)})
    assert stack_mod.host_of(second) == stack_mod.host_of(first)


def test_anti_affinity_beyond_capacity_ends_in_error(stack, boot):
    group = stack.compute.create_server_group('apart', 'anti-affinity')
    # NOTE: zone "nova" is the hosts in no zone aggregate: stack-host0 and
    # stack-host1. Two members fill it; a third has nowhere to go.
    servers = [boot(zone='nova', hints={'group': group}) for _ in range(2)]
    for server in servers:
        _assert_active_on(server, {_host(0), _host(1)})
    assert stack_mod.host_of(servers[0]) != stack_mod.host_of(servers[1])
    extra = boot(zone='nova', hints={'group': group})
    assert extra['status'] == 'ERROR'
    fault = extra['fault']
    assert 'No valid host' in fault['message']
    assert 'ServerGroupAntiAffinityFilter' in (
        fault['message'] + fault.get('details', ''))
    assert _allocations(stack, extra['id']) == {}


def test_same_host_and_different_host_hints(stack, boot):
    anchor = boot(zone='nova')
    near = boot(hints={'same_host': [anchor['id']]})
    far = boot(hints={'different_host': [anchor['id']]})
    assert stack_mod.host_of(near) == stack_mod.host_of(anchor)
    assert far['status'] == 'ACTIVE'
    assert stack_mod.host_of(far) != stack_mod.host_of(anchor)


def test_dedicated_cpu_flavor_is_pinned(stack, boot):
    server = boot('pinned', zone='nova')
    assert server['status'] == 'ACTIVE', server.get('fault')
    allocations = _allocations(stack, server['id'])
    resources = {}
    for per_provider in allocations.values():
        resources.update(per_provider)
    assert resources.get('PCPU') == 2
    assert 'VCPU' not in resources


def test_isolated_emulator_threads_take_one_more_pcpu(stack, boot):
    # NOTE: as Nova: 2 dedicated vCPUs and their emulator threads on a
    # pCPU of their own are PCPU 3 in placement (doc/behaviours.md
    # §numa-constraints).
    server = boot('pinned-isolated-emulator', zone='nova')
    assert server['status'] == 'ACTIVE', server.get('fault')
    resources = {}
    for per_provider in _allocations(stack, server['id']).values():
        resources.update(per_provider)
    assert resources.get('PCPU') == 3
    assert 'VCPU' not in resources


def test_multi_create_that_cannot_fit_fails_whole(stack, boot):
    servers = boot('whole-host', zone='nova', min_count=2 * 3 + 1,
                   max_count=2 * 3 + 1)
    assert {s['status'] for s in servers} == {'ERROR'}
    for server in servers:
        assert _allocations(stack, server['id']) == {}


def test_failed_spawn_is_rescheduled_to_an_alternate(stack, boot):
    # NOTE: stack-host3 gets a large server first, so that RAM weighing
    # prefers stack-host4 (the failing one) for the next boot in the zone.
    filler = boot('big-ram', zone='az-flaky:%s' % _host(3))
    _assert_active_on(filler, {_host(3)})
    server = boot(zone='az-flaky')
    _assert_active_on(server, {_host(3)})
    allocations = _allocations(stack, server['id'])
    assert set(allocations) == {_provider(stack, _host(3))}
    failing = _provider(stack, FAILING_HOST)
    assert stack.placement.usages(failing).get('VCPU', 0) == 0


def test_delete_while_the_host_is_down_is_local(stack, boot):
    server = boot(zone='nova')
    assert server['status'] == 'ACTIVE'
    stack.stop_service('berth-compute')
    try:
        stack.wait_for_hosts_down()
        stack.compute.delete_server(server['id'])
        assert _allocations(stack, server['id']) == {}
    finally:
        stack.start_service('berth-compute')
        stack.wait_for_hosts()
