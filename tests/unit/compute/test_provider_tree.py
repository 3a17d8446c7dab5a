# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The provider tree a node wants: inventories, children, traits."""

import json
import uuid

import pytest

from services.compute import provider_tree
from services.compute import usage
from services.compute.virt import fake

ROOT = str(uuid.uuid4())


def _tree(conf, **fake_options):
    conf.config(group='fake_driver', **fake_options)
    drv = fake.FakeDriver(conf.conf)
    res = drv.get_available_resource('cn', 'cn')
    return provider_tree.build(ROOT, 'cn', res, conf.conf,
                               usage.configured_ratios(conf.conf),
                               usage.initial_ratios(conf.conf))


def test_seed_a11_inventory(conf):
    """2 pCPUs, 3944 MB, 38 GB; ratios 4/1/1 (Nova 34); 512 MB reserved."""
    root, = _tree(conf, vcpus=2, memory_mb=3944, disk_gb=38)
    assert root.uuid == ROOT and root.name == 'cn'
    # NOTE: ratios unset: None means "placement's, else the initial one".
    assert root.inventory == {
        'VCPU': provider_tree.inventory(2, 0, None),
        'MEMORY_MB': provider_tree.inventory(3944, 512, None),
        'DISK_GB': provider_tree.inventory(38, 0, None)}
    assert root.initial_ratios == {'cpu': 4.0, 'ram': 1.0, 'disk': 1.0}
    assert root.inventory['VCPU']['max_unit'] == 2


def test_seed_a9_max_unit_is_physical(conf):
    """Ratio 4 on 2 pCPUs: capacity 8, but max_unit stays 2 (seed B9)."""
    conf.config(cpu_allocation_ratio=4.0)
    root, = _tree(conf, vcpus=2)
    vcpu = root.inventory['VCPU']
    assert (vcpu['total'], vcpu['max_unit'], vcpu['allocation_ratio'],
            vcpu['reserved'], vcpu['min_unit'], vcpu['step_size']) == (
        2, 2, 4.0, 0, 1, 1)


def test_reservations(conf):
    conf.config(reserved_host_cpus=1, reserved_host_memory_mb=1024,
                reserved_host_disk_mb=1500)
    root, = _tree(conf)
    assert root.inventory['VCPU']['reserved'] == 1
    assert root.inventory['MEMORY_MB']['reserved'] == 1024
    assert root.inventory['DISK_GB']['reserved'] == 2


def test_reserved_is_clipped_to_total(conf):
    conf.config(reserved_host_cpus=16)
    root, = _tree(conf)
    assert root.inventory['VCPU']['reserved'] == 8


def test_pcpu_and_vcpu_from_cpu_sets(conf):
    conf.config(group='compute', cpu_dedicated_set='2-7',
                cpu_shared_set='0-1')
    root, = _tree(conf)
    assert root.inventory['VCPU']['total'] == 2
    assert root.inventory['PCPU'] == provider_tree.inventory(6)


def test_empty_classes_are_left_out(conf):
    conf.config(group='compute', cpu_dedicated_set='0-7')
    root, = _tree(conf, disk_gb=0)
    assert set(root.inventory) == {'PCPU', 'MEMORY_MB'}


def test_numa_children(conf):
    conf.config(group='compute', numa_nodes_in_placement=True,
                cpu_dedicated_set='4-7')
    root, numa0, numa1 = _tree(conf, numa_cells=2, memory_mb=8192)
    assert set(root.inventory) == {'DISK_GB'}
    assert numa0.name == 'cn_NUMA0' and numa0.parent_uuid == ROOT
    assert numa0.uuid == provider_tree.child_uuid(ROOT, 'cn_NUMA0')
    assert numa0.traits == {'HW_NUMA_ROOT'}
    assert numa0.inventory['VCPU']['total'] == 4
    assert 'PCPU' not in numa0.inventory
    assert numa1.inventory['PCPU']['total'] == 4
    assert numa0.inventory['MEMORY_MB']['total'] == 4096
    # NOTE: the host's reservation sits on the first node.
    assert numa0.inventory['MEMORY_MB']['reserved'] == 512
    assert numa1.inventory['MEMORY_MB']['reserved'] == 0


def test_gpu_children(conf):
    conf.config(group='compute', numa_nodes_in_placement=True)
    gpus = [json.dumps({'address': '0000:25:00.4', 'numa_node': 1,
                        'mdev_type': 'nvidia-610', 'max_instances': 8}),
            json.dumps({'address': '0000:25:00.5', 'numa_node': None,
                        'mdev_type': 'nvidia-610', 'max_instances': 2})]
    providers = _tree(conf, numa_cells=2, gpu=gpus)
    by_name = {p.name: p for p in providers}
    gpu = by_name['cn_pci_0000_25_00_4']
    assert gpu.parent_uuid == by_name['cn_NUMA1'].uuid
    assert gpu.inventory == {'VGPU': provider_tree.inventory(8)}
    assert gpu.traits == {'CUSTOM_NVIDIA_610'}
    assert by_name['cn_pci_0000_25_00_5'].parent_uuid == ROOT


def test_gpu_under_root_without_numa_providers(conf):
    gpus = [json.dumps({'address': '0000:25:00.4', 'numa_node': 0,
                        'mdev_type': 'nvidia-610', 'max_instances': 4})]
    root, gpu = _tree(conf, gpu=gpus)
    assert gpu.parent_uuid == ROOT and 'VCPU' in root.inventory


def test_pci_children(conf):
    conf.config(group='pci', report_in_placement=True)
    devices = [json.dumps({'address': '0000:81:00.0', 'vendor_id': '8086',
                           'product_id': '1572', 'vfs': 2,
                           'vf_product_id': '154c', 'traits': 'fast'}),
               json.dumps({'address': '0000:82:00.0', 'vendor_id': '10de',
                           'product_id': '1eb8',
                           'resource_class': 'sriov_net_vf'})]
    _root, nic, other = _tree(conf, pci_device=devices)
    assert nic.name == 'cn_0000:81:00.0'
    assert nic.inventory == {
        'CUSTOM_PCI_8086_154C': provider_tree.inventory(2)}
    assert nic.traits == {'COMPUTE_MANAGED_PCI_DEVICE', 'CUSTOM_FAST'}
    assert other.inventory == {'SRIOV_NET_VF': provider_tree.inventory(1)}


def test_disabled_service_trait(conf):
    drv = fake.FakeDriver(conf.conf)
    res = drv.get_available_resource('cn', 'cn')
    root, = provider_tree.build(ROOT, 'cn', res, conf.conf,
                                usage.configured_ratios(conf.conf),
                                usage.initial_ratios(conf.conf),
                                disabled=True)
    assert 'COMPUTE_STATUS_DISABLED' in root.traits


@pytest.mark.parametrize('trait, managed', [
    ('COMPUTE_NODE', True), ('HW_CPU_X86_AVX2', True),
    ('HW_NUMA_ROOT', True), ('CUSTOM_VGPU_PLACEMENT', False),
    ('STORAGE_DISK_SSD', False)])
def test_managed_traits(trait, managed):
    assert provider_tree.is_managed(trait) is managed
