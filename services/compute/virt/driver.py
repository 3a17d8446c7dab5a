# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The virt driver interface: what the agent needs from a hypervisor.

A driver reports hosts and their nodes (one node per host for both
in-tree drivers), each node's resources as a :class:`NodeResources`, and
runs or removes guests. Everything about accounting (usage, claims,
placement) stays in the agent, so a driver is small: the ``fake`` driver
simulates any number of hosts, the ``local`` one reports this machine.
"""

import abc
import dataclasses
import typing

from common import exception
from common.numa import topology
from services.compute.virt import diagnostics


class InstanceSpawnError(exception.BerthException):
    """The driver could not create the guest; the build is rescheduled."""

    msg_fmt = 'Spawning instance %(uuid)s failed: %(reason)s'


class GuestNotFound(exception.BerthException):
    """No guest of that instance on the host."""

    msg_fmt = 'Instance %(uuid)s has no guest on host %(host)s.'


class DriverNotFound(exception.ConfigurationError):
    msg_fmt = ('Compute driver %(name)s is not installed (entry point '
               'namespace %(namespace)s).')


@dataclasses.dataclass
class NodeResources(object):
    """One node as the hypervisor sees it, before any accounting.

    :ivar vcpus: CPUs for unpinned guests (the VCPU inventory).
    :ivar pcpus: CPUs for pinned guests (the PCPU inventory; 0 in the
        legacy layout, where pinned guests share ``vcpus``' CPUs).
    :ivar numa_topology: a :class:`~common.numa.topology.HostTopology`
        without usage (nothing pinned, no memory used).
    :ivar memory_mb_used: the hypervisor's own view of used memory, only
        logged: the accounting counts flavors, not what guests touch.
    :ivar pci_devices: assignable devices, dicts with ``address``,
        ``vendor_id``, ``product_id``, ``dev_type``, ``numa_node``,
        ``parent_addr`` (a VF's PF) and tags.
    :ivar gpus: dicts with ``address``, ``numa_node``, ``mdev_type`` and
        ``max_instances``.
    :ivar traits: capability traits of the node (COMPUTE_*, HW_CPU_*).
    """

    nodename: str
    vcpus: int = 0
    pcpus: int = 0
    memory_mb: int = 0
    local_gb: int = 0
    memory_mb_used: int = 0
    local_gb_used: int = 0
    numa_topology: typing.Optional[topology.HostTopology] = None
    hypervisor_type: str = None
    hypervisor_version: int = None
    hypervisor_hostname: str = None
    host_ip: str = None
    cpu_info: dict = dataclasses.field(default_factory=dict)
    supported_instances: list = dataclasses.field(default_factory=list)
    pci_devices: list = dataclasses.field(default_factory=list)
    gpus: list = dataclasses.field(default_factory=list)
    traits: frozenset = frozenset()


@dataclasses.dataclass
class Guest(object):
    """What a driver runs for one instance.

    :ivar pci_devices: addresses of the devices given to the guest.
    :ivar allocations: the placement allocations it was built with
        (provider uuid -> resources), e.g. which GPU its vGPU is on.
    """

    uuid: str
    host: str
    nodename: str
    numa_topology: dict = None
    pci_devices: list = dataclasses.field(default_factory=list)
    allocations: dict = dataclasses.field(default_factory=dict)


class ComputeDriver(object, metaclass=abc.ABCMeta):
    """Base of the virt drivers; one instance serves every host of the agent.

    :param conf: the ConfigOpts (``[compute]``, ``[fake_driver]``...).
    """

    def __init__(self, conf):
        self.conf = conf

    @abc.abstractmethod
    def hosts(self):
        """The host names this agent serves (one RPC server each)."""

    def get_available_nodes(self, host):
        """The node names of ``host`` (by default one, named as the host)."""
        return [host]

    @abc.abstractmethod
    def get_available_resource(self, host, nodename):
        """A :class:`NodeResources` for one node, read fresh."""

    @abc.abstractmethod
    def spawn(self, guest):
        """Create and start the guest described by a :class:`Guest`.

        :raises InstanceSpawnError: the build should be rescheduled.
        """

    @abc.abstractmethod
    def destroy(self, host, instance_uuid):
        """Remove the guest and its files; a missing guest is no error."""

    @abc.abstractmethod
    def list_guests(self, host):
        """{instance uuid: :class:`Guest`} of the guests on ``host``."""

    def get_diagnostics(self, host, instance_uuid):
        """A guest's diagnostics in Nova's standard (2.48) shape (see
        :mod:`services.compute.virt.diagnostics`).

        :raises GuestNotFound: no guest of ``instance_uuid`` on ``host``.
        """
        guest = self.list_guests(host).get(instance_uuid)
        if guest is None:
            raise GuestNotFound(uuid=instance_uuid, host=host)
        name = type(self).__name__.replace('Driver', '').lower()
        return diagnostics.from_guest(guest, name, name)

    def init_host(self, host):
        """Prepare ``host`` before the agent serves it (nothing by default).
        """
