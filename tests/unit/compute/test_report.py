# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The placement report client against the real placement application."""

import json
import uuid

import pytest

from common import context
from common.placement import client as placement_client
from services.compute import provider_tree
from services.compute import report

CTXT = context.get_admin_context()
V = 'placement 1.39'


@pytest.fixture
def client(conf, placement):
    return report.ReportClient(
        placement_client.PlacementClient(conf.conf, adapter=placement),
        refresh=300)


def _tree(root, name='cn', vcpus=4, ratio=None, gpu=True, traits=()):
    root_provider = provider_tree.Provider(
        uuid=root, name=name,
        inventory={'VCPU': provider_tree.inventory(vcpus, 0, ratio),
                   'MEMORY_MB': provider_tree.inventory(4096, 512, 1.5)},
        traits=frozenset(['COMPUTE_NODE'] + list(traits)),
        initial_ratios={'cpu': 16.0, 'ram': 1.5, 'disk': 1.0})
    providers = [root_provider]
    if gpu:
        name = '%s_pci_0000_25_00_4' % name
        providers.append(provider_tree.Provider(
            uuid=provider_tree.child_uuid(root, name), name=name,
            parent_uuid=root, inventory={'VGPU': provider_tree.inventory(4)},
            traits=frozenset(['CUSTOM_NVIDIA_610'])))
    return providers


def _call(placement, method, url, body=None):
    resp = placement.request(url, method, headers={
        'OpenStack-API-Version': V}, json=body)
    return resp.status_code, resp


def _inventory(placement, rp):
    _s, resp = _call(placement, 'GET',
                     '/resource_providers/%s/inventories' % rp)
    return json.loads(resp.content)


def _seen(client, root):
    return client.read_generations(CTXT, [root])[root]


def test_creates_the_tree(client, placement):
    root = str(uuid.uuid4())
    assert client.sync_tree(CTXT, root, _tree(root))
    seen = _seen(client, root)
    assert len(seen) == 2
    gpu = provider_tree.child_uuid(root, 'cn_pci_0000_25_00_4')
    assert seen[gpu]['parent_provider_uuid'] == root
    inv = _inventory(placement, root)['inventories']
    assert inv['VCPU']['allocation_ratio'] == 16.0
    assert inv['MEMORY_MB']['reserved'] == 512
    assert _inventory(placement, gpu)['inventories']['VGPU']['total'] == 4


def test_unchanged_tree_costs_nothing(client, placement):
    root = str(uuid.uuid4())
    client.sync_tree(CTXT, root, _tree(root))
    seen = _seen(client, root)
    before = len(placement.requests)
    assert not client.sync_tree(CTXT, root, _tree(root), seen)
    assert len(placement.requests) == before


def test_manual_inventory_edit_is_overwritten(client, placement):
    """Seeds A9/B10: total and max_unit edited to 3 come back to 2."""
    root = str(uuid.uuid4())
    client.sync_tree(CTXT, root, _tree(root, vcpus=2, ratio=4.0))
    inv = _inventory(placement, root)
    inv['inventories']['VCPU'].update(total=3, max_unit=3)
    status, _r = _call(placement, 'PUT',
                       '/resource_providers/%s/inventories' % root, inv)
    assert status == 200
    assert client.sync_tree(CTXT, root, _tree(root, vcpus=2, ratio=4.0),
                            _seen(client, root))
    vcpu = _inventory(placement, root)['inventories']['VCPU']
    assert (vcpu['total'], vcpu['max_unit']) == (2, 2)


def test_operator_ratio_is_kept_while_option_unset(client, placement):
    root = str(uuid.uuid4())
    client.sync_tree(CTXT, root, _tree(root))
    inv = _inventory(placement, root)
    inv['inventories']['VCPU']['allocation_ratio'] = 2.0
    _call(placement, 'PUT', '/resource_providers/%s/inventories' % root,
          inv)
    assert not client.sync_tree(CTXT, root, _tree(root), _seen(client, root))
    assert _inventory(placement, root)['inventories']['VCPU'][
        'allocation_ratio'] == 2.0
    client.sync_tree(CTXT, root, _tree(root, ratio=8.0), _seen(client, root))
    assert _inventory(placement, root)['inventories']['VCPU'][
        'allocation_ratio'] == 8.0


def test_operator_custom_traits_are_kept(client, placement):
    root = str(uuid.uuid4())
    client.sync_tree(CTXT, root, _tree(root, traits=['HW_CPU_X86_AVX']))
    gpu = provider_tree.child_uuid(root, 'cn_pci_0000_25_00_4')
    _call(placement, 'PUT', '/traits/CUSTOM_VGPU_PLACEMENT')
    gen = _seen(client, root)[gpu]['generation']
    _call(placement, 'PUT', '/resource_providers/%s/traits' % gpu, {
        'resource_provider_generation': gen,
        'traits': ['CUSTOM_NVIDIA_610', 'CUSTOM_VGPU_PLACEMENT']})
    # NOTE: the CPU flag went away; the operator's trait must stay.
    client.sync_tree(CTXT, root, _tree(root), _seen(client, root))
    _s, resp = _call(placement, 'GET', '/resource_providers/%s/traits' % gpu)
    assert 'CUSTOM_VGPU_PLACEMENT' in resp.content.decode()
    _s, resp = _call(placement, 'GET',
                     '/resource_providers/%s/traits' % root)
    assert 'HW_CPU_X86_AVX' not in resp.content.decode()


def _allocate(placement, rp, vcpus=1):
    _call(placement, 'PUT', '/allocations/%s' % uuid.uuid4(), {
        'allocations': {rp: {'resources': {'VCPU': vcpus}}},
        'consumer_generation': None, 'project_id': 'p', 'user_id': 'u',
        'consumer_type': 'INSTANCE'})


def _traits(placement, rp):
    _s, resp = _call(placement, 'GET', '/resource_providers/%s/traits' % rp)
    return set(json.loads(resp.content)['traits'])


def test_allocation_moved_generation_reads_only_the_inventory(
        conf, placement):
    """A generation moved by an allocation costs one inventory read; the
    traits are read again when the refresh is due, and a managed trait
    an operator removed comes back then.
    """
    now = [0.0]
    client = report.ReportClient(
        placement_client.PlacementClient(conf.conf, adapter=placement),
        refresh=300, clock=lambda: now[0])
    root = str(uuid.uuid4())
    client.sync_tree(CTXT, root, _tree(root, gpu=False))
    gen = _seen(client, root)[root]['generation']
    _call(placement, 'PUT', '/resource_providers/%s/traits' % root, {
        'resource_provider_generation': gen, 'traits': []})
    _allocate(placement, root)
    before = len(placement.requests)
    assert not client.sync_tree(CTXT, root, _tree(root, gpu=False),
                                _seen(client, root))
    assert placement.requests[before + 1:] == [
        ('GET', '/resource_providers/%s/inventories' % root)]
    assert _traits(placement, root) == set()
    # NOTE: a busy host: an allocation before every update; the refresh
    # still comes 300 s after the last full read.
    now[0] = 200.0
    _allocate(placement, root)
    client.sync_tree(CTXT, root, _tree(root, gpu=False), _seen(client, root))
    assert _traits(placement, root) == set()
    now[0] = 301.0
    _allocate(placement, root)
    assert client.sync_tree(CTXT, root, _tree(root, gpu=False),
                            _seen(client, root))
    assert _traits(placement, root) == {'COMPUTE_NODE'}


def test_traits_written_after_an_allocation_keep_the_operators(
        client, placement):
    """Traits not read since the generation moved are read before the
    agent writes its own: a trait an operator added meanwhile stays.
    """
    root = str(uuid.uuid4())
    client.sync_tree(CTXT, root, _tree(root, gpu=False))
    _call(placement, 'PUT', '/traits/CUSTOM_RACK_7')
    gen = _seen(client, root)[root]['generation']
    _call(placement, 'PUT', '/resource_providers/%s/traits' % root, {
        'resource_provider_generation': gen,
        'traits': ['COMPUTE_NODE', 'CUSTOM_RACK_7']})
    _allocate(placement, root)
    client.sync_tree(CTXT, root, _tree(root, gpu=False,
                                       traits=['HW_CPU_X86_AVX']),
                     _seen(client, root))
    assert _traits(placement, root) == {'COMPUTE_NODE', 'CUSTOM_RACK_7',
                                        'HW_CPU_X86_AVX'}


def test_children_that_are_not_wanted_are_deleted(client, placement):
    root = str(uuid.uuid4())
    client.sync_tree(CTXT, root, _tree(root))
    client.sync_tree(CTXT, root, _tree(root, gpu=False), _seen(client, root))
    assert list(_seen(client, root)) == [root]


def test_stale_provider_with_the_same_name(client, placement):
    """Seed B6: the old uuid holds the name; creation fails, as Nova."""
    stale, root = str(uuid.uuid4()), str(uuid.uuid4())
    client.sync_tree(CTXT, stale, _tree(stale))
    with pytest.raises(report.ResourceProviderCreationFailed,
                       match=stale):
        client.sync_tree(CTXT, root, _tree(root))
    assert client.sync_tree(CTXT, root, _tree(root), replace_stale=True)
    assert _seen(client, stale) == {}
    assert len(_seen(client, root)) == 2


def test_stale_provider_with_allocations_is_kept(client, placement):
    stale, root = str(uuid.uuid4()), str(uuid.uuid4())
    client.sync_tree(CTXT, stale, _tree(stale, gpu=False))
    status, _r = _call(placement, 'PUT', '/allocations/%s' % uuid.uuid4(), {
        'allocations': {stale: {'resources': {'VCPU': 1}}},
        'consumer_generation': None, 'project_id': 'p', 'user_id': 'u',
        'consumer_type': 'INSTANCE'})
    assert status == 204
    with pytest.raises(report.ResourceProviderCreationFailed):
        client.sync_tree(CTXT, root, _tree(root, gpu=False),
                         replace_stale=True)


def test_concurrent_update_is_retried(client, placement):
    root = str(uuid.uuid4())
    client.sync_tree(CTXT, root, _tree(root))
    seen = _seen(client, root)
    # NOTE: a trait change moves the generation after the read the sync
    # relies on, so its first inventory write meets a 409.
    _call(placement, 'PUT', '/resource_providers/%s/traits' % root, {
        'resource_provider_generation': seen[root]['generation'],
        'traits': ['COMPUTE_NODE', 'STORAGE_DISK_SSD']})
    client._trees[root].providers[root]['generation'] = seen[root][
        'generation']
    assert client.sync_tree(CTXT, root, _tree(root, vcpus=8), seen)
    assert _inventory(placement, root)['inventories']['VCPU']['total'] == 8


class _Racer(object):
    """An adapter on which someone else writes a provider's traits just
    before each of the client's inventory writes to it.
    """

    def __init__(self, inner, rp):
        self.inner = inner
        self.rp = rp
        self.racing = True
        self.inventory_puts = 0

    def request(self, url, method, **kwargs):
        if method == 'PUT' and url == (
                '/resource_providers/%s/inventories' % self.rp):
            self.inventory_puts += 1
            if self.racing:
                _s, resp = _call(self.inner, 'GET',
                                 '/resource_providers/%s' % self.rp)
                traits = ['COMPUTE_NODE'] + (
                    ['STORAGE_DISK_SSD'] if self.inventory_puts % 2 else [])
                _call(self.inner, 'PUT', '/resource_providers/%s/traits'
                      % self.rp, {'resource_provider_generation': json.loads(
                          resp.content)['generation'], 'traits': traits})
        return self.inner.request(url, method, **kwargs)


def test_endless_conflicts_give_up_after_the_retries(conf, placement,
                                                     caplog):
    root = str(uuid.uuid4())
    racer = _Racer(placement, root)
    client = report.ReportClient(
        placement_client.PlacementClient(conf.conf, adapter=racer))
    racer.racing = False
    client.sync_tree(CTXT, root, _tree(root, gpu=False))
    racer.racing, racer.inventory_puts = True, 0
    assert client.sync_tree(CTXT, root, _tree(root, vcpus=8, gpu=False),
                            _seen(client, root))
    assert racer.inventory_puts == report.CONFLICT_RETRIES
    assert _inventory(placement, root)['inventories']['VCPU']['total'] == 4
    assert 'Gave up updating the inventory of provider %s' % root in (
        caplog.text)
    # Nothing moved since, yet the next update tries again.
    racer.racing = False
    assert not client._trees[root].complete
    assert client.sync_tree(CTXT, root, _tree(root, vcpus=8, gpu=False),
                            _seen(client, root))
    assert _inventory(placement, root)['inventories']['VCPU']['total'] == 8


def test_many_trees_are_read_with_one_listing(client, placement):
    roots = [str(uuid.uuid4()) for _ in range(report.IN_TREE_QUERY_LIMIT
                                              + 1)]
    for index, root in enumerate(roots):
        client.sync_tree(CTXT, root, _tree(root, name='n%d' % index))
    before = len(placement.requests)
    seen = client.read_generations(CTXT, roots)
    assert len(placement.requests) == before + 1
    assert all(len(seen[root]) == 2 for root in roots)


def test_outage_is_reported(client, placement):
    placement.down = True
    with pytest.raises(report.PlacementUnavailable):
        client.sync_tree(CTXT, str(uuid.uuid4()), _tree(str(uuid.uuid4())))


def test_allocations(client, placement):
    root = str(uuid.uuid4())
    client.sync_tree(CTXT, root, _tree(root, gpu=False))
    consumer = str(uuid.uuid4())
    _call(placement, 'PUT', '/allocations/%s' % consumer, {
        'allocations': {root: {'resources': {'VCPU': 1}}},
        'consumer_generation': None, 'project_id': 'p', 'user_id': 'u',
        'consumer_type': 'INSTANCE'})
    assert client.provider_allocations(CTXT, root) == {consumer: {'VCPU': 1}}
    assert client.delete_allocation(CTXT, consumer)
    assert not client.delete_allocation(CTXT, consumer)
    assert client.provider_allocations(CTXT, root) == {}


def test_children_move_to_their_new_parent(client, placement):
    root = str(uuid.uuid4())
    client.sync_tree(CTXT, root, _tree(root))
    top, gpu = _tree(root)
    numa = provider_tree.Provider(
        uuid=provider_tree.child_uuid(root, 'cn_NUMA0'), name='cn_NUMA0',
        parent_uuid=root, inventory={'VCPU': provider_tree.inventory(2)},
        traits=frozenset(['HW_NUMA_ROOT']))
    gpu.parent_uuid = numa.uuid
    client.sync_tree(CTXT, root, [top, numa, gpu], _seen(client, root))
    seen = _seen(client, root)
    assert seen[gpu.uuid]['parent_provider_uuid'] == numa.uuid
    assert not client.sync_tree(CTXT, root, [top, numa, gpu],
                                _seen(client, root))
