# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The power, lock and reset-state server actions and the status words.
"""

import pytest

from common.objects import instance as inst
from services.api.actions import lock as lock_mod
from tests.unit.api.helpers import V

MEMBER = 'alice:projA'


def _action(world, server, body, **kw):
    return world.client.post(V + '/servers/%s/action' % server, body, **kw)


def _show(world, server, **kw):
    return world.client.get(V + '/servers/%s' % server, **kw)[1]['server']


def _actions(world, server):
    body = world.client.get(V + '/servers/%s/os-instance-actions'
                            % server)[1]
    return [a['action'] for a in body['instanceActions']]


def _message(body):
    [fault] = body.values()
    return fault['message']


CASES = [
    ({'os-stop': None}, 'active', 'powering-off', 'stop', 'stop_instance',
     {}),
    ({'os-stop': None}, 'error', 'powering-off', 'stop', 'stop_instance',
     {}),
    ({'os-start': None}, 'stopped', 'powering-on', 'start',
     'start_instance', {}),
    ({'pause': None}, 'active', 'pausing', 'pause', 'pause_instance', {}),
    ({'unpause': None}, 'paused', 'unpausing', 'unpause',
     'unpause_instance', {}),
    ({'suspend': None}, 'active', 'suspending', 'suspend',
     'suspend_instance', {}),
    ({'resume': None}, 'suspended', 'resuming', 'resume',
     'resume_instance', {}),
    ({'reboot': {'type': 'SOFT'}}, 'active', 'rebooting', 'reboot',
     'reboot_instance', {'reboot_type': 'SOFT'}),
    ({'reboot': {'type': 'hard'}}, 'stopped', 'rebooting_hard', 'reboot',
     'reboot_instance', {'reboot_type': 'HARD'}),
    ({'reboot': {'type': 'HARD'}}, 'error', 'rebooting_hard', 'reboot',
     'reboot_instance', {'reboot_type': 'HARD'}),
]


@pytest.mark.parametrize('body,vm_state,task_state,action,rpc,kwargs',
                         CASES)
def test_an_action_sets_its_task_state_and_casts(
        world, body, vm_state, task_state, action, rpc, kwargs):
    server = world.add_instance('cell1', host='c1', vm_state=vm_state)
    status, reply, _ = _action(world, server, body)
    assert status == 202, reply
    shown = _show(world, server)
    assert shown['OS-EXT-STS:task_state'] == task_state
    assert shown['OS-EXT-STS:vm_state'] == vm_state
    assert _actions(world, server) == [action]
    assert world.compute.casts == [(rpc, 'c1', server, kwargs)]


WRONG = [
    ({'os-stop': None}, 'stopped', None, 'stop', 'vm_state stopped'),
    ({'os-start': None}, 'active', None, 'start', 'vm_state active'),
    ({'pause': None}, 'paused', None, 'pause', 'vm_state paused'),
    ({'unpause': None}, 'active', None, 'unpause', 'vm_state active'),
    ({'suspend': None}, 'stopped', None, 'suspend', 'vm_state stopped'),
    ({'resume': None}, 'active', None, 'resume', 'vm_state active'),
    ({'reboot': {'type': 'SOFT'}}, 'stopped', None, 'reboot',
     'vm_state stopped'),
    ({'reboot': {'type': 'SOFT'}}, 'active', 'rebooting', 'reboot',
     'task_state rebooting'),
    ({'reboot': {'type': 'HARD'}}, 'building', None, 'reboot',
     'vm_state building'),
    ({'reboot': {'type': 'HARD'}}, 'active', 'powering-off', 'reboot',
     'task_state powering-off'),
    ({'os-stop': None}, 'active', 'pausing', 'stop',
     'task_state pausing'),
]


@pytest.mark.parametrize('body,vm_state,task_state,method,where', WRONG)
def test_a_wrong_state_is_a_409_that_changes_nothing(
        world, body, vm_state, task_state, method, where):
    server = world.add_instance('cell1', host='c1', vm_state=vm_state,
                                task_state=task_state)
    status, reply, _ = _action(world, server, body)
    assert status == 409, reply
    assert _message(reply) == "Cannot '%s' instance %s while it is in %s" % (
        method, server, where)
    shown = _show(world, server)
    assert (shown['OS-EXT-STS:vm_state'],
            shown['OS-EXT-STS:task_state']) == (vm_state, task_state)
    assert _actions(world, server) == []
    assert world.compute.casts == []


def test_a_server_without_a_host_is_not_ready(world):
    server = world.add_instance('cell1', vm_state='error')
    status, reply, _ = _action(world, server, {'os-stop': None})
    assert status == 409
    assert _message(reply) == 'Instance %s is not ready' % server
    assert _actions(world, server) == []


def test_a_hard_reboot_overrides_a_soft_one(world):
    server = world.add_instance('cell1', host='c1', task_state='rebooting')
    status, reply, _ = _action(world, server, {'reboot': {'type': 'HARD'}})
    assert status == 202, reply
    assert _show(world, server)['status'] == 'HARD_REBOOT'


@pytest.mark.parametrize('body,field', [
    ({'reboot': {}}, 'reboot'),
    ({'reboot': {'type': 'WARM'}}, 'reboot/type'),
    ({'reboot': None}, 'reboot'),
    ({'os-stop': {'force': True}}, 'os-stop'),
    ({'os-resetState': {'state': 'stopped'}}, 'os-resetState/state'),
    ({'os-resetState': {}}, 'os-resetState'),
])
def test_a_malformed_body_is_a_400_naming_the_field(world, body, field):
    server = world.add_instance('cell1', host='c1')
    status, reply, _ = _action(world, server, body)
    assert status == 400, reply
    assert 'Invalid input for field/attribute %s.' % field in _message(reply)
    assert _actions(world, server) == []


def test_a_locked_server_refuses_its_owner_not_an_admin(world):
    server = world.add_instance('cell1', host='c1', project_id='projA',
                                locked=True, locked_by='admin')
    status, reply, _ = _action(world, server, {'os-stop': None},
                               token=MEMBER)
    assert status == 409
    assert _message(reply) == 'Instance %s is locked' % server
    status, reply, _ = _action(world, server, {'os-stop': None})
    assert status == 202, reply


def test_policies_another_project_and_a_reader(world):
    server = world.add_instance('cell1', host='c1', project_id='projA')
    status, _, _ = _action(world, server, {'os-stop': None},
                           token='bob:projB')
    assert status == 404
    status, _, _ = _action(world, server, {'os-stop': None},
                           token='rita:projA',
                           headers={'X-Roles': 'reader'})
    assert status == 403
    status, _, _ = _action(world, server, {'os-stop': None}, token=MEMBER)
    assert status == 202


def test_lock_and_unlock_by_the_owner(world, monkeypatch):
    sent = []
    monkeypatch.setattr(lock_mod.notifications.InstanceNotifier, 'emit',
                        lambda self, ctxt, event, instance, fault=None:
                        sent.append((event, instance.locked)))
    server = world.add_instance('cell1', host='c1', project_id='projA')
    status, reply, _ = _action(world, server,
                               {'lock': {'locked_reason': 'audit'}},
                               token=MEMBER)
    assert status == 202, reply
    shown = _show(world, server, token=MEMBER)
    assert (shown['locked'], shown['locked_reason']) == (True, 'audit')
    old = _show(world, server, token=MEMBER, version='2.72')
    assert old['locked'] is True and 'locked_reason' not in old
    assert sent == [('instance.lock', True)]
    status, reply, _ = _action(world, server, {'unlock': None},
                               token=MEMBER)
    assert status == 202, reply
    shown = _show(world, server, token=MEMBER)
    assert (shown['locked'], shown['locked_reason']) == (False, None)
    assert _actions(world, server) == ['unlock', 'lock']
    assert sent[-1] == ('instance.unlock', False)


def test_an_owner_cannot_lift_an_admins_lock(world):
    server = world.add_instance('cell1', host='c1', project_id='projA')
    assert _action(world, server, {'lock': None})[0] == 202
    status, reply, _ = _action(world, server, {'unlock': None},
                               token=MEMBER)
    assert status == 403, reply
    assert _show(world, server)['locked'] is True
    assert _action(world, server, {'unlock': None})[0] == 202
    assert _show(world, server)['locked'] is False


def test_lock_reason_is_validated_from_2_73(world):
    server = world.add_instance('cell1', host='c1')
    status, reply, _ = _action(world, server,
                               {'lock': {'locked_reason': ''}})
    assert status == 400
    status, reply, _ = _action(world, server, {'lock': {'why': 'x'}},
                               version='2.72')
    assert status == 202, reply
    assert _show(world, server)['locked_reason'] is None


def test_reset_state_is_for_admins(world):
    server = world.add_instance('cell1', host='c1', project_id='projA',
                                vm_state='stopped',
                                task_state='powering-on')
    status, _, _ = _action(world, server,
                           {'os-resetState': {'state': 'active'}},
                           token=MEMBER)
    assert status == 403
    status, reply, _ = _action(world, server,
                               {'os-resetState': {'state': 'error'}})
    assert status == 202, reply
    shown = _show(world, server)
    assert (shown['status'], shown['OS-EXT-STS:task_state']) == (
        'ERROR', None)
    assert _actions(world, server) == ['resetState']
    assert world.compute.casts == []


@pytest.mark.parametrize('vm_state,task_state,status', [
    ('active', None, 'ACTIVE'), ('active', 'rebooting', 'REBOOT'),
    ('active', 'reboot_started_hard', 'HARD_REBOOT'),
    ('active', 'rebuilding', 'REBUILD'), ('active', 'resize_prep', 'RESIZE'),
    ('active', 'powering-off', 'ACTIVE'), ('stopped', None, 'SHUTOFF'),
    ('stopped', 'powering-on', 'SHUTOFF'), ('paused', None, 'PAUSED'),
    ('suspended', None, 'SUSPENDED'), ('error', None, 'ERROR'),
    ('error', 'rebuild_spawning', 'REBUILD'), ('building', None, 'BUILD'),
    ('resized', None, 'VERIFY_RESIZE'), ('shelved', None, 'SHELVED'),
    ('shelved_offloaded', None, 'SHELVED_OFFLOADED'),
    ('rescued', None, 'RESCUE'), ('soft-delete', None, 'SOFT_DELETED'),
    ('paused', 'migrating', 'MIGRATING'), ('nonsense', None, 'UNKNOWN'),
])
def test_status_from_vm_and_task_state(vm_state, task_state, status):
    assert inst.status_from_state(vm_state, task_state) == status


def test_show_has_the_power_state(world):
    server = world.add_instance('cell1', host='c1', vm_state='stopped',
                                power_state=4)
    shown = _show(world, server)
    assert (shown['status'], shown['OS-EXT-STS:power_state']) == (
        'SHUTOFF', 4)
    status, body, _ = world.client.get(V + '/servers/detail?status=SHUTOFF')
    assert [s['id'] for s in body['servers']] == [server]
