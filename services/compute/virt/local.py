# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The ``local`` virt driver: this machine, with instances as records.

Resources come from where Linux publishes them: online CPUs and their
sibling threads from sysfs, NUMA nodes with their memory and huge pages
from ``/sys/devices/system/node``, memory from ``/proc/meminfo``, CPU
flags from ``/proc/cpuinfo``, disk from ``statvfs`` of ``instances_path``,
assignable PCI devices from ``/sys/bus/pci/devices`` filtered by
``[pci] device_spec``. An instance "runs" as a directory holding its
record; deleting it renames the directory to ``<uuid>_del`` first, so a
delete interrupted by a crash is finished at the next start. An image
pre-cached on the host (compute API 2.81) is a record under ``_base``.
"""

import hashlib
import json
import logging
import os
import platform
import shutil
import threading

from common.numa import cpulist
from services.compute.virt import driver
from services.compute.virt import hardware
from services.compute.virt import local_pci

LOG = logging.getLogger(__name__)

GUEST_FILE = 'guest.json'
DELETED_SUFFIX = '_del'
# NOTE: snapshots of guests, one file per image (not a guest directory).
SNAPSHOTS_DIR = 'snapshots'
# NOTE: the image cache, one record per pre-cached image, where Nova's
# libvirt driver keeps its cached base images.
IMAGE_CACHE_DIR = '_base'

# NOTE: /proc/cpuinfo flag -> os-traits suffix where they differ; any
# other flag whose upper-case name is a HW_CPU_X86_ trait maps directly.
_FLAG_TRAITS = {'pni': 'SSE3', 'sse4_1': 'SSE41', 'sse4_2': 'SSE42',
                'aes': 'AESNI', 'sha_ni': 'SHA', 'fma': 'FMA3',
                'bmi1': 'BMI', 'pclmulqdq': 'CLMUL', 'avx512_vnni':
                'AVX512VNNI'}


class LocalDriver(driver.ComputeDriver):
    """This machine as one host with one node.

    :param root: where ``sys`` and ``proc`` are (``/``; tests use a tree
        of their own).
    """

    def __init__(self, conf, root='/'):
        super().__init__(conf)
        self.root = root
        self._lock = threading.Lock()

    def _path(self, *parts):
        return os.path.join(self.root, *parts)

    def _read(self, *parts, default=None):
        try:
            with open(self._path(*parts)) as f:
                return f.read().strip()
        except OSError:
            return default

    # ------------------------------------------------------------ hardware

    def online_cpus(self):
        """The set of online CPU ids."""
        text = self._read('sys/devices/system/cpu/online')
        if text:
            return cpulist.parse_cpu_spec(text)
        return set(range(os.cpu_count() or 1))

    def _siblings(self, cpus):
        seen = set()
        result = []
        for cpu in sorted(cpus):
            if cpu in seen:
                continue
            text = self._read('sys/devices/system/cpu/cpu%d' % cpu,
                              'topology/thread_siblings_list')
            group = (cpulist.parse_cpu_spec(text) if text else {cpu}) & cpus
            group.add(cpu)
            seen |= group
            result.append(group)
        return result

    def _meminfo(self, *parts):
        values = {}
        for line in (self._read(*parts, default='') or '').splitlines():
            name, _sep, rest = line.partition(':')
            fields = rest.split()
            if fields and fields[0].isdigit():
                # NOTE: per-node files read "Node 0 MemTotal: 123 kB".
                values[name.split()[-1]] = int(fields[0])
        return values

    def _node_hugepages(self, node_dir):
        pages = {}
        base = self._path(node_dir, 'hugepages')
        for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            if name.startswith('hugepages-') and name.endswith('kB'):
                count = self._read(node_dir, 'hugepages', name,
                                   'nr_hugepages', default='0')
                if count.isdigit() and int(count):
                    pages[int(name[len('hugepages-'):-2])] = int(count)
        return pages

    def cell_layouts(self):
        """One :class:`~hardware.CellLayout` per NUMA node (at least one)."""
        online = self.online_cpus()
        base = self._path('sys/devices/system/node')
        nodes = sorted(int(n[4:]) for n in (
            os.listdir(base) if os.path.isdir(base) else [])
            if n.startswith('node') and n[4:].isdigit())
        cells = []
        for node in nodes:
            node_dir = 'sys/devices/system/node/node%d' % node
            cpus = cpulist.parse_cpu_spec(
                self._read(node_dir, 'cpulist', default='')) & online
            memory = self._meminfo(node_dir, 'meminfo').get('MemTotal', 0)
            cells.append(hardware.CellLayout(
                id=node, cpus=cpus, siblings=self._siblings(cpus),
                memory_mb=memory // 1024,
                hugepages=self._node_hugepages(node_dir)))
        if not cells:
            memory = self._meminfo('proc/meminfo').get('MemTotal', 0)
            cells.append(hardware.CellLayout(
                id=0, cpus=online, siblings=self._siblings(online),
                memory_mb=memory // 1024))
        return cells

    def _cpuinfo(self):
        info = {}
        for line in (self._read('proc/cpuinfo', default='') or
                     '').splitlines():
            name, _sep, value = line.partition(':')
            name = name.strip()
            if name and name not in info:
                info[name] = value.strip()
        return info

    def cpu_flag_traits(self, flags):
        """HW_CPU_X86_* traits for the CPU ``flags``."""
        traits = set()
        for flag in flags:
            trait = 'HW_CPU_X86_' + _FLAG_TRAITS.get(flag, flag.upper())
            if trait in hardware._STANDARD_TRAITS:
                traits.add(trait)
        return traits

    def _disk(self):
        path = self.conf.instances_path
        # NOTE: before the first instance the directory may not exist yet;
        # the file system that will hold it is what counts.
        while path and not os.path.exists(path):
            path = os.path.dirname(path)
        stat = os.statvfs(path or '/')
        gib = 1024 ** 3
        total = stat.f_frsize * stat.f_blocks // gib
        used = stat.f_frsize * (stat.f_blocks - stat.f_bfree) // gib
        return total, used

    def _version(self):
        parts = (platform.release().split('-')[0].split('.') + ['0'] * 3)[:3]
        try:
            major, minor, patch = (int(p) for p in parts)
        except ValueError:
            return 0
        return major * 1000000 + minor * 1000 + patch

    # ------------------------------------------------------------- driver

    def hosts(self):
        """See :meth:`ComputeDriver.hosts`: this machine, as ``host``."""
        return [self.conf.host]

    def get_available_resource(self, host, nodename):
        """See :meth:`ComputeDriver.get_available_resource`."""
        cells = self.cell_layouts()
        sets = hardware.cpu_sets(
            self.conf, set().union(*(cell.cpus for cell in cells)))
        meminfo = self._meminfo('proc/meminfo')
        memory = meminfo.get('MemTotal', 0) // 1024
        available = meminfo.get('MemAvailable', meminfo.get('MemFree', 0))
        total_gb, used_gb = self._disk()
        cpuinfo = self._cpuinfo()
        arch = platform.machine()
        flags = cpuinfo.get('flags', '').split()
        traits = hardware.cpu_traits(cells, arch)
        traits |= self.cpu_flag_traits(flags)
        traits |= {'COMPUTE_IMAGE_TYPE_RAW', 'COMPUTE_IMAGE_TYPE_QCOW2'}
        return driver.NodeResources(
            nodename=nodename, vcpus=sets.vcpus, pcpus=sets.pcpus,
            memory_mb=memory, local_gb=total_gb,
            memory_mb_used=memory - available // 1024,
            local_gb_used=used_gb,
            numa_topology=hardware.host_topology(cells, sets),
            hypervisor_type='local', hypervisor_version=self._version(),
            hypervisor_hostname=nodename,
            cpu_info={'arch': arch, 'model': cpuinfo.get('model name'),
                      'vendor': cpuinfo.get('vendor_id'),
                      'topology': {'sockets': len(cells),
                                   'cores': sum(len(c.siblings)
                                                for c in cells),
                                   'threads': max(
                                       (len(s) for c in cells
                                        for s in c.siblings), default=1)},
                      'features': sorted(flags)},
            supported_instances=[[arch, 'local', 'hvm']],
            pci_devices=local_pci.assignable_devices(self.root, self.conf),
            traits=frozenset(traits))

    def _guest_dir(self, uuid, suffix=''):
        return os.path.join(self.conf.instances_path, uuid + suffix)

    def spawn(self, guest):
        """See :meth:`ComputeDriver.spawn`: write the guest's record."""
        path = self._guest_dir(guest.uuid)
        try:
            os.makedirs(path, exist_ok=True)
            tmp = os.path.join(path, GUEST_FILE + '.tmp')
            with open(tmp, 'w') as f:
                json.dump(guest.__dict__, f)
            os.replace(tmp, os.path.join(path, GUEST_FILE))
        except OSError as exc:
            raise driver.InstanceSpawnError(uuid=guest.uuid, reason=exc)

    def destroy(self, host, instance_uuid):
        """See :meth:`ComputeDriver.destroy`: rename, then delete."""
        path = self._guest_dir(instance_uuid)
        target = self._guest_dir(instance_uuid, DELETED_SUFFIX)
        with self._lock:
            if os.path.exists(path):
                os.replace(path, target)
        self._remove(target)

    def _remove(self, target):
        if not os.path.exists(target):
            return
        LOG.info('Deleting instance files %s', target)
        shutil.rmtree(target, ignore_errors=True)
        LOG.info('Deletion of %s complete', target)

    def init_host(self, host):
        """Finish deletes a crash interrupted (``<uuid>_del`` left over)."""
        base = self.conf.instances_path
        for name in os.listdir(base) if os.path.isdir(base) else []:
            if name.endswith(DELETED_SUFFIX):
                self._remove(os.path.join(base, name))

    def list_guests(self, host):
        """See :meth:`ComputeDriver.list_guests`."""
        base = self.conf.instances_path
        guests = {}
        for name in os.listdir(base) if os.path.isdir(base) else []:
            record = os.path.join(base, name, GUEST_FILE)
            try:
                with open(record) as f:
                    data = json.load(f)
                guests[data['uuid']] = driver.Guest(**data)
            except (OSError, ValueError, KeyError, TypeError):
                # NOTE: a directory being deleted or written right now.
                continue
        return guests

    def rebuild(self, guest, image_meta, preserve_ephemeral=False,
                power_on=True):
        """See :meth:`ComputeDriver.rebuild`: the guest's record is
        rewritten in place (atomically), keeping its other files.
        """
        if not os.path.isdir(self._guest_dir(guest.uuid)):
            raise driver.InstanceRebuildError(
                uuid=guest.uuid, reason='no instance directory')
        try:
            self.spawn(guest)
        except driver.InstanceSpawnError as exc:
            raise driver.InstanceRebuildError(uuid=guest.uuid,
                                              reason=str(exc))

    def snapshot(self, host, instance_uuid, image_id):
        """See :meth:`ComputeDriver.snapshot`: the guest's record is
        copied to ``<instances_path>/snapshots/<image_id>``.
        """
        record = os.path.join(self._guest_dir(instance_uuid), GUEST_FILE)
        folder = os.path.join(self.conf.instances_path, SNAPSHOTS_DIR)
        target = os.path.join(folder, image_id)
        try:
            with open(record, 'rb') as f:
                data = f.read()
            os.makedirs(folder, exist_ok=True)
            with open(target + '.tmp', 'wb') as f:
                f.write(data)
            os.replace(target + '.tmp', target)
        except OSError as exc:
            raise driver.InstanceSnapshotError(uuid=instance_uuid,
                                               reason=exc)
        return driver.SnapshotResult(size=len(data),
                                     checksum=hashlib.md5(data).hexdigest())

    def cache_image(self, host, image_id):
        """See :meth:`ComputeDriver.cache_image`: a record of the image
        in ``<instances_path>/_base/<image_id>`` (instances here have no
        disk to fill from it).
        """
        if not image_id or os.path.basename(image_id) != image_id or (
                image_id.startswith('.')):
            raise ValueError('%r is no image id' % image_id)
        folder = os.path.join(self.conf.instances_path, IMAGE_CACHE_DIR)
        target = os.path.join(folder, image_id)
        if os.path.exists(target):
            return False
        os.makedirs(folder, exist_ok=True)
        with open(target + '.tmp', 'w') as f:
            json.dump({'image_id': image_id, 'host': host}, f)
        os.replace(target + '.tmp', target)
        LOG.info('Image %s cached in %s', image_id, folder)
        return True

    def _record(self, instance_uuid):
        return os.path.join(self._guest_dir(instance_uuid), GUEST_FILE)

    def _get_power(self, host, instance_uuid):
        """The power state kept in the guest's record."""
        try:
            with open(self._record(instance_uuid)) as f:
                data = json.load(f)
        except (OSError, ValueError):
            raise driver.GuestNotFound(uuid=instance_uuid, host=host)
        return data.get('power_state', driver.Guest.power_state)

    def _set_power(self, host, instance_uuid, state):
        """Rewrite the guest's record with its new power state."""
        path = self._record(instance_uuid)
        with self._lock:
            try:
                with open(path) as f:
                    data = json.load(f)
                data['power_state'] = state
                tmp = path + '.tmp'
                with open(tmp, 'w') as f:
                    json.dump(data, f)
                os.replace(tmp, path)
            except (OSError, ValueError):
                raise driver.GuestNotFound(uuid=instance_uuid, host=host)
