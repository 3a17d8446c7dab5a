# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""[filter_scheduler] pci_in_placement: flavor PCI aliases as groups."""

import json

import pytest

from common.conf import CONF
from common.placement import pci_groups
from services.api import boot
from services.api import errors
from services.api import pci_requests
from services.scheduler import request_filter
from tests.unit.scheduler import fakes

NIC = {'name': 'nic', 'vendor_id': '8086', 'product_id': '154c',
       'device_type': 'type-VF'}
GPU = {'name': 'gpu', 'vendor_id': '10de', 'product_id': '1eb8',
       'resource_class': 'big gpu', 'traits': 'HW_GPU_API_VULKAN,fast'}


class View(object):
    def aggregates(self, context=None):
        return []

    def compute_uuids(self, host, node=None, context=None):
        return []


def _requests(override, aliases, spec_value):
    override('alias', [json.dumps(a) for a in aliases], group='pci')
    return pci_requests.from_flavor(
        CONF, {'pci_passthrough:alias': spec_value})


def _params(requests, extra_specs=None):
    spec = fakes.spec(vcpus=2, memory_mb=1024, root_gb=0,
                      extra_specs=extra_specs, pci_requests=requests)
    query = request_filter.build_query(None, spec, View())
    return query.to_params()


def test_each_device_is_one_group(override):
    override('pci_in_placement', True, group='filter_scheduler')
    requests = _requests(override, [NIC, GPU], 'nic:2, gpu:1')
    params = _params(requests)
    assert ('resources_pci0_0', 'CUSTOM_PCI_8086_154C:1') in params
    assert ('resources_pci0_1', 'CUSTOM_PCI_8086_154C:1') in params
    assert ('resources_pci1_0', 'CUSTOM_BIG_GPU:1') in params
    # Standard traits are kept, others normalized to CUSTOM_.
    assert ('required_pci1_0', 'CUSTOM_FAST,HW_GPU_API_VULKAN') in params
    assert not any(name in ('required_pci0_0', 'required_pci0_1')
                   for name, _value in params)
    # Several numbered groups need a policy; Nova defaults to none.
    assert ('group_policy', 'none') in params
    # The flavor's own resources stay in the unsuffixed group.
    assert ('resources', 'MEMORY_MB:1024,VCPU:2') in params


def test_flavor_group_policy_wins(override):
    override('pci_in_placement', True, group='filter_scheduler')
    requests = _requests(override, [NIC], 'nic:2')
    params = _params(requests, {'group_policy': 'isolate'})
    assert ('group_policy', 'isolate') in params
    assert ('group_policy', 'none') not in params


def test_standard_resource_class_kept(override):
    override('pci_in_placement', True, group='filter_scheduler')
    requests = _requests(override, [dict(NIC, resource_class='sriov_net_vf')],
                         'nic')
    assert ('resources_pci0_0', 'SRIOV_NET_VF:1') in _params(requests)


def test_option_off_changes_nothing(override):
    assert CONF.filter_scheduler.pci_in_placement is False
    requests = _requests(override, [NIC, GPU], 'nic:2,gpu:1')
    params = _params(requests)
    assert not any('_pci' in name for name, _value in params)
    assert not any(name == 'group_policy' for name, _value in params)
    assert params == _params([])


def test_placement_keys_are_not_matched_against_devices(override):
    requests = _requests(override, [GPU], 'gpu')
    assert requests[0]['spec'] == [{'vendor_id': '10de',
                                    'product_id': '1eb8'}]
    assert requests[0]['resource_class'] == 'big gpu'
    assert pci_groups.request_class(requests[0]) == 'CUSTOM_BIG_GPU'


def test_repeated_alias_refused_only_in_placement(override):
    other = dict(NIC, product_id='10ca')
    # Without placement, two definitions are alternatives.
    requests = _requests(override, [NIC, other], 'nic')
    assert len(requests[0]['spec']) == 2
    override('pci_in_placement', True, group='filter_scheduler')
    with pytest.raises(pci_requests.InvalidPCIAlias,
                       match='nic is defined more than once'):
        _requests(override, [NIC, other], 'nic')


@pytest.mark.parametrize('suffix, parsed', [
    ('_pci0_0', (0, 0)), ('_pci12_3', (12, 3)), ('1', None),
    ('_pci0', None), ('', None)])
def test_parse_suffix(suffix, parsed):
    assert pci_groups.parse_suffix(suffix) == parsed
    if parsed:
        assert pci_groups.group_suffix(*parsed) == suffix


def test_boot_of_a_repeated_alias_is_a_400(override):
    override('alias', [json.dumps(NIC),
                       json.dumps(dict(NIC, product_id='10ca'))], group='pci')
    override('pci_in_placement', True, group='filter_scheduler')
    flavor = {'extra_specs': {'pci_passthrough:alias': 'nic:1'}}
    with pytest.raises(errors.BadRequest) as caught:
        boot.pci_for_boot(CONF, flavor)
    assert caught.value.status == 400
    assert 'PCI alias nic is defined more than once' in str(caught.value)
