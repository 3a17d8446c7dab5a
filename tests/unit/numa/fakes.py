# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Host NUMA topologies for tests, from doc/behaviours.md A8's osdev-01.

    osdev01()                     # 2 nodes x 18 cores x 2
    host_cell(0, range(4), 4096, siblings=[(0, 2), (1, 3)])
"""

from common.numa import topology
from common.objects import flavor as flavor_obj

# NOTE: numactl's view of osdev-01: node 0 has CPUs 0-17 and 36-53, node
# 1 has 18-35 and 54-71; the sibling of CPU i is i + 36.
OSDEV01_NODES = {0: (list(range(0, 18)) + list(range(36, 54)), 195236),
                 1: (list(range(18, 36)) + list(range(54, 72)), 196608)}
# NOTE: /proc/cpuinfo core ids of processors 0-17 (and 18-35) on each
# socket: not contiguous, which is why the seed lists cores, not CPUs.
OSDEV01_CORE_IDS = [0, 1, 2, 3, 4, 8, 9, 10, 11, 16, 17, 18, 19, 20, 24,
                    25, 26, 27]


def host_cell(cell_id, cpus, memory, siblings=None, pcpus=None,
              pages=None, **usage):
    """A HostCell; 4 KiB pages cover its memory unless ``pages`` says.

    :param pcpus: dedicated CPUs; the legacy layout (== ``cpus``) if None.
    :param pages: {size_kb: total} for the huge page sizes it has.
    """
    mempages = [topology.PageTopology(size_kb=4, total=memory * 256)]
    for size_kb, total in sorted((pages or {}).items()):
        mempages.append(topology.PageTopology(size_kb=size_kb, total=total))
    return topology.HostCell(
        id=cell_id, cpuset=set(cpus),
        pcpuset=set(cpus if pcpus is None else pcpus),
        siblings=[set(s) for s in siblings or []], memory=memory,
        mempages=mempages, **usage)


def osdev01():
    """The experiment host of doc/behaviours.md A8 (72 threads, 2 NUMA nodes).

    ``vcpu_pin_set`` is unset there, so every CPU is both shared and
    dedicated (the legacy layout the Ocata experiments ran on).
    """
    cells = []
    for node, (cpus, memory) in sorted(OSDEV01_NODES.items()):
        siblings = [{cpu, cpu + 36} for cpu in cpus if cpu < 36]
        cells.append(host_cell(node, cpus, memory, siblings=siblings))
    return topology.HostTopology(cells=cells)


def no_smt_host(cpus_per_node=8, memory=16384):
    """Two nodes without hyperthreading (no sibling pairs)."""
    return topology.HostTopology(cells=[
        host_cell(node, range(node * cpus_per_node,
                              (node + 1) * cpus_per_node), memory)
        for node in (0, 1)])


def hugepage_host(gib_pages_on=(0,), count=4):
    """Two 4-CPU nodes of 8 GiB; 1 GiB pages only on ``gib_pages_on``."""
    return topology.HostTopology(cells=[
        host_cell(node, range(node * 4, node * 4 + 4), 8192,
                  pages={2048: 512, 1048576: count}
                  if node in gib_pages_on else {2048: 512})
        for node in (0, 1)])


def flavor(vcpus=2, memory_mb=64, **extra_specs):
    """A Flavor: ``flavor(16, 64, **{'hw:cpu_policy': 'dedicated'})``."""
    return flavor_obj.Flavor(name='f', flavorid='f', vcpus=vcpus,
                             memory_mb=memory_mb, extra_specs=extra_specs)


def machine_cpu(**extra_specs):
    """doc/behaviours.md A8's ``machine.cpu`` flavor: 16 vCPUs, one node."""
    specs = {'hw:numa_nodes': '1', 'hw:numa_cpus.0': '0-15',
             'hw:numa_mem.0': '64'}
    specs.update(extra_specs)
    return flavor(16, 64, **specs)
