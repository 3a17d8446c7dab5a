# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""fit_instance_to_host and usage accounting on doc/behaviours.md's hosts.

The CPU thread-policy experiments of doc/behaviours.md A8 run on the
osdev-01 fixture in the scenario's order, each server staying on the
host; A7 (NUMA without pinning) and A24/B15 (a cell without the requested
page size) follow, then overcommit, pages, PCI locality and the
accounting itself.
"""

import json
import logging

import pytest

from common.numa import constraints
from common.numa import cpulist
from common.numa import exception
from common.numa import fit
from common.numa import topology
from tests.unit.numa import fakes

NODE0 = set(fakes.OSDEV01_NODES[0][0])
NODE1 = set(fakes.OSDEV01_NODES[1][0])
LIMITS = topology.Limits(cpu_allocation_ratio=16.0, ram_allocation_ratio=1.5)


def _request(flavor, image=None):
    return constraints.get_constraints(flavor, image)


def _place(host, flavor, limits=LIMITS):
    """Fit ``flavor`` on ``host``: (fitted topology, new host) or None."""
    fitted = fit.fit_instance_to_host(host, _request(flavor), limits)
    if fitted is None:
        return None
    return fitted, fit.apply_usage(host, fitted)


def _socket_core(cpu):
    """The seed's (socket, core id) of an osdev-01 CPU."""
    processor = cpu % 36
    return processor // 18, fakes.OSDEV01_CORE_IDS[processor % 18]


def _pcpus(fitted):
    return set(fitted.cells[0].cpu_pinning.values())


def _whole_pairs(cpus):
    """True when ``cpus`` is made of complete sibling pairs (i, i+36)."""
    return all((cpu + 36 if cpu < 36 else cpu - 36) in cpus for cpu in cpus)


@pytest.fixture
def osdev01():
    return fakes.osdev01()


def test_fixture_is_the_seed_host(osdev01):
    """§6.13: 72 CPUs, 2 cells, 2 threads per core, sibling i+36."""
    cells = osdev01.cells
    assert cpulist.format_cpu_spec(cells[0].cpuset) == '0-17,36-53'
    assert cpulist.format_cpu_spec(cells[1].cpuset) == '18-35,54-71'
    assert [c.memory for c in cells] == [195236, 196608]
    assert osdev01.has_threads
    assert {3, 39} in cells[0].siblings
    assert len({_socket_core(c) for c in range(72)}) == 36


def test_a7_numa_without_pinning(osdev01):
    """A7 step 3: one guest node floats over host node 0, unpinned."""
    flavor = fakes.flavor(2, 64, **{'hw:numa_nodes': '1',
                                    'hw:numa_cpus.0': '0,1',
                                    'hw:numa_mem.0': '64'})
    fitted, host = _place(osdev01, flavor)
    cell = fitted.cells[0]
    assert (cell.id, sorted(cell.cpuset), cell.memory) == (0, [0, 1], 64)
    assert cell.cpu_pinning is None
    # NOTE: the guest may float over the whole host cell: 0-17,36-53.
    assert cpulist.format_cpu_spec(
        host.cell(cell.id).cpuset) == '0-17,36-53'
    assert host.cells[0].pinned_cpus == set()
    assert (host.cells[0].cpu_usage, host.cells[0].memory_usage) == (2, 64)


def test_a8_thread_policy_experiments(osdev01):
    """A8: default, prefer, isolate, require on osdev-01, in that order."""
    host = osdev01

    # a. shared: node 0, not pinned, nothing consumed as pinned.
    fitted, host = _place(host, fakes.machine_cpu())
    assert fitted.cells[0].id == 0
    assert fitted.cells[0].cpu_pinning is None
    assert host.cells[0].pinned_cpus == set()

    # b. avoid: rejected before scheduling (B11).
    with pytest.raises(exception.ObsoleteCPUThreadPolicy):
        _request(fakes.machine_cpu(**{'hw:cpu_policy': 'dedicated',
                                      'hw:cpu_thread_policy': 'avoid'}))

    # c. prefer: node 0, 16 pCPUs forming 8 complete sibling pairs.
    fitted, host = _place(host, fakes.machine_cpu(**{
        'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'prefer'}))
    prefer = _pcpus(fitted)
    pinning = fitted.cells[0].cpu_pinning
    assert fitted.cells[0].id == 0 and prefer <= NODE0
    assert len(prefer) == 16 and _whole_pairs(prefer)
    assert len({_socket_core(c) for c in prefer}) == 8
    assert sorted(pinning) == list(range(16))
    # NOTE: consecutive vCPUs share a core (the seed's vCPU0/vCPU1).
    for vcpu in range(0, 16, 2):
        assert (_socket_core(pinning[vcpu])
                == _socket_core(pinning[vcpu + 1]))
    assert fitted.cells[0].cpuset_reserved == set()

    # d. isolate: node 0 has 10 free cores, so node 1, 16 distinct cores.
    fitted, host = _place(host, fakes.machine_cpu(**{
        'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate'}))
    isolate = _pcpus(fitted)
    reserved = fitted.cells[0].cpuset_reserved
    assert fitted.cells[0].id == 1 and isolate <= NODE1
    assert len({_socket_core(c) for c in isolate}) == 16
    assert {_socket_core(c)[0] for c in isolate} == {1}
    assert reserved == {c + 36 if c < 36 else c - 36 for c in isolate}
    assert host.cells[1].pinned_cpus == isolate | reserved

    # e. require: node 0 still has 10 free cores: 8 whole pairs there.
    fitted, host = _place(host, fakes.machine_cpu(**{
        'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'require'}))
    require = _pcpus(fitted)
    assert fitted.cells[0].id == 0 and require <= NODE0
    assert len(require) == 16 and _whole_pairs(require)
    assert not require & prefer

    # After c-e: cell 0 pins 32 of 36, cell 1 16 plus 16 idle siblings.
    assert host.cells[0].pinned_cpus == prefer | require
    assert len(host.cells[0].pinned_cpus) == 32
    assert len(host.cells[1].pinned_cpus) == 32

    # A further require or isolate 16-vCPU request fits nowhere.
    for policy in ('require', 'isolate'):
        assert _place(host, fakes.machine_cpu(**{
            'hw:cpu_policy': 'dedicated',
            'hw:cpu_thread_policy': policy})) is None

    # Deleting the pinned guests frees their pCPUs (and the siblings).
    for cpus in (prefer, isolate, require):
        cell_id = 0 if cpus <= NODE0 else 1
        placed = topology.InstanceTopology(cells=[topology.InstanceCell(
            id=cell_id, pcpuset=set(range(16)), memory=64,
            cpu_pinning=dict(zip(range(16), sorted(cpus))),
            cpuset_reserved=reserved if cpus is isolate else set())])
        host = fit.release_usage(host, placed)
    assert [c.pinned_cpus for c in host.cells] == [set(), set()]


def test_isolate_spills_only_when_node0_is_short(osdev01):
    fitted, _host = _place(osdev01, fakes.machine_cpu(**{
        'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate'}))
    assert fitted.cells[0].id == 0


def test_require_fails_without_smt():
    """A8: ``require`` on a host without siblings never fits."""
    host = fakes.no_smt_host()
    flavor = fakes.flavor(4, 64, **{'hw:cpu_policy': 'dedicated',
                                    'hw:cpu_thread_policy': 'require'})
    assert fit.fit_instance_to_host(host, _request(flavor)) is None
    # NOTE: prefer and isolate fall back to one vCPU per core.
    for policy in ('prefer', 'isolate'):
        flavor.extra_specs['hw:cpu_thread_policy'] = policy
        fitted = fit.fit_instance_to_host(host, _request(flavor))
        assert sorted(fitted.cells[0].cpu_pinning.values()) == [0, 1, 2, 3]
        assert fitted.cells[0].cpuset_reserved == set()


def test_prefer_tail_uses_a_part_used_core():
    """An odd tail goes to a half-used core rather than breaking one."""
    host = topology.HostTopology(cells=[fakes.host_cell(
        0, range(8), 4096, siblings=[(0, 4), (1, 5), (2, 6), (3, 7)],
        pinned_cpus={0})])
    fitted = fit.fit_instance_to_host(host, _request(fakes.flavor(
        3, 64, **{'hw:cpu_policy': 'dedicated'})))
    assert fitted.cells[0].cpu_pinning == {0: 1, 1: 5, 2: 4}


def test_dedicated_cpus_are_not_overcommitted():
    host = topology.HostTopology(cells=[fakes.host_cell(0, range(4), 4096)])
    flavor = fakes.flavor(4, 64, **{'hw:cpu_policy': 'dedicated'})
    fitted, host = _place(host, flavor)
    assert fit.fit_instance_to_host(host, _request(flavor), LIMITS) is None
    with pytest.raises(exception.CPUPinningInvalid):
        fit.apply_usage(host, fitted)


@pytest.mark.parametrize('usage, ratio, fits', [
    (0, 1.0, True), (1, 1.0, False), (60, 16.0, True), (61, 16.0, False)])
def test_shared_cpus_overcommit_by_ratio(usage, ratio, fits):
    host = topology.HostTopology(cells=[fakes.host_cell(
        0, range(4), 4096, cpu_usage=usage)])
    limits = topology.Limits(cpu_allocation_ratio=ratio)
    request = _request(fakes.flavor(4, 64, **{'hw:numa_nodes': '1'}))
    assert (fit.fit_instance_to_host(host, request, limits) is not None
            ) is fits


def test_shared_instance_never_overcommits_against_itself():
    host = topology.HostTopology(cells=[fakes.host_cell(0, range(4), 4096)])
    request = _request(fakes.flavor(5, 64, **{'hw:numa_nodes': '1'}))
    assert fit.fit_instance_to_host(host, request, LIMITS) is None


@pytest.mark.parametrize('usage, ratio, fits', [
    (0, 1.0, True), (3100, 1.0, False), (5000, 1.5, True),
    (5200, 1.5, False)])
def test_small_page_memory_overcommit_by_ratio(usage, ratio, fits):
    host = topology.HostTopology(cells=[fakes.host_cell(
        0, range(4), 4096, memory_usage=usage)])
    limits = topology.Limits(ram_allocation_ratio=ratio)
    request = _request(fakes.flavor(1, 1024, **{'hw:numa_nodes': '1'}))
    assert (fit.fit_instance_to_host(host, request, limits) is not None
            ) is fits


def test_a24_cell_without_requested_pagesize(caplog):
    """A24/B15: cell 0 lacks 1 GiB pages, cell 1 has them: cell 1 wins."""
    caplog.set_level(logging.DEBUG, logger='common.numa.fit')
    host = fakes.hugepage_host(gib_pages_on=(1,))
    request = _request(fakes.flavor(1, 1024, **{
        'hw:mem_page_size': '1048576'}))
    fitted = fit.fit_instance_to_host(host, request, LIMITS)
    assert (fitted.cells[0].id, fitted.cells[0].pagesize) == (1, 1048576)
    assert ('Host does not support requested memory pagesize. Requested: '
            '1048576 kB') in caplog.text
    assert ('Selected memory pagesize: 1048576 kB. Requested memory '
            'pagesize: 1048576 (small = -1, large = -2, any = -3)'
            ) in caplog.text
    host = fit.apply_usage(host, fitted)
    assert host.cells[1].pages(1048576).used == 1
    assert host.cells[0].pages(1048576) is None


def test_hugepages_are_not_overcommitted():
    host = fakes.hugepage_host(gib_pages_on=(0, 1), count=2)
    request = _request(fakes.flavor(1, 2048, **{'hw:mem_page_size': '1GB'}))
    placed = []
    for _attempt in range(2):
        fitted = fit.fit_instance_to_host(host, request, LIMITS)
        host = fit.apply_usage(host, fitted)
        placed.append(fitted.cells[0].id)
    assert placed == [0, 1]
    assert fit.fit_instance_to_host(host, request, LIMITS) is None
    # NOTE: reserved pages are not free either.
    host = fakes.hugepage_host(gib_pages_on=(0,), count=2)
    host.cells[0].pages(1048576).reserved = 1
    assert fit.fit_instance_to_host(host, request, LIMITS) is None


@pytest.mark.parametrize('value, memory, expected', [
    ('large', 2048, 1048576),   # largest size that holds the memory
    ('large', 1025, None),      # not a whole number of 2 MiB pages
    ('large', 1026, 2048),
    ('large', 8192, None),      # more than the free huge pages
    ('any', 1024 + 2, 2048),
    ('any', 1025, 4),           # only small pages hold 1025 MiB
    ('small', 2048, 4),
    ('2MB', 2048, 2048),
])
def test_pagesize_selection(value, memory, expected):
    host = topology.HostTopology(cells=[fakes.host_cell(
        0, range(4), 8192, pages={2048: 1024, 1048576: 4})])
    request = _request(fakes.flavor(1, memory, **{
        'hw:mem_page_size': value}))
    fitted = fit.fit_instance_to_host(host, request, LIMITS)
    assert (fitted and fitted.cells[0].pagesize) == expected


def test_multi_node_split_lands_on_distinct_host_cells(osdev01):
    request = _request(fakes.flavor(4, 1024, **{
        'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0', 'hw:numa_cpus.1': '1-3',
        'hw:numa_mem.0': '256', 'hw:numa_mem.1': '768',
        'hw:cpu_policy': 'dedicated'}))
    fitted = fit.fit_instance_to_host(osdev01, request, LIMITS)
    assert [c.id for c in fitted.cells] == [0, 1]
    assert set(fitted.cells[0].cpu_pinning.values()) <= NODE0
    assert set(fitted.cells[1].cpu_pinning.values()) <= NODE1
    assert sorted(fitted.cells[1].cpu_pinning) == [1, 2, 3]


def test_guest_node_0_may_land_on_host_node_1():
    """§6.1: the guest index is not a host node; permutations are tried."""
    host = topology.HostTopology(cells=[
        fakes.host_cell(0, range(4), 1024), fakes.host_cell(1, range(4, 12),
                                                            4096)])
    request = _request(fakes.flavor(8, 2048, **{
        'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-5',
        'hw:numa_cpus.1': '6,7', 'hw:numa_mem.0': '1536',
        'hw:numa_mem.1': '512'}))
    fitted = fit.fit_instance_to_host(host, request)
    assert [c.id for c in fitted.cells] == [1, 0]
    assert sorted(fitted.cells[0].cpuset) == [0, 1, 2, 3, 4, 5]


def test_more_guest_nodes_than_host_nodes(osdev01):
    request = _request(fakes.flavor(4, 1024, **{'hw:numa_nodes': '4'}))
    assert fit.fit_instance_to_host(osdev01, request) is None
    assert fit.fit_instance_to_host(None, request) is None


@pytest.mark.parametrize('numa_node, fits', [
    (1, True), (None, True), (0, False)])
def test_pci_devices_must_be_local(numa_node, fits):
    host = fakes.hugepage_host()
    # NOTE: cell 0 is too small, so the guest can only use cell 1.
    host.cells[0].memory = 256
    request = _request(fakes.flavor(1, 1024, **{'hw:numa_nodes': '1'}))
    pci_stats = [{'vendor_id': '8086', 'product_id': '154d', 'count': 2,
                  'numa_node': numa_node}]
    pci_requests = [{'count': 1, 'spec': [{'vendor_id': '8086'}]}]
    fitted = fit.fit_instance_to_host(host, request, LIMITS,
                                      pci_requests, pci_stats)
    assert (fitted is not None) is fits


def test_apply_then_release_restores_the_host(osdev01):
    request = _request(fakes.machine_cpu(**{
        'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate',
        'hw:mem_page_size': 'small'}))
    fitted = fit.fit_instance_to_host(osdev01, request, LIMITS)
    used = fit.apply_usage(osdev01, fitted)
    assert used.cells[0].pages(4).used == 64 * 256
    assert used.cells[0].memory_usage == 64
    assert fit.release_usage(used, fitted) == osdev01
    with pytest.raises(exception.CPUUnpinningInvalid):
        fit.release_usage(osdev01, fitted)


def test_fitting_never_mutates_its_inputs(osdev01):
    before = json.dumps(osdev01.to_primitive())
    request = _request(fakes.machine_cpu(**{'hw:cpu_policy': 'dedicated'}))
    request_before = request.to_primitive()
    fitted = fit.fit_instance_to_host(osdev01.to_primitive(),
                                      request.to_primitive(), LIMITS)
    fit.apply_usage(osdev01, fitted)
    assert json.dumps(osdev01.to_primitive()) == before
    assert request.to_primitive() == request_before


def test_fitted_topology_survives_json(osdev01):
    request = _request(fakes.machine_cpu(**{
        'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate'}))
    fitted = fit.fit_instance_to_host(osdev01, request, LIMITS)
    wire = json.loads(json.dumps(fitted.to_primitive()))
    assert topology.load_instance(wire) == fitted
    assert topology.load_host(json.dumps(osdev01.to_primitive())) == osdev01
