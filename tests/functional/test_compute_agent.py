# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""berth-compute with the real conductor, RabbitMQ, placement and MariaDB.

One agent process simulates three hosts (two NUMA nodes with sibling
threads, one GPU each) and reports NUMA nodes to placement; its periodic
update runs every 2 seconds. The tests run in order on that deployment
(issue 4, criterion 2):

1. every host registers (service record, heartbeats through the
   conductor, compute node record) and its provider tree appears:
   the compute node with DISK_GB, a child per NUMA node with VCPU, PCPU
   and MEMORY_MB, a GPU child with VGPU and its mdev type as a trait;
2. a manual inventory edit in placement is overwritten;
3. the allocation of an instance deleted while the agent was stopped is
   removed when it starts again, and a live instance's is kept;
4. placement down for a while: the agent logs it, keeps heartbeating and
   saving records, and repairs placement once it is back.
"""

import json
import time
import uuid

import pytest

from tests.functional import compute_env
from tests.functional.placement import conftest as db_helpers
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import placement_server
from tests.functional import rabbit
from tests.functional import scheduler_env
from tests.functional import skips

HOSTS = ['stack-host1', 'stack-host2', 'stack-host3']
GPU = {'address': '0000:25:00.4', 'numa_node': 0,
       'mdev_type': 'nvidia-610', 'max_instances': 4}


@pytest.fixture(scope='module')
def env(database_servers, tmp_path_factory):  # noqa: F811
    """Placement, a conductor and the agent, on MariaDB."""
    rabbit.check()
    if 'mysql' not in database_servers:
        server = db_helpers.DatabaseServer('mysql')
        try:
            server.check()
        except Exception as exc:
            skips.unavailable('MariaDB is unreachable: %s'
                              % str(exc).splitlines()[0])
        database_servers['mysql'] = server
    deployment = compute_env.ComputeEnv(
        database_servers['mysql'].create, hosts=len(HOSTS), kind='mysql',
        workdir=str(tmp_path_factory.mktemp('compute-agent')),
        extra_conf={
            ('fake_driver', 'vcpus'): 8,
            ('fake_driver', 'threads_per_core'): 2,
            ('fake_driver', 'numa_cells'): 2,
            ('fake_driver', 'memory_mb'): 16384,
            ('fake_driver', 'gpu'): json.dumps(GPU),
            ('compute', 'numa_nodes_in_placement'): True,
            ('compute', 'cpu_dedicated_set'): '1,3,5,7',
        })
    try:
        deployment.setup()
        deployment.start()
    except scheduler_env.EnvironmentUnavailable as exc:
        deployment.stop()
        skips.unavailable(str(exc))
    except (scheduler_env.EnvironmentFailure,
            placement_server.ServerError) as exc:
        deployment.stop()
        pytest.fail(str(exc), pytrace=False)
    except BaseException:
        deployment.stop()
        raise
    yield deployment
    deployment.stop()


def _roots(env):
    return {host: row['uuid'] for host, row in env.compute_nodes().items()}


def _full_trees(env):
    roots = _roots(env)
    if set(roots) != set(HOSTS):
        return None
    trees = {host: env.tree(root) for host, root in roots.items()}
    return trees if all(len(t) == 4 for t in trees.values()) else None


def test_hosts_register_and_report_nested_providers(env):
    trees = env.wait_for(lambda: _full_trees(env), what='3 provider trees')
    services = env.wait_for(
        lambda: len(env.services()) == len(HOSTS) and env.services(),
        what='3 service records')
    assert set(services) == set(HOSTS)
    nodes = env.compute_nodes()
    for host in HOSTS:
        node = nodes[host]
        assert node['hypervisor_hostname'] == host
        assert len(node['numa_topology']['cells']) == 2
        assert node['stats']['num_instances'] == 0
        tree = trees[host]
        assert set(tree) == {host, host + '_NUMA0', host + '_NUMA1',
                             host + '_pci_0000_25_00_4'}
        root = tree[host]
        assert root['uuid'] == node['uuid']
        assert set(env.inventories(root['uuid'])['inventories']) == {
            'DISK_GB'}
        assert {'COMPUTE_NODE', 'HW_CPU_HYPERTHREADING'} <= env.traits(
            root['uuid'])
        numa0 = tree[host + '_NUMA0']
        assert numa0['parent_provider_uuid'] == root['uuid']
        inv = env.inventories(numa0['uuid'])['inventories']
        assert (inv['VCPU']['total'], inv['PCPU']['total'],
                inv['MEMORY_MB']['total']) == (2, 2, 8192)
        assert env.traits(numa0['uuid']) == {'HW_NUMA_ROOT'}
        gpu = tree[host + '_pci_0000_25_00_4']
        assert gpu['parent_provider_uuid'] == numa0['uuid']
        assert env.inventories(gpu['uuid'])['inventories']['VGPU'][
            'total'] == 4
        assert env.traits(gpu['uuid']) == {'CUSTOM_NVIDIA_610'}
    # NOTE: heartbeats go through the conductor, for every host.
    first = {h: s['report_count'] for h, s in services.items()}
    env.wait_for(lambda: all(s['report_count'] > first[h]
                             for h, s in env.services().items()),
                 what='heartbeats of every host')


def _numa0(env, host='stack-host1'):
    return env.tree(_roots(env)[host])[host + '_NUMA0']['uuid']


def _edit_vcpu_total(env, provider, total):
    body = env.inventories(provider)
    body['inventories']['VCPU'].update(total=total, max_unit=total)
    env.placement.request('PUT', '/resource_providers/%s/inventories'
                          % provider, body)


def _vcpu_total(env, provider):
    return env.inventories(provider)['inventories']['VCPU']['total']


def test_manual_inventory_change_is_overwritten(env):
    provider = _numa0(env)
    _edit_vcpu_total(env, provider, 99)
    env.wait_for(lambda: _vcpu_total(env, provider) == 2,
                 what='the edit overwritten')


def _allocate(env, consumer, host):
    roots = _roots(env)
    env.placement.request('PUT', '/allocations/%s' % consumer, {
        'allocations': {
            roots[host]: {'resources': {'DISK_GB': 1}},
            _numa0(env, host): {'resources': {'VCPU': 1,
                                              'MEMORY_MB': 256}}},
        'consumer_generation': None, 'project_id': 'p', 'user_id': 'u',
        'consumer_type': 'INSTANCE'})


def test_allocation_of_instance_deleted_while_stopped_is_removed(env):
    host = 'stack-host2'
    kept = env.add_instance(host)
    deleted = env.add_instance(host)
    for inst in (kept, deleted):
        _allocate(env, inst.uuid, host)
    env.wait_for(lambda: env.compute_nodes()[host]['stats'][
        'num_instances'] == 2, what='both instances counted')
    assert env.stop_service('berth-compute') == 0
    env.destroy_instance(deleted.uuid)
    env.start_service('berth-compute')
    env.wait_for(lambda: env.placement.allocations(deleted.uuid) == {},
                 what='the deleted instance allocation removed')
    assert env.placement.allocations(kept.uuid)
    env.wait_for(lambda: env.compute_nodes()[host]['stats'][
        'num_instances'] == 1, what='the record updated')


def test_placement_outage_is_survived(env):
    provider = _numa0(env, 'stack-host3')
    services = env.services()
    env.stop_service('berth-placement-api')
    out = env.process('berth-compute').out_file
    env.wait_for(lambda: 'Placement is unreachable' in open(out).read(),
                 what='the outage logged')
    # NOTE: a few updates without placement: still heartbeating.
    time.sleep(3 * compute_env.UPDATE_INTERVAL)
    assert env.process('berth-compute').alive()
    assert all(s['report_count'] > services[h]['report_count']
               for h, s in env.services().items())
    env.start_service('berth-placement-api')
    _edit_vcpu_total(env, provider, 42)
    env.wait_for(lambda: _vcpu_total(env, provider) == 2,
                 what='placement repaired after the outage')
    # NOTE: and a consumer left behind during the outage is cleaned up.
    stray = str(uuid.uuid4())
    _allocate(env, stray, 'stack-host3')
    env.wait_for(lambda: env.placement.allocations(stray) == {},
                 what='a stray allocation removed')
