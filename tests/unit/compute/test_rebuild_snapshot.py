# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The compute side of rebuild and createImage, on the fake driver."""

import threading
import types

import pytest

from common import context
from services.compute import rebuild
from services.compute import snapshot
from services.compute.virt import driver as driver_mod

CTXT = context.get_admin_context()


@pytest.fixture
def agent(make_agent):
    made = make_agent()
    made.start()
    return made


def _guest(agent, inst):
    agent.driver.spawn(driver_mod.Guest(uuid=inst['uuid'], host='cn',
                                        nodename='cn'))


def _events(agent, uuid, name):
    return [e[2:] for e in agent.conductor.events
            if e[0] == uuid and e[1] == name]


def _rebuild(agent, inst, orig_vm_state='active'):
    rebuild.rebuild_instance(agent, CTXT, 'cn', inst['uuid'], 'img-2',
                             orig_vm_state)
    return agent.conductor.instances[inst['uuid']]


def test_rebuild_recreates_the_guest_and_ends_active(agent):
    inst = agent.conductor.add_instance('cn', task_state='rebuilding',
                                        image_ref='img-2')
    _guest(agent, inst)
    row = _rebuild(agent, inst)
    assert (row['vm_state'], row['task_state'], row['power_state']) == (
        'active', None, 1)
    assert row['launched_at']
    assert inst['uuid'] in agent.driver.list_guests('cn')
    assert _events(agent, inst['uuid'], rebuild.EVENT) == [
        ('start', None), ('finish', 'Success')]


def test_rebuilding_a_stopped_server_leaves_it_stopped(agent):
    inst = agent.conductor.add_instance('cn', task_state='rebuilding',
                                        vm_state='stopped', power_state=4)
    _guest(agent, inst)
    row = _rebuild(agent, inst, orig_vm_state='stopped')
    assert (row['vm_state'], row['task_state'], row['power_state']) == (
        'stopped', None, 4)


def test_a_failed_rebuild_ends_in_error_with_a_fault(agent, monkeypatch):
    inst = agent.conductor.add_instance('cn', task_state='rebuilding')
    _guest(agent, inst)

    def broken(*args, **kwargs):
        raise driver_mod.InstanceRebuildError(uuid=inst['uuid'],
                                              reason='disk on fire')
    monkeypatch.setattr(agent.driver, 'rebuild', broken)
    row = _rebuild(agent, inst)
    assert (row['vm_state'], row['task_state']) == ('error', None)
    [fault] = agent.conductor.faults
    assert 'disk on fire' in fault['message']
    assert _events(agent, inst['uuid'], rebuild.EVENT) == [
        ('start', None), ('finish', 'Error')]


def test_fake_driver_rebuild_and_snapshot_fail_at_the_action_rate(
        agent, monkeypatch):
    inst = agent.conductor.add_instance('cn', task_state='rebuilding')
    _guest(agent, inst)
    # NOTE: the options belong to the power actions' set; the driver reads
    # them with defaults, so a stand-in group is enough here.
    monkeypatch.setattr(agent.driver, 'conf', types.SimpleNamespace(
        fake_driver=types.SimpleNamespace(action_latency=0,
                                          action_failure_rate=1.0)))
    row = _rebuild(agent, inst)
    assert row['vm_state'] == 'error'
    assert 'action_failure_rate' in agent.conductor.faults[0]['message']
    with pytest.raises(driver_mod.InstanceSnapshotError):
        agent.driver.snapshot('cn', inst['uuid'], 'img')


def test_a_deleted_instance_is_not_rebuilt(agent):
    rebuild.rebuild_instance(agent, CTXT, 'cn', 'no-such-uuid', 'img',
                             'active')
    assert agent.conductor.faults == []


def _snapshot(agent, inst, image_id='img-snap'):
    agent.conductor.__dict__.setdefault('images', {})[image_id] = {
        'status': 'queued'}
    snapshot.snapshot_instance(agent, CTXT, 'cn', inst['uuid'], image_id)
    return agent.conductor.instances[inst['uuid']]


def test_snapshot_makes_the_image_active_and_clears_the_task(agent):
    inst = agent.conductor.add_instance('cn', task_state='image_snapshot')
    _guest(agent, inst)
    row = _snapshot(agent, inst)
    assert (row['vm_state'], row['task_state']) == ('active', None)
    image = agent.conductor.images['img-snap']
    assert image['status'] == 'active'
    assert image['size'] > 0 and len(image['checksum']) == 32
    assert agent.driver.snapshots['img-snap'] == ('cn', inst['uuid'])
    assert _events(agent, inst['uuid'], snapshot.EVENT) == [
        ('start', None), ('finish', 'Success')]


def test_a_failed_snapshot_deletes_the_image_and_keeps_the_vm_state(agent):
    inst = agent.conductor.add_instance('cn', task_state='image_snapshot',
                                        vm_state='paused')
    # NOTE: no guest: the fake driver cannot snapshot it.
    row = _snapshot(agent, inst)
    assert (row['vm_state'], row['task_state']) == ('paused', None)
    assert 'img-snap' not in agent.conductor.images
    [fault] = agent.conductor.faults
    assert 'no such guest' in fault['message']
    assert _events(agent, inst['uuid'], snapshot.EVENT) == [
        ('start', None), ('finish', 'Error')]


def test_snapshot_of_a_deleted_instance_drops_the_image(agent):
    agent.conductor.__dict__.setdefault('images', {})['img-x'] = {}
    snapshot.snapshot_instance(agent, CTXT, 'cn', 'gone', 'img-x')
    assert 'img-x' not in agent.conductor.images


def test_local_driver_snapshot_and_rebuild(tmp_path):
    from services.compute.virt import local

    class Conf(object):
        instances_path = str(tmp_path)
        host = 'h'
    drv = local.LocalDriver.__new__(local.LocalDriver)
    drv.conf = Conf()
    drv._lock = threading.Lock()
    guest = driver_mod.Guest(uuid='u1', host='h', nodename='h')
    drv.spawn(guest)
    result = drv.snapshot('h', 'u1', 'img-1')
    assert result.size > 0
    assert (tmp_path / 'snapshots' / 'img-1').exists()
    drv.rebuild(guest, {})
    assert 'u1' in drv.list_guests('h')
    with pytest.raises(driver_mod.InstanceSnapshotError):
        drv.snapshot('h', 'nope', 'img-2')
    with pytest.raises(driver_mod.InstanceRebuildError):
        drv.rebuild(driver_mod.Guest(uuid='nope', host='h', nodename='h'),
                    {})


def test_a_restart_ends_interrupted_rebuilds_and_snapshots(make_agent):
    agent = make_agent()
    conductor = agent.conductor
    rebuilding = conductor.add_instance('cn', task_state='rebuild_spawning')
    snapping = conductor.add_instance('cn', task_state='image_uploading',
                                      vm_state='stopped')
    conductor.__dict__.setdefault('images', {}).update({
        'img-a': {'instance_uuid': snapping['uuid']},
        'img-b': {'instance_uuid': 'someone-else'}})
    agent.start()
    row = conductor.instances[rebuilding['uuid']]
    assert (row['vm_state'], row['task_state']) == ('error', None)
    assert 'interrupted' in conductor.faults[0]['message']
    row = conductor.instances[snapping['uuid']]
    assert (row['vm_state'], row['task_state']) == ('stopped', None)
    assert list(conductor.images) == ['img-b']
