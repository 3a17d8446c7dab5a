# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The virt driver interface: what the agent needs from a hypervisor.

A driver reports hosts and their nodes (one node per host for both
in-tree drivers), each node's resources as a :class:`NodeResources`, and
runs, removes and powers guests (stop, start, reboot, pause, suspend
and back). Everything about accounting (usage, claims,
placement) stays in the agent, so a driver is small: the ``fake`` driver
simulates any number of hosts, the ``local`` one reports this machine.
"""

import abc
import dataclasses
import typing

from common import exception
from common.numa import topology
from common.objects import instance as inst
from services.compute.virt import diagnostics
from services.compute.virt import migration


class InstanceSpawnError(exception.BerthException):
    """The driver could not create the guest; the build is rescheduled."""

    msg_fmt = 'Spawning instance %(uuid)s failed: %(reason)s'


class InstanceRebuildError(exception.BerthException):
    """The driver could not re-create the guest."""

    msg_fmt = 'Rebuilding instance %(uuid)s failed: %(reason)s'


class InstanceSnapshotError(exception.BerthException):
    """The driver could not snapshot the guest."""

    msg_fmt = 'Snapshot of instance %(uuid)s failed: %(reason)s'


class InstanceMoveError(exception.BerthException):
    """The driver failed a step of a resize or cold migration."""

    msg_fmt = '%(operation)s of instance %(uuid)s failed: %(reason)s'


@dataclasses.dataclass
class SnapshotResult(object):
    """What a snapshot produced: the image data's size and MD5 checksum
    (Glance's ``checksum``), recorded on the image.
    """

    size: int = 0
    checksum: str = None


class GuestNotFound(exception.BerthException):
    """The host has no guest for the instance."""

    msg_fmt = 'Instance %(uuid)s has no guest on host %(host)s'


class GuestStateError(exception.BerthException):
    """The guest's power state does not allow the operation."""

    msg_fmt = ('Cannot %(operation)s the guest of instance %(uuid)s: its '
               'power state is %(state)s')


class PowerActionError(exception.BerthException):
    """The hypervisor failed a power operation (the guest is unchanged)."""

    msg_fmt = '%(operation)s of instance %(uuid)s failed: %(reason)s'


# Power operation -> (the power states it may start from, None for any;
# the power state it leaves the guest in).
POWER_TRANSITIONS = {
    'power_off': (None, inst.SHUTDOWN),
    'power_on': (None, inst.RUNNING),
    'reboot': (None, inst.RUNNING),
    'pause': ((inst.RUNNING,), inst.PAUSED_POWER),
    'unpause': ((inst.PAUSED_POWER,), inst.RUNNING),
    'suspend': ((inst.RUNNING,), inst.SUSPENDED_POWER),
    'resume': ((inst.SUSPENDED_POWER,), inst.RUNNING),
}


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
    :ivar power_state: Nova's power state number (running 1, paused 3,
        shutdown 4, suspended 7).
    """

    uuid: str
    host: str
    nodename: str
    numa_topology: dict = None
    pci_devices: list = dataclasses.field(default_factory=list)
    allocations: dict = dataclasses.field(default_factory=dict)
    power_state: int = inst.RUNNING


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
        state = diagnostics.POWER_STATES.get(
            self.get_info(host, instance_uuid), 'pending')
        return diagnostics.from_guest(guest, name, name, state=state)

    def init_host(self, host):
        """Prepare ``host`` before the agent serves it (nothing by default).
        """

    def rebuild(self, guest, image_meta, preserve_ephemeral=False,
                power_on=True):
        """Re-create ``guest`` (a :class:`Guest`) from its new image.

        By default the guest is destroyed and spawned again with the same
        placement (NUMA cells, devices, allocations): a rebuild keeps the
        flavor and the claim.

        :param image_meta: the new image's properties.
        :param preserve_ephemeral: keep the ephemeral disk (drivers with
            disks honour it; the default has none to keep).
        :param power_on: False leaves the guest off (a stopped server
            stays stopped, as in Nova).
        :raises InstanceRebuildError: the guest could not be re-created.
        """
        self.destroy(guest.host, guest.uuid)
        try:
            self.spawn(guest)
        except InstanceSpawnError as exc:
            raise InstanceRebuildError(uuid=guest.uuid, reason=str(exc))

    def snapshot(self, host, instance_uuid, image_id):
        """Capture the guest's disk as the data of image ``image_id``.

        :returns: a :class:`SnapshotResult`.
        :raises InstanceSnapshotError: no such guest, or it failed.
        """
        raise InstanceSnapshotError(
            uuid=instance_uuid,
            reason='the %s driver cannot snapshot' % type(self).__name__)

    def cache_image(self, host, image_id):
        """Fetch image ``image_id`` into ``host``'s image cache ahead of
        the boots that will use it (compute API 2.81).

        :returns: True when it was fetched now, False when the cache had
            it already.
        :raises NotImplementedError: the driver keeps no image cache (the
            default; the request counts the image ``unsupported``).
        """
        raise NotImplementedError()

    # Resize and cold migration (services/compute/resize.py). The defaults
    # suit a driver whose guests are records on each host: moving one is
    # creating it on the destination and removing it from the source.

    def prepare_migration_target(self, host, instance_uuid):
        """Get ``host`` ready to receive a moving guest (prep_resize on
        the destination); nothing by default.

        :raises InstanceMoveError: the host cannot take it (the move is
            rescheduled to an alternate).
        """

    def migrate_disk_and_power_off(self, host, instance_uuid, dest_host):
        """Stop the guest on its source ``host`` and send its disk to
        ``dest_host``; by default the guest is only powered off.

        :raises InstanceMoveError: the guest is left as it was.
        """
        self.power_off(host, instance_uuid)

    def finish_migration(self, guest, power_on=True):
        """Create the moved guest (a :class:`Guest` with its new NUMA
        placement and devices) on the destination.

        :param power_on: False leaves it off (a stopped server).
        :raises InstanceMoveError: it could not be created.
        """
        guest.power_state = inst.RUNNING if power_on else inst.SHUTDOWN
        try:
            self.spawn(guest)
        except InstanceSpawnError as exc:
            raise InstanceMoveError(operation='finish_migration',
                                    uuid=guest.uuid, reason=str(exc))

    def confirm_migration(self, host, instance_uuid):
        """Remove the source's copy of a guest whose move is confirmed."""
        self.destroy(host, instance_uuid)

    def finish_revert_migration(self, guest, power_on=True):
        """Run the guest on its source again with its old placement; one
        the source no longer has (a same-host move) is created.

        :raises InstanceMoveError: it could not be started.
        """
        if guest.uuid not in self.list_guests(guest.host):
            self.finish_migration(guest, power_on)
        elif power_on:
            self.power_on(guest.host, guest.uuid)
    # Live migration (services/compute/live_migration.py). A driver that
    # cannot move a running guest keeps these defaults: its pre-check
    # refuses, and the conductor tries another destination or gives up.

    def check_can_live_migrate_destination(self, host, instance_uuid,
                                           block_migration):
        """May ``instance_uuid`` live-migrate to ``host``?

        :param block_migration: True, False or None (2.25 ``auto``).
        :returns: the block_migration to use (``auto`` resolved).
        :raises common.exception.MigrationPreCheckError: it may not.
        """
        raise exception.MigrationPreCheckError(
            reason='the %s driver cannot live-migrate' % type(self).__name__)

    def live_migration(self, guest, dest_host, block_migration, sizes,
                       control, progress):
        """Copy the running ``guest`` to ``dest_host``.

        :param sizes: (memory bytes, disk bytes) to copy.
        :param control: a :class:`migration.Control`.
        :param progress: ``progress(migration.Progress)``, called as the
            copy advances.
        :raises migration.LiveMigrationAborted: stopped on an abort.
        :raises migration.LiveMigrationFailed: the copy failed; the guest
            still runs on its source.
        """
        raise migration.LiveMigrationFailed(
            uuid=guest.uuid,
            reason='the %s driver cannot live-migrate' % type(self).__name__)

    def post_live_migration_at_destination(self, guest):
        """The copy is done: ``guest`` (its host the destination) runs
        here from now on.
        """
        raise NotImplementedError()

    # Power operations. A driver keeps each guest's power state and says
    # how to read and write it (_get_power / _set_power); the transitions
    # are the same for every driver (POWER_TRANSITIONS).

    def _get_power(self, host, instance_uuid):
        """The guest's power state.

        :raises GuestNotFound: no such guest on ``host``.
        """
        raise NotImplementedError()

    def _set_power(self, host, instance_uuid, state):
        """Record the guest's new power state."""
        raise NotImplementedError()

    def _before_power(self, operation, host, instance_uuid):
        """Hook run before each power operation (e.g. to simulate time
        and failures); nothing by default.
        """

    def _power(self, operation, host, instance_uuid):
        allowed, after = POWER_TRANSITIONS[operation]
        self._before_power(operation, host, instance_uuid)
        state = self._get_power(host, instance_uuid)
        if allowed is not None and state not in allowed:
            raise GuestStateError(operation=operation.replace('_', ' '),
                                  uuid=instance_uuid, state=state)
        self._set_power(host, instance_uuid, after)

    def get_info(self, host, instance_uuid):
        """The guest's power state (Nova's numbers).

        :raises GuestNotFound: no such guest on ``host``.
        """
        return self._get_power(host, instance_uuid)

    def power_off(self, host, instance_uuid):
        """Stop the guest (a stopped one stays stopped)."""
        self._power('power_off', host, instance_uuid)

    def power_on(self, host, instance_uuid):
        """Start the guest (a running one stays running)."""
        self._power('power_on', host, instance_uuid)

    def reboot(self, host, instance_uuid, reboot_type):
        """Reboot the guest; it runs afterwards.

        :param reboot_type: ``SOFT`` (from a running guest, as the API
            allows) or ``HARD`` (from any state).
        """
        self._power('reboot', host, instance_uuid)

    def pause(self, host, instance_uuid):
        """Pause a running guest (kept in memory)."""
        self._power('pause', host, instance_uuid)

    def unpause(self, host, instance_uuid):
        """Run a paused guest again."""
        self._power('unpause', host, instance_uuid)

    def suspend(self, host, instance_uuid):
        """Suspend a running guest (saved to disk)."""
        self._power('suspend', host, instance_uuid)

    def resume(self, host, instance_uuid):
        """Run a suspended guest again."""
        self._power('resume', host, instance_uuid)
