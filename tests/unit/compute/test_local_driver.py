# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The local driver on a made-up sysfs/procfs tree."""

import json
import logging
import os
import shutil

import pytest

from services.compute.virt import driver
from services.compute.virt import local

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Berth Test CPU
flags\t\t: fpu sse sse2 pni sse4_2 avx2 vmx aes
"""


def _write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as f:
        f.write(text)


@pytest.fixture
def machine(tmp_path, conf):
    """2 nodes, 2 cores with 2 threads each, a NIC with one VF."""
    root = str(tmp_path / 'root')
    _write(root, 'sys/devices/system/cpu/online', '0-3\n')
    for cpu, siblings in ((0, '0,2'), (1, '1,3'), (2, '0,2'), (3, '1,3')):
        _write(root, 'sys/devices/system/cpu/cpu%d/topology/'
               'thread_siblings_list' % cpu, siblings)
    for node, cpus in ((0, '0,2'), (1, '1,3')):
        base = 'sys/devices/system/node/node%d/' % node
        _write(root, base + 'cpulist', cpus)
        _write(root, base + 'meminfo',
               'Node %d MemTotal:  4194304 kB\nNode %d MemFree: 1 kB\n'
               % (node, node))
    _write(root, 'sys/devices/system/node/node0/hugepages/'
           'hugepages-2048kB/nr_hugepages', '16')
    _write(root, 'proc/meminfo', 'MemTotal:  8388608 kB\n'
           'MemAvailable:  4194304 kB\n')
    _write(root, 'proc/cpuinfo', CPUINFO)
    pci = 'sys/bus/pci/devices/'
    for address, device in (('0000:81:00.0', '0x1572'),
                            ('0000:81:02.0', '0x154c'),
                            ('0000:00:1f.0', '0x2000')):
        _write(root, pci + address + '/vendor', '0x8086')
        _write(root, pci + address + '/device', device)
        _write(root, pci + address + '/numa_node', '1')
    _write(root, pci + '0000:81:00.0/sriov_totalvfs', '1')
    os.symlink('../0000:81:00.0', os.path.join(root, pci,
                                               '0000:81:02.0/physfn'))
    conf.config(instances_path=str(tmp_path / 'instances'))
    return local.LocalDriver(conf.conf, root=root)


def test_resources(machine):
    res = machine.get_available_resource('cn', 'cn')
    assert (res.vcpus, res.pcpus, res.memory_mb) == (4, 0, 8192)
    assert res.memory_mb_used == 4096
    assert res.local_gb > 0
    cell0, cell1 = res.numa_topology.cells
    assert (cell0.cpuset, cell1.cpuset) == ({0, 2}, {1, 3})
    assert cell0.siblings == [{0, 2}]
    assert cell0.memory == 4096
    assert cell0.pages(2048).total == 16 and cell1.pages(2048) is None
    assert {'HW_CPU_HYPERTHREADING', 'HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE42',
            'HW_CPU_X86_SSE3', 'HW_CPU_X86_VMX', 'HW_CPU_X86_AESNI',
            'COMPUTE_NODE'} <= res.traits
    assert res.cpu_info['model'] == 'Berth Test CPU'
    assert res.hypervisor_type == 'local'
    assert res.pci_devices == []


def test_without_numa_nodes(machine):
    shutil.rmtree(os.path.join(machine.root, 'sys/devices/system/node'))
    cell, = machine.get_available_resource('cn', 'cn').numa_topology.cells
    assert cell.cpuset == {0, 1, 2, 3} and cell.memory == 8192


def test_cpu_sets(machine, conf):
    conf.config(group='compute', cpu_dedicated_set='2-3')
    res = machine.get_available_resource('cn', 'cn')
    assert (res.vcpus, res.pcpus) == (2, 2)


def test_device_spec_selects_devices(machine, conf):
    conf.config(group='pci', device_spec=[json.dumps({
        'vendor_id': '8086', 'address': '0000:81:*',
        'physical_network': 'physnet1'})])
    devices = machine.get_available_resource('cn', 'cn').pci_devices
    by_address = {d['address']: d for d in devices}
    assert set(by_address) == {'0000:81:00.0', '0000:81:02.0'}
    assert by_address['0000:81:00.0']['dev_type'] == 'type-PF'
    vf = by_address['0000:81:02.0']
    assert (vf['dev_type'], vf['parent_addr'], vf['numa_node'],
            vf['physical_network']) == ('type-VF', '0000:81:00.0', 1,
                                        'physnet1')


def test_guests_are_records(machine, conf):
    guest = driver.Guest(uuid='u1', host='cn', nodename='cn',
                         pci_devices=['0000:81:02.0'])
    machine.spawn(guest)
    assert machine.list_guests('cn') == {'u1': guest}
    machine.destroy('cn', 'u1')
    assert machine.list_guests('cn') == {}
    assert not os.listdir(conf.conf.instances_path)


def test_interrupted_deletes_are_finished(machine, conf, caplog):
    caplog.set_level(logging.INFO)
    leftover = os.path.join(conf.conf.instances_path, 'u2_del')
    os.makedirs(leftover)
    machine.init_host('cn')
    assert not os.path.exists(leftover)
    assert 'Deletion of %s complete' % leftover in caplog.text
