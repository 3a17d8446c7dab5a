# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The ``fake`` virt driver: any number of simulated hosts in one process.

``[fake_driver]`` describes one host's hardware (CPUs with sibling threads
over NUMA nodes, memory with huge pages, disk, PCI devices, GPUs) and how
many such hosts this agent stands in for. Guests are records in memory;
a spawn can be made slow (``spawn_latency``) or fail at random
(``spawn_failure_rate``) or always on some hosts (``fail_hosts``), which
is what reschedule tests and benchmarks need. Power operations (stop,
start, reboot, pause, suspend...), rebuilds and snapshots can be slowed
down (``action_latency``) or fail at random (``action_failure_rate``);
power operations and the steps of a resize or cold migration also always
(``fail_actions``). Each guest keeps its power state; a snapshot's "data"
is the guest's record; an image pre-cached on a host (compute API 2.81)
is remembered in ``cached_images``. A live migration's copy takes
``live_migration_time`` (or its destination's
``live_migration_time_by_host``) in ten steps, reporting progress and
heeding abort and force-complete between them; its pre-checks or its copy
fail towards chosen hosts (``fail_live_migrations``).
"""

import hashlib
import json
import logging
import random
import threading
import time

from common.conf import fake_driver as fake_driver_opts
from common import exception
from common.objects import instance as inst
from services.compute.virt import driver
from services.compute.virt import hardware
from services.compute.virt import migration

LOG = logging.getLogger(__name__)

# NOTE: the simulated copy advances in this many steps, each one a
# progress report and a chance to notice an abort or a force-complete.
LIVE_MIGRATION_STEPS = 10
# The step at which a copy listed in fail_live_migrations fails.
_FAILING_STEP = LIVE_MIGRATION_STEPS // 2


def host_names(conf):
    """The simulated host names, in index order."""
    opts = conf.fake_driver
    # NOTE: one host with the default pattern is simply [DEFAULT] host; an
    # explicit pattern names even a single host.
    if opts.host_count == 1 and opts.host_name_pattern == (
            fake_driver_opts.DEFAULT_HOST_NAME_PATTERN):
        return [conf.host]
    try:
        return [opts.host_name_pattern.format(
            host=conf.host, index=index, number=index + 1)
            for index in range(opts.host_count)]
    except (KeyError, IndexError, ValueError) as exc:
        raise exception.ConfigurationError(
            reason='[fake_driver] host_name_pattern %r: %s'
                   % (opts.host_name_pattern, exc))


def _hugepages(items):
    pages = {}
    for item in items:
        size, _sep, count = item.partition(':')
        try:
            pages[int(size)] = int(count)
        except ValueError:
            raise exception.ConfigurationError(
                reason='[fake_driver] hugepages item %r is not '
                       'size_kb:count' % item)
    return pages


def cell_layouts(opts):
    """The :class:`~hardware.CellLayout` list ``[fake_driver]`` describes.

    :raises common.exception.ConfigurationError: CPUs that do not divide
        into whole cores per node.
    """
    threads, nodes = opts.threads_per_core, opts.numa_cells
    if opts.vcpus % threads or (opts.vcpus // threads) % nodes:
        raise exception.ConfigurationError(
            reason='[fake_driver] vcpus = %d is not a whole number of '
                   '%d-thread cores per each of %d NUMA nodes'
                   % (opts.vcpus, threads, nodes))
    cores = opts.vcpus // threads
    per_node = cores // nodes
    pages = _hugepages(opts.hugepages)
    cells = []
    for node in range(nodes):
        siblings = []
        for core in range(node * per_node, (node + 1) * per_node):
            if opts.sibling_numbering == 'linux':
                ids = {thread * cores + core for thread in range(threads)}
            else:
                ids = {core * threads + thread for thread in range(threads)}
            siblings.append(ids)
        memory = opts.memory_mb // nodes
        if node == nodes - 1:
            memory += opts.memory_mb % nodes
        cells.append(hardware.CellLayout(
            id=node, cpus=set().union(*siblings), siblings=siblings,
            memory_mb=memory, hugepages=dict(pages)))
    return cells


def _json_items(option, values):
    items = []
    for value in values:
        try:
            item = json.loads(value)
        except ValueError as exc:
            raise exception.ConfigurationError(
                reason='[fake_driver] %s %r: %s' % (option, value, exc))
        if not isinstance(item, dict) or 'address' not in item:
            raise exception.ConfigurationError(
                reason='[fake_driver] %s %r: a JSON object with an '
                       '"address" is expected' % (option, value))
        items.append(item)
    return items


def _vf_address(pf_address, index):
    # NOTE: VFs sit on a bus slot of their own, eight functions per slot,
    # the way SR-IOV NICs usually expose them.
    prefix, _sep, _slot = pf_address.rpartition(':')
    return '%s:%02x.%d' % (prefix, 0x10 + index // 8, index % 8)


def pci_devices(values):
    """Device dicts from ``[fake_driver] pci_device``, VFs expanded."""
    devices = []
    for item in _json_items('pci_device', values):
        item = dict(item)
        vfs = int(item.pop('vfs', 0) or 0)
        vf_product = item.pop('vf_product_id', item.get('product_id'))
        item.setdefault('dev_type', 'type-PF' if vfs else 'type-PCI')
        item.setdefault('numa_node', None)
        devices.append(item)
        for index in range(vfs):
            vf = dict(item, address=_vf_address(item['address'], index),
                      product_id=vf_product, dev_type='type-VF',
                      parent_addr=item['address'])
            devices.append(vf)
    return devices


class FakeDriver(driver.ComputeDriver):
    """Simulated hosts, all alike, with guests kept in memory."""

    def __init__(self, conf):
        super().__init__(conf)
        opts = conf.fake_driver
        self._hosts = host_names(conf)
        self._cells = cell_layouts(opts)
        online = set().union(*(cell.cpus for cell in self._cells))
        self._sets = hardware.cpu_sets(conf, online)
        self._pci = pci_devices(opts.pci_device)
        self._gpus = _json_items('gpu', opts.gpu)
        self._guests = {host: {} for host in self._hosts}
        self._lock = threading.Lock()
        self._random = random.Random()
        self.snapshots = {}
        # host -> the ids of the images in its simulated image cache.
        self.cached_images = {host: set() for host in self._hosts}
        self._template = self._make_template()

    def _make_template(self):
        opts = self.conf.fake_driver
        traits = set(opts.capabilities) | hardware.cpu_traits(
            self._cells, opts.cpu_arch)
        cores = sum(len(cell.siblings) for cell in self._cells)
        return driver.NodeResources(
            nodename=None, vcpus=self._sets.vcpus, pcpus=self._sets.pcpus,
            memory_mb=opts.memory_mb, local_gb=opts.disk_gb,
            numa_topology=hardware.host_topology(self._cells, self._sets),
            hypervisor_type=opts.hypervisor_type,
            hypervisor_version=opts.hypervisor_version,
            cpu_info={'arch': opts.cpu_arch, 'model': 'fake',
                      'vendor': 'Berth',
                      'topology': {'sockets': len(self._cells),
                                   'cores': cores // len(self._cells),
                                   'threads': opts.threads_per_core},
                      'features': []},
            supported_instances=[[opts.cpu_arch, opts.hypervisor_type,
                                  'hvm']],
            pci_devices=self._pci, gpus=self._gpus,
            traits=frozenset(traits))

    def hosts(self):
        """See :meth:`ComputeDriver.hosts`."""
        return list(self._hosts)

    def get_available_resource(self, host, nodename):
        """See :meth:`ComputeDriver.get_available_resource`.

        NOTE: every host shares one description; the topology and device
        lists in it are read-only for callers (the tracker copies what it
        changes), which keeps a thousand simulated hosts cheap.
        """
        template = self._template
        resources = driver.NodeResources(**{
            name: getattr(template, name)
            for name in driver.NodeResources.__dataclass_fields__})
        resources.nodename = nodename
        resources.hypervisor_hostname = nodename
        return resources

    def spawn(self, guest):
        """See :meth:`ComputeDriver.spawn`."""
        opts = self.conf.fake_driver
        if opts.spawn_latency:
            time.sleep(opts.spawn_latency)
        if guest.host in opts.fail_hosts:
            raise driver.InstanceSpawnError(
                uuid=guest.uuid,
                reason='host %s is in [fake_driver] fail_hosts' % guest.host)
        with self._lock:
            unlucky = self._random.random() < opts.spawn_failure_rate
        if unlucky:
            raise driver.InstanceSpawnError(
                uuid=guest.uuid,
                reason='simulated failure ([fake_driver] '
                       'spawn_failure_rate = %s)' % opts.spawn_failure_rate)
        with self._lock:
            self._guests.setdefault(guest.host, {})[guest.uuid] = guest
        LOG.debug('Fake guest %s running on %s', guest.uuid, guest.host)

    def destroy(self, host, instance_uuid):
        """See :meth:`ComputeDriver.destroy`."""
        with self._lock:
            self._guests.get(host, {}).pop(instance_uuid, None)

    def list_guests(self, host):
        """See :meth:`ComputeDriver.list_guests`."""
        with self._lock:
            return dict(self._guests.get(host, {}))

    def _action(self, name, uuid, error):
        """Sleep ``action_latency``; raise ``error`` at the failure rate.

        """
        opts = self.conf.fake_driver
        latency = opts.action_latency
        rate = opts.action_failure_rate
        if latency:
            time.sleep(latency)
        with self._lock:
            unlucky = self._random.random() < rate
        if unlucky:
            raise error(uuid=uuid,
                        reason='simulated %s failure ([fake_driver] '
                               'action_failure_rate = %s)' % (name, rate))

    def rebuild(self, guest, image_meta, preserve_ephemeral=False,
                power_on=True):
        """See :meth:`ComputeDriver.rebuild`: the record is replaced."""
        self._action('rebuild', guest.uuid, driver.InstanceRebuildError)
        guest.power_state = inst.RUNNING if power_on else inst.SHUTDOWN
        with self._lock:
            self._guests.setdefault(guest.host, {})[guest.uuid] = guest
        LOG.debug('Fake guest %s rebuilt on %s (powered %s)', guest.uuid,
                  guest.host, 'on' if power_on else 'off')

    def snapshot(self, host, instance_uuid, image_id):
        """See :meth:`ComputeDriver.snapshot`: records which guest each
        image was taken from; the data is the guest's record.
        """
        self._action('snapshot', instance_uuid, driver.InstanceSnapshotError)
        with self._lock:
            guest = self._guests.get(host, {}).get(instance_uuid)
            if guest is None:
                raise driver.InstanceSnapshotError(
                    uuid=instance_uuid, reason='no such guest on %s' % host)
            data = json.dumps(guest.__dict__, sort_keys=True,
                              default=str).encode()
            self.snapshots[image_id] = (host, instance_uuid)
        return driver.SnapshotResult(
            size=len(data), checksum=hashlib.md5(data).hexdigest())

    def cache_image(self, host, image_id):
        """See :meth:`ComputeDriver.cache_image`: the image id is recorded
        in the host's simulated cache.
        """
        with self._lock:
            cached = self.cached_images.setdefault(host, set())
            if image_id in cached:
                return False
            cached.add(image_id)
        LOG.debug('Fake host %s cached image %s', host, image_id)
        return True

    # --- resize and cold migration ----------------------------------------

    def _before_move(self, operation, host, instance_uuid):
        """Simulated hypervisor time and failures of a move's step: as a
        power operation's (``fail_actions`` names the step).
        """
        try:
            self._before_power(operation, host, instance_uuid)
        except driver.PowerActionError as exc:
            raise driver.InstanceMoveError(
                operation=operation, uuid=instance_uuid,
                reason=exc.kwargs.get('reason'))

    def prepare_migration_target(self, host, instance_uuid):
        """See :meth:`ComputeDriver.prepare_migration_target`."""
        self._before_move('prep_resize', host, instance_uuid)

    def migrate_disk_and_power_off(self, host, instance_uuid, dest_host):
        """See :meth:`ComputeDriver.migrate_disk_and_power_off`."""
        self._before_move('migrate_disk_and_power_off', host, instance_uuid)
        self._set_power(host, instance_uuid, inst.SHUTDOWN)

    def finish_migration(self, guest, power_on=True):
        """See :meth:`ComputeDriver.finish_migration`: the record is made
        on the destination (replaced, on the same host).
        """
        self._before_move('finish_migration', guest.host, guest.uuid)
        guest.power_state = inst.RUNNING if power_on else inst.SHUTDOWN
        with self._lock:
            self._guests.setdefault(guest.host, {})[guest.uuid] = guest

    def confirm_migration(self, host, instance_uuid):
        """See :meth:`ComputeDriver.confirm_migration`."""
        self._before_move('confirm_migration', host, instance_uuid)
        self.destroy(host, instance_uuid)

    def finish_revert_migration(self, guest, power_on=True):
        """See :meth:`ComputeDriver.finish_revert_migration`: the source's
        record takes the old placement back.
        """
        self._before_move('finish_revert_migration', guest.host, guest.uuid)
        guest.power_state = inst.RUNNING if power_on else inst.SHUTDOWN
        with self._lock:
            self._guests.setdefault(guest.host, {})[guest.uuid] = guest

    def _before_power(self, operation, host, instance_uuid):
        """Simulated hypervisor time and failures (``[fake_driver]``)."""
        opts = self.conf.fake_driver
        if opts.action_latency:
            time.sleep(opts.action_latency)
        for item in (operation, '%s:%s' % (operation, host)):
            if item in opts.fail_actions:
                raise driver.PowerActionError(
                    operation=operation, uuid=instance_uuid,
                    reason='%s is in [fake_driver] fail_actions' % item)
        with self._lock:
            unlucky = self._random.random() < opts.action_failure_rate
        if unlucky:
            raise driver.PowerActionError(
                operation=operation, uuid=instance_uuid,
                reason='simulated failure ([fake_driver] '
                       'action_failure_rate = %s)' % opts.action_failure_rate)

    def _guest(self, host, instance_uuid):
        guests = self._guests.get(host)
        if guests is None:
            raise driver.GuestNotFound(uuid=instance_uuid, host=host)
        guest = guests.get(instance_uuid)
        if guest is None:
            # NOTE: guests live in this process's memory; after a restart
            # an instance the database still places here has lost its
            # simulated guest. It is taken back as running, which is
            # what the real hypervisor would still be doing.
            guest = guests[instance_uuid] = driver.Guest(
                uuid=instance_uuid, host=host, nodename=host,
                power_state=inst.RUNNING)
        return guest

    def _get_power(self, host, instance_uuid):
        with self._lock:
            return self._guest(host, instance_uuid).power_state

    def _set_power(self, host, instance_uuid, state):
        with self._lock:
            self._guest(host, instance_uuid).power_state = state

    # --- live migration -----------------------------------------------------

    def _fails(self, stage, host):
        return '%s:%s' % (stage, host) in self.conf.fake_driver.\
            fail_live_migrations

    def check_can_live_migrate_destination(self, host, instance_uuid,
                                           block_migration):
        """See :meth:`ComputeDriver.check_can_live_migrate_destination`.

        NOTE: simulated hosts share no storage, so ``auto`` means a block
        migration, as it does for libvirt hosts without shared storage.
        """
        if self._fails('check', host):
            raise exception.MigrationPreCheckError(
                reason='check:%s is in [fake_driver] fail_live_migrations'
                       % host)
        return True if block_migration is None else bool(block_migration)

    def _copy_time(self, dest_host):
        """Seconds a copy to ``dest_host`` takes ([fake_driver])."""
        opts = self.conf.fake_driver
        return float(opts.live_migration_time_by_host.get(
            dest_host, opts.live_migration_time))

    def live_migration(self, guest, dest_host, block_migration, sizes,
                       control, progress):
        """See :meth:`ComputeDriver.live_migration`: ten steps over
        the copy time to ``dest_host`` (none with 0).
        """
        memory, disk = sizes[0], sizes[1] if block_migration else 0
        step_time = self._copy_time(dest_host) / LIVE_MIGRATION_STEPS
        steps = LIVE_MIGRATION_STEPS if step_time else 1
        for step in range(1, steps + 1):
            control.wait(step_time)
            if control.aborted:
                raise migration.LiveMigrationAborted(uuid=guest.uuid)
            if control.forced:
                break
            if self._fails('copy', dest_host) and (
                    step >= min(_FAILING_STEP, steps)):
                raise migration.LiveMigrationFailed(
                    uuid=guest.uuid,
                    reason='copy:%s is in [fake_driver] '
                           'fail_live_migrations' % dest_host)
            if step < steps:
                progress(migration.Progress.at(step / steps, memory, disk))
        progress(migration.Progress.at(1, memory, disk))
        LOG.debug('Fake guest %s copied from %s to %s', guest.uuid,
                  guest.host, dest_host)

    def post_live_migration_at_destination(self, guest):
        """See :meth:`ComputeDriver.post_live_migration_at_destination`:
        the guest's record is kept under its new host.
        """
        with self._lock:
            self._guests.setdefault(guest.host, {})[guest.uuid] = guest
