# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The pipeline's shortcuts give the answers of the long way round.

Filters skipped for a request, weighers that score a whole request at
once, the per-node reservation index and the cheap host-state copy must
not change a decision or an explanation.
"""

import copy

import pytest

from common.numa import topology
from common.objects import instance_group as group_obj
from services.scheduler import answer_snapshot
from services.scheduler import filters
from services.scheduler.filters import compute_capabilities_filter as ccf
from services.scheduler.filters import image_properties_filter as ipf
from services.scheduler.filters import server_group_affinity_filter as saf
from services.scheduler.filters import server_group_anti_affinity_filter as aaf
from services.scheduler import host_copy
from services.scheduler import host_manager
from services.scheduler import reservations
from services.scheduler import weighers
from services.scheduler.weighers import build_failure
from services.scheduler.weighers import cpu
from services.scheduler.weighers import cross_cell
from services.scheduler.weighers import disk
from services.scheduler.weighers import hypervisor_version
from services.scheduler.weighers import io_ops
from services.scheduler.weighers import num_instances
from services.scheduler.weighers import pci
from services.scheduler.weighers import ram
from services.scheduler.weighers import soft_affinity
from services.scheduler.weighers import soft_anti_affinity
from tests.unit.scheduler import fakes
from tests.unit.scheduler import test_scheduling


def _one_by_one(host_filter, hosts, spec):
    with filters.Rejections() as rejections:
        passed = [h for h in hosts if host_filter.host_passes(h, spec)]
    return passed, rejections.by_host


@pytest.mark.parametrize('host_filter, spec, runs', [
    (saf.ServerGroupAffinityFilter(), fakes.spec(), False),
    (saf.ServerGroupAffinityFilter(),
     fakes.spec(group=fakes.group(group_obj.ANTI_AFFINITY)), False),
    (saf.ServerGroupAffinityFilter(),
     fakes.spec(group=fakes.group(group_obj.AFFINITY, hosts=['h1'])), True),
    (aaf.ServerGroupAntiAffinityFilter(), fakes.spec(), False),
    (aaf.ServerGroupAntiAffinityFilter(),
     fakes.spec(group=fakes.group(group_obj.SOFT_ANTI_AFFINITY)), False),
    (aaf.ServerGroupAntiAffinityFilter(),
     fakes.spec(group=fakes.group(group_obj.ANTI_AFFINITY, hosts=['h1'])),
     True),
    (ccf.ComputeCapabilitiesFilter(), fakes.spec(), False),
    (ccf.ComputeCapabilitiesFilter(),
     fakes.spec(extra_specs={'hw:cpu_policy': 'dedicated', 'io': 'x'}),
     False),
    (ccf.ComputeCapabilitiesFilter(),
     fakes.spec(extra_specs={'capabilities:hypervisor_type': 'xen'}), True),
    (ccf.ComputeCapabilitiesFilter(),
     fakes.spec(extra_specs={'free_ram_mb': '>= 1'}), True),
])
def test_a_filter_is_skipped_only_when_it_passes_every_host(
        host_filter, spec, runs):
    hosts = [fakes.host('h1'), fakes.host('h2', hypervisor_type='QEMU')]
    assert host_filter.run_filter_for_request(spec) is runs
    if not runs:
        assert _one_by_one(host_filter, hosts, spec) == (hosts, {})


def test_a_skipped_filter_is_still_in_the_explanation():
    hosts = [fakes.host('h1'), fakes.host('h2')]
    scheduler, _p = test_scheduling.make(
        hosts, filters=['ComputeFilter', 'ServerGroupAffinityFilter'])
    _s, record = scheduler.select_destinations(None, fakes.spec(), [],
                                               dry_run=True)
    assert record['filters'][1] == {
        'filter': 'ServerGroupAffinityFilter', 'hosts_in': 2,
        'hosts_out': 2, 'removed': []}


@pytest.mark.parametrize('properties', [
    {}, {'hw_architecture': 'amd64'}, {'hw_architecture': 'aarch64'},
    {'img_hv_type': 'qemu'}, {'img_hv_type': 'xen', 'hw_vm_mode': 'pv'},
    {'hw_architecture': 'x86_64', 'img_hv_requested_version': '>=9'},
    {'hw_architecture': 'x86_64', 'img_hv_requested_version': 'junk'},
])
def test_image_filter_pass_matches_host_by_host(properties):
    hosts = [fakes.host('h1'),
             fakes.host('h2', supported_instances=[['AMD64', 'KVM', 'HVM']]),
             fakes.host('h3', supported_instances=[]),
             fakes.host('h4', supported_instances=[['aarch64', 'qemu',
                                                    'hvm'], ['x']]),
             fakes.host('h5', supported_instances=[['i686', 'xapi', 'pv']])]
    spec = fakes.spec(image_properties=properties)
    host_filter = ipf.ImagePropertiesFilter()
    with filters.Rejections() as rejections:
        passed = list(host_filter.filter_all(hosts, spec))
    assert (passed, rejections.by_host) == _one_by_one(host_filter, hosts,
                                                       spec)


@pytest.mark.parametrize('weigher, spec', [
    (soft_affinity.ServerGroupSoftAffinityWeigher(), fakes.spec()),
    (soft_affinity.ServerGroupSoftAffinityWeigher(), fakes.spec(
        group=fakes.group(group_obj.SOFT_AFFINITY, hosts=['h1', 'h1']))),
    (soft_anti_affinity.ServerGroupSoftAntiAffinityWeigher(), fakes.spec(
        group=fakes.group(group_obj.SOFT_AFFINITY, hosts=['h1']))),
    (soft_anti_affinity.ServerGroupSoftAntiAffinityWeigher(), fakes.spec(
        group=fakes.group(group_obj.SOFT_ANTI_AFFINITY, hosts=['h2']))),
    (cross_cell.CrossCellWeigher(), fakes.spec()),
    (cross_cell.CrossCellWeigher(), fakes.spec(
        scheduler_hints={'source_cell': ['cell2']})),
    (cross_cell.CrossCellWeigher(), fakes.spec(
        scheduler_hints={'source_cell': 'cell2'})),
    (ram.RAMWeigher(), fakes.spec()),
    (disk.DiskWeigher(), fakes.spec()),
    (io_ops.IoOpsWeigher(), fakes.spec()),
    (cpu.CPUWeigher(), fakes.spec()),
    (hypervisor_version.HypervisorVersionWeigher(), fakes.spec()),
    (build_failure.BuildFailureWeigher(), fakes.spec()),
    (num_instances.NumInstancesWeigher(), fakes.spec()),
    (pci.PCIWeigher(), fakes.spec()),
    (pci.PCIWeigher(), fakes.spec(pci_requests=[{'count': 1}])),
])
def test_request_wide_weighing_matches_host_by_host(weigher, spec):
    hosts = [weighers.WeighedHost(fakes.host('h1')),
             weighers.WeighedHost(fakes.host(
                 'h2', cell_uuid='cell2', free_ram_mb=-512, free_disk_mb=7,
                 num_io_ops=3, vcpus_total=7, vcpus_used=2.5,
                 cpu_allocation_ratio=1.1, hypervisor_version=8002000,
                 failed_builds=2, num_instances=4,
                 pci_stats=[{'count': 2}, {'count': 1}]))]
    assert weigher.weigh_objects(hosts, spec) == [
        weigher._weigh_object(w.obj, spec) for w in hosts]


def test_multiplier_overrides_are_found_per_host():
    plain = fakes.aggregate(metadata={'availability_zone': 'az1'})
    tuned = fakes.aggregate(metadata={'ram_weight_multiplier': '2.0'})
    hosts = [fakes.host('h1', aggregates=[plain]),
             fakes.host('h2', aggregates=[plain, tuned]),
             fakes.host('h3'), fakes.host('h4', aggregates=[tuned])]
    assert weighers._overrides_multipliers(hosts) == [
        False, True, False, True]


def test_reservations_apply_to_their_own_node_in_order():
    source = test_scheduling.Source([
        fakes.host('h1', free_ram_mb=8192), fakes.host('h2',
                                                       free_ram_mb=8192)])
    manager = host_manager.HostManager(source, clock=lambda: 100.0)
    ledger = reservations.Reservations(manager.now)
    first = ledger.reserve('uuid-h1', fakes.spec(memory_mb=1024))
    ledger.reserve('uuid-h1', fakes.spec(memory_mb=2048))
    ledger.reserve('uuid-h2', fakes.spec(memory_mb=512))
    summaries = {u: {'resources': {}} for u in ('uuid-h1', 'uuid-h2')}
    states = fakes.request_host_states(manager, ['uuid-h1', 'uuid-h2'],
                                       summaries, 100.0, ledger)
    assert [s.free_ram_mb for s in states] == [5120, 7680]
    ledger.release(first)
    ledger.release(first)
    states = fakes.request_host_states(manager, ['uuid-h1', 'uuid-h2'],
                                       summaries, 100.0, ledger)
    assert [s.free_ram_mb for s in states] == [6144, 7680]


def test_a_private_copy_shares_only_the_read_only_parts():
    zone = fakes.aggregate(metadata={'availability_zone': 'az1'})
    state = fakes.host('h1', aggregates=[zone],
                       numa_topology={'cells': [{'id': 0}]},
                       pci_stats=[{'count': 2}])
    mine = host_copy.private_copy(state)
    assert type(mine) is type(state) and mine == state
    assert mine.aggregates is state.aggregates
    assert mine.lock is not state.lock and mine.limits is not state.limits
    mine.pci_stats[0]['count'] = 1
    mine.free_ram_mb = 0
    assert state.pci_stats == [{'count': 2}]
    assert state.free_ram_mb == 32768
    # NOTE: the NUMA primitive is shared, read-only: consumption replaces
    # it (see the next test), never writes into it.
    assert mine.numa_topology is state.numa_topology


def test_numa_usage_applied_to_a_copy_leaves_the_cached_primitive():
    cell = {'id': 0, 'cpuset': [0, 1, 2, 3], 'pcpuset': [0, 1, 2, 3],
            'siblings': [[0, 1], [2, 3]], 'memory': 4096,
            'pinned_cpus': [], 'mempages': [
                {'size_kb': 4, 'total': 1048576, 'used': 0},
                {'size_kb': 2048, 'total': 64, 'used': 0}]}
    primitive = {'cells': [cell]}
    before = copy.deepcopy(primitive)
    loaded = topology.load_host(primitive)
    loaded.cells[0].pinned_cpus |= {0, 1}
    loaded.cells[0].mempages[1].used = 8
    loaded.cells[0].siblings[0].add(9)
    loaded.cells[0].cpu_usage = 2
    assert primitive == before


def test_roots_of_single_and_spanning_requests():
    summaries = {
        'cn1': {'root_provider_uuid': 'cn1', 'traits': []},
        'child': {'root_provider_uuid': 'cn2', 'traits': []},
        'pool': {'root_provider_uuid': 'pool',
                 'traits': ['MISC_SHARES_VIA_AGGREGATE']},
    }
    requests = [{'allocations': {'cn1': {}}},
                {'allocations': {'child': {}}},
                {'allocations': {'pool': {}}},
                {'allocations': {'cn1': {}, 'pool': {}}},
                {'allocations': {'cn1': {}, 'child': {}}},
                {'allocations': {'unknown': {}}}]
    assert answer_snapshot._roots(requests, summaries) == {
        'cn1': [requests[0], requests[3]], 'cn2': [requests[1]],
        'unknown': [requests[5]]}
