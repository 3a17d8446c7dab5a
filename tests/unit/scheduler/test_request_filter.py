# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The placement query each request spec turns into."""

import pytest

from common.conf import CONF
from common.objects import request_spec as spec_obj
from services.scheduler import request_filter
from tests.unit.scheduler import fakes


class View(object):
    """The aggregates and host lookups the request filters consult."""

    def __init__(self, aggregates=(), hosts=None):
        self._aggregates = list(aggregates)
        self._hosts = hosts or {}

    def aggregates(self, context=None):
        return self._aggregates

    def compute_uuids(self, host, node=None, context=None):
        return self._hosts.get(host, [])


@pytest.fixture
def conf():
    """Set [scheduler] options for one test, restoring them after."""
    names = []

    def set_override(name, value, group='scheduler'):
        CONF.set_override(name, value, group=group)
        names.append((name, group))
    yield set_override
    for name, group in names:
        CONF.clear_override(name, group=group)


def params(spec, view=None):
    query = request_filter.build_query(None, spec, view or View())
    return dict(query.to_params()), query


@pytest.mark.parametrize('spec_kwargs,extra,expected', [
    # Plain flavor: VCPU, MEMORY_MB and DISK_GB.
    (dict(vcpus=2, memory_mb=2048, root_gb=20), {},
     'DISK_GB:20,MEMORY_MB:2048,VCPU:2'),
    # Dedicated CPUs are PCPU.
    (dict(vcpus=4, memory_mb=1024, root_gb=0),
     {'hw:cpu_policy': 'dedicated'}, 'MEMORY_MB:1024,PCPU:4'),
    # Mixed: the dedicated mask's CPUs are PCPU, the rest VCPU.
    (dict(vcpus=4, memory_mb=1024, root_gb=0),
     {'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '^0-1'},
     'MEMORY_MB:1024,PCPU:2,VCPU:2'),
    # Isolated emulator threads: one more PCPU (Nova: 2 vCPUs, PCPU 3).
    (dict(vcpus=2, memory_mb=1024, root_gb=0),
     {'hw:cpu_policy': 'dedicated', 'hw:emulator_threads_policy': 'isolate'},
     'MEMORY_MB:1024,PCPU:3'),
    (dict(vcpus=4, memory_mb=1024, root_gb=0),
     {'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '^0-1',
      'hw:emulator_threads_policy': 'isolate'},
     'MEMORY_MB:1024,PCPU:3,VCPU:2'),
    # ... and share asks for nothing extra.
    (dict(vcpus=2, memory_mb=1024, root_gb=0),
     {'hw:cpu_policy': 'dedicated', 'hw:emulator_threads_policy': 'share'},
     'MEMORY_MB:1024,PCPU:2'),
    # resources:VCPU=0 removes the class; overrides replace amounts.
    (dict(vcpus=2, memory_mb=1024, root_gb=0),
     {'resources:VCPU': '0', 'resources:CUSTOM_BAREMETAL': '1'},
     'CUSTOM_BAREMETAL:1,MEMORY_MB:1024'),
])
def test_flavor_resources(spec_kwargs, extra, expected):
    spec = fakes.spec(extra_specs=extra, **spec_kwargs)
    assert params(spec)[0]['resources'] == expected


@pytest.mark.parametrize('extra, image, resources, required', [
    ({'hw:mem_encryption': 'true'}, {'hw_firmware_type': 'uefi'},
     'MEMORY_MB:512,MEM_ENCRYPTION_CONTEXT:1,VCPU:1', None),
    ({}, {'hw_mem_encryption': 'true', 'hw_firmware_type': 'uefi'},
     'MEMORY_MB:512,MEM_ENCRYPTION_CONTEXT:1,VCPU:1', None),
    ({'hw:tpm_version': '2.0', 'hw:tpm_model': 'tpm-crb'}, {},
     'MEMORY_MB:512,VCPU:1',
     'COMPUTE_SECURITY_TPM_2_0,COMPUTE_SECURITY_TPM_CRB'),
    ({}, {'hw_tpm_version': '1.2'}, 'MEMORY_MB:512,VCPU:1',
     'COMPUTE_SECURITY_TPM_1_2,COMPUTE_SECURITY_TPM_TIS'),
    ({'os:secure_boot': 'required'}, {}, 'MEMORY_MB:512,VCPU:1',
     'COMPUTE_SECURITY_UEFI_SECURE_BOOT'),
    ({'hw:pmem': 'SMALL,SMALL,LARGE'}, {},
     'CUSTOM_PMEM_NAMESPACE_LARGE:1,CUSTOM_PMEM_NAMESPACE_SMALL:2,'
     'MEMORY_MB:512,VCPU:1', None),
])
def test_guest_features_in_the_query(extra, image, resources, required):
    spec = fakes.spec(root_gb=0, extra_specs=extra, image_properties=image)
    result, query = params(spec)
    assert not query.impossible
    assert result['resources'] == resources
    expected = '!COMPUTE_STATUS_DISABLED'
    if required:
        expected = required + ',' + expected
    assert result['required'] == expected


@pytest.mark.parametrize('extra, image, reason', [
    ({'hw:mem_encryption': 'false'},
     {'hw_mem_encryption': 'true', 'hw_firmware_type': 'uefi'},
     'Flavor f1 has hw:mem_encryption extra spec explicitly set to false'),
    ({'accel:device_profile': 'p'}, {},
     'Extra spec accel:device_profile is not supported'),
])
def test_guest_feature_refusal_makes_the_request_impossible(extra, image,
                                                            reason):
    spec = fakes.spec(extra_specs=extra, image_properties=image)
    _result, query = params(spec)
    assert query.impossible.startswith(reason)


def test_isolated_emulator_threads_without_dedicated_cpus_impossible():
    spec = fakes.spec(extra_specs={'hw:emulator_threads_policy': 'isolate'})
    _result, query = params(spec)
    assert query.impossible.startswith(
        'An isolated CPU emulator threads option requires a dedicated CPU')


def test_swap_rounds_up_and_volume_backed_has_no_root_disk():
    spec = fakes.spec(vcpus=1, memory_mb=512, root_gb=10, is_bfv=True)
    spec.flavor.swap = 1500
    assert params(spec)[0]['resources'] == 'DISK_GB:2,MEMORY_MB:512,VCPU:1'


def test_granular_groups_traits_and_group_policy():
    spec = fakes.spec(extra_specs={
        'resources1:SRIOV_NET_VF': '1', 'resources2:SRIOV_NET_VF': '1',
        'trait1:CUSTOM_PHYSNET_A': 'required',
        'trait:HW_CPU_X86_AVX2': 'required',
        'trait:CUSTOM_SLOW': 'forbidden', 'group_policy': 'isolate'})
    result, _query = params(spec)
    assert result['resources1'] == 'SRIOV_NET_VF:1'
    assert result['resources2'] == 'SRIOV_NET_VF:1'
    assert result['required1'] == 'CUSTOM_PHYSNET_A'
    assert result['required'] == ('HW_CPU_X86_AVX2,!COMPUTE_STATUS_DISABLED,'
                                  '!CUSTOM_SLOW')
    assert result['group_policy'] == 'isolate'


def test_image_traits_and_thread_policy():
    spec = fakes.spec(extra_specs={'hw:cpu_policy': 'dedicated',
                                   'hw:cpu_thread_policy': 'isolate'},
                      image_properties={'trait:HW_CPU_X86_SSE': 'required'})
    required = params(spec)[0]['required']
    assert 'HW_CPU_X86_SSE' in required
    assert '!HW_CPU_HYPERTHREADING' in required


def test_zone_becomes_member_of_its_aggregates():
    az1 = fakes.aggregate(metadata={'availability_zone': 'az1'})
    other = fakes.aggregate(metadata={'availability_zone': 'az2'})
    spec = fakes.spec(availability_zone='az1')
    result, _query = params(spec, View([az1, other]))
    assert result['member_of'] == 'in:%s' % az1.uuid


def test_unknown_zone_cannot_be_placed():
    spec = fakes.spec(availability_zone='nowhere')
    _result, query = params(spec, View([]))
    assert query.impossible == 'availability zone nowhere has no hosts'


def test_default_zone_excludes_other_zones():
    az1 = fakes.aggregate(metadata={'availability_zone': 'az1'})
    spec = fakes.spec(availability_zone=CONF.default_availability_zone)
    result, _query = params(spec, View([az1]))
    assert result['member_of'] == '!in:%s' % az1.uuid


def test_tenant_isolation(conf):
    conf('limit_tenants_to_placement_aggregate', True)
    mine = fakes.aggregate(metadata={'filter_tenant_id': 'project-1'})
    theirs = fakes.aggregate(metadata={'filter_tenant_id2': 'project-9'})
    result, _q = params(fakes.spec(), View([mine, theirs]))
    assert result['member_of'] == 'in:%s' % mine.uuid
    conf('placement_aggregate_required_for_tenants', True)
    _r, query = params(fakes.spec(project_id='lonely'), View([mine]))
    assert query.impossible == 'project lonely is in no tenant aggregate'


def test_isolated_aggregates(conf):
    conf('enable_isolated_aggregate_filtering', True)
    gpu = fakes.aggregate(metadata={'trait:CUSTOM_GPU': 'required'})
    result, _q = params(fakes.spec(), View([gpu]))
    assert result['member_of'] == '!in:%s' % gpu.uuid
    spec = fakes.spec(extra_specs={'trait:CUSTOM_GPU': 'required'})
    result, _q = params(spec, View([gpu]))
    assert 'member_of' not in result


def test_forced_destination_is_a_tree_and_lifts_the_limit():
    spec = fakes.spec(requested_destination=spec_obj.Destination(
        host='cn1'))
    result, _q = params(spec, View(hosts={'cn1': ['uuid-cn1']}))
    assert result['in_tree'] == 'uuid-cn1'
    assert result['limit'] == str(CONF.scheduler.max_placement_results)
    forced = fakes.spec(force_hosts=['cn1'])
    assert 'limit' not in params(forced)[0]


def test_mixed_realtime_pins_the_realtime_vcpus():
    spec = fakes.spec(vcpus=4, memory_mb=1024, root_gb=0, extra_specs={
        'hw:cpu_policy': 'mixed', 'hw:cpu_realtime': 'yes',
        'hw:cpu_realtime_mask': '^0'})
    assert params(spec)[0]['resources'] == 'MEMORY_MB:1024,PCPU:3,VCPU:1'


def test_a_cpu_policy_the_api_refuses_cannot_be_placed():
    spec = fakes.spec(extra_specs={'hw:cpu_policy': 'shared'},
                      image_properties={'hw_cpu_policy': 'dedicated'})
    _result, query = params(spec)
    assert 'hw_cpu_policy' in query.impossible
