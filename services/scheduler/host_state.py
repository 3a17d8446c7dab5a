# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The scheduler's in-memory view of one compute node.

A HostState is built from the compute node record, its service record, its
aggregates and the instances on it, kept in the host-state cache, and
"virtually consumed" by every selection so that the next instance of the
same request (and, until the compute reports, of later requests) sees the
reduced resources. Filters and weighers only read it.
"""

import dataclasses
import threading
import typing

from oslo_utils import timeutils

from common import zones


@dataclasses.dataclass
class Aggregate(object):
    """A host aggregate as filters see it.

    :ivar metadata: key -> value; ``availability_zone`` makes a zone.
    """

    id: int = None
    uuid: str = None
    name: str = ''
    hosts: list = dataclasses.field(default_factory=list)
    metadata: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class InstanceInfo(object):
    """What the scheduler knows of an instance on a host."""

    uuid: str
    project_id: str = None
    flavor_id: str = None
    image_id: str = None
    vm_state: str = None
    task_state: str = None


@dataclasses.dataclass
class HostState(object):
    """The mutable, per-node state filters and weighers read.

    :ivar supported_instances: list of [arch, hv_type, vm_mode] triples.
    :ivar numa_topology: the host NUMA topology primitive (see
        :mod:`common.numa`), or None for a host without NUMA reporting.
    :ivar pci_stats: list of PCI device pool dicts (vendor_id, product_id,
        numa_node, count, tags...), or an empty list.
    :ivar metrics: name -> {'value': float, 'timestamp', 'source'}.
    :ivar instances: instance uuid -> InstanceInfo.
    :ivar service: {'disabled': bool, 'disabled_reason', 'forced_down': bool,
        'up': bool} from the service record and heartbeat.
    :ivar limits: the compute-claim limits of a filter run outside a
        scheduling request; in the pipeline filters record them on the
        request instead (see ``filters.Limits``), as copies are shared.
    """

    host: str
    nodename: str
    uuid: str = None
    cell_uuid: str = None
    total_usable_ram_mb: int = 0
    free_ram_mb: int = 0
    total_usable_disk_gb: int = 0
    free_disk_mb: int = 0
    disk_mb_used: int = 0
    vcpus_total: int = 0
    vcpus_used: float = 0
    num_instances: int = 0
    num_io_ops: int = 0
    host_ip: str = None
    hypervisor_type: str = None
    hypervisor_version: int = None
    hypervisor_hostname: str = None
    cpu_info: dict = dataclasses.field(default_factory=dict)
    supported_instances: list = dataclasses.field(default_factory=list)
    numa_topology: typing.Optional[dict] = None
    pci_stats: list = dataclasses.field(default_factory=list)
    metrics: dict = dataclasses.field(default_factory=dict)
    aggregates: list = dataclasses.field(default_factory=list)
    instances: dict = dataclasses.field(default_factory=dict)
    ram_allocation_ratio: float = 1.0
    cpu_allocation_ratio: float = 4.0
    disk_allocation_ratio: float = 1.0
    service: dict = dataclasses.field(default_factory=dict)
    failed_builds: int = 0
    limits: dict = dataclasses.field(default_factory=dict)
    updated: object = None
    lock: threading.Lock = dataclasses.field(
        default_factory=threading.Lock, repr=False, compare=False)

    def __str__(self):
        # NOTE: the format operators know from Nova's scheduler logs.
        return ('(%s, %s) ram: %dMB disk: %dMB io_ops: %d instances: %d'
                % (self.host, self.nodename, self.free_ram_mb,
                   self.free_disk_mb, self.num_io_ops, self.num_instances))

    def aggregate_metadata(self, key=None, split=False):
        """Union of the host's aggregate metadata: key -> set of values.

        :param key: only this key when given.
        :param split: split each value on commas (stripping blanks), so
            that ``filter_tenant_id=a,b`` counts as {'a', 'b'}; the
            matching filters (zones, extra specs, tenants) want that.
        """
        result = {}
        for aggregate in self.aggregates:
            for name, value in aggregate.metadata.items():
                if key is not None and name != key:
                    continue
                values = result.setdefault(name, set())
                if split and isinstance(value, str):
                    values.update(v.strip() for v in value.split(','))
                else:
                    values.add(value)
        return result

    def availability_zone(self):
        """The zone an instance placed here records (see common.zones)."""
        return zones.zone_name(
            self.aggregate_metadata(zones.AZ_KEY).get(zones.AZ_KEY))

    def consume_from_request(self, spec, numa_fit=None, pci_consume=None):
        """Subtract one instance of ``spec`` from this host's free resources.

        :param spec: the RequestSpec being placed.
        :param numa_fit: callable(host_state, spec) -> new host NUMA
            topology primitive with the instance's usage applied, or None.
        :param pci_consume: callable(host_state, spec) applying the PCI
            requests to ``pci_stats``.
        """
        with self.lock:
            disk_mb = spec.disk_gb * 1024
            self.free_ram_mb -= spec.memory_mb
            self.free_disk_mb -= disk_mb
            self.disk_mb_used += disk_mb
            self.vcpus_used += spec.vcpus
            self.num_instances += 1
            # NOTE: a build is disk and network I/O on the host for a
            # while; IoOpsFilter and IoOpsWeigher read this.
            self.num_io_ops += 1
            if numa_fit is not None and self.numa_topology is not None:
                fitted = numa_fit(self, spec)
                if fitted is not None:
                    self.numa_topology = fitted
            if pci_consume is not None and spec.pci_requests:
                pci_consume(self, spec)
            self.updated = timeutils.utcnow()
