# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The allocation candidates query and a flavor's placement resources."""

from common.placement import query as placement_query
from common.placement import resources
from tests.unit.scheduler import fakes


def _full_query():
    query = placement_query.PlacementQuery()
    query.unsuffixed.resources.update({'VCPU': 2, 'MEMORY_MB': 512,
                                       'DISK_GB': 0})
    query.unsuffixed.required.update({'HW_CPU_X86_AVX2', 'A_TRAIT'})
    query.unsuffixed.forbidden.add('COMPUTE_STATUS_DISABLED')
    query.unsuffixed.any_of.append({'T2', 'T1'})
    query.unsuffixed.member_of.extend([{'agg-b', 'agg-a'}, {'agg-c'}])
    query.unsuffixed.forbidden_aggregates.update({'agg-z', 'agg-y'})
    query.unsuffixed.in_tree = 'root-uuid'
    net = query.group('_NET')
    net.resources['SRIOV_NET_VF'] = 1
    net.required.add('CUSTOM_PHYSNET_A')
    query.group('1').resources['CUSTOM_GPU'] = 1
    query.group_policy = 'isolate'
    query.root_required.add('STORAGE_DISK_SSD')
    query.root_forbidden.add('COMPUTE_STATUS_DISABLED')
    query.same_subtree.append(['_NET', '1'])
    query.limit = 50
    return query


def test_every_parameter_in_order_repeated_names_kept():
    assert _full_query().to_params() == [
        ('resources', 'MEMORY_MB:512,VCPU:2'),
        ('required', 'A_TRAIT,HW_CPU_X86_AVX2,!COMPUTE_STATUS_DISABLED'),
        ('required', 'in:T1,T2'),
        ('member_of', 'in:agg-a,agg-b'),
        ('member_of', 'in:agg-c'),
        ('member_of', '!in:agg-y,agg-z'),
        ('in_tree', 'root-uuid'),
        ('resources1', 'CUSTOM_GPU:1'),
        ('resources_NET', 'SRIOV_NET_VF:1'),
        ('required_NET', 'CUSTOM_PHYSNET_A'),
        ('group_policy', 'isolate'),
        ('root_required', 'STORAGE_DISK_SSD,!COMPUTE_STATUS_DISABLED'),
        ('same_subtree', '_NET,1'),
        ('limit', '50'),
    ]


def test_an_empty_query_asks_nothing_and_describes_itself():
    query = placement_query.PlacementQuery()
    assert query.to_params() == [] and query.describe() == ''
    assert query.unsuffixed.is_empty()
    query.limit = 3
    query.unsuffixed.resources['VCPU'] = 1
    assert query.describe() == 'resources=VCPU:1&limit=3'


def test_flavor_resources_dedicated_cpus_granular_groups_and_policy():
    spec = fakes.spec(vcpus=4, memory_mb=1024, root_gb=10, extra_specs={
        'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '^0',
        'resources:DISK_GB': '0', 'resources1:CUSTOM_GPU': '2',
        'resources2:CUSTOM_FPGA': 'many', 'group_policy': 'none'})
    query = placement_query.PlacementQuery()
    resources.flavor_resources(spec, query)
    assert query.impossible is None
    assert query.unsuffixed.resources == {'VCPU': 1, 'PCPU': 3,
                                          'MEMORY_MB': 1024}
    assert query.groups['1'].resources == {'CUSTOM_GPU': 2}
    # NOTE: a value that is no integer is skipped, not sent to placement.
    assert '2' not in query.groups
    assert query.group_policy == 'none'


def test_a_request_the_numa_rules_refuse_cannot_be_placed():
    spec = fakes.spec(vcpus=2, extra_specs={
        'hw:cpu_policy': 'dedicated', 'hw:cpu_dedicated_mask': '^0'})
    query = placement_query.PlacementQuery()
    resources.flavor_resources(spec, query)
    assert query.impossible
    assert query.unsuffixed.resources == {}


def test_cpu_needs_reads_thread_policy_and_dedicated_count():
    spec = fakes.spec(vcpus=4, extra_specs={
        'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'require'})
    assert resources.cpu_needs(spec) == ('require', 4)
