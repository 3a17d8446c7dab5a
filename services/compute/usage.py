# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A node's usage, rebuilt from the instances on it, and its record.

Usage is never carried over from the last run: every update starts from
the driver's empty view and adds each instance's flavor, NUMA placement
(pinned CPUs, memory, pages) and PCI devices, so stale pinned CPUs can
only survive as long as updates fail (doc/behaviours.md B4, A14). The
result is the ``compute_nodes`` row in the shape the scheduler decodes
(:mod:`services.scheduler.sources.records`).
"""

import collections
import dataclasses
import logging
import math

from common.numa import fit
from common.numa import topology

LOG = logging.getLogger(__name__)

# NOTE: instances whose resources are released: gone for accounting even
# while their row still names this host.
RELEASED_VM_STATES = frozenset(['deleted', 'shelved_offloaded'])
# NOTE: task states that keep the host's disks and network busy; with
# building instances they make the ``io_workload`` IoOpsFilter reads.
IO_TASK_STATES = frozenset(['resize_migrating', 'rebuilding',
                            'resize_prep', 'image_snapshot',
                            'image_backup', 'rescuing', 'unshelving'])


@dataclasses.dataclass
class InstanceUsage(object):
    """What one instance takes from its node."""

    uuid: str
    vcpus: int = 0
    memory_mb: int = 0
    disk_gb: int = 0
    numa_topology: topology.InstanceTopology = None
    pci_requests: list = dataclasses.field(default_factory=list)
    vm_state: str = None
    task_state: str = None
    project_id: str = None
    os_type: str = None
    flavor_id: str = None
    image_id: str = None

    def info(self):
        """The InstanceInfo dict schedulers keep per host."""
        return {'uuid': self.uuid, 'project_id': self.project_id,
                'flavor_id': self.flavor_id, 'image_id': self.image_id,
                'vm_state': self.vm_state, 'task_state': self.task_state}


def flavor_sizes(flavor):
    """(vcpus, memory_mb, disk_gb) of a flavor dict (disk rounds swap up).
    """
    flavor = flavor or {}
    disk = ((flavor.get('root_gb') or 0) + (flavor.get('ephemeral_gb') or 0)
            + math.ceil((flavor.get('swap') or 0) / 1024))
    return (flavor.get('vcpus') or 0, flavor.get('memory_mb') or 0, disk)


def fitted(numa_primitive):
    """The instance topology when it is placed (pinned where dedicated)."""
    if not numa_primitive:
        return None
    numa = topology.load_instance(numa_primitive)
    for cell in numa.cells:
        if cell.pcpuset and cell.cpu_pinning is None:
            return None
    return numa


_FROM_ROW = object()


def from_instance(instance, numa=_FROM_ROW):
    """An :class:`InstanceUsage` from an Instance primitive.

    :param numa: the fitted topology to count (the agent's own claim,
        before the row caught up, or one parsed already); by default the
        row's, when it is fitted.
    """
    flavor = instance.get('flavor') or {}
    vcpus, memory, disk = flavor_sizes(flavor)
    image = instance.get('image_meta') or {}
    properties = image.get('properties', image) if isinstance(
        image, dict) else {}
    return InstanceUsage(
        uuid=instance['uuid'], vcpus=vcpus, memory_mb=memory, disk_gb=disk,
        numa_topology=(fitted(instance.get('numa_topology'))
                       if numa is _FROM_ROW else numa),
        pci_requests=instance.get('pci_requests') or [],
        vm_state=instance.get('vm_state'),
        task_state=instance.get('task_state'),
        project_id=instance.get('project_id'),
        os_type=properties.get('os_type'),
        flavor_id=flavor.get('flavorid'),
        image_id=instance.get('image_ref'))


def counted(instance):
    """True when the instance's resources count on its node."""
    return (not instance.get('deleted') and
            instance.get('vm_state') not in RELEASED_VM_STATES)


def apply_numa(host, usage):
    """Add one instance's NUMA usage to ``host`` (changed in place).

    A placement that no longer fits (two instances recorded on the same
    pCPU, a cell that is gone) is logged and left out rather than
    stopping the whole update.
    """
    try:
        fit.change_usage_in_place(host, usage.numa_topology, 1)
    except Exception as exc:
        LOG.warning('Instance %s: its NUMA placement cannot be applied to '
                    'the host topology (%s); its pinned CPUs are not '
                    'counted', usage.uuid, exc)
        return False
    return True


def stats(usages):
    """The ``stats`` dict filters and weighers read (Nova's keys)."""
    counts = collections.Counter()
    io_workload = 0
    for usage in usages:
        counts['num_instances'] += 1
        counts['num_vm_%s' % usage.vm_state] += 1
        counts['num_task_%s' % usage.task_state] += 1
        counts['num_proj_%s' % usage.project_id] += 1
        if usage.os_type:
            counts['num_os_type_%s' % usage.os_type] += 1
        if usage.vm_state == 'building' or usage.task_state in (
                IO_TASK_STATES):
            io_workload += 1
    result = dict(counts)
    result['num_instances'] = len(usages)
    result['io_workload'] = io_workload
    return result


def record_values(resources, usages, host_topology, pci_pools, ratios,
                  conf):
    """The ``compute_nodes`` columns of a node (JSON ones as structures).

    :param resources: the driver's :class:`NodeResources`.
    :param usages: the :class:`InstanceUsage` of every counted instance.
    :param host_topology: the host topology with usage applied, or None.
    :param ratios: {'cpu', 'ram', 'disk'} allocation ratios in force.
    """
    vcpus_used = sum(u.vcpus for u in usages)
    memory_used = conf.reserved_host_memory_mb + sum(
        u.memory_mb for u in usages)
    disk_used = math.ceil(conf.reserved_host_disk_mb / 1024) + sum(
        u.disk_gb for u in usages)
    node_stats = stats(usages)
    return {
        'vcpus': resources.vcpus + resources.pcpus,
        'memory_mb': resources.memory_mb,
        'local_gb': resources.local_gb,
        'vcpus_used': vcpus_used,
        'memory_mb_used': memory_used,
        'local_gb_used': disk_used,
        # NOTE: may go negative under overcommit, as Nova's do.
        'free_ram_mb': resources.memory_mb - memory_used,
        'free_disk_gb': resources.local_gb - disk_used,
        'running_vms': len(usages),
        'current_workload': node_stats['io_workload'],
        'hypervisor_type': resources.hypervisor_type,
        'hypervisor_version': resources.hypervisor_version,
        'hypervisor_hostname': resources.hypervisor_hostname,
        'host_ip': resources.host_ip,
        'cpu_info': resources.cpu_info,
        'numa_topology': (host_topology.to_primitive()
                          if host_topology is not None else None),
        'pci_stats': pci_pools,
        'stats': node_stats,
        'supported_instances': resources.supported_instances,
        'metrics': [],
        'cpu_allocation_ratio': ratios['cpu'],
        'ram_allocation_ratio': ratios['ram'],
        'disk_allocation_ratio': ratios['disk'],
    }


def configured_ratios(conf):
    """The allocation ratios the options ask for ({name: ratio or None})."""
    return {'cpu': conf.cpu_allocation_ratio,
            'ram': conf.ram_allocation_ratio,
            'disk': conf.disk_allocation_ratio}


def initial_ratios(conf):
    """The ratios of a node reported for the first time."""
    return {'cpu': conf.initial_cpu_allocation_ratio,
            'ram': conf.initial_ram_allocation_ratio,
            'disk': conf.initial_disk_allocation_ratio}


def effective_ratios(conf):
    """The ratios the agent records and claims with: configured, else
    initial.
    """
    configured = configured_ratios(conf)
    initial = initial_ratios(conf)
    return {name: configured[name] if configured[name] is not None
            else initial[name] for name in configured}
