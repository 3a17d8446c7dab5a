# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""get_constraints: flavor and image to a guest NUMA topology (API time).

The validation scenarios of doc/behaviours.md (A23, B11) and the
flavor-over-image precedence tables (§numa-constraints).
"""

import json

import pytest

from common.numa import constraints
from common.numa import cpulist
from common.numa import exception
from common.numa import topology
from common.objects import image as image_obj
from tests.unit.numa import fakes


def _get(vcpus=4, memory=1024, specs=None, props=None):
    flavor = fakes.flavor(vcpus, memory, **(specs or {}))
    image = image_obj.ImageMeta(id='i', properties=dict(props or {}))
    return constraints.get_constraints(flavor, image)


def _cells(result):
    return [(sorted(c.cpuset), sorted(c.pcpuset), c.memory)
            for c in result.cells]


def test_no_numa_request_gives_no_topology():
    assert _get() is None
    assert _get(specs={'hw:cpu_policy': 'shared'}) is None
    assert _get(props={'hw_cpu_policy': 'shared'}) is None


def test_dedicated_alone_implies_one_cell():
    """A23: ``hw:cpu_policy=dedicated`` alone: one cell, all vCPUs/RAM."""
    result = _get(specs={'hw:cpu_policy': 'dedicated'})
    assert _cells(result) == [([], [0, 1, 2, 3], 1024)]
    assert result.cells[0].cpu_policy == 'dedicated'
    assert result.cells[0].cpu_pinning is None


def test_image_dedicated_alone_implies_one_cell():
    result = _get(props={'hw_cpu_policy': 'dedicated'})
    assert _cells(result) == [([], [0, 1, 2, 3], 1024)]


@pytest.mark.parametrize('specs, props, pagesize', [
    ({'hw:mem_page_size': 'large'}, {}, topology.LARGE),
    ({'hw:mem_page_size': 'small'}, {}, topology.SMALL),
    ({'hw:mem_page_size': 'any'}, {}, topology.ANY),
    ({'hw:mem_page_size': '1GB'}, {}, 1048576),
    ({'hw:mem_page_size': '2MB'}, {}, 2048),
    ({'hw:mem_page_size': '2048'}, {}, 2048),
    ({'hw:mem_page_size': '4KB'}, {}, 4),
    ({'hw:mem_page_size': '1048576'}, {}, 1048576),
])
def test_hugepages_alone_give_one_cell(specs, props, pagesize):
    """§6.2: requesting a page size alone creates a 1-node topology."""
    result = _get(specs=specs, props=props)
    assert _cells(result) == [([0, 1, 2, 3], [], 1024)]
    assert result.cells[0].pagesize == pagesize


@pytest.mark.parametrize('flavor_value, image_value, expected', [
    (None, '2MB', exception.MemoryPageSizeForbidden),
    ('any', '2MB', 2048),
    ('any', 'small', topology.SMALL),
    ('large', '1GB', 1048576),
    ('large', 'small', exception.MemoryPageSizeForbidden),
    ('large', 'any', exception.MemoryPageSizeForbidden),
    ('2048', '2MB', 2048),
    ('2048', '1GB', exception.MemoryPageSizeForbidden),
    ('small', 'large', exception.MemoryPageSizeForbidden),
    ('large', None, topology.LARGE),
])
def test_page_size_precedence(flavor_value, image_value, expected):
    specs = {} if flavor_value is None else {
        'hw:mem_page_size': flavor_value}
    props = {} if image_value is None else {'hw_mem_page_size': image_value}
    if isinstance(expected, type):
        with pytest.raises(expected) as info:
            _get(specs=specs, props=props)
        assert 'hw_mem_page_size' in str(info.value)
    else:
        assert _get(specs=specs, props=props).cells[0].pagesize == expected


@pytest.mark.parametrize('value', ['huge', '0', '2XB', '-4', '1.5GB'])
def test_invalid_page_size(value):
    with pytest.raises(exception.MemoryPageSizeInvalid) as info:
        _get(specs={'hw:mem_page_size': value})
    assert 'hw:mem_page_size' in str(info.value)


# NOTE: the flavor-over-image CPU policy table (§numa-constraints).
@pytest.mark.parametrize('flavor_value, image_value, expected', [
    ('dedicated', None, 'dedicated'),
    ('dedicated', 'shared', 'dedicated'),
    ('dedicated', 'dedicated', 'dedicated'),
    ('shared', 'dedicated', exception.ImageCPUPinningForbidden),
    ('shared', 'mixed', exception.ImageCPUPinningForbidden),
    ('shared', 'shared', None),
    ('shared', None, None),
    (None, 'dedicated', 'dedicated'),
    (None, 'shared', None),
    (None, None, None),
])
def test_cpu_policy_precedence(flavor_value, image_value, expected):
    specs = {} if flavor_value is None else {'hw:cpu_policy': flavor_value}
    props = {} if image_value is None else {'hw_cpu_policy': image_value}
    if isinstance(expected, type):
        with pytest.raises(expected) as info:
            _get(specs=specs, props=props)
        assert 'hw_cpu_policy' in str(info.value)
        return
    result = _get(specs=specs, props=props)
    if expected is None:
        assert result is None
    else:
        assert {c.cpu_policy for c in result.cells} == {expected}


# NOTE: the image's thread policy (§numa-constraints) only where the
# flavor's is unset; an explicit flavor prefer wins; isolate/require must
# be agreed.
@pytest.mark.parametrize('flavor_value, image_value, expected', [
    (None, None, None),
    (None, 'isolate', 'isolate'),
    (None, 'require', 'require'),
    ('prefer', None, 'prefer'),
    ('prefer', 'isolate', 'prefer'),
    ('isolate', None, 'isolate'),
    ('isolate', 'isolate', 'isolate'),
    ('isolate', 'require', exception.ImageCPUThreadPolicyForbidden),
    ('require', 'prefer', exception.ImageCPUThreadPolicyForbidden),
    ('require', None, 'require'),
])
def test_cpu_thread_policy_precedence(flavor_value, image_value, expected):
    specs = {'hw:cpu_policy': 'dedicated'}
    if flavor_value:
        specs['hw:cpu_thread_policy'] = flavor_value
    props = {} if image_value is None else {
        'hw_cpu_thread_policy': image_value}
    if isinstance(expected, type):
        with pytest.raises(expected) as info:
            _get(specs=specs, props=props)
        assert 'hw_cpu_thread_policy' in str(info.value)
        return
    result = _get(specs=specs, props=props)
    assert result.cells[0].cpu_thread_policy == expected


@pytest.mark.parametrize('key, source', [
    ('hw:cpu_thread_policy', 'flavor'), ('hw_cpu_thread_policy', 'image')])
@pytest.mark.parametrize('value', ['avoid', 'separate'])
def test_obsolete_thread_policy_rejected(key, source, value):
    """B11: ``avoid`` is a 400-class error naming the key, not a 500."""
    specs = {'hw:cpu_policy': 'dedicated'}
    props = {}
    (specs if source == 'flavor' else props)[key] = value
    with pytest.raises(exception.ObsoleteCPUThreadPolicy) as info:
        _get(vcpus=16, memory=64, specs=specs, props=props)
    assert isinstance(info.value, exception.NUMARequestInvalid)
    assert key in str(info.value)
    assert value in str(info.value)
    assert 'obsolete' in str(info.value)


def test_unknown_policies_rejected():
    with pytest.raises(exception.InvalidCPUThreadPolicy) as info:
        _get(specs={'hw:cpu_policy': 'dedicated',
                    'hw:cpu_thread_policy': 'spread'})
    assert 'prefer, isolate, require' in str(info.value)
    with pytest.raises(exception.InvalidCPUAllocationPolicy) as info:
        _get(specs={'hw:cpu_policy': 'pinned'})
    assert 'hw:cpu_policy' in str(info.value)


@pytest.mark.parametrize('specs, props, error, key', [
    # NOTE: the A23 list, in order.
    ({'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-1'}, {},
     exception.ImageNUMATopologyIncomplete, 'hw:numa_mem'),
    ({'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-3',
      'hw:numa_mem.0': '1024'}, {},
     exception.ImageNUMATopologyIncomplete, 'hw:numa_cpus'),
    ({'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0', 'hw:numa_cpus.1': '1',
      'hw:numa_mem.0': '512', 'hw:numa_mem.1': '512'}, {},
     exception.ImageNUMATopologyCPUsUnassigned, 'hw:numa_cpus'),
    ({'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-2',
      'hw:numa_cpus.1': '2-3', 'hw:numa_mem.0': '512',
      'hw:numa_mem.1': '512'}, {},
     exception.ImageNUMATopologyCPUDuplicates, 'hw:numa_cpus.1'),
    ({'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-1',
      'hw:numa_cpus.1': '2-3', 'hw:numa_mem.0': '512',
      'hw:numa_mem.1': '256'}, {},
     exception.ImageNUMATopologyMemoryOutOfRange, 'hw:numa_mem'),
    ({'hw:numa_nodes': '2'}, {'hw_numa_nodes': '2'},
     exception.ImageNUMATopologyForbidden, 'hw_numa_nodes'),
    ({'hw:cpu_policy': 'shared'}, {'hw_cpu_policy': 'dedicated'},
     exception.ImageCPUPinningForbidden, 'hw_cpu_policy'),
    ({'hw:cpu_thread_policy': 'isolate'}, {},
     exception.CPUThreadPolicyConfigurationInvalid, 'hw:cpu_thread_policy'),
    ({'hw:cpu_policy': 'shared'}, {'hw_cpu_thread_policy': 'require'},
     exception.CPUThreadPolicyConfigurationInvalid, 'hw_cpu_thread_policy'),
    ({'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate'},
     {'hw_cpu_thread_policy': 'require'},
     exception.ImageCPUThreadPolicyForbidden, 'hw_cpu_thread_policy'),
    ({'hw:cpu_realtime': 'yes', 'hw:cpu_realtime_mask': '^0'}, {},
     exception.RealtimeConfigurationInvalid, 'hw:cpu_realtime'),
    # NOTE: beyond A23: the other rules, one class each.
    ({'hw:numa_nodes': '3'}, {},
     exception.ImageNUMATopologyAsymmetric, 'hw:numa_nodes'),
    ({'hw:numa_nodes': '0'}, {},
     exception.InvalidNUMANodesNumber, 'hw:numa_nodes'),
    ({}, {'hw_numa_nodes': 'two'},
     exception.InvalidNUMANodesNumber, 'hw_numa_nodes'),
    ({'hw:numa_nodes': '1', 'hw:numa_cpus.0': '0-4',
      'hw:numa_mem.0': '1024'}, {},
     exception.ImageNUMATopologyCPUOutOfRange, 'hw:numa_cpus.0'),
    ({'hw:numa_nodes': '1', 'hw:numa_cpus.0': '0-3'},
     {'hw_numa_cpus.0': '0-3', 'hw_numa_mem.0': '1024'},
     exception.ImageNUMATopologyForbidden, 'hw_numa_cpus'),
    ({'hw:numa_nodes': '1', 'hw:numa_cpus.0': 'all',
      'hw:numa_mem.0': '1024'}, {},
     exception.InvalidNUMASpec, 'hw:numa_cpus.0'),
    ({'hw:cpu_policy': 'dedicated', 'hw:cpu_realtime': 'yes'}, {},
     exception.RealtimeMaskNotFoundOrInvalid, 'hw:cpu_realtime_mask'),
    ({'hw:cpu_policy': 'dedicated', 'hw:cpu_realtime': 'yes',
      'hw:cpu_realtime_mask': '0-3'}, {},
     exception.RealtimeMaskNotFoundOrInvalid, 'hw:cpu_realtime_mask'),
    ({'hw:cpu_policy': 'dedicated', 'hw:cpu_dedicated_mask': '0'}, {},
     exception.CPUDedicatedMaskConfigurationInvalid,
     'hw:cpu_dedicated_mask'),
    ({'hw:cpu_policy': 'mixed'}, {},
     exception.MixedCPUPolicyMaskMissing, 'hw:cpu_dedicated_mask'),
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '0-3'}, {},
     exception.MixedCPUPolicyMaskInvalid, 'hw:cpu_dedicated_mask'),
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '2-7'}, {},
     exception.MixedCPUPolicyMaskInvalid, 'hw:cpu_dedicated_mask'),
])
def test_invalid_requests(specs, props, error, key):
    """Each rule has its own error class, and the message names the key."""
    with pytest.raises(error) as info:
        _get(specs=specs, props=props)
    assert isinstance(info.value, exception.NUMARequestInvalid)
    assert key in str(info.value)


@pytest.mark.parametrize('specs, props, expected', [
    # NOTE: automatic mode: an even split from node 0.
    ({'hw:numa_nodes': '2'}, {}, [([0, 1], [], 512), ([2, 3], [], 512)]),
    ({}, {'hw_numa_nodes': '4'},
     [([0], [], 256), ([1], [], 256), ([2], [], 256), ([3], [], 256)]),
    # NOTE: manual mode: uneven splits, any vCPU order.
    ({'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0',
      'hw:numa_cpus.1': '1-3', 'hw:numa_mem.0': '256',
      'hw:numa_mem.1': '768'}, {},
     [([0], [], 256), ([1, 2, 3], [], 768)]),
    ({'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0,2',
      'hw:numa_cpus.1': '1,3', 'hw:numa_mem.0': '512',
      'hw:numa_mem.1': '512', 'hw:cpu_policy': 'dedicated'}, {},
     [([], [0, 2], 512), ([], [1, 3], 512)]),
    ({}, {'hw_numa_nodes': '2', 'hw_numa_cpus.0': '0-2',
          'hw_numa_cpus.1': '3', 'hw_numa_mem.0': '768',
          'hw_numa_mem.1': '256'},
     [([0, 1, 2], [], 768), ([3], [], 256)]),
    # NOTE: the flavor's node count with the image's layout.
    ({'hw:numa_nodes': '2'}, {'hw_numa_cpus.0': '0', 'hw_numa_cpus.1': '1-3',
                              'hw_numa_mem.0': '256',
                              'hw_numa_mem.1': '768'},
     [([0], [], 256), ([1, 2, 3], [], 768)]),
])
def test_multi_node_splits(specs, props, expected):
    result = _get(specs=specs, props=props)
    assert _cells(result) == expected
    assert [c.id for c in result.cells] == list(range(len(expected)))


def test_seed_machine_cpu_flavor():
    """A8: machine.cpu, 16 vCPUs on one node, with each thread policy."""
    for policy in ('prefer', 'isolate', 'require'):
        result = constraints.get_constraints(fakes.machine_cpu(**{
            'hw:cpu_policy': 'dedicated',
            'hw:cpu_thread_policy': policy}), None)
        assert _cells(result) == [([], list(range(16)), 64)]
        assert result.cells[0].cpu_thread_policy == policy
    shared = constraints.get_constraints(fakes.machine_cpu(), None)
    assert _cells(shared) == [(list(range(16)), [], 64)]
    assert shared.cells[0].cpu_thread_policy is None


@pytest.mark.parametrize('specs, dedicated, realtime', [
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '^0-1'},
     [2, 3], []),
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '1,3'},
     [1, 3], []),
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_realtime': 'yes',
      'hw:cpu_realtime_mask': '^0'}, [1, 2, 3], [1, 2, 3]),
    ({'hw:cpu_policy': 'dedicated', 'hw:cpu_realtime': 'true',
      'hw:cpu_realtime_mask': '^0-1'}, [0, 1, 2, 3], [2, 3]),
])
def test_mixed_and_realtime(specs, dedicated, realtime):
    result = _get(specs=specs)
    cell = result.cells[0]
    assert sorted(cell.pcpuset) == dedicated
    assert sorted(cell.cpuset) == sorted(set(range(4)) - set(dedicated))
    assert sorted(cell.cpu_realtime) == realtime


def test_image_realtime_mask_used_when_flavor_has_none():
    result = _get(specs={'hw:cpu_policy': 'dedicated',
                         'hw:cpu_realtime': 'yes'},
                  props={'hw_cpu_realtime_mask': '^0-1'})
    assert sorted(result.cells[0].cpu_realtime) == [2, 3]
    assert result.realtime_mask == '^0-1'


def test_thread_policy_and_pages_on_every_cell():
    result = _get(specs={'hw:numa_nodes': '2', 'hw:cpu_policy': 'dedicated',
                         'hw:cpu_thread_policy': 'require',
                         'hw:mem_page_size': '2MB'})
    assert [(c.cpu_thread_policy, c.pagesize) for c in result.cells] == [
        ('require', 2048), ('require', 2048)]


def test_primitive_survives_json():
    result = _get(specs={'hw:numa_nodes': '2', 'hw:cpu_policy': 'mixed',
                         'hw:cpu_dedicated_mask': '^0'})
    primitive = json.loads(json.dumps(result.to_primitive()))
    assert topology.InstanceTopology.from_primitive(primitive) == result


@pytest.mark.parametrize('spec, cpus', [
    ('4-12,^8,15', [4, 5, 6, 7, 9, 10, 11, 12, 15]),   # a CPU set
    ('0,1', [0, 1]), ('1-4,6', [1, 2, 3, 4, 6]), ('', []),
])
def test_cpu_list_syntax(spec, cpus):
    assert sorted(cpulist.parse_cpu_spec(spec)) == cpus
    assert cpulist.parse_cpu_spec(cpulist.format_cpu_spec(cpus)) == set(cpus)
    assert cpulist.format_cpu_spec(
        [0, 1, 2, 7, 8, 14, 15, 16]) == '0-2,7,8,14-16'
    assert cpulist.parse_cpu_mask('^0-1', range(4)) == {2, 3}
