# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""PCI devices allocated in placement and claimed from that provider.

The end-to-end test runs the scheduler's request filters, the real
placement app (allocation candidates and the claim) and the compute
agent's build on the fake driver, with two NICs reported as providers.
"""

import json
import urllib.parse

import pytest

from common.conf import CONF
from common import context
from common.objects import flavor as flavor_obj
from common.objects import request_spec as spec_obj
from common.placement import client as placement_client
from services.compute import build
from services.compute import pci_tracker
from services.compute import provider_tree
from services.compute.virt import fake
from services.scheduler.client import placement as scheduler_placement
from services.scheduler import host_manager
from services.scheduler import loading
from services.scheduler import request_filter
from services.scheduler import scheduling
from tests.unit.scheduler import fakes as scheduler_fakes

CTXT = context.get_admin_context()
V = 'placement 1.39'
ROOT = '6a8b7f5c-1f7e-4c55-9d3a-2c1a9c3f0e11'
NIC_A = {'address': '0000:81:00.0', 'vendor_id': '8086',
         'product_id': '1572', 'vfs': 2, 'vf_product_id': '154c'}
NIC_B = dict(NIC_A, address='0000:82:00.0')
VF_REQUEST = {'count': 1, 'alias_name': 'nic',
              'spec': [{'vendor_id': '8086', 'product_id': '154c'}]}


def _provider(owner, nodename='cn', root=ROOT):
    return provider_tree.child_uuid(root, '%s_%s' % (nodename, owner))


@pytest.fixture
def tracker():
    made = pci_tracker.PciTracker()
    made.set_devices(fake.pci_devices([json.dumps(NIC_A),
                                       json.dumps(NIC_B)]))
    return made


def test_mappings_name_the_providers(tracker):
    mappings = {'': [ROOT], '_pci0_1': [_provider('0000:82:00.0')],
                '_pci0_0': [_provider('0000:81:00.0')],
                '_pci1_0': ['someone-elses-provider']}
    assert tracker.placed(ROOT, 'cn', mappings) == {
        0: ['0000:81:00.0', '0000:82:00.0']}


def test_claim_takes_the_allocated_provider(tracker):
    # The pools alone would give the lowest address, on NIC A.
    placed = tracker.placed(ROOT, 'cn',
                            {'_pci0_0': [_provider('0000:82:00.0')]})
    assert tracker.claim('i1', [VF_REQUEST], placed=placed) == [
        '0000:82:10.0']
    both = dict(VF_REQUEST, count=2)
    assert tracker.claim('i2', [both],
                         placed={0: ['0000:82:00.0', '0000:81:00.0']}) == [
        '0000:82:10.1', '0000:81:10.0']


def test_claim_on_a_full_provider_fails_without_taking(tracker):
    tracker.claim('i1', [VF_REQUEST], placed={0: ['0000:82:00.0']})
    both = dict(VF_REQUEST, count=2)
    with pytest.raises(pci_tracker.PciDeviceRequestFailed):
        tracker.claim('i2', [both], placed={0: ['0000:82:00.0'] * 2})
    assert tracker.addresses_of('i2') == []
    # A failing pool request after a placed one gives the placed one back.
    gpu = {'count': 1, 'spec': [{'vendor_id': '10de'}]}
    with pytest.raises(pci_tracker.PciDeviceRequestFailed):
        tracker.claim('i3', [VF_REQUEST, gpu], placed={0: ['0000:82:00.0']})
    assert tracker.addresses_of('i3') == []
    assert tracker.claim('i4', [VF_REQUEST], placed={0: ['0000:82:00.0']}
                         ) == ['0000:82:10.1']


def test_partly_mapped_request_comes_from_the_pools(tracker):
    both = dict(VF_REQUEST, count=2)
    assert tracker.claim('i1', [both], placed={0: ['0000:82:00.0']}) == [
        '0000:81:10.0', '0000:81:10.1']


# --- through the scheduler's query, placement and the compute's build -----

def _agent(make_agent):
    made = make_agent(pci={'report_in_placement': True},
                      fake_driver={'pci_device': [json.dumps(NIC_A),
                                                  json.dumps(NIC_B)]})
    made.start()
    return made


@pytest.fixture
def agent(make_agent, override):
    override('pci_in_placement', True, group='filter_scheduler')
    return _agent(make_agent)


def _spec(inst, requests):
    flavor = flavor_obj.Flavor(name='f', flavorid='f', vcpus=1,
                               memory_mb=64, root_gb=1, extra_specs={})
    return spec_obj.RequestSpec(instance_uuid=inst['uuid'], flavor=flavor,
                                project_id='p', user_id='u',
                                pci_requests=requests)


class View(object):
    """No aggregates, no forced hosts."""

    def aggregates(self, context=None):
        return []

    def compute_uuids(self, host, node=None, context=None):
        return []


def _candidates(placement, spec):
    query = request_filter.build_query(None, spec, View())
    url = '/allocation_candidates?' + urllib.parse.urlencode(
        query.to_params())
    resp = placement.request(url, 'GET',
                             headers={'OpenStack-API-Version': V})
    assert resp.status_code == 200, resp.text
    return query, json.loads(resp.content)['allocation_requests']


def _claim(placement, consumer, candidate):
    resp = placement.request(
        '/allocations/%s' % consumer, 'PUT',
        headers={'OpenStack-API-Version': V},
        json={'allocations': candidate['allocations'],
              'consumer_generation': None, 'project_id': 'p',
              'user_id': 'u', 'consumer_type': 'INSTANCE'})
    assert resp.status_code == 204, resp.text


def _usages(placement, rp):
    resp = placement.request('/resource_providers/%s/usages' % rp, 'GET',
                             headers={'OpenStack-API-Version': V})
    return json.loads(resp.content)['usages']


def test_boot_allocates_and_claims_the_placed_device(agent, placement):
    root = agent.conductor.nodes[('cn', 'cn')]['uuid']
    nic_b = _provider('0000:82:00.0', root=root)
    inst = agent.conductor.add_instance(
        'cn', vcpus=1, memory_mb=64, vm_state='building',
        task_state='scheduling')
    spec = _spec(inst, [dict(VF_REQUEST, count=2)])
    query, candidates = _candidates(placement, spec)
    assert query.groups['_pci0_1'].resources == {'CUSTOM_PCI_8086_154C': 1}
    # Placement offers both NICs; take the candidate with both devices
    # on NIC B, which the pools alone would never choose.
    chosen = next(c for c in candidates
                  if c['mappings']['_pci0_0'] == [nic_b] and
                  c['mappings']['_pci0_1'] == [nic_b])
    assert chosen['allocations'][nic_b]['resources'] == {
        'CUSTOM_PCI_8086_154C': 2}
    _claim(placement, inst['uuid'], chosen)
    selection = {'service_host': 'cn', 'nodename': 'cn',
                 'compute_node_uuid': root, 'limits': {},
                 'allocation_request': json.dumps(chosen)}
    build.BuildTask(agent, CTXT, 'cn', inst, spec.to_primitive(),
                    selection, []).run()
    guest = agent.driver.list_guests('cn')[inst['uuid']]
    assert guest.pci_devices == ['0000:82:10.0', '0000:82:10.1']
    assert _usages(placement, nic_b) == {'CUSTOM_PCI_8086_154C': 2}
    # NIC B is now full in placement: the next request lands on NIC A.
    other = agent.conductor.add_instance(
        'cn', vcpus=1, memory_mb=64, vm_state='building',
        task_state='scheduling')
    _query, candidates = _candidates(placement, _spec(other, [VF_REQUEST]))
    assert {c['mappings']['_pci0_0'][0] for c in candidates} == {
        _provider('0000:81:00.0', root=root)}


def test_option_off_allocates_no_device(make_agent, placement):
    assert CONF.filter_scheduler.pci_in_placement is False
    agent = _agent(make_agent)
    inst = agent.conductor.add_instance(
        'cn', vcpus=1, memory_mb=64, vm_state='building',
        task_state='scheduling')
    query, candidates = _candidates(placement,
                                    _spec(inst, [VF_REQUEST]))
    assert list(query.groups) == ['']
    root = agent.conductor.nodes[('cn', 'cn')]['uuid']
    assert [list(c['allocations']) for c in candidates] == [[root]]


class Source(host_manager.HostSource):
    """The agent's node as the scheduler's only host."""

    def __init__(self, states):
        self.states = {s.uuid: s for s in states}

    def get_host_states(self, context, uuids):
        return [self.states[u] for u in uuids if u in self.states]

    def get_updated_since(self, context, uuids):
        return {u: self.states[u].updated for u in uuids}

    def get_aggregates(self, context):
        return []

    def compute_uuids_for_host(self, context, host, node=None):
        return [s.uuid for s in self.states.values() if s.host == host]


def test_boot_through_the_scheduler_claims_the_alias_traits(
        make_agent, placement, override):
    """The alias requires a trait only NIC B's provider has: placement
    picks NIC B, the scheduler's claim allocates from it, and the compute
    gives a VF of NIC B although NIC A's come first in its pools.
    """
    override('pci_in_placement', True, group='filter_scheduler')
    agent = make_agent(pci={'report_in_placement': True},
                       fake_driver={'pci_device': [
                           json.dumps(NIC_A),
                           json.dumps(dict(NIC_B, traits='fast'))]})
    agent.start()
    node = agent.conductor.nodes[('cn', 'cn')]
    nic_b = _provider('0000:82:00.0', root=node['uuid'])
    state = scheduler_fakes.host('cn', uuid=node['uuid'],
                                 pci_stats=node['pci_stats'])
    scheduler = scheduling.Scheduler(
        host_manager.HostManager(Source([state])),
        scheduler_placement.SchedulerPlacementClient(
            placement_client.PlacementClient(CONF, adapter=placement)),
        loading.load_filters(['PciPassthroughFilter']),
        loading.load_weighers(['all']))
    inst = agent.conductor.add_instance(
        'cn', vcpus=1, memory_mb=64, vm_state='building',
        task_state='scheduling')
    spec = _spec(inst, [dict(VF_REQUEST, traits='fast')])
    selections, _record = scheduler.select_destinations(
        CTXT, spec, [inst['uuid']])
    chosen = selections[0][0]
    assert json.loads(chosen.allocation_request)['mappings'][
        '_pci0_0'] == [nic_b]
    assert _usages(placement, nic_b) == {'CUSTOM_PCI_8086_154C': 1}
    build.BuildTask(agent, CTXT, 'cn', inst, spec.to_primitive(),
                    chosen.to_primitive(), []).run()
    guest = agent.driver.list_guests('cn')[inst['uuid']]
    assert guest.pci_devices == ['0000:82:10.0']
    assert agent.conductor.instances[inst['uuid']]['vm_state'] == 'active'
