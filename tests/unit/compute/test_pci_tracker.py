# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Which instance holds which PCI device, and claims with NUMA affinity."""

import json

import pytest

from services.compute import pci_tracker
from services.compute.virt import fake

NIC = {'address': '0000:81:00.0', 'vendor_id': '8086',
       'product_id': '1572', 'vfs': 2, 'vf_product_id': '154c',
       'numa_node': 1, 'physical_network': 'physnet1'}
GPU = {'address': '0000:3b:00.0', 'vendor_id': '10de',
       'product_id': '1eb8', 'numa_node': 0}
VF = [{'count': 1, 'spec': [{'vendor_id': '8086', 'product_id': '154c'}]}]
PF = [{'count': 1, 'spec': [{'vendor_id': '8086', 'product_id': '1572',
                             'dev_type': 'type-PF'}]}]


@pytest.fixture
def tracker():
    made = pci_tracker.PciTracker()
    made.set_devices(fake.pci_devices([json.dumps(NIC), json.dumps(GPU)]))
    return made


def _counts(tracker):
    return {(p['product_id'], p['dev_type']): p['count']
            for p in tracker.pools()}


def test_pools_count_free_devices(tracker):
    assert _counts(tracker) == {('1572', 'type-PF'): 1,
                                ('154c', 'type-VF'): 2,
                                ('1eb8', 'type-PCI'): 1}
    vf_pool = next(p for p in tracker.pools() if p['dev_type'] == 'type-VF')
    assert vf_pool['tags'] == {'physical_network': 'physnet1'}


def test_a_vf_in_use_takes_its_pf(tracker):
    got = tracker.claim('i1', VF)
    assert got == ['0000:81:10.0']
    assert _counts(tracker)[('1572', 'type-PF')] == 0
    with pytest.raises(pci_tracker.PciDeviceRequestFailed):
        tracker.claim('i2', PF)
    tracker.release('i1')
    assert tracker.claim('i2', PF) == ['0000:81:00.0']
    assert _counts(tracker)[('154c', 'type-VF')] == 0


def test_required_numa_policy(tracker):
    required = [dict(VF[0], numa_policy='required')]
    with pytest.raises(pci_tracker.PciDeviceRequestFailed):
        tracker.claim('i1', required, cell_ids=[0])
    assert tracker.claim('i1', required, cell_ids=[1])


def test_known_devices_come_back(tracker):
    assert tracker.assign('i1', ['0000:81:10.1'])
    assert tracker.addresses_of('i1') == ['0000:81:10.1']
    assert not tracker.assign('i2', ['0000:81:10.1'])
    assert not tracker.assign('i2', ['0000:99:00.0'])
