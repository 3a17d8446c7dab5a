# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Builds, reschedules, deletes and recovery after a restart."""

import json
import threading
import time

import pytest

from common import context
from common.numa import constraints
from common.objects import flavor as flavor_obj
from common.objects import request_spec as spec_obj
from services.compute import build
from services.compute import delete
from services.compute.virt import driver as driver_mod

CTXT = context.get_admin_context()
V = 'placement 1.39'


@pytest.fixture
def agent(make_agent):
    made = make_agent()
    made.start()
    return made


def _root(agent):
    return agent.conductor.nodes[('cn', 'cn')]['uuid']


def _boot(agent, placement, vcpus=1, memory_mb=64, extra_specs=None,
          host='cn'):
    """An instance the conductor has placed on ``host``, and its build
    arguments (spec, selection), with its allocation in placement.
    """
    flavor = flavor_obj.Flavor(name='f', flavorid='f', vcpus=vcpus,
                               memory_mb=memory_mb, root_gb=1,
                               extra_specs=extra_specs or {})
    numa = constraints.get_constraints(flavor, None)
    numa = numa and numa.to_primitive()
    inst = agent.conductor.add_instance(
        host, vcpus=vcpus, memory_mb=memory_mb, vm_state='building',
        task_state='scheduling', numa_topology=numa)
    inst['flavor'] = flavor.to_primitive()
    spec = spec_obj.RequestSpec(instance_uuid=inst['uuid'], flavor=flavor,
                                numa_topology=numa).to_primitive()
    root = agent.conductor.nodes[(host, host)]['uuid']
    resources = {'VCPU': vcpus, 'MEMORY_MB': memory_mb, 'DISK_GB': 1}
    request = {'allocations': {root: {'resources': resources}}}
    resp = placement.request('/allocations/%s' % inst['uuid'], 'PUT',
                             headers={'OpenStack-API-Version': V},
                             json=dict(request, consumer_generation=None,
                                       project_id='p', user_id='u',
                                       consumer_type='INSTANCE'))
    assert resp.status_code == 204, resp.text
    selection = {'service_host': host, 'nodename': host,
                 'compute_node_uuid': root, 'limits': {},
                 'allocation_request': json.dumps(request)}
    return inst, spec, selection


def _allocation(placement, consumer):
    resp = placement.request('/allocations/%s' % consumer, 'GET',
                             headers={'OpenStack-API-Version': V})
    return json.loads(resp.content)['allocations']


def _run(agent, inst, spec, selection, alternates=()):
    build.BuildTask(agent, CTXT, 'cn', inst, spec, selection,
                    list(alternates)).run()
    return agent.conductor.instances.get(inst['uuid'])


def build_with_batches(make_agent, placement):
    """One build on an agent that batches its record changes (0.05 s);
    (agent, instance), the agent stopped and its calls only the build's.
    """
    agent = make_agent(compute={'record_save_delay': 0.05})
    agent.start()
    inst, spec, sel = _boot(agent, placement)
    del agent.conductor.calls[:]
    _run(agent, inst, spec, sel)
    agent.stop()
    return agent, inst


def test_build_succeeds(agent, placement):
    inst, spec, sel = _boot(agent, placement)
    row = _run(agent, inst, spec, sel)
    assert (row['vm_state'], row['task_state'], row['power_state']) == (
        'active', None, 1)
    assert row['launched_at']
    guest = agent.driver.list_guests('cn')[inst['uuid']]
    assert guest.allocations == {_root(agent): {
        'VCPU': 1, 'MEMORY_MB': 64, 'DISK_GB': 1}}
    events = [e[2:] for e in agent.conductor.events if e[0] == inst['uuid']]
    assert events == [('start', None), ('finish', 'Success')]
    assert agent.conductor.nodes[('cn', 'cn')]['vcpus_used'] == 1
    assert agent.scheduler.infos[-1][1][0]['vm_state'] == 'active'


def test_pinned_build_records_its_pinning(agent, placement):
    inst, spec, sel = _boot(agent, placement, vcpus=2,
                            extra_specs={'hw:cpu_policy': 'dedicated'})
    row = _run(agent, inst, spec, sel)
    pinning = row['numa_topology']['cells'][0]['cpu_pinning']
    assert sorted(pinning.values()) == [0, 1]
    cell = agent.conductor.nodes[('cn', 'cn')]['numa_topology']['cells'][0]
    assert cell['pinned_cpus'] == [0, 1]
    # NOTE: the next update rebuilds the same usage from the row.
    agent.update_all()
    cell = agent.conductor.nodes[('cn', 'cn')]['numa_topology']['cells'][0]
    assert cell['pinned_cpus'] == [0, 1]


def test_spawn_failure_reschedules(agent, placement, conf):
    conf.config(group='fake_driver', fail_hosts=['cn'])
    inst, spec, sel = _boot(agent, placement)
    alternate = dict(sel, service_host='other')
    row = _run(agent, inst, spec, sel, [alternate])
    assert (row['task_state'], row['host']) == ('scheduling', None)
    rebuild, = agent.conductor.rebuilds
    assert rebuild['alternates'] == [alternate]
    assert (rebuild['failed_host'], rebuild['failed_node']) == ('cn', 'cn')
    assert 'fail_hosts' in rebuild['reason']
    assert _allocation(placement, inst['uuid']) == {}
    assert agent.conductor.faults[0]['uuid'] == inst['uuid']
    assert agent.conductor.nodes[('cn', 'cn')]['vcpus_used'] == 0
    assert agent.driver.list_guests('cn') == {}


def test_last_failure_is_an_error(agent, placement, conf):
    conf.config(group='fake_driver', spawn_failure_rate=1.0)
    inst, spec, sel = _boot(agent, placement)
    row = _run(agent, inst, spec, sel)
    assert (row['vm_state'], row['task_state'], row['host']) == (
        'error', None, None)
    assert agent.conductor.rebuilds == []
    assert _allocation(placement, inst['uuid']) == {}


def test_claim_failure_reschedules(agent, placement):
    """Two pinned 6-vCPU guests cannot share an 8-CPU node."""
    dedicated = {'hw:cpu_policy': 'dedicated'}
    first = _boot(agent, placement, vcpus=6, extra_specs=dedicated)
    assert _run(agent, *first)['vm_state'] == 'active'
    inst, spec, sel = _boot(agent, placement, vcpus=6,
                            extra_specs=dedicated)
    row = _run(agent, inst, spec, sel, [dict(sel, service_host='h2')])
    assert row['task_state'] == 'scheduling'
    assert 'NUMA topology cannot fit' in agent.conductor.rebuilds[0][
        'reason']
    assert agent.driver.list_guests('cn').keys() == {first[0]['uuid']}


def test_instance_deleted_before_the_build(agent, placement):
    inst, spec, sel = _boot(agent, placement)
    agent.conductor.instances.pop(inst['uuid'])
    _run(agent, inst, spec, sel)
    assert _allocation(placement, inst['uuid']) == {}
    assert agent.driver.list_guests('cn') == {}


def test_delete_during_spawn_wins(agent, placement, monkeypatch):
    inst, spec, sel = _boot(agent, placement)
    spawned = agent.driver.spawn

    def spawn_then_delete(guest):
        spawned(guest)
        agent.conductor.instances[guest.uuid]['task_state'] = 'deleting'
    monkeypatch.setattr(agent.driver, 'spawn', spawn_then_delete)
    _run(agent, inst, spec, sel)
    assert agent.driver.list_guests('cn') == {}
    assert agent.conductor.nodes[('cn', 'cn')]['vcpus_used'] == 0


def test_terminate(agent, placement):
    inst, spec, sel = _boot(agent, placement)
    _run(agent, inst, spec, sel)
    delete.terminate(agent, CTXT, 'cn', inst['uuid'])
    assert inst['uuid'] in agent.conductor.deleted
    assert _allocation(placement, inst['uuid']) == {}
    assert agent.driver.list_guests('cn') == {}
    assert agent.conductor.nodes[('cn', 'cn')]['vcpus_used'] == 0
    # NOTE: a repeated delete is harmless.
    delete.terminate(agent, CTXT, 'cn', inst['uuid'])


def test_build_and_delete_do_not_overlap(agent, placement, conf):
    conf.config(group='fake_driver', spawn_latency=0.2)
    inst, spec, sel = _boot(agent, placement)
    worker = threading.Thread(target=_run, args=(agent, inst, spec, sel))
    worker.start()
    while not agent.conductor.events:
        time.sleep(0.01)
    delete.terminate(agent, CTXT, 'cn', inst['uuid'])
    worker.join()
    assert inst['uuid'] in agent.conductor.deleted
    assert agent.driver.list_guests('cn') == {}


def test_recovery_after_a_restart(make_agent, placement):
    agent = make_agent()
    conductor = agent.conductor
    deleting = conductor.add_instance('cn', task_state='deleting')['uuid']
    spawning = conductor.add_instance('cn', vm_state='building',
                                      task_state='spawning')['uuid']
    agent.driver.spawn(driver_mod.Guest(uuid='stray', host='cn',
                                        nodename='cn'))
    agent.start()
    assert deleting in conductor.deleted
    assert conductor.instances[spawning]['vm_state'] == 'error'
    assert 'interrupted' in conductor.faults[-1]['message']
    assert 'stray' not in agent.driver.list_guests('cn')


def test_pci_devices_are_claimed_and_freed(make_agent, placement):
    agent = make_agent(fake_driver={'pci_device': [json.dumps({
        'address': '0000:81:00.0', 'vendor_id': '8086',
        'product_id': '1572', 'vfs': 2, 'vf_product_id': '154c',
        'numa_node': 0})]})
    agent.start()
    inst, spec, sel = _boot(agent, placement)
    inst['pci_requests'] = [{'count': 1, 'spec': [
        {'vendor_id': '8086', 'product_id': '154c'}]}]

    def free_vfs():
        pools = agent.conductor.nodes[('cn', 'cn')]['pci_stats']
        return next(p['count'] for p in pools
                    if p['dev_type'] == 'type-VF')
    assert free_vfs() == 2
    _run(agent, inst, spec, sel)
    guest = agent.driver.list_guests('cn')[inst['uuid']]
    assert guest.pci_devices == ['0000:81:10.0']
    assert free_vfs() == 1
    agent.conductor.instances[inst['uuid']]['pci_requests'] = inst[
        'pci_requests']
    agent.conductor.touch(inst['uuid'])
    agent.update_all()
    assert free_vfs() == 1
    delete.terminate(agent, CTXT, 'cn', inst['uuid'])
    assert free_vfs() == 2
