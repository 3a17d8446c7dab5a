# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The fake driver: simulated hosts as ``[fake_driver]`` describes them."""

import json

import pytest

from common import exception
from services.compute import virt
from services.compute.virt import driver
from services.compute.virt import fake


def _resources(conf, host=None):
    drv = fake.FakeDriver(conf.conf)
    host = host or drv.hosts()[0]
    return drv, drv.get_available_resource(host, host)


def test_one_host_is_the_configured_host(conf):
    assert fake.FakeDriver(conf.conf).hosts() == ['cn']


def test_many_hosts_follow_the_pattern(conf):
    conf.config(group='fake_driver', host_count=3,
                host_name_pattern='node{index:02d}')
    assert fake.FakeDriver(conf.conf).hosts() == ['node00', 'node01',
                                                  'node02']


def test_an_explicit_pattern_names_even_one_host(conf):
    conf.config(group='fake_driver', host_name_pattern='stack-host{number}')
    assert fake.FakeDriver(conf.conf).hosts() == ['stack-host1']


def test_bad_pattern_is_a_configuration_error(conf):
    conf.config(group='fake_driver', host_count=2,
                host_name_pattern='{nope}')
    with pytest.raises(exception.ConfigurationError):
        fake.FakeDriver(conf.conf)


def test_seed_host_layout(conf):
    """osdev-01: 72 threads, 2 nodes, sibling of CPU i is i + 36."""
    conf.config(group='fake_driver', vcpus=72, threads_per_core=2,
                numa_cells=2, memory_mb=391844)
    _drv, res = _resources(conf)
    cell0, cell1 = res.numa_topology.cells
    assert cell0.cpuset == set(range(0, 18)) | set(range(36, 54))
    assert cell1.cpuset == set(range(18, 36)) | set(range(54, 72))
    assert {0, 36} in cell0.siblings and {35, 71} in cell1.siblings
    assert res.numa_topology.has_threads
    assert 'HW_CPU_HYPERTHREADING' in res.traits
    # NOTE: legacy layout (no cpu_*_set): pinned and floating share CPUs.
    assert cell0.pcpuset == cell0.cpuset
    assert (res.vcpus, res.pcpus) == (72, 0)


def test_adjacent_numbering(conf):
    conf.config(group='fake_driver', vcpus=8, threads_per_core=2,
                sibling_numbering='adjacent')
    _drv, res = _resources(conf)
    assert res.numa_topology.cells[0].siblings == [{0, 1}, {2, 3}, {4, 5},
                                                   {6, 7}]


def test_cpu_sets_split_vcpu_and_pcpu(conf):
    conf.config(group='compute', cpu_dedicated_set='4-7',
                cpu_shared_set='0-1')
    _drv, res = _resources(conf)
    cell = res.numa_topology.cells[0]
    assert (cell.cpuset, cell.pcpuset) == ({0, 1}, {4, 5, 6, 7})
    assert (res.vcpus, res.pcpus) == (2, 4)


def test_dedicated_set_alone_leaves_the_rest_shared(conf):
    conf.config(group='compute', cpu_dedicated_set='2-7')
    _drv, res = _resources(conf)
    assert (res.vcpus, res.pcpus) == (2, 6)


@pytest.mark.parametrize('options', [
    {'cpu_dedicated_set': '0-3', 'cpu_shared_set': '3-5'},
    {'cpu_dedicated_set': '6-9'},
    {'cpu_shared_set': 'x'},
])
def test_bad_cpu_sets(conf, options):
    conf.config(group='compute', **options)
    with pytest.raises(exception.ConfigurationError):
        fake.FakeDriver(conf.conf)


def test_uneven_cores_are_refused(conf):
    conf.config(group='fake_driver', vcpus=6, threads_per_core=2,
                numa_cells=2)
    with pytest.raises(exception.ConfigurationError):
        fake.FakeDriver(conf.conf)


def test_hugepages_per_node(conf):
    conf.config(group='fake_driver', numa_cells=2, memory_mb=8192,
                hugepages=['2048:512', '1048576:1'])
    _drv, res = _resources(conf)
    pages = {p.size_kb: p.total for p in res.numa_topology.cells[0].mempages}
    # NOTE: 4096 MiB per node: 1 GiB + 1 GiB of huge pages, 2 GiB small.
    assert pages == {4: 2 * 1024 * 1024 // 4, 2048: 512, 1048576: 1}


def test_pci_functions_are_expanded(conf):
    conf.config(group='fake_driver', pci_device=[json.dumps({
        'address': '0000:81:00.0', 'vendor_id': '8086',
        'product_id': '1572', 'vfs': 3, 'vf_product_id': '154c',
        'numa_node': 1, 'physical_network': 'physnet1'})])
    _drv, res = _resources(conf)
    pf, *vfs = res.pci_devices
    assert pf['dev_type'] == 'type-PF' and len(vfs) == 3
    assert {v['parent_addr'] for v in vfs} == {'0000:81:00.0'}
    assert {v['product_id'] for v in vfs} == {'154c'}
    assert len({v['address'] for v in vfs}) == 3
    assert all(v['numa_node'] == 1 and v['physical_network'] == 'physnet1'
               for v in vfs)


def test_bad_device_option(conf):
    conf.config(group='fake_driver', gpu=['{"numa_node": 0}'])
    with pytest.raises(exception.ConfigurationError):
        fake.FakeDriver(conf.conf)


def test_record_fields(conf):
    _drv, res = _resources(conf)
    assert res.nodename == res.hypervisor_hostname == 'cn'
    assert res.supported_instances == [['x86_64', 'fake', 'hvm']]
    assert {'COMPUTE_NODE', 'COMPUTE_ARCH_X86_64',
            'COMPUTE_IMAGE_TYPE_RAW'} <= res.traits


def _guest(host='cn'):
    return driver.Guest(uuid='u1', host=host, nodename=host)


def test_spawn_and_destroy(conf):
    drv = fake.FakeDriver(conf.conf)
    drv.spawn(_guest())
    assert list(drv.list_guests('cn')) == ['u1']
    drv.destroy('cn', 'u1')
    drv.destroy('cn', 'u1')
    assert drv.list_guests('cn') == {}


def test_fail_hosts_always_fail(conf):
    conf.config(group='fake_driver', fail_hosts=['cn'])
    with pytest.raises(driver.InstanceSpawnError, match='fail_hosts'):
        fake.FakeDriver(conf.conf).spawn(_guest())


def test_failure_rate(conf):
    conf.config(group='fake_driver', spawn_failure_rate=1.0)
    with pytest.raises(driver.InstanceSpawnError, match='simulated'):
        fake.FakeDriver(conf.conf).spawn(_guest())


def test_drivers_load_by_entry_point(conf):
    assert isinstance(virt.load_driver(conf.conf), fake.FakeDriver)
    with pytest.raises(driver.DriverNotFound):
        virt.load_driver(conf.conf, 'nope')
