# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""doc/behaviours.md's NUMA and CPU scenarios, end to end through the agent.

The library tests (test_fit, test_constraints) check the fitting code on
its own; these run the same scenarios the way a deployment meets them: a
fake compute host configured like the machines there, builds claimed by
the agent, the node record the scheduler reads, and the inventory the
agent reports to the real placement application (issue 4, criterion 1):

- A8: the thread-policy experiments on osdev-01 (prefer packs sibling
  pairs, isolate takes whole cores and spills to node 1, require packs
  pairs and refuses hosts without SMT, ``avoid`` is rejected);
- A9/B9: a 2-pCPU host with ``cpu_allocation_ratio`` 4: usage 3 is fine,
  a 3-vCPU request has no candidate because ``max_unit`` is 2, and a
  manual ``total``/``max_unit`` edit is undone by the next update;
- isolated emulator threads: placement is asked for PCPU n+1 and the
  agent's claim holds the extra pCPU as pinned;
- §numa-constraints: dedicated CPUs imply a NUMA topology; huge pages
  alone give a one-cell topology; the flavor-over-image precedence.
"""

import json
import uuid

import pytest

from common import context
from common.numa import constraints
from common.numa import exception as numa_exception
from common.objects import flavor as flavor_obj
from common.objects import image as image_obj
from common.objects import request_spec as spec_obj
from common.placement import query as placement_query
from common.placement import resources
from services.compute import build
from services.compute import claims
from tests.unit.compute.conftest import conf  # noqa: F401
from tests.unit.compute.conftest import make_agent  # noqa: F401
from tests.unit.compute.conftest import placement  # noqa: F401

CTXT = context.get_admin_context()
V = 'placement 1.39'
NODE0 = set(range(0, 18)) | set(range(36, 54))
NODE1 = set(range(18, 36)) | set(range(54, 72))
MACHINE_CPU = {'hw:numa_nodes': '1', 'hw:numa_cpus.0': '0-15',
               'hw:numa_mem.0': '64'}


@pytest.fixture
def osdev01(make_agent):  # noqa: F811
    """osdev-01 (§6.13) as a fake host: 72 threads, siblings i and i+36."""
    agent = make_agent(fake_driver={
        'vcpus': 72, 'threads_per_core': 2, 'numa_cells': 2,
        'memory_mb': 391844, 'disk_gb': 1000})
    agent.start()
    return agent


def _build(agent, vcpus=16, memory_mb=64, specs=None, props=None):
    """Build one instance as the conductor would cast it; its row."""
    flavor = flavor_obj.Flavor(name='f', flavorid='f', vcpus=vcpus,
                               memory_mb=memory_mb, root_gb=1,
                               extra_specs=dict(specs or {}))
    image = image_obj.ImageMeta(id='i', properties=dict(props or {}))
    numa = constraints.get_constraints(flavor, image)
    numa = numa and numa.to_primitive()
    inst = agent.conductor.add_instance(
        'cn', vcpus=vcpus, memory_mb=memory_mb, vm_state='building',
        task_state='scheduling', numa_topology=numa)
    spec = spec_obj.RequestSpec(instance_uuid=inst['uuid'], flavor=flavor,
                                image=image, numa_topology=numa)
    build.BuildTask(agent, CTXT, 'cn', inst, spec.to_primitive(),
                    {'nodename': 'cn', 'limits': {}}, []).run()
    return agent.conductor.instances[inst['uuid']]


def _pinned(row):
    cell, = row['numa_topology']['cells']
    return cell['id'], set(cell['cpu_pinning'].values()), set(
        cell['cpuset_reserved'])


def _whole_pairs(cpus):
    return all((c + 36 if c < 36 else c - 36) in cpus for c in cpus)


def _cells(agent):
    return agent.conductor.nodes[('cn', 'cn')]['numa_topology']['cells']


def test_a8_thread_policies_on_osdev01(osdev01):
    agent = osdev01
    dedicated = dict(MACHINE_CPU, **{'hw:cpu_policy': 'dedicated'})

    # a. shared: floats over node 0, pins nothing.
    row = _build(agent, specs=MACHINE_CPU)
    assert row['vm_state'] == 'active'
    cell, = row['numa_topology']['cells']
    assert cell['id'] == 0 and cell['cpu_pinning'] is None
    assert [c['pinned_cpus'] for c in _cells(agent)] == [[], []]

    # b. avoid: rejected before scheduling (B11), never reaches a host.
    with pytest.raises(numa_exception.ObsoleteCPUThreadPolicy):
        constraints.get_constraints(flavor_obj.Flavor(
            vcpus=16, memory_mb=64, extra_specs=dict(
                dedicated, **{'hw:cpu_thread_policy': 'avoid'})), None)

    # c. prefer: 8 complete sibling pairs on node 0.
    node, prefer, _r = _pinned(_build(agent, specs=dict(
        dedicated, **{'hw:cpu_thread_policy': 'prefer'})))
    assert node == 0 and prefer <= NODE0 and len(prefer) == 16
    assert _whole_pairs(prefer)

    # d. isolate: node 0 has only 10 free cores left, so node 1.
    node, isolate, reserved = _pinned(_build(agent, specs=dict(
        dedicated, **{'hw:cpu_thread_policy': 'isolate'})))
    assert node == 1 and isolate <= NODE1 and len(isolate) == 16
    assert reserved == {c + 36 if c < 36 else c - 36 for c in isolate}

    # e. require: 8 more whole pairs on node 0, none of prefer's.
    node, require, _r = _pinned(_build(agent, specs=dict(
        dedicated, **{'hw:cpu_thread_policy': 'require'})))
    assert node == 0 and _whole_pairs(require) and not require & prefer

    # The record the scheduler reads: 32 of 36 CPUs of cell 0 pinned,
    # cell 1 isolate's 16 plus their 16 idle siblings.
    cell0, cell1 = _cells(agent)
    assert set(cell0['pinned_cpus']) == prefer | require
    assert set(cell1['pinned_cpus']) == isolate | reserved

    # A further require or isolate 16-vCPU guest fits nowhere: the claim
    # fails and the build is rescheduled (here: no alternate, ERROR).
    for policy in ('require', 'isolate'):
        row = _build(agent, specs=dict(
            dedicated, **{'hw:cpu_thread_policy': policy}))
        assert row['vm_state'] == 'error'
        assert 'NUMA topology cannot fit' in agent.conductor.faults[-1][
            'message']

    # Deleting the pinned guests frees their CPUs at the next update.
    for uuid_ in [u for u, i in agent.conductor.instances.items()
                  if i['vm_state'] == 'active']:
        agent.conductor.instance_destroy(CTXT, uuid_)
    agent.update_all()
    assert [c['pinned_cpus'] for c in _cells(agent)] == [[], []]


def test_require_refuses_a_host_without_smt(make_agent):  # noqa: F811
    agent = make_agent(fake_driver={'vcpus': 8, 'threads_per_core': 1})
    agent.start()
    row = _build(agent, vcpus=2, specs={'hw:cpu_policy': 'dedicated',
                                        'hw:cpu_thread_policy': 'require'})
    assert row['vm_state'] == 'error'
    row = _build(agent, vcpus=2, specs={'hw:cpu_policy': 'dedicated',
                                        'hw:cpu_thread_policy': 'isolate'})
    assert row['vm_state'] == 'active'


def _placement(placement, method, url, body=None):  # noqa: F811
    resp = placement.request(url, method, json=body, headers={
        'OpenStack-API-Version': V})
    return resp.status_code, (json.loads(resp.content) if resp.content
                              else None)


def _candidates(placement, resources):  # noqa: F811
    _s, body = _placement(placement, 'GET',
                          '/allocation_candidates?resources=%s' % resources)
    return body['allocation_requests']


def test_a9_max_unit_caps_one_instance(make_agent, conf,  # noqa: F811
                                       placement):  # noqa: F811
    conf.config(cpu_allocation_ratio=4.0, reserved_host_memory_mb=0)
    agent = make_agent(fake_driver={'vcpus': 2, 'memory_mb': 3944,
                                    'disk_gb': 38})
    agent.start()
    root = agent.conductor.nodes[('cn', 'cn')]['uuid']
    _s, inv = _placement(placement, 'GET',
                         '/resource_providers/%s/inventories' % root)
    vcpu = inv['inventories']['VCPU']
    assert (vcpu['total'], vcpu['max_unit'], vcpu['allocation_ratio'],
            vcpu['reserved'], vcpu['min_unit'], vcpu['step_size']) == (
        2, 2, 4.0, 0, 1, 1)
    # Three 1-vCPU instances: usage 3 > total 2 is fine (capacity 8).
    for _ in range(3):
        status, _b = _placement(placement, 'PUT', '/allocations/%s' % (
            uuid.uuid4()), {'allocations': {root: {'resources': {
                'VCPU': 1, 'MEMORY_MB': 64, 'DISK_GB': 1}}},
            'consumer_generation': None, 'project_id': 'p',
            'user_id': 'u', 'consumer_type': 'INSTANCE'})
        assert status == 204
    _s, usages = _placement(placement, 'GET',
                            '/resource_providers/%s/usages' % root)
    assert usages['usages']['VCPU'] == 3
    assert len(_candidates(placement, 'VCPU:1')) == 1
    # A 3-vCPU flavor: no candidate, because 3 > max_unit (B9).
    assert _candidates(placement, 'VCPU:3') == []
    # The operator's workaround works until the next update undoes it.
    _s, inv = _placement(placement, 'GET',
                         '/resource_providers/%s/inventories' % root)
    inv['inventories']['VCPU'].update(total=3, max_unit=3)
    status, _b = _placement(placement, 'PUT',
                            '/resource_providers/%s/inventories' % root, inv)
    assert status == 200
    assert len(_candidates(placement, 'VCPU:3')) == 1
    agent.update_all()
    assert _candidates(placement, 'VCPU:3') == []


def test_dedicated_implies_a_numa_topology(make_agent):  # noqa: F811
    agent = make_agent(fake_driver={'vcpus': 8, 'numa_cells': 2,
                                    'memory_mb': 8192})
    agent.start()
    row = _build(agent, vcpus=2, memory_mb=512,
                 specs={'hw:cpu_policy': 'dedicated'})
    cell, = row['numa_topology']['cells']
    assert cell['id'] == 0 and len(cell['cpu_pinning']) == 2
    assert cell['memory'] == 512
    assert _cells(agent)[0]['memory_usage'] == 512


def test_hugepages_alone_create_a_one_cell_topology(make_agent):  # noqa
    agent = make_agent(fake_driver={'vcpus': 8, 'numa_cells': 2,
                                    'memory_mb': 8192,
                                    'hugepages': ['2048:512']})
    agent.start()
    row = _build(agent, vcpus=2, memory_mb=512,
                 specs={'hw:mem_page_size': 'large'})
    cell, = row['numa_topology']['cells']
    assert cell['pagesize'] == 2048 and cell['cpu_pinning'] is None
    pages = {p['size_kb']: p['used'] for p in _cells(agent)[0]['mempages']}
    assert pages[2048] == 256


@pytest.mark.parametrize('specs, props, outcome', [
    # cpu policy: the flavor wins; the image fills in what it leaves.
    ({'hw:cpu_policy': 'dedicated'}, {'hw_cpu_policy': 'shared'},
     'pinned'),
    ({'hw:cpu_policy': 'shared'}, {'hw_cpu_policy': 'dedicated'},
     numa_exception.ImageCPUPinningForbidden),
    ({}, {'hw_cpu_policy': 'dedicated'}, 'pinned'),
    ({}, {}, 'floating'),
    # thread policy: the image counts only under a flavor prefer/unset.
    ({'hw:cpu_policy': 'dedicated'}, {'hw_cpu_thread_policy': 'isolate'},
     'isolated'),
    ({'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'prefer'},
     {'hw_cpu_thread_policy': 'isolate'}, 'pinned'),
    ({'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate'},
     {'hw_cpu_thread_policy': 'require'},
     numa_exception.ImageCPUThreadPolicyForbidden),
    ({'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate'},
     {'hw_cpu_thread_policy': 'isolate'}, 'isolated'),
])
def test_flavor_over_image(make_agent, specs, props,  # noqa: F811
                           outcome):
    agent = make_agent(fake_driver={'vcpus': 8, 'threads_per_core': 2})
    agent.start()
    if not isinstance(outcome, str):
        with pytest.raises(outcome):
            _build(agent, vcpus=2, specs=specs, props=props)
        return
    row = _build(agent, vcpus=2, specs=specs, props=props)
    assert row['vm_state'] == 'active'
    numa = row['numa_topology']
    if outcome == 'floating':
        assert numa is None
        return
    _node, pcpus, reserved = _pinned(row)
    assert len(pcpus) == 2
    assert bool(reserved) is (outcome == 'isolated')


def test_claim_limits_come_from_the_scheduler(make_agent):  # noqa: F811
    limits = claims.limits_for({'numa_topology': {
        'cpu_allocation_ratio': 2.0, 'ram_allocation_ratio': 1.0}},
        {'cpu': 16.0, 'ram': 1.5})
    assert (limits.cpu_allocation_ratio, limits.ram_allocation_ratio) == (
        2.0, 1.0)
    limits = claims.limits_for({}, {'cpu': 16.0, 'ram': 1.5})
    assert limits.cpu_allocation_ratio == 16.0


def test_isolated_emulator_threads_take_pcpu_n_plus_1(make_agent,  # noqa
                                                      placement):  # noqa
    """A 2-vCPU isolate flavor: placement PCPU 3, the third pCPU held."""
    agent = make_agent(fake_driver={'vcpus': 8, 'memory_mb': 8192},
                       compute={'cpu_shared_set': '0-3',
                                'cpu_dedicated_set': '4-7'})
    agent.start()
    root = agent.conductor.nodes[('cn', 'cn')]['uuid']
    specs = {'hw:cpu_policy': 'dedicated',
             'hw:emulator_threads_policy': 'isolate'}
    flavor = flavor_obj.Flavor(name='f', flavorid='f', vcpus=2,
                               memory_mb=64, root_gb=1, extra_specs=specs)
    spec = spec_obj.RequestSpec(flavor=flavor, image=image_obj.ImageMeta(
        id='i', properties={}))
    query = placement_query.PlacementQuery()
    resources.flavor_resources(spec, query)
    asked = query.unsuffixed.resources
    assert asked == {'PCPU': 3, 'MEMORY_MB': 64, 'DISK_GB': 1}
    # The scheduler's claim: placement has a candidate and takes PCPU 3.
    wanted = ','.join('%s:%d' % item for item in sorted(asked.items()))
    candidate, = _candidates(placement, wanted)
    status, _b = _placement(placement, 'PUT', '/allocations/%s' % (
        uuid.uuid4()), {'allocations': candidate['allocations'],
                        'consumer_generation': None, 'project_id': 'p',
                        'user_id': 'u', 'consumer_type': 'INSTANCE'})
    assert status == 204
    _s, usages = _placement(placement, 'GET',
                            '/resource_providers/%s/usages' % root)
    assert usages['usages']['PCPU'] == 3
    # The agent's claim pins two vCPUs and holds a third pCPU for the
    # emulator threads, counted as pinned on the node.
    row = _build(agent, vcpus=2, specs=specs)
    assert row['vm_state'] == 'active'
    cell, = row['numa_topology']['cells']
    pinned = set(cell['cpu_pinning'].values())
    assert len(pinned) == 2 and pinned <= {4, 5, 6, 7}
    emulator, = cell['emulator_pcpus']
    assert emulator in {4, 5, 6, 7} - pinned
    held = set(_cells(agent)[0]['pinned_cpus'])
    assert held == pinned | {emulator}
    # One dedicated pCPU is left: placement has no PCPU 3 any more, and
    # the host itself cannot fit a 1-vCPU isolate guest (it needs 2).
    assert _candidates(placement, wanted) == []
    row = _build(agent, vcpus=1, specs=specs)
    assert row['vm_state'] == 'error'
    row = _build(agent, vcpus=1, specs={'hw:cpu_policy': 'dedicated'})
    assert row['vm_state'] == 'active'
