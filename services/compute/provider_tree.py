# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The resource provider tree a node should have in placement.

The root is the compute node (same uuid, named after the node). Its
children, each with a uuid derived from the root's and its own name so
that a restart finds the same providers:

- with ``[compute] numa_nodes_in_placement``, one ``<node>_NUMA<id>``
  provider per host NUMA node holding its VCPU, PCPU and MEMORY_MB (the
  root then holds only DISK_GB), marked ``HW_NUMA_ROOT``;
- one ``<node>_pci_<address>`` provider per GPU with its VGPU inventory
  and its mediated device type as a custom trait (under its NUMA node's
  provider when there is one);
- with ``[pci] report_in_placement``, one ``<node>_<address>`` provider
  per physical function (holding its VFs) or stand-alone device.

Inventories follow Nova's libvirt rules (doc/behaviours.md §inventory): totals
and ``max_unit`` are physical counts, never multiplied by the ratio, so
one instance can never be bigger than the host (seed B9).
"""

import dataclasses
import math
import re
import uuid as uuid_lib

from common.placement import pci_groups

VCPU = 'VCPU'
PCPU = 'PCPU'
MEMORY_MB = 'MEMORY_MB'
DISK_GB = 'DISK_GB'
VGPU = 'VGPU'

NUMA_ROOT_TRAIT = 'HW_NUMA_ROOT'
MANAGED_PCI_TRAIT = 'COMPUTE_MANAGED_PCI_DEVICE'
DISABLED_TRAIT = 'COMPUTE_STATUS_DISABLED'

# NOTE: traits outside these families belong to whoever set them (an
# operator's CUSTOM_VGPU_PLACEMENT on a GPU, seed A21) and are kept.
_MANAGED_PREFIXES = ('COMPUTE_', 'HW_CPU_')
_NAME_CHARS = re.compile(r'[^A-Z0-9_]')


@dataclasses.dataclass
class Provider(object):
    """One provider as the agent wants it.

    :ivar inventory: {resource class: {total, reserved, min_unit,
        max_unit, step_size, allocation_ratio}}; an ``allocation_ratio``
        of None means "what placement has, else ``initial_ratios``".
    :ivar traits: the managed traits it should carry.
    """

    uuid: str
    name: str
    parent_uuid: str = None
    inventory: dict = dataclasses.field(default_factory=dict)
    traits: frozenset = frozenset()
    initial_ratios: dict = dataclasses.field(default_factory=dict)

    def signature(self):
        """A hashable summary: equal signatures need no placement write."""
        return (self.uuid, self.name, self.parent_uuid,
                tuple(sorted((rc, tuple(sorted(fields.items())))
                             for rc, fields in self.inventory.items())),
                tuple(sorted(self.traits)))


def is_managed(trait):
    """True for the traits the agent adds and removes itself."""
    return trait.startswith(_MANAGED_PREFIXES) or trait == NUMA_ROOT_TRAIT


def custom_name(name):
    """``name`` as a CUSTOM_ resource class or trait name."""
    return pci_groups.custom_name(name)


def child_uuid(root_uuid, name):
    """The stable uuid of the child provider ``name`` of a root."""
    return str(uuid_lib.uuid5(uuid_lib.UUID(root_uuid), name))


def inventory(total, reserved=0, ratio=1.0, max_unit=None):
    """One inventory record; ``reserved`` is clipped to ``total``.

    NOTE: placement refuses reserved > total; a host with less than the
    configured reservation reports itself fully reserved instead.
    """
    return {'total': total, 'reserved': min(reserved, total),
            'min_unit': 1, 'max_unit': max_unit or total, 'step_size': 1,
            'allocation_ratio': ratio}


def _add(inventories, rc, total, reserved=0, ratio=1.0):
    # NOTE: placement forbids inventory with total 0
    # (doc/behaviours.md §inventory).
    if total > 0:
        inventories[rc] = inventory(total, reserved, ratio)


def _cpu_memory(resources, conf, ratios):
    result = {}
    _add(result, VCPU, resources.vcpus, conf.reserved_host_cpus,
         ratios['cpu'])
    _add(result, PCPU, resources.pcpus)
    _add(result, MEMORY_MB, resources.memory_mb,
         conf.reserved_host_memory_mb, ratios['ram'])
    return result


def _numa_children(root_uuid, nodename, resources, conf, ratios, initial):
    children = []
    reserved_cpus = conf.reserved_host_cpus
    reserved_memory = conf.reserved_host_memory_mb
    legacy = resources.pcpus == 0
    for cell in resources.numa_topology.cells:
        inv = {}
        # NOTE: the host's reservations are taken from the first nodes
        # that can hold them.
        vcpus = len(cell.cpuset)
        _add(inv, VCPU, vcpus, reserved_cpus, ratios['cpu'])
        reserved_cpus = max(0, reserved_cpus - vcpus)
        if not legacy:
            _add(inv, PCPU, len(cell.pcpuset))
        _add(inv, MEMORY_MB, cell.memory, reserved_memory, ratios['ram'])
        reserved_memory = max(0, reserved_memory - cell.memory)
        name = '%s_NUMA%d' % (nodename, cell.id)
        children.append(Provider(
            uuid=child_uuid(root_uuid, name), name=name,
            parent_uuid=root_uuid, inventory=inv,
            traits=frozenset([NUMA_ROOT_TRAIT]), initial_ratios=initial))
    return children


def _gpu_children(root_uuid, nodename, gpus, numa_parents):
    children = []
    for gpu in gpus:
        name = '%s_pci_%s' % (nodename, re.sub(r'[:.]', '_', gpu['address']))
        total = int(gpu.get('max_instances') or 0)
        inv = {}
        _add(inv, VGPU, total)
        traits = [custom_name(gpu['mdev_type'])] if gpu.get(
            'mdev_type') else []
        children.append(Provider(
            uuid=child_uuid(root_uuid, name), name=name,
            parent_uuid=numa_parents.get(gpu.get('numa_node'), root_uuid),
            inventory=inv, traits=frozenset(traits)))
    return children


def pci_resource_class(device):
    """The resource class of a device reported in placement."""
    return pci_groups.resource_class(device.get('resource_class'),
                                     device.get('vendor_id'),
                                     device.get('product_id'))


def _pci_children(root_uuid, nodename, devices):
    groups = {}
    for device in devices:
        owner = device.get('parent_addr') or device['address']
        groups.setdefault(owner, []).append(device)
    children = []
    for owner, members in sorted(groups.items()):
        # NOTE: a PF whose VFs are assignable is consumed through them;
        # it is not offered on its own as well.
        vfs = [d for d in members if d.get('parent_addr')]
        offered = vfs or members
        inv = {}
        for device in offered:
            rc = pci_resource_class(device)
            inv.setdefault(rc, 0)
            inv[rc] += 1
        traits = {MANAGED_PCI_TRAIT}
        for device in offered:
            traits |= pci_groups.traits(device.get('traits'))
        name = '%s_%s' % (nodename, owner)
        children.append(Provider(
            uuid=child_uuid(root_uuid, name), name=name,
            parent_uuid=root_uuid,
            inventory={rc: inventory(n) for rc, n in inv.items()},
            traits=frozenset(traits)))
    return children


def build(root_uuid, nodename, resources, conf, ratios, initial,
          disabled=False):
    """The providers of one node, parents before children.

    :param resources: the driver's NodeResources.
    :param ratios: {'cpu', 'ram', 'disk'}: configured ratios, None where
        the option is unset.
    :param initial: the ``initial_*_allocation_ratio`` values.
    :param disabled: the node's service is disabled (the root then
        carries COMPUTE_STATUS_DISABLED, which the scheduler forbids).
    """
    root_inv = {}
    numa = (conf.compute.numa_nodes_in_placement and
            resources.numa_topology is not None and
            resources.numa_topology.cells)
    if not numa:
        root_inv.update(_cpu_memory(resources, conf, ratios))
    _add(root_inv, DISK_GB, resources.local_gb,
         math.ceil(conf.reserved_host_disk_mb / 1024), ratios['disk'])
    traits = set(resources.traits)
    if disabled:
        traits.add(DISABLED_TRAIT)
    providers = [Provider(uuid=root_uuid, name=nodename, inventory=root_inv,
                          traits=frozenset(traits), initial_ratios=initial)]
    numa_parents = {}
    if numa:
        children = _numa_children(root_uuid, nodename, resources, conf,
                                  ratios, initial)
        numa_parents = {cell.id: child.uuid for cell, child in zip(
            resources.numa_topology.cells, children)}
        providers.extend(children)
    providers.extend(_gpu_children(root_uuid, nodename, resources.gpus,
                                   numa_parents))
    if conf.pci.report_in_placement:
        providers.extend(_pci_children(root_uuid, nodename,
                                       resources.pci_devices))
    return providers


def signature(providers):
    """The hashable summary of a whole tree."""
    return tuple(p.signature() for p in providers)
