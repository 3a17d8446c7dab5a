# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The compute side of shelve, offload, unshelve and evacuate, on the fake
driver with a real placement.
"""

import datetime
import json

import pytest

from common import context
from common.objects import flavor as flavor_obj
from common.objects import migration as migration_obj
from common.objects import request_spec as spec_obj
from services.compute import delete
from services.compute import evacuate
from services.compute import shelve
from services.compute.virt import driver as driver_mod

CTXT = context.get_admin_context()
V = 'placement 1.39'
HOSTS = ('cn0', 'cn1')
RESOURCES = {'VCPU': 1, 'MEMORY_MB': 64, 'DISK_GB': 1}


@pytest.fixture
def agent(make_agent):
    made = make_agent(fake_driver={'host_count': 2,
                                   'host_name_pattern': 'cn{index}'})
    made.start()
    return made


def _root(agent, host):
    return agent.conductor.nodes[(host, host)]['uuid']


def _put(placement, consumer, allocations, consumer_type='INSTANCE'):
    resp = placement.request(
        '/allocations/%s' % consumer, 'PUT',
        headers={'OpenStack-API-Version': V},
        json={'allocations': {rp: {'resources': res}
                              for rp, res in allocations.items()},
              'consumer_generation': None, 'project_id': 'p1',
              'user_id': 'u1', 'consumer_type': consumer_type})
    assert resp.status_code == 204, resp.text


def _allocation(placement, consumer):
    resp = placement.request('/allocations/%s' % consumer, 'GET',
                             headers={'OpenStack-API-Version': V})
    return {rp: a['resources'] for rp, a in
            json.loads(resp.content)['allocations'].items()}


def _server(agent, placement, host='cn0', **fields):
    """An ACTIVE server on ``host`` with its guest and its allocation."""
    inst = agent.conductor.add_instance(host, vcpus=1, memory_mb=64,
                                        **fields)
    agent.driver.spawn(driver_mod.Guest(uuid=inst['uuid'], host=host,
                                        nodename=host))
    _put(placement, inst['uuid'], {_root(agent, host): RESOURCES})
    return inst


def _events(agent, uuid, name):
    return [e[2:] for e in agent.conductor.events
            if e[0] == uuid and e[1] == name]


def _row(agent, inst):
    return agent.conductor.instances[inst['uuid']]


# --- shelve and offload -----------------------------------------------------

def test_shelve_powers_off_and_keeps_the_allocation(agent, placement, conf):
    conf.config(shelved_offload_time=-1)
    inst = _server(agent, placement, task_state='shelving')
    shelve.shelve_instance(agent, CTXT, 'cn0', inst['uuid'])
    row = _row(agent, inst)
    assert (row['vm_state'], row['task_state'], row['power_state']) == (
        'shelved', None, 4)
    assert row['host'] == 'cn0'
    assert row['system_metadata']['shelved_host'] == 'cn0'
    assert agent.driver.get_info('cn0', inst['uuid']) == 4
    assert _allocation(placement, inst['uuid']) == {
        _root(agent, 'cn0'): RESOURCES}
    assert _events(agent, inst['uuid'], shelve.SHELVE_EVENT) == [
        ('start', None), ('finish', 'Success')]


def test_shelve_with_offload_time_zero_offloads_at_once(agent, placement):
    inst = _server(agent, placement, task_state='shelving')
    shelve.shelve_instance(agent, CTXT, 'cn0', inst['uuid'])
    row = _row(agent, inst)
    assert (row['vm_state'], row['task_state'], row['host'],
            row['node']) == ('shelved_offloaded', None, None, None)
    assert inst['uuid'] not in agent.driver.list_guests('cn0')
    assert _allocation(placement, inst['uuid']) == {}
    assert _events(agent, inst['uuid'], shelve.OFFLOAD_EVENT) == [
        ('start', None), ('finish', 'Success')]
    agent.update_all()
    assert agent.conductor.nodes[('cn0', 'cn0')]['vcpus_used'] == 0


def test_a_failed_power_off_leaves_the_server_as_it_was(agent, placement,
                                                        monkeypatch):
    inst = _server(agent, placement, task_state='shelving')

    def broken(host, uuid):
        raise driver_mod.PowerActionError(operation='power_off', uuid=uuid,
                                          reason='stuck')
    monkeypatch.setattr(agent.driver, 'power_off', broken)
    shelve.shelve_instance(agent, CTXT, 'cn0', inst['uuid'])
    row = _row(agent, inst)
    assert (row['vm_state'], row['task_state']) == ('active', None)
    assert 'stuck' in agent.conductor.faults[0]['message']
    assert _allocation(placement, inst['uuid'])


def test_the_periodic_offload_takes_servers_shelved_long_enough(
        agent, placement, conf):
    conf.config(shelved_offload_time=3600)
    old = (datetime.datetime.utcnow() -
           datetime.timedelta(hours=2)).isoformat()
    recent = datetime.datetime.utcnow().isoformat()
    aged = _server(agent, placement, vm_state='shelved',
                   system_metadata={'shelved_at': old})
    fresh = _server(agent, placement, vm_state='shelved',
                    system_metadata={'shelved_at': recent})
    assert shelve.offload_expired(agent, CTXT) == [aged['uuid']]
    assert _row(agent, aged)['vm_state'] == 'shelved_offloaded'
    assert _row(agent, fresh)['vm_state'] == 'shelved'
    assert _allocation(placement, aged['uuid']) == {}
    conf.config(shelved_offload_time=-1)
    assert shelve.offload_expired(agent, CTXT) == []


# --- unshelve ---------------------------------------------------------------

def _offloaded(agent, placement, host):
    """An offloaded server the conductor has placed on ``host``."""
    inst = agent.conductor.add_instance(
        host, vcpus=1, memory_mb=64, vm_state='shelved_offloaded',
        task_state='unshelving')
    flavor = flavor_obj.Flavor.from_primitive(inst['flavor'])
    spec = spec_obj.RequestSpec(instance_uuid=inst['uuid'],
                                flavor=flavor).to_primitive()
    request = {'allocations': {_root(agent, host): {
        'resources': RESOURCES}}}
    _put(placement, inst['uuid'], {_root(agent, host): RESOURCES})
    selection = {'service_host': host, 'nodename': host, 'limits': {},
                 'allocation_request': json.dumps(request)}
    return inst, spec, selection


def test_unshelve_spawns_and_counts_like_a_build(agent, placement):
    inst, spec, selection = _offloaded(agent, placement, 'cn1')
    shelve.unshelve_instance(agent, CTXT, 'cn1', inst['uuid'], spec,
                             selection)
    row = _row(agent, inst)
    assert (row['vm_state'], row['task_state'], row['host']) == (
        'active', None, 'cn1')
    assert inst['uuid'] in agent.driver.list_guests('cn1')
    agent.update_all()
    assert agent.conductor.nodes[('cn1', 'cn1')]['vcpus_used'] == 1
    assert _events(agent, inst['uuid'], shelve.UNSHELVE_EVENT) == [
        ('start', None), ('finish', 'Success')]


def test_a_failed_unshelve_gives_everything_back(agent, placement, conf):
    conf.config(group='fake_driver', fail_hosts=['cn1'])
    inst, spec, selection = _offloaded(agent, placement, 'cn1')
    shelve.unshelve_instance(agent, CTXT, 'cn1', inst['uuid'], spec,
                             selection)
    row = _row(agent, inst)
    assert (row['vm_state'], row['task_state'], row['host']) == (
        'shelved_offloaded', None, None)
    assert _allocation(placement, inst['uuid']) == {}
    assert inst['uuid'] not in agent.driver.list_guests('cn1')
    assert agent.conductor.faults
    agent.update_all()
    assert agent.conductor.nodes[('cn1', 'cn1')]['vcpus_used'] == 0


# --- evacuate ---------------------------------------------------------------

def _evacuating(agent, placement):
    """A server of the dead cn0 the conductor is evacuating to cn1: the
    source allocation under the migration, cn1 claimed for the instance.
    """
    inst = _server(agent, placement, 'cn0', task_state='rebuilding')
    migration = agent.conductor.add_migration(
        uuid='9e6c1a3e-0000-4000-8000-00000000e0ac',
        instance_uuid=inst['uuid'], migration_type='evacuation',
        status='pre-migrating', source_compute='cn0', source_node='cn0',
        dest_compute='cn1', dest_node='cn1',
        old_flavor=inst['flavor'], new_flavor=inst['flavor'])
    resp = placement.request('/allocations/%s' % inst['uuid'], 'DELETE',
                             headers={'OpenStack-API-Version': V})
    assert resp.status_code == 204
    _put(placement, migration['uuid'], {_root(agent, 'cn0'): RESOURCES},
         consumer_type='MIGRATION')
    _put(placement, inst['uuid'], {_root(agent, 'cn1'): RESOURCES})
    spec = spec_obj.RequestSpec(
        instance_uuid=inst['uuid'],
        flavor=flavor_obj.Flavor.from_primitive(inst['flavor']))
    selection = {'service_host': 'cn1', 'nodename': 'cn1', 'limits': {}}
    return inst, migration, spec.to_primitive(), selection


@pytest.mark.parametrize('target_state,vm_state', [(None, 'active'),
                                                   ('stopped', 'stopped')])
def test_evacuate_recreates_the_server_on_the_destination(
        agent, placement, target_state, vm_state):
    inst, migration, spec, selection = _evacuating(agent, placement)
    evacuate.evacuate_instance(agent, CTXT, 'cn1', inst['uuid'],
                               migration['uuid'], spec, selection,
                               target_state=target_state)
    row = _row(agent, inst)
    assert (row['vm_state'], row['task_state'], row['host'],
            row['migration_context']) == (vm_state, None, 'cn1', None)
    assert agent.conductor.migrations[migration['uuid']]['status'] == 'done'
    assert inst['uuid'] in agent.driver.list_guests('cn1')
    agent.update_all()
    assert agent.conductor.nodes[('cn1', 'cn1')]['vcpus_used'] == 1
    # the source stays held by the migration until cn0 comes back
    assert _allocation(placement, migration['uuid']) == {
        _root(agent, 'cn0'): RESOURCES}

    completed = evacuate.destroy_evacuated(agent, CTXT, 'cn0')
    assert completed == [migration['uuid']]
    assert _allocation(placement, migration['uuid']) == {}
    assert inst['uuid'] not in agent.driver.list_guests('cn0')
    assert agent.conductor.migrations[migration['uuid']]['status'] == \
        'completed'
    assert _allocation(placement, inst['uuid']) == {
        _root(agent, 'cn1'): RESOURCES}


def test_a_failed_evacuation_puts_the_server_back_on_its_source(
        agent, placement, conf):
    conf.config(group='fake_driver', fail_hosts=['cn1'])
    inst, migration, spec, selection = _evacuating(agent, placement)
    evacuate.evacuate_instance(agent, CTXT, 'cn1', inst['uuid'],
                               migration['uuid'], spec, selection)
    row = _row(agent, inst)
    assert (row['vm_state'], row['task_state'], row['host']) == (
        'error', None, 'cn0')
    assert agent.conductor.migrations[migration['uuid']]['status'] == \
        'failed'
    assert _allocation(placement, inst['uuid']) == {
        _root(agent, 'cn0'): RESOURCES}
    assert _allocation(placement, migration['uuid']) == {}
    assert inst['uuid'] not in agent.driver.list_guests('cn1')
    # the source keeps its server when it comes back
    assert evacuate.destroy_evacuated(agent, CTXT, 'cn0') == []
    assert inst['uuid'] in agent.driver.list_guests('cn0')


def test_a_restarted_source_cleans_up_at_start(agent, placement):
    inst, migration, spec, selection = _evacuating(agent, placement)
    evacuate.evacuate_instance(agent, CTXT, 'cn1', inst['uuid'],
                               migration['uuid'], spec, selection)
    delete.recover_host(agent, CTXT, 'cn0')
    assert agent.conductor.migrations[migration['uuid']]['status'] == \
        migration_obj.COMPLETED
    assert _allocation(placement, migration['uuid']) == {}


# --- after a restart --------------------------------------------------------

def test_a_restart_finishes_or_ends_interrupted_moves(agent, placement):
    shelving = _server(agent, placement, task_state='shelving')
    spawning, _spec, _sel = _offloaded(agent, placement, 'cn0')
    agent.conductor.instances[spawning['uuid']]['task_state'] = 'spawning'
    evacuating, migration, _spec, _sel = _evacuating(agent, placement)
    row = agent.conductor.instances[evacuating['uuid']]
    row.update(task_state='rebuild_spawning', host='cn0',
               migration_context={'migration_uuid': migration['uuid']})
    delete.recover_host(agent, CTXT, 'cn0')
    # the shelve ran again (offload time 0: offloaded)
    assert _row(agent, shelving)['vm_state'] == 'shelved_offloaded'
    assert _allocation(placement, shelving['uuid']) == {}
    # the unshelve gave everything back
    assert (_row(agent, spawning)['vm_state'],
            _row(agent, spawning)['task_state'],
            _row(agent, spawning)['host']) == (
        'shelved_offloaded', None, None)
    assert _allocation(placement, spawning['uuid']) == {}
    # the evacuation ended in ERROR, its source left to clean up
    assert (_row(agent, evacuating)['vm_state'],
            _row(agent, evacuating)['task_state']) == ('error', None)
    assert agent.conductor.migrations[migration['uuid']]['status'] == 'done'
