# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The periodic resource update: usage, records, placement, cleanup."""

import collections
import json
import uuid

from common import context
from common.numa import topology
from services.compute import usage
from services.scheduler.filters import numa_topology_filter
from services.scheduler.filters import simple_cidr_affinity_filter
from services.scheduler.sources import records
from tests.unit.compute import fakes
from tests.unit.scheduler import fakes as scheduler_fakes

CTXT = context.get_admin_context()
V = 'placement 1.39'


def _pinned(cpus, cell=0, memory=512):
    """A fitted instance topology pinning vCPU i to ``cpus[i]``."""
    return topology.InstanceTopology(cells=[topology.InstanceCell(
        id=cell, pcpuset=set(range(len(cpus))), memory=memory,
        cpu_policy='dedicated',
        cpu_pinning=dict(enumerate(cpus)))]).to_primitive()


def _row(values):
    """A compute_nodes row as the scheduler's database source reads it."""
    data = dict(values)
    for key in ('cpu_info', 'numa_topology', 'pci_stats', 'metrics',
                'stats', 'supported_instances'):
        data[key] = json.dumps(data[key])
    data.update(updated_at=None, created_at=None)
    return collections.namedtuple('Row', sorted(data))(**data)


def _allocate(placement, consumer, rp, **resources):
    resp = placement.request('/allocations/%s' % consumer, 'PUT', headers={
        'OpenStack-API-Version': V}, json={
        'allocations': {rp: {'resources': resources or {'VCPU': 1}}},
        'consumer_generation': None, 'project_id': 'p', 'user_id': 'u',
        'consumer_type': 'INSTANCE'})
    assert resp.status_code == 204, resp.text


def _allocations(placement, rp):
    resp = placement.request('/resource_providers/%s/allocations' % rp,
                             'GET', headers={'OpenStack-API-Version': V})
    return set(json.loads(resp.content)['allocations'])


def test_usage_is_rebuilt_from_instances(make_agent):
    agent = make_agent()
    conductor = agent.conductor
    for _ in range(3):
        conductor.add_instance('cn', vcpus=1, memory_mb=64, root_gb=1)
    conductor.add_instance('cn', vcpus=8, memory_mb=8192,
                           vm_state='deleted')
    # NOTE: a build cast after the start (start ends the builds a
    # restart interrupted).
    agent.start()
    conductor.add_instance('cn', vcpus=2, memory_mb=128,
                           vm_state='building', task_state='scheduling')
    agent.update_all()
    row = conductor.nodes[('cn', 'cn')]
    assert (row['vcpus'], row['vcpus_used']) == (8, 5)
    assert row['memory_mb_used'] == 512 + 3 * 64 + 128
    assert row['free_ram_mb'] == 8192 - row['memory_mb_used']
    assert (row['local_gb_used'], row['free_disk_gb']) == (4, 96)
    assert row['stats']['num_instances'] == 4
    assert row['stats']['num_vm_active'] == 3
    assert row['stats']['num_task_scheduling'] == 1
    assert row['stats']['num_proj_p1'] == 4
    assert row['stats']['io_workload'] == 1
    assert row['running_vms'] == 4
    assert row['cpu_allocation_ratio'] == 4.0


def test_record_decodes_in_the_scheduler(make_agent, conf):
    conf.config(group='fake_driver', numa_cells=2, threads_per_core=2,
                pci_device=[json.dumps({
                    'address': '0000:81:00.0', 'vendor_id': '8086',
                    'product_id': '1572', 'vfs': 2, 'numa_node': 1})])
    agent = make_agent()
    agent.start()
    agent.conductor.add_instance('cn', vcpus=2, numa_topology=_pinned(
        [0, 4]), vm_state='building', task_state='scheduling')
    agent.update_all()
    values = dict(agent.conductor.nodes[('cn', 'cn')])
    state, count = records.to_host_state(_row(values), None, {'up': True})
    assert count == 1 and state.num_io_ops == 1
    assert state.free_ram_mb == 8192 - 512 - 512
    assert state.supported_instances == [['x86_64', 'fake', 'hvm']]
    host = topology.load_host(state.numa_topology)
    assert host.cells[0].pinned_cpus == {0, 4}
    assert {p['dev_type']: p['count'] for p in state.pci_stats} == {
        'type-PF': 1, 'type-VF': 2}
    # NOTE: the NUMA filter sees the node's pinned CPUs: a 2-vCPU pinned
    # guest still fits (cell 1), a 7-vCPU one no longer does.
    spec = scheduler_fakes.spec(2, 64)
    spec.numa_topology = _request(2)
    assert numa_topology_filter.NUMATopologyFilter().host_passes(state, spec)
    spec = scheduler_fakes.spec(7, 64)
    spec.numa_topology = _request(7)
    assert not numa_topology_filter.NUMATopologyFilter().host_passes(
        state, spec)


def _request(vcpus):
    return topology.InstanceTopology(cells=[topology.InstanceCell(
        id=0, pcpuset=set(range(vcpus)), memory=64,
        cpu_policy='dedicated')]).to_primitive()


def test_records_are_saved_only_when_changed(make_agent):
    agent = make_agent()
    agent.start()
    saves = agent.conductor.calls.count('compute_node_save')
    agent.update_all()
    assert agent.conductor.calls.count('compute_node_save') == saves
    agent.conductor.add_instance('cn')
    agent.update_all()
    assert agent.conductor.calls.count('compute_node_save') == saves + 1


def test_stale_pinned_cpus_are_repaired(make_agent, conf):
    """Seeds A14/B4: usage comes from instances, never from the record."""
    agent = make_agent()
    agent.conductor.add_instance('cn', vcpus=2, numa_topology=_pinned(
        [2, 3]))
    agent.start()
    row = agent.conductor.nodes[('cn', 'cn')]
    row['numa_topology']['cells'][0]['pinned_cpus'] = list(range(8))
    conf.config(group='compute', resource_provider_association_refresh=0)
    agent.update_all()
    cell = agent.conductor.nodes[('cn', 'cn')]['numa_topology']['cells'][0]
    assert cell['pinned_cpus'] == [2, 3]


def test_unchanged_nodes_make_no_placement_write(make_agent, placement):
    agent = make_agent(fake_driver={'host_count': 3})
    agent.start()
    agent.update_all()
    result = agent.update_all()
    assert result.placement_calls == {'GET': 3}
    assert (result.nodes, result.records_saved, result.trees_written) == (
        3, 0, 0)


def test_manual_edit_is_overwritten_at_the_next_update(make_agent,
                                                       placement):
    agent = make_agent()
    agent.start()
    root = agent.conductor.nodes[('cn', 'cn')]['uuid']
    url = '/resource_providers/%s/inventories' % root
    resp = placement.request(url, 'GET', headers={
        'OpenStack-API-Version': V})
    inv = json.loads(resp.content)
    inv['inventories']['VCPU'].update(total=3, max_unit=3)
    placement.request(url, 'PUT', headers={'OpenStack-API-Version': V},
                      json=inv)
    result = agent.update_all()
    assert result.trees_written == 1
    resp = placement.request(url, 'GET', headers={
        'OpenStack-API-Version': V})
    assert json.loads(resp.content)['inventories']['VCPU']['total'] == 8


def test_placement_outage_is_survived(make_agent, placement, caplog):
    agent = make_agent()
    placement.down = True
    agent.start()
    assert ('cn', 'cn') in agent.conductor.nodes
    result = agent.update_all()
    assert result.nodes == 1 and not result.placement_ok
    assert 'Placement is unreachable' in caplog.text
    placement.down = False
    result = agent.update_all()
    assert result.placement_ok and result.trees_written == 1


def test_allocations_of_gone_instances_are_removed(make_agent, placement):
    agent = make_agent()
    conductor = agent.conductor
    mine = conductor.add_instance('cn')['uuid']
    elsewhere = conductor.add_instance('other')['uuid']
    failed = conductor.add_instance(None, vm_state='error')['uuid']
    coming = conductor.add_instance(None, vm_state='building',
                                    task_state='scheduling')['uuid']
    agent.start()
    root = conductor.nodes[('cn', 'cn')]['uuid']
    gone = str(uuid.uuid4())
    for consumer in (mine, elsewhere, failed, coming, gone):
        _allocate(placement, consumer, root)
    result = agent.update_all()
    assert result.allocations_removed == 3
    assert _allocations(placement, root) == {mine, coming}


def test_unknown_consumers_get_a_grace_period(make_agent, conf, placement):
    conf.config(group='compute', orphan_allocation_grace_period=3600)
    agent = make_agent()
    agent.start()
    root = agent.conductor.nodes[('cn', 'cn')]['uuid']
    consumer = str(uuid.uuid4())
    _allocate(placement, consumer, root)
    agent.update_all()
    agent.update_all()
    assert _allocations(placement, root) == {consumer}
    agent.auditor.grace = 0
    agent.update_all()
    assert _allocations(placement, root) == set()


def test_orphan_node_records_are_deleted(make_agent):
    agent = make_agent()
    old = agent.conductor.compute_node_save(CTXT, 'cn', 'old-node',
                                            {'vcpus': 1})
    agent.start()
    assert set(agent.conductor.nodes) == {('cn', 'cn')}
    assert agent.scheduler.forgotten == [old['uuid']]


def test_schedulers_hear_of_changes_only(make_agent):
    agent = make_agent()
    agent.start()
    infos = agent.scheduler.infos
    assert infos == [(agent.conductor.nodes[('cn', 'cn')]['uuid'], [])]
    agent.update_all()
    assert len(infos) == 1
    inst = agent.conductor.add_instance('cn')
    agent.update_all()
    assert [i['uuid'] for i in infos[-1][1]] == [inst['uuid']]


def test_ratios_in_the_record_follow_the_options(make_agent, conf):
    conf.config(cpu_allocation_ratio=4.0, initial_ram_allocation_ratio=1.0)
    agent = make_agent()
    agent.start()
    row = agent.conductor.nodes[('cn', 'cn')]
    assert (row['cpu_allocation_ratio'], row['ram_allocation_ratio']) == (
        4.0, 1.0)
    assert usage.effective_ratios(conf.conf)['disk'] == 1.0


def test_heartbeats_of_many_hosts_go_in_one_call(make_agent, conf):
    from common import servicegroup
    from common import servicegroup_conductor
    agent = make_agent(fake_driver={'host_count': 3})
    agent.servicegroup = servicegroup.API(
        servicegroup_conductor.ConductorDriver(agent.conductor))
    for host in agent.hosts:
        agent.servicegroup.join(host, 'berth-compute', 'compute')
        agent.joined_service(host)
    agent.report_services()
    assert agent.conductor.calls.count('service_report_many') == 1
    assert {r.report_count for r in agent.conductor.services.values()} == {
        1}


def test_a_failing_host_does_not_stop_the_others(make_agent, caplog):
    agent = make_agent(fake_driver={'host_count': 2})
    agent.start()
    broken = agent.trackers['cn-0']
    broken.driver = fakes.FakeScheduler()
    result = agent.update_all()
    assert (result.failed_hosts, result.nodes) == (1, 1)
    assert 'Error updating resources of host cn-0' in caplog.text


def test_record_carries_my_ip_as_host_ip(make_agent, conf):
    """[DEFAULT] my_ip becomes the node's host_ip, which the scheduler's
    SimpleCIDRAffinityFilter compares with build_near_host_ip.
    """
    conf.config(my_ip='192.0.2.7')
    agent = make_agent()
    agent.start()
    agent.update_all()
    values = agent.conductor.nodes[('cn', 'cn')]
    assert values['host_ip'] == '192.0.2.7'
    state, _count = records.to_host_state(_row(values), None, {'up': True})
    assert state.host_ip == '192.0.2.7'
    cidr = simple_cidr_affinity_filter.SimpleCIDRAffinityFilter()
    near = scheduler_fakes.spec(scheduler_hints={
        'build_near_host_ip': ['192.0.2.200']})
    far = scheduler_fakes.spec(scheduler_hints={
        'build_near_host_ip': ['198.51.100.1']})
    assert cidr.host_passes(state, near)
    assert not cidr.host_passes(state, far)
