# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""NUMATopologyFilter and the NUMA consume step, table-driven.

Seeds: A8 (thread policies on osdev-01, through filter and consume), A12
and A24 (1 GiB pages on some cells only), A14/B4 (stale pinned CPUs give
no hosts), and the 'require' without SMT rule of §6.5.
"""

import pytest

from common.numa import constraints
from common.numa import topology
from services.scheduler import filters
from services.scheduler.filters import numa_topology_filter
from services.scheduler import numa_consume
from tests.unit.numa import fakes as numa_fakes
from tests.unit.scheduler import fakes

MACHINE_CPU = {'hw:numa_nodes': '1', 'hw:numa_cpus.0': '0-15',
               'hw:numa_mem.0': '64'}


def _spec(vcpus=16, memory_mb=64, extra_specs=None, image_properties=None):
    """A spec whose numa_topology is computed as the API would."""
    spec = fakes.spec(vcpus, memory_mb, extra_specs=extra_specs,
                      image_properties=image_properties)
    requested = constraints.get_constraints(spec.flavor, spec.image)
    spec.numa_topology = requested and requested.to_primitive()
    return spec


def _pinned(policy):
    specs = dict(MACHINE_CPU, **{'hw:cpu_policy': 'dedicated'})
    if policy:
        specs['hw:cpu_thread_policy'] = policy
    return specs


def _stale_osdev01():
    """A14: every CPU of every cell recorded as pinned."""
    host = numa_fakes.osdev01()
    for cell in host.cells:
        cell.pinned_cpus = set(cell.pcpuset)
    return host.to_primitive()


OSDEV01 = numa_fakes.osdev01().to_primitive()
NO_SMT = numa_fakes.no_smt_host().to_primitive()
GIB_ON_CELL0 = numa_fakes.hugepage_host(gib_pages_on=(0,)).to_primitive()
GIB_ON_CELL1 = numa_fakes.hugepage_host(gib_pages_on=(1,)).to_primitive()
NO_GIB = numa_fakes.hugepage_host(gib_pages_on=()).to_primitive()
ONE_GIB = {'hw:mem_page_size': '1048576'}


@pytest.mark.parametrize('host_numa, flavor, extra_specs, image, reason', [
    # NOTE: no NUMA request: every host passes, with or without topology.
    (None, (4, 1024), {}, {}, None),
    (OSDEV01, (4, 1024), {}, {}, None),
    (None, (4, 1024), {'hw:cpu_policy': 'shared'}, {}, None),
    # NOTE: a NUMA request needs a host topology.
    (None, (16, 64), MACHINE_CPU, {},
     'host1, host1 fails NUMA topology requirements. '
     'No host NUMA topology while the instance specified one.'),
    (None, (4, 1024), {}, {'hw_cpu_policy': 'dedicated'},
     'No host NUMA topology'),
    # NOTE: A8 on a fresh osdev-01: each policy fits.
    (OSDEV01, (16, 64), MACHINE_CPU, {}, None),
    (OSDEV01, (16, 64), _pinned(None), {}, None),
    (OSDEV01, (16, 64), _pinned('prefer'), {}, None),
    (OSDEV01, (16, 64), _pinned('isolate'), {}, None),
    (OSDEV01, (16, 64), _pinned('require'), {}, None),
    (OSDEV01, (4, 1024), {'hw:cpu_policy': 'dedicated'},
     {'hw_cpu_thread_policy': 'require'}, None),
    # NOTE: §6.5: 'require' needs SMT; prefer/isolate do not.
    (NO_SMT, (4, 1024), {'hw:cpu_policy': 'dedicated',
                         'hw:cpu_thread_policy': 'require'}, {},
     "does not support requested 'require' cpu thread policy"),
    (NO_SMT, (4, 1024), {'hw:cpu_policy': 'dedicated'},
     {'hw_cpu_thread_policy': 'require'},
     'Host does not support requested'),
    (NO_SMT, (4, 1024), {'hw:cpu_policy': 'dedicated',
                         'hw:cpu_thread_policy': 'isolate'}, {}, None),
    # NOTE: 16 pinned vCPUs on 8-CPU cells do not fit.
    (NO_SMT, (16, 64), _pinned('isolate'), {},
     'host1, host1 fails NUMA topology '
     'requirements. The instance does not fit on this host.'),
    # NOTE: A14/B4: stale pinned_cpus make a dedicated flavor fit nowhere.
    (_stale_osdev01(), (16, 64), _pinned(None), {},
     'The instance does not fit'),
    (_stale_osdev01(), (1, 64), {'hw:cpu_policy': 'dedicated'}, {},
     'The instance does not fit'),
    # NOTE: A24/B15: 1 GiB pages on one cell are enough; on none is not.
    (GIB_ON_CELL0, (1, 1024), ONE_GIB, {}, None),
    (GIB_ON_CELL1, (1, 1024), ONE_GIB, {}, None),
    (NO_GIB, (1, 1024), ONE_GIB, {},
     'The instance does not fit on this host.'),
    (NO_GIB, (1, 1024), {'hw:mem_page_size': 'any'},
     {'hw_mem_page_size': '1GB'}, 'does not fit'),
    (NO_GIB, (1, 1024), {'hw:mem_page_size': 'large'}, {}, None),
])
def test_host_passes(host_numa, flavor, extra_specs, image, reason):
    # NOTE: the table's cases were written against these overcommit
    # ratios; they are set here rather than assumed from the defaults.
    host = fakes.host('host1', numa_topology=host_numa,
                      cpu_allocation_ratio=16.0, ram_allocation_ratio=1.5)
    spec = _spec(flavor[0], flavor[1], extra_specs, image)
    flt = numa_topology_filter.NUMATopologyFilter()
    with filters.Rejections() as rejections:
        passed = flt.host_passes(host, spec)
    if reason is None:
        assert passed
        assert not rejections.by_host
        if spec.numa_topology is not None:
            assert host.limits['numa_topology'] == {
                'cpu_allocation_ratio': 16.0, 'ram_allocation_ratio': 1.5}
    else:
        assert not passed
        name, text = rejections.by_host[('host1', 'host1')]
        assert name == 'NUMATopologyFilter'
        assert reason in text
        assert 'numa_topology' not in host.limits


def test_flags():
    flt = numa_topology_filter.NUMATopologyFilter()
    assert flt.RUN_ON_REBUILD is True
    # NOTE: each instance of a request consumes CPUs and pages.
    assert flt.run_filter_once_per_request is False


def test_uses_the_host_allocation_ratios():
    """Floating vCPUs overcommit by the host's cpu_allocation_ratio."""
    host_numa = topology.HostTopology(cells=[numa_fakes.host_cell(
        0, range(4), 4096, cpu_usage=7)]).to_primitive()
    spec = _spec(4, 1024, {'hw:numa_nodes': '1'})
    flt = numa_topology_filter.NUMATopologyFilter()
    assert not flt.host_passes(
        fakes.host(numa_topology=host_numa, cpu_allocation_ratio=2.0), spec)
    assert flt.host_passes(
        fakes.host(numa_topology=host_numa, cpu_allocation_ratio=3.0), spec)


def test_a12_filter_keeps_hosts_with_a_gib_page_cell():
    """A12: hosts pass when at least one cell has free 1 GiB pages."""
    hosts = [fakes.host('e25', numa_topology=GIB_ON_CELL0),
             fakes.host('e26', numa_topology=GIB_ON_CELL1),
             fakes.host('m3', numa_topology=NO_GIB),
             fakes.host('e28', numa_topology=GIB_ON_CELL0)]
    spec = _spec(1, 1024, ONE_GIB)
    flt = numa_topology_filter.NUMATopologyFilter()
    with filters.Rejections() as rejections:
        passed = [h.host for h in flt.filter_all(hosts, spec)]
    assert passed == ['e25', 'e26', 'e28']
    assert list(rejections.by_host) == [('m3', 'm3')]


def test_a8_filter_and_consume_sequence():
    """A8 through the scheduler: consume after each selection."""
    host = fakes.host('osdev-01', numa_topology=OSDEV01)
    flt = numa_topology_filter.NUMATopologyFilter()
    before = None
    for policy in (None, 'prefer', 'isolate', 'require'):
        extra = _pinned(policy) if policy else MACHINE_CPU
        spec = _spec(16, 64, extra)
        before = dict(spec.numa_topology)
        assert flt.host_passes(host, spec)
        host.consume_from_request(spec, numa_fit=numa_consume.numa_fit)
        # NOTE: neither the filter nor the consume touches the request.
        assert spec.numa_topology == before
    cells = topology.load_host(host).cells
    assert [len(c.pinned_cpus) for c in cells] == [32, 32]
    for policy in ('require', 'isolate'):
        with filters.Rejections() as rejections:
            assert not flt.host_passes(host, _spec(16, 64, _pinned(policy)))
        assert 'The instance does not fit on this host.' in (
            rejections.by_host[('osdev-01', 'osdev-01')][1])


def test_numa_fit_without_numa_request_or_room():
    host = fakes.host(numa_topology=NO_SMT)
    assert numa_consume.numa_fit(host, _spec(4, 1024)) is None
    assert numa_consume.numa_fit(fakes.host(),
                                 _spec(16, 64, MACHINE_CPU)) is None
    # NOTE: no longer fits: the host state is left as it was.
    assert numa_consume.numa_fit(host, _spec(16, 64, _pinned(None))) is None
    host.consume_from_request(_spec(16, 64, _pinned(None)),
                              numa_fit=numa_consume.numa_fit)
    assert host.numa_topology == NO_SMT


def test_numa_fit_returns_the_used_host_primitive():
    host = fakes.host(numa_topology=NO_SMT)
    result = numa_consume.numa_fit(host, _spec(
        4, 1024, {'hw:cpu_policy': 'dedicated'}))
    assert result['cells'][0]['pinned_cpus'] == [0, 1, 2, 3]
    assert result['cells'][0]['memory_usage'] == 1024
    assert host.numa_topology == NO_SMT
