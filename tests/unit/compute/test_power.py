# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Power actions on the compute side: states, events, notifications,
driver failures, and the build/delete notifications.
"""

import pytest

from common import context
from services.compute import build
from services.compute import delete
from services.compute import power
from services.compute.virt import driver as driver_mod
from tests.unit.compute import test_build

CTXT = context.get_admin_context()


class Recorder(object):
    def __init__(self):
        self.sent = []

    def emit(self, ctxt, event_type, instance, fault=None):
        self.sent.append((event_type, dict(instance), fault))


@pytest.fixture
def notes(monkeypatch):
    recorder = Recorder()
    monkeypatch.setattr(power, 'notifier', lambda host: recorder)
    return recorder


@pytest.fixture
def agent(make_agent):
    made = make_agent()
    made.start()
    return made


def _built(agent, placement):
    inst, spec, sel = test_build._boot(agent, placement)
    build.BuildTask(agent, CTXT, 'cn', inst, spec, sel, []).run()
    return inst['uuid']


def _act(agent, uuid, name, task_state, reboot_type=None):
    agent.conductor.instances[uuid]['task_state'] = task_state
    power.run(agent, CTXT, 'cn', uuid, name, reboot_type=reboot_type)
    return agent.conductor.instances[uuid]


def _states(row):
    return row['vm_state'], row['task_state'], row['power_state']


SEQUENCE = [
    ('stop', 'powering-off', None, ('stopped', None, 4), 'power_off'),
    ('start', 'powering-on', None, ('active', None, 1), 'power_on'),
    ('pause', 'pausing', None, ('paused', None, 3), 'pause'),
    ('unpause', 'unpausing', None, ('active', None, 1), 'unpause'),
    ('suspend', 'suspending', None, ('suspended', None, 7), 'suspend'),
    ('resume', 'resuming', None, ('active', None, 1), 'resume'),
    ('reboot', 'rebooting', 'SOFT', ('active', None, 1), 'reboot'),
    ('reboot', 'rebooting_hard', 'HARD', ('active', None, 1), 'reboot'),
]


def test_each_action_moves_the_states(agent, placement, notes):
    uuid = _built(agent, placement)
    allocation = test_build._allocation(placement, uuid)
    for name, task, reboot_type, end, notification in SEQUENCE:
        del notes.sent[:]
        del agent.conductor.events[:]
        row = _act(agent, uuid, name, task, reboot_type)
        assert _states(row) == end, name
        event = 'compute_%s_instance' % name
        assert agent.conductor.events == [
            (uuid, event, 'start', None), (uuid, event, 'finish',
                                           'Success')]
        assert [n[0] for n in notes.sent] == [
            'instance.%s.start' % notification,
            'instance.%s.end' % notification]
        assert notes.sent[-1][1]['vm_state'] == end[0]
    # NOTE: power actions leave placement alone, as Nova's.
    assert test_build._allocation(placement, uuid) == allocation


def test_reboot_moves_to_reboot_started(agent, placement, monkeypatch):
    uuid = _built(agent, placement)
    seen = []
    real = agent.driver.reboot

    def reboot(host, instance_uuid, reboot_type):
        seen.append((agent.conductor.instances[uuid]['task_state'],
                     reboot_type))
        real(host, instance_uuid, reboot_type)
    monkeypatch.setattr(agent.driver, 'reboot', reboot)
    _act(agent, uuid, 'reboot', 'rebooting_hard', 'HARD')
    _act(agent, uuid, 'reboot', 'rebooting', 'SOFT')
    assert seen == [('reboot_started_hard', 'HARD'),
                    ('reboot_started', 'SOFT')]


def test_a_driver_failure_leaves_a_clean_state(agent, placement, notes,
                                               conf):
    uuid = _built(agent, placement)
    conf.config(group='fake_driver', fail_actions=['power_off'])
    row = _act(agent, uuid, 'stop', 'powering-off')
    assert _states(row) == ('active', None, 1)
    [fault] = agent.conductor.faults
    assert fault['code'] == 500 and 'fail_actions' in fault['message']
    assert agent.conductor.events[-1] == (
        uuid, 'compute_stop_instance', 'finish', 'Error')
    event_type, payload, error = notes.sent[-1]
    assert event_type == 'instance.power_off.error'
    assert error['exception'] == 'PowerActionError'


def test_a_failed_reboot_of_a_stopped_guest_is_an_error(
        agent, placement, conf):
    uuid = _built(agent, placement)
    _act(agent, uuid, 'stop', 'powering-off')
    conf.config(group='fake_driver', action_failure_rate=1.0)
    row = _act(agent, uuid, 'reboot', 'rebooting_hard', 'HARD')
    assert _states(row) == ('error', None, 4)


def test_a_failed_reboot_of_a_running_guest_stays_active(
        agent, placement, conf):
    uuid = _built(agent, placement)
    conf.config(group='fake_driver', fail_actions=['reboot'])
    row = _act(agent, uuid, 'reboot', 'rebooting', 'SOFT')
    assert _states(row) == ('active', None, 1)


def test_a_request_overtaken_is_dropped(agent, placement, notes):
    uuid = _built(agent, placement)
    del notes.sent[:]
    # NOTE: e.g. the server is being deleted, or an admin reset it.
    row = _act(agent, uuid, 'stop', 'deleting')
    assert _states(row) == ('active', 'deleting', 1)
    assert notes.sent == []
    assert agent.driver.get_info('cn', uuid) == 1


def test_pause_needs_a_running_guest(agent, placement):
    uuid = _built(agent, placement)
    agent.driver.power_off('cn', uuid)
    with pytest.raises(driver_mod.GuestStateError):
        agent.driver.pause('cn', uuid)


def test_the_agent_periodic_update_keeps_a_stopped_guest(agent, placement):
    uuid = _built(agent, placement)
    _act(agent, uuid, 'stop', 'powering-off')
    agent.update_all()
    assert _states(agent.conductor.instances[uuid]) == ('stopped', None, 4)
    assert agent.driver.get_info('cn', uuid) == 4


def test_build_and_delete_notify(agent, placement, notes):
    uuid = _built(agent, placement)
    delete.terminate(agent, CTXT, 'cn', uuid)
    assert [n[0] for n in notes.sent] == [
        'instance.create.start', 'instance.create.end',
        'instance.delete.start', 'instance.delete.end']
    assert notes.sent[1][1]['vm_state'] == 'active'
    assert notes.sent[3][1]['vm_state'] == 'deleted'


def test_local_driver_keeps_the_power_state(tmp_path, conf):
    from services.compute.virt import local
    conf.config(instances_path=str(tmp_path))
    drv = local.LocalDriver(conf.conf)
    drv.spawn(driver_mod.Guest(uuid='u1', host='h', nodename='h'))
    drv.suspend('h', 'u1')
    assert drv.get_info('h', 'u1') == 7
    assert drv.list_guests('h')['u1'].power_state == 7
    drv.resume('h', 'u1')
    assert drv.get_info('h', 'u1') == 1
    with pytest.raises(driver_mod.GuestNotFound):
        drv.power_off('h', 'nope')


def test_a_restart_finishes_interrupted_power_actions(agent, placement):
    stopping, rebooting = _built(agent, placement), _built(agent, placement)
    rows = agent.conductor.instances
    rows[stopping]['task_state'] = 'powering-off'
    rows[rebooting]['task_state'] = 'reboot_started_hard'
    delete.recover_host(agent, CTXT, 'cn')
    assert _states(rows[stopping]) == ('stopped', None, 4)
    assert _states(rows[rebooting]) == ('active', None, 1)
