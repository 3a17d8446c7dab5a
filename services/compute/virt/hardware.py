# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""From a host's NUMA layout and the CPU set options to what it reports.

Both drivers describe their hardware as :class:`CellLayout` objects (the
fake one from ``[fake_driver]``, the local one from sysfs); this module
applies ``cpu_shared_set`` / ``cpu_dedicated_set`` (or the legacy
``vcpu_pin_set``) and builds the host NUMA topology and CPU counts, so
the two drivers cannot disagree on what the options mean.
"""

import dataclasses

import os_traits

from common import exception
from common.numa import cpulist
from common.numa import topology

SMALL_PAGE_KB = 4
_STANDARD_TRAITS = frozenset(os_traits.get_traits())


@dataclasses.dataclass
class CellLayout(object):
    """One NUMA node's hardware.

    :ivar cpus: online CPU ids of the node.
    :ivar siblings: list of sets of thread ids, one per core.
    :ivar hugepages: {page size KiB: page count} of huge pages.
    """

    id: int
    cpus: set
    siblings: list
    memory_mb: int
    hugepages: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class CpuSets(object):
    """Which host CPUs serve unpinned and pinned guests.

    :ivar legacy: no ``cpu_*_set`` option: pinned and floating guests
        share the same CPUs and no PCPU inventory is reported.
    """

    shared: set
    dedicated: set
    legacy: bool

    @property
    def vcpus(self):
        """The VCPU inventory total."""
        return len(self.shared)

    @property
    def pcpus(self):
        """The PCPU inventory total (0 in the legacy layout)."""
        return 0 if self.legacy else len(self.dedicated)


def _parse(option, value, online):
    try:
        cpus = cpulist.parse_cpu_spec(value)
    except ValueError as exc:
        raise exception.ConfigurationError(
            reason='[compute] %s = %s: %s' % (option, value, exc))
    offline = cpus - online
    if offline:
        raise exception.ConfigurationError(
            reason='[compute] %s = %s names CPUs this host does not have '
                   'online: %s' % (option, value,
                                   cpulist.format_cpu_spec(offline)))
    return cpus


def cpu_sets(conf, online):
    """The :class:`CpuSets` the ``[compute]`` options give on this host.

    :param online: the set of online CPU ids.
    :raises common.exception.ConfigurationError: a set names offline CPUs,
        the two sets overlap, or a list does not parse.
    """
    dedicated_spec = conf.compute.cpu_dedicated_set
    shared_spec = conf.compute.cpu_shared_set
    if dedicated_spec or shared_spec:
        dedicated = (_parse('cpu_dedicated_set', dedicated_spec, online)
                     if dedicated_spec else set())
        shared = (_parse('cpu_shared_set', shared_spec, online)
                  if shared_spec else set(online) - dedicated)
        overlap = shared & dedicated
        if overlap:
            raise exception.ConfigurationError(
                reason='[compute] cpu_shared_set and cpu_dedicated_set '
                       'overlap: %s' % cpulist.format_cpu_spec(overlap))
        return CpuSets(shared=shared, dedicated=dedicated, legacy=False)
    pin_spec = conf.compute.vcpu_pin_set
    usable = (_parse('vcpu_pin_set', pin_spec, online) if pin_spec
              else set(online))
    return CpuSets(shared=set(usable), dedicated=set(usable), legacy=True)


def _pages(cell):
    huge_kb = sum(size * count for size, count in cell.hugepages.items())
    small = max(cell.memory_mb * 1024 - huge_kb, 0) // SMALL_PAGE_KB
    pages = [topology.PageTopology(size_kb=SMALL_PAGE_KB, total=small)]
    pages.extend(topology.PageTopology(size_kb=size, total=count)
                 for size, count in sorted(cell.hugepages.items()))
    return pages


def host_topology(cells, sets):
    """The host NUMA topology (no usage) of ``cells`` under ``sets``."""
    usable = sets.shared | sets.dedicated
    result = []
    for cell in cells:
        siblings = [set(s) & usable for s in cell.siblings]
        result.append(topology.HostCell(
            id=cell.id, cpuset=cell.cpus & sets.shared,
            pcpuset=cell.cpus & sets.dedicated,
            siblings=[s for s in siblings if s], memory=cell.memory_mb,
            mempages=_pages(cell)))
    return topology.HostTopology(cells=result)


def has_smt(cells):
    """True when some core has more than one thread."""
    return any(len(s) > 1 for cell in cells for s in cell.siblings)


def cpu_traits(cells, arch):
    """Traits every driver derives from the CPU layout."""
    traits = {'COMPUTE_NODE'}
    if has_smt(cells):
        traits.add('HW_CPU_HYPERTHREADING')
    arch_trait = 'COMPUTE_ARCH_%s' % (arch or '').upper()
    # NOTE: placement refuses standard traits it does not know.
    if arch_trait in _STANDARD_TRAITS:
        traits.add(arch_trait)
    return traits
