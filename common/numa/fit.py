# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Fit an instance NUMA topology onto a host, and account for it.

:func:`fit_instance_to_host` is what NUMATopologyFilter and the compute
claim both call; :func:`apply_usage` and :func:`release_usage` move the
host's usage (pinned CPUs, memory, pages) when an instance is placed or
removed, in the scheduler's host-state cache and in the resource tracker.
"""

import itertools
import logging

from common.numa import exception
from common.numa import pinning
from common.numa import topology

LOG = logging.getLogger(__name__)


def fit_instance_to_host(host_topology, instance_topology, limits=None,
                         pci_requests=None, pci_stats=None):
    """The instance topology as placed on the host, or None if it won't fit.

    Every ordering of host cells is tried in turn and the first that fits
    wins: guest node 0 may land on host node 1 (first fit, as Nova does:
    no packing or spreading across nodes).

    :param host_topology: a HostTopology, its primitive, or a holder.
    :param instance_topology: an InstanceTopology, its primitive, or a spec.
    :param limits: a :class:`~common.numa.topology.Limits` or its dict;
        without it only sizes are checked, not usage (no overcommit).
    :param pci_requests: list of PCI request dicts; the devices must sit
        on the chosen cells (or have no NUMA affinity).
    :param pci_stats: list of PCI pool dicts, or an object with a
        ``support_requests(requests, cell_ids)`` method.
    :returns: a new InstanceTopology whose cell ids are host cell ids, with
        ``cpu_pinning``, ``cpuset_reserved`` and the chosen ``pagesize``.
    """
    host = topology.load_host(host_topology)
    instance = topology.load_instance(instance_topology)
    limits = topology.load_limits(limits)
    if host is None or instance is None:
        LOG.debug('Require both a host and instance NUMA topology to fit '
                  'instance on host.')
        return None
    if len(host.cells) < len(instance.cells):
        LOG.debug('There are not enough NUMA nodes on the system to schedule '
                  'the instance correctly. Required: %(required)s, actual: '
                  '%(actual)s', {'required': len(instance.cells),
                                 'actual': len(host.cells)})
        return None
    # NOTE: permutations, not combinations: instance cells differ in size,
    # so which host cell takes which guest cell matters. Hosts have at
    # most a handful of cells, so the factorial stays small (8 cells and a
    # 2-cell guest: 56 orderings, most failing on their first cell).
    for host_cells in itertools.permutations(host.cells, len(instance.cells)):
        fitted = []
        for host_cell, instance_cell in zip(host_cells, instance.cells):
            # NOTE: isolated emulator threads get their pCPU on the host
            # node of guest node 0, so where the overhead runs is
            # predictable (as Nova places it).
            cell = fit_cell(host_cell, instance_cell, limits,
                            emulator=(instance.emulator_threads_isolated
                                      and not fitted))
            if cell is None:
                break
            fitted.append(cell)
        else:
            # NOTE: PCI locality is checked last: it needs the complete
            # set of chosen cells, and an ordering whose cells fit but
            # whose devices sit elsewhere may be followed by one that works.
            cell_ids = [cell.id for cell in fitted]
            if pci_requests and not pci_fits(pci_requests, pci_stats,
                                             cell_ids):
                LOG.debug('PCI devices requested are not local to host '
                          'cells %s', cell_ids)
                continue
            result = instance.copy()
            result.cells = fitted
            return result
    return None


def fit_cell(host_cell, instance_cell, limits=None, emulator=False):
    """One instance cell placed on one host cell, or None.

    :param emulator: also hold one free dedicated pCPU of the host cell
        for the guest's emulator threads (``emulator_pcpus``).
    :returns: a copy of ``instance_cell`` with the host cell id, the
        selected page size and, for dedicated vCPUs, the pinning.
    """
    LOG.debug('Attempting to fit instance cell %s on host_cell %s',
              instance_cell, host_cell)
    fitted = instance_cell.copy()
    fitted.id = host_cell.id
    # NOTE: huge pages are never overcommitted, so a page-size request is
    # checked against free pages instead of the (overcommittable) cell
    # memory; the two checks are exclusive, as in Nova.
    if instance_cell.pagesize:
        fitted.pagesize = select_pagesize(host_cell, instance_cell)
        if fitted.pagesize is None:
            return None
    elif not _memory_fits(host_cell, instance_cell, limits):
        return None
    if instance_cell.cpuset and not _shared_cpus_fit(host_cell,
                                                     instance_cell, limits):
        return None
    if instance_cell.pcpuset:
        layout = pinning.pin(host_cell, instance_cell.pcpuset,
                             instance_cell.cpu_thread_policy)
        if layout is None:
            LOG.debug('Host cell %(cell)s has %(free)d free dedicated CPUs, '
                      'not enough for %(count)d vCPUs with thread policy '
                      '%(policy)s',
                      {'cell': host_cell.id,
                       'free': len(host_cell.free_pcpus),
                       'count': len(instance_cell.pcpuset),
                       'policy': instance_cell.cpu_thread_policy or 'prefer'})
            return None
        fitted.cpu_pinning, fitted.cpuset_reserved = layout
    if emulator and not _hold_emulator_pcpu(host_cell, fitted):
        return None
    return fitted


def _hold_emulator_pcpu(host_cell, fitted):
    """Give ``fitted`` the lowest free pCPU its vCPUs left, if any.

    NOTE: the pCPU is held like a pinned one (``held_pcpus``), so usage
    accounting pins it and no other guest is placed on it; placement was
    asked for one more PCPU to match.
    """
    spare = host_cell.free_pcpus - fitted.held_pcpus
    if not spare:
        LOG.debug('Host cell %s has no free dedicated CPU left for the '
                  'isolated emulator threads', host_cell.id)
        return False
    fitted.emulator_pcpus = {min(spare)}
    return True


def _memory_fits(host_cell, instance_cell, limits):
    # NOTE: without limits there is no ratio to overcommit by, so only
    # the guest cell's size against the host cell's counts, not usage.
    if limits is None:
        usable, needed = host_cell.memory, instance_cell.memory
    else:
        usable = host_cell.memory * limits.ram_allocation_ratio
        needed = host_cell.memory_usage + instance_cell.memory
    if needed > usable:
        LOG.debug('Not enough host cell memory to fit instance cell: '
                  '%(needed)d MB needed, %(usable)d MB usable',
                  {'needed': needed, 'usable': usable})
        return False
    return True


def _shared_cpus_fit(host_cell, instance_cell, limits):
    # NOTE: in the legacy layout (cpuset == pcpuset) floating vCPUs should
    # stay off CPUs that pinned guests own; with separate shared and
    # dedicated sets the subtraction changes nothing.
    available = len(host_cell.cpuset - host_cell.pinned_cpus)
    wanted = len(instance_cell.cpuset)
    # NOTE: an instance may overcommit against other instances, never
    # against itself: more vCPUs than CPUs would make it fight itself.
    if wanted > available:
        LOG.debug('Host cell has %(available)d usable shared CPUs, fewer '
                  'than the %(wanted)d vCPUs of the instance cell',
                  {'available': available, 'wanted': wanted})
        return False
    if limits is not None:
        capacity = available * limits.cpu_allocation_ratio
        if host_cell.cpu_usage + wanted > capacity:
            LOG.debug('Host cell CPU usage %(usage)d + %(wanted)d exceeds '
                      '%(capacity)s (cpu_allocation_ratio %(ratio)s)',
                      {'usage': host_cell.cpu_usage, 'wanted': wanted,
                       'capacity': capacity,
                       'ratio': limits.cpu_allocation_ratio})
            return False
    return True


def _pagesize_candidates(requested, sizes):
    if requested == topology.SMALL:
        return sizes[:1]
    if requested == topology.LARGE:
        return sorted(sizes[1:], reverse=True)
    if requested == topology.ANY:
        return sorted(sizes, reverse=True)
    return [requested] if requested in sizes else []


def select_pagesize(host_cell, instance_cell):
    """The page size (KiB) the instance cell gets on ``host_cell``, or None.

    ``small`` is the smallest size the host has, ``large`` the largest
    other size that fits, ``any`` the largest that fits; an explicit size
    must exist on the cell. The cell's memory must be a whole number of
    free pages: huge pages are never overcommitted.
    """
    requested = instance_cell.pagesize
    sizes = sorted(pages.size_kb for pages in host_cell.mempages)
    candidates = _pagesize_candidates(requested, sizes)
    if not candidates:
        LOG.debug('Host does not support requested memory pagesize. '
                  'Requested: %d kB', requested)
        return None
    memory_kb = instance_cell.memory * 1024
    for size in candidates:
        pages = host_cell.pages(size)
        if memory_kb % size == 0 and memory_kb // size <= pages.free:
            LOG.debug('Selected memory pagesize: %(selected)s kB. Requested '
                      'memory pagesize: %(requested)s (small = -1, large = '
                      '-2, any = -3)',
                      {'selected': size, 'requested': requested})
            return size
    LOG.debug('Not enough available memory to schedule instance with '
              'pagesize %(requested)s: %(memory)d MB needed',
              {'requested': requested, 'memory': instance_cell.memory})
    return None


def _field(item, name, default=None):
    if isinstance(item, dict):
        return item.get(name, default)
    return getattr(item, name, default)


def _pool_matches(pool, specs):
    tags = pool.get('tags') or {}
    for spec in specs:
        if all(str(pool.get(key, tags.get(key))) == str(value)
               for key, value in spec.items()):
            return True
    return False


def pci_fits(pci_requests, pci_stats, cell_ids):
    """True when the PCI requests can be met by devices local to the cells.

    Devices with no NUMA affinity (``numa_node`` None) fit any cell, as in
    Nova's legacy PCI NUMA policy.

    :param pci_stats: list of pool dicts (``count``, ``numa_node``, match
        keys, ``tags``), or an object with ``support_requests``.
    """
    if hasattr(pci_stats, 'support_requests'):
        return pci_stats.support_requests(pci_requests, cell_ids)
    # NOTE: counts are taken from copies of the pools so that two requests
    # for the same device kind cannot both count the same free device.
    pools = [dict(pool) for pool in pci_stats or []]
    for request in pci_requests:
        needed = _field(request, 'count', 1)
        specs = _field(request, 'spec') or [{}]
        if isinstance(specs, dict):
            specs = [specs]
        for pool in pools:
            node = pool.get('numa_node')
            if not _pool_matches(pool, specs) or (
                    node is not None and node not in cell_ids):
                continue
            take = min(needed, pool.get('count', 0))
            pool['count'] = pool.get('count', 0) - take
            needed -= take
            if not needed:
                break
        if needed:
            return False
    return True


def _change_usage(host_topology, instance_topology, sign):
    host = topology.load_host(host_topology).copy()
    change_usage_in_place(host, topology.load_instance(instance_topology),
                          sign)
    return host


def change_usage_in_place(host, instance, sign):
    """Add (``sign`` 1) or remove (-1) a placed instance's usage on ``host``.

    The in-place form of :func:`apply_usage` / :func:`release_usage` for
    callers that rebuild a host's usage from many instances (the compute
    resource tracker) and would otherwise copy the host once per instance.
    Cells are checked before any is changed, so a failure leaves ``host``
    as it was.

    :param host: a :class:`~common.numa.topology.HostTopology` (changed).
    :param instance: a fitted :class:`~common.numa.topology.
        InstanceTopology`.
    :raises CPUPinningInvalid: adding pins an already pinned pCPU.
    :raises CPUUnpinningInvalid: removing frees a pCPU that is not pinned.
    """
    for instance_cell in instance.cells:
        cell = host.cell(instance_cell.id)
        if cell is None:
            raise ValueError('instance cell %s names no host cell'
                             % instance_cell.id)
        if instance_cell.pcpuset and instance_cell.cpu_pinning is None:
            raise ValueError('instance cell %s is not fitted (no CPU '
                             'pinning)' % instance_cell.id)
        held = instance_cell.held_pcpus
        if sign > 0 and not held <= cell.free_pcpus:
            raise exception.CPUPinningInvalid(
                requested=sorted(held), available=sorted(cell.free_pcpus))
        if sign < 0 and not held <= cell.pinned_cpus:
            raise exception.CPUUnpinningInvalid(
                requested=sorted(held), pinned=sorted(cell.pinned_cpus))
    # NOTE: the second pass can no longer fail: every check is above, so
    # the host is never left with half an instance applied.
    for instance_cell in instance.cells:
        cell = host.cell(instance_cell.id)
        held = instance_cell.held_pcpus
        if sign > 0:
            cell.pinned_cpus |= held
        else:
            cell.pinned_cpus -= held
        cell.cpu_usage = max(0, cell.cpu_usage
                             + sign * len(instance_cell.cpuset))
        cell.memory_usage = max(0, cell.memory_usage
                                + sign * instance_cell.memory)
        pages = (cell.pages(instance_cell.pagesize)
                 if instance_cell.pagesize and instance_cell.pagesize > 0
                 else None)
        if pages is not None:
            count = instance_cell.memory * 1024 // pages.size_kb
            pages.used = max(0, pages.used + sign * count)


def apply_usage(host_topology, instance_topology):
    """A new host topology with a fitted instance's usage added.

    :param instance_topology: the result of :func:`fit_instance_to_host`.
    :raises CPUPinningInvalid: when a pCPU it pins is already pinned (a
        race the compute claim must turn into a reschedule).
    """
    return _change_usage(host_topology, instance_topology, 1)


def release_usage(host_topology, instance_topology):
    """A new host topology with a placed instance's usage removed.

    :raises CPUUnpinningInvalid: when a pCPU it held is not pinned.
    """
    return _change_usage(host_topology, instance_topology, -1)
