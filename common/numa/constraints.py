# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Flavor extra specs and image properties to an instance NUMA topology.

Called at API time (an invalid request is a 400, never a scheduling
failure) and stored in ``RequestSpec.numa_topology``. The precedence
rules (doc/behaviours.md §numa-constraints): the flavor is the
administrator's and wins; the image may only fill in what the flavor
leaves open, and an image that contradicts the flavor is an error rather
than silently ignored.
"""

import re

from oslo_utils import strutils

from common.numa import cpulist
from common.numa import exception
from common.numa import topology

MAX_NODES = 128

_PAGE_UNITS = {'': 1, 'k': 1, 'kb': 1, 'kib': 1, 'm': 1024, 'mb': 1024,
               'mib': 1024, 'g': 1024 * 1024, 'gb': 1024 * 1024,
               'gib': 1024 * 1024}
_PAGE_NAMES = {'small': topology.SMALL, 'large': topology.LARGE,
               'any': topology.ANY}
_PAGE_RE = re.compile(r'^(\d+)\s*([a-z]*)$')
_OBSOLETE_THREAD_POLICIES = ('avoid', 'separate')


def _properties(image_meta):
    if image_meta is None:
        return {}
    if isinstance(image_meta, dict):
        return image_meta
    return getattr(image_meta, 'properties', None) or {}


def _value(raw):
    return None if raw is None else str(raw).strip().lower()


def get_numa_nodes(specs, props):
    """``hw:numa_nodes`` or ``hw_numa_nodes`` as an int, or None."""
    flavor, image = specs.get('hw:numa_nodes'), props.get('hw_numa_nodes')
    if flavor is not None and image is not None:
        raise exception.ImageNUMATopologyForbidden(name='hw_numa_nodes')
    key = 'hw:numa_nodes' if flavor is not None else 'hw_numa_nodes'
    raw = flavor if flavor is not None else image
    if raw is None:
        return None
    try:
        nodes = int(str(raw).strip())
    except ValueError:
        nodes = None
    if nodes is None or not 1 <= nodes <= MAX_NODES:
        raise exception.InvalidNUMANodesNumber(nodes=raw, key=key,
                                               maximum=MAX_NODES)
    return nodes


def parse_pagesize(key, raw):
    """A page size request as SMALL/LARGE/ANY or a size in KiB.

    Accepts ``small``, ``large``, ``any``, a bare number of KiB (``2048``)
    or a number with a unit (``4KB``, ``2MB``, ``1GB``, ``2MiB``...).
    """
    value = _value(raw)
    if value in _PAGE_NAMES:
        return _PAGE_NAMES[value]
    match = _PAGE_RE.match(value or '')
    if not match or match.group(2) not in _PAGE_UNITS:
        raise exception.MemoryPageSizeInvalid(key=key, pagesize=raw)
    size = int(match.group(1)) * _PAGE_UNITS[match.group(2)]
    if size <= 0:
        raise exception.MemoryPageSizeInvalid(key=key, pagesize=raw)
    return size


def get_pagesize(specs, props):
    """The page size request, flavor over image, or None.

    The image may pick a size only where the flavor leaves a choice
    (``any``, or ``large`` for a large size); otherwise it must agree.
    """
    flavor_raw = specs.get('hw:mem_page_size')
    image_raw = props.get('hw_mem_page_size')
    flavor = (None if flavor_raw is None
              else parse_pagesize('hw:mem_page_size', flavor_raw))
    if image_raw is None:
        return flavor
    image = parse_pagesize('hw_mem_page_size', image_raw)
    if flavor is None:
        raise exception.MemoryPageSizeForbidden(pagesize=image_raw,
                                                against='<empty>')
    if flavor == topology.ANY or image == flavor:
        return image
    if flavor == topology.LARGE and image > 0:
        return image
    raise exception.MemoryPageSizeForbidden(pagesize=image_raw,
                                            against=flavor_raw)


def _policy(key, raw, allowed, invalid):
    value = _value(raw)
    if value is None or value in allowed:
        return value
    if value in _OBSOLETE_THREAD_POLICIES:
        raise exception.ObsoleteCPUThreadPolicy(
            key=key, value=raw, allowed=', '.join(allowed))
    raise invalid(key=key, value=raw, allowed=', '.join(allowed))


def get_cpu_policy(specs, props):
    """shared, dedicated, mixed or None (unset: shared), flavor first.

    ======================  =====================  ==================
    flavor                  image                  result
    ======================  =====================  ==================
    dedicated or mixed      anything               the flavor's
    shared                  dedicated or mixed     ImageCPUPinningForbidden
    shared                  shared or unset        shared
    unset                   anything               the image's
    ======================  =====================  ==================
    """
    flavor = _policy('hw:cpu_policy', specs.get('hw:cpu_policy'),
                     topology.CPU_POLICIES,
                     exception.InvalidCPUAllocationPolicy)
    image_raw = props.get('hw_cpu_policy')
    image = _policy('hw_cpu_policy', image_raw, topology.CPU_POLICIES,
                    exception.InvalidCPUAllocationPolicy)
    if flavor == topology.SHARED and image in (topology.DEDICATED,
                                               topology.MIXED):
        raise exception.ImageCPUPinningForbidden(key='hw_cpu_policy',
                                                 value=image_raw)
    return flavor or image


def get_cpu_thread_policy(specs, props):
    """prefer, isolate, require or None, flavor first.

    The image is honoured only when the flavor leaves the policy unset; a
    flavor ``prefer`` wins silently; a flavor ``isolate``/``require`` the
    image contradicts is ImageCPUThreadPolicyForbidden.
    """
    flavor = _policy('hw:cpu_thread_policy',
                     specs.get('hw:cpu_thread_policy'),
                     topology.THREAD_POLICIES,
                     exception.InvalidCPUThreadPolicy)
    image = _policy('hw_cpu_thread_policy',
                    props.get('hw_cpu_thread_policy'),
                    topology.THREAD_POLICIES,
                    exception.InvalidCPUThreadPolicy)
    if flavor in (None, topology.PREFER):
        return flavor or image
    if image is not None and image != flavor:
        raise exception.ImageCPUThreadPolicyForbidden(flavor=flavor,
                                                      image=image)
    return flavor


def get_emulator_threads_policy(specs, props, cpu_policy):
    """share, isolate or None, flavor first, then the image.

    ``isolate`` gives the emulator threads a dedicated pCPU of their own,
    so it needs dedicated CPUs (``dedicated`` or ``mixed``), as in Nova.

    :raises BadRequirementEmulatorThreadsPolicy: isolate without them.
    """
    flavor_raw = specs.get('hw:emulator_threads_policy')
    key = 'hw:emulator_threads_policy'
    raw = flavor_raw
    if flavor_raw is None:
        key, raw = ('hw_emulator_threads_policy',
                    props.get('hw_emulator_threads_policy'))
    value = _value(raw)
    if value is None:
        return None
    if value not in topology.EMULATOR_THREADS_POLICIES:
        raise exception.InvalidEmulatorThreadsPolicy(
            key=key, value=raw,
            allowed=', '.join(topology.EMULATOR_THREADS_POLICIES))
    if value == topology.ISOLATE and cpu_policy not in (topology.DEDICATED,
                                                        topology.MIXED):
        raise exception.BadRequirementEmulatorThreadsPolicy(
            key=key, policy=cpu_policy or topology.SHARED)
    return value


def _mask(key, raw, vcpus, error):
    try:
        return cpulist.parse_cpu_mask(raw, range(vcpus))
    except ValueError:
        raise error(key=key, value=raw, vcpus=vcpus)


def get_realtime_vcpus(specs, props, policy, vcpus):
    """The realtime vCPU ids (None when realtime is off) and the mask."""
    if not strutils.bool_from_string(specs.get('hw:cpu_realtime')):
        return None, None
    if policy not in (topology.DEDICATED, topology.MIXED):
        raise exception.RealtimeConfigurationInvalid(
            policy=policy or topology.SHARED)
    raw = specs.get('hw:cpu_realtime_mask',
                    props.get('hw_cpu_realtime_mask'))
    try:
        realtime = (None if raw is None
                    else cpulist.parse_cpu_mask(raw, range(vcpus)))
    except ValueError:
        realtime = None
    # NOTE: at least one ordinary vCPU keeps the emulator threads off the
    # realtime ones.
    if not realtime or realtime >= set(range(vcpus)) or max(
            realtime) >= vcpus:
        raise exception.RealtimeMaskNotFoundOrInvalid(value=raw)
    return realtime, raw


def get_dedicated_vcpus(specs, policy, realtime, vcpus):
    """The vCPU ids to pin: all (dedicated), some (mixed) or none."""
    raw = specs.get('hw:cpu_dedicated_mask')
    if raw is not None and policy != topology.MIXED:
        raise exception.CPUDedicatedMaskConfigurationInvalid(
            policy=policy or topology.SHARED)
    if policy == topology.DEDICATED:
        return set(range(vcpus))
    if policy != topology.MIXED:
        return set()
    if raw is not None:
        key = 'hw:cpu_dedicated_mask'
        dedicated = _mask(key, raw, vcpus,
                          exception.MixedCPUPolicyMaskInvalid)
    elif realtime:
        # NOTE: a mixed realtime guest pins exactly its realtime vCPUs.
        key, raw, dedicated = 'hw:cpu_realtime_mask', 'realtime', realtime
    else:
        raise exception.MixedCPUPolicyMaskMissing()
    if (not dedicated or dedicated >= set(range(vcpus))
            or max(dedicated) >= vcpus):
        raise exception.MixedCPUPolicyMaskInvalid(key=key, value=raw,
                                                  vcpus=vcpus)
    if realtime and not realtime <= dedicated:
        raise exception.RealtimeMaskNotFoundOrInvalid(
            value='%s (realtime vCPUs must be dedicated)'
            % cpulist.format_cpu_spec(realtime))
    return dedicated


def _indexed(specs, props, name):
    """``hw:<name>.N`` (or ``hw_<name>.N``) as {N: raw}, and the prefix."""
    found = {}
    for prefix, source in (('hw:%s.' % name, specs),
                           ('hw_%s.' % name, props)):
        values = {k[len(prefix):]: v for k, v in source.items()
                  if k.startswith(prefix)}
        if values and found:
            raise exception.ImageNUMATopologyForbidden(name='hw_%s' % name)
        if values:
            found = values
            used = prefix
    if not found:
        return {}, 'hw:%s' % name
    result = {}
    for index, raw in found.items():
        if not index.isdigit():
            raise exception.InvalidNUMASpec(
                key=used + index, value=raw,
                reason='the suffix must be a NUMA node number')
        result[int(index)] = raw
    return result, used.rstrip('.')


def _auto_cells(nodes, vcpus, memory):
    if vcpus % nodes or memory % nodes:
        raise exception.ImageNUMATopologyAsymmetric(
            key='hw:numa_nodes', nodes=nodes, vcpus=vcpus, memory=memory)
    per_cpu, per_mem = vcpus // nodes, memory // nodes
    return [(set(range(i * per_cpu, (i + 1) * per_cpu)), per_mem)
            for i in range(nodes)]


def _manual_cells(nodes, vcpus, memory, cpu_lists, mem_lists):
    cpu_raw, cpu_key = cpu_lists
    mem_raw, mem_key = mem_lists
    cells = []
    assigned = set()
    for index in range(nodes):
        key = '%s.%d' % (cpu_key, index)
        try:
            cpus = cpulist.parse_cpu_spec(cpu_raw[index])
        except ValueError as exc:
            raise exception.InvalidNUMASpec(key=key, value=cpu_raw[index],
                                            reason=exc)
        for cpu in sorted(cpus):
            if cpu >= vcpus:
                raise exception.ImageNUMATopologyCPUOutOfRange(
                    key=key, cpunum=cpu, cpumax=vcpus - 1)
            if cpu in assigned:
                raise exception.ImageNUMATopologyCPUDuplicates(
                    key=key, cpunum=cpu)
        assigned |= cpus
        try:
            mem = int(str(mem_raw[index]).strip())
        except ValueError:
            raise exception.InvalidNUMASpec(
                key='%s.%d' % (mem_key, index), value=mem_raw[index],
                reason='memory must be a whole number of MB')
        cells.append((cpus, mem))
    unassigned = set(range(vcpus)) - assigned
    if unassigned:
        raise exception.ImageNUMATopologyCPUsUnassigned(
            key=cpu_key, cpuset=cpulist.format_cpu_spec(unassigned))
    total = sum(mem for _cpus, mem in cells)
    if total != memory:
        raise exception.ImageNUMATopologyMemoryOutOfRange(
            key=mem_key, memsize=total, memtotal=memory)
    return cells


def get_cells(nodes, specs, props, vcpus, memory):
    """(vCPU set, MB) per guest node: even split or hw:numa_cpus/mem.N."""
    cpu_lists = _indexed(specs, props, 'numa_cpus')
    mem_lists = _indexed(specs, props, 'numa_mem')
    if not cpu_lists[0] and not mem_lists[0]:
        return _auto_cells(nodes, vcpus, memory)
    # NOTE: name the list that is missing altogether before the one that
    # merely lacks a node: that is the mistake the user made.
    for values, key in sorted((cpu_lists, mem_lists),
                              key=lambda item: bool(item[0])):
        if sorted(values) != list(range(nodes)):
            raise exception.ImageNUMATopologyIncomplete(key=key, nodes=nodes)
    return _manual_cells(nodes, vcpus, memory, cpu_lists,
                         mem_lists)


def get_constraints(flavor, image_meta):
    """The instance NUMA topology a flavor and image ask for, or None.

    A topology exists when NUMA nodes, a page size or pinned CPUs are
    requested: a page size alone or ``dedicated``/``mixed`` alone give a
    single guest node with every vCPU and all the memory.

    :param flavor: a Flavor (``vcpus``, ``memory_mb``, ``extra_specs``).
    :param image_meta: an ImageMeta, a properties dict, or None.
    :returns: an :class:`~common.numa.topology.InstanceTopology` or None.
    :raises NUMARequestInvalid: a subclass naming the offending key.
    """
    specs = getattr(flavor, 'extra_specs', None) or {}
    props = _properties(image_meta)
    vcpus, memory = flavor.vcpus, flavor.memory_mb
    nodes = get_numa_nodes(specs, props)
    pagesize = get_pagesize(specs, props)
    policy = get_cpu_policy(specs, props)
    thread_policy = get_cpu_thread_policy(specs, props)
    realtime, realtime_mask = get_realtime_vcpus(specs, props, policy,
                                                 vcpus)
    if policy in (None, topology.SHARED) and thread_policy:
        key = ('hw:cpu_thread_policy' if 'hw:cpu_thread_policy' in specs
               else 'hw_cpu_thread_policy')
        raise exception.CPUThreadPolicyConfigurationInvalid(
            key=key, value=thread_policy)
    dedicated = get_dedicated_vcpus(specs, policy, realtime, vcpus)
    emulator = get_emulator_threads_policy(specs, props, policy)
    if not (nodes or pagesize or dedicated):
        return None
    cells = []
    for index, (cpus, mem) in enumerate(
            get_cells(nodes or 1, specs, props, vcpus, memory)):
        cells.append(topology.InstanceCell(
            id=index, cpuset=cpus - dedicated, pcpuset=cpus & dedicated,
            memory=mem, pagesize=pagesize, cpu_policy=policy,
            cpu_thread_policy=thread_policy if dedicated else None,
            cpu_realtime=cpus & (realtime or set())))
    return topology.InstanceTopology(cells=cells,
                                     realtime_mask=realtime_mask,
                                     emulator_threads_policy=emulator)
