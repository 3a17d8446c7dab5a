# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The shelve, shelveOffload, unshelve and evacuate server actions."""

import pytest

from common.db import cell_tables
from services.api import boot
from tests.unit.api.helpers import V

MEMBER = 'alice:projA'


class Conductor(object):
    """Records the conductor casts of the moves."""

    def __init__(self):
        self.casts = []
        self.fail = False

    def unshelve_instance(self, ctxt, **kwargs):
        if self.fail:
            raise RuntimeError('conductor unreachable')
        self.casts.append(('unshelve_instance', kwargs))

    def evacuate_instance(self, ctxt, **kwargs):
        if self.fail:
            raise RuntimeError('conductor unreachable')
        self.casts.append(('evacuate_instance', kwargs))


@pytest.fixture
def conductor(world, monkeypatch):
    fake = Conductor()
    monkeypatch.setattr(boot, 'conductor_api', lambda: fake)
    return fake


def _action(world, server, body, **kw):
    return world.client.post(V + '/servers/%s/action' % server, body, **kw)


def _show(world, server):
    return world.client.get(V + '/servers/%s' % server)[1]['server']


def _state(world, server):
    shown = _show(world, server)
    return shown['OS-EXT-STS:vm_state'], shown['OS-EXT-STS:task_state']


def _actions(world, server):
    body = world.client.get(V + '/servers/%s/os-instance-actions'
                            % server)[1]
    return [a['action'] for a in body['instanceActions']]


def _message(body):
    [fault] = body.values()
    return fault['message']


# --- shelve and shelveOffload ------------------------------------------------

@pytest.mark.parametrize('vm_state', ['active', 'stopped', 'paused',
                                      'suspended'])
def test_shelve_casts_to_the_host(world, vm_state):
    world.add_host('c1')
    server = world.add_instance('cell1', host='c1', vm_state=vm_state)
    status, body, _ = _action(world, server, {'shelve': None})
    assert (status, body) == (202, None)
    assert _state(world, server) == (vm_state, 'shelving')
    assert _actions(world, server) == ['shelve']
    assert world.compute.casts == [('shelve_instance', 'c1', server, {})]


def test_shelve_of_a_shelved_server_is_a_409(world):
    server = world.add_instance('cell1', host='c1', vm_state='shelved')
    status, body, _ = _action(world, server, {'shelve': None})
    assert status == 409
    assert _message(body) == ("Cannot 'shelve' instance %s while it is in "
                              "vm_state shelved" % server)
    assert world.compute.casts == []


def test_shelve_offload_is_for_admins_and_shelved_servers(world):
    server = world.add_instance('cell1', host='c1', vm_state='shelved',
                                project_id='projA')
    status, _body, _ = _action(world, server, {'shelveOffload': None},
                               token=MEMBER)
    assert status == 403
    status, body, _ = _action(world, server, {'shelveOffload': None})
    assert (status, body) == (202, None)
    assert _state(world, server) == ('shelved', 'shelving_offloading')
    assert world.compute.casts == [
        ('shelve_offload_instance', 'c1', server, {})]
    active = world.add_instance('cell1', host='c1')
    status, body, _ = _action(world, active, {'shelveOffload': None})
    assert status == 409, body


def test_a_failed_cast_puts_the_task_back(world, monkeypatch):
    server = world.add_instance('cell1', host='c1')

    def broken(ctxt, host, uuid):
        raise RuntimeError('broker down')
    monkeypatch.setattr(world.compute, 'shelve_instance', broken,
                        raising=False)
    status, _body, _ = _action(world, server, {'shelve': None})
    assert status == 503
    assert _state(world, server) == ('active', None)


# --- unshelve ---------------------------------------------------------------

def test_unshelve_casts_to_the_conductor(world, conductor):
    server = world.add_instance('cell1', vm_state='shelved_offloaded')
    status, body, _ = _action(world, server, {'unshelve': None})
    assert (status, body) == (202, None)
    assert _state(world, server) == ('shelved_offloaded', 'unshelving')
    assert _actions(world, server) == ['unshelve']
    assert conductor.casts == [('unshelve_instance', {
        'instance_uuid': server, 'zone_given': False,
        'availability_zone': None, 'host': None})]


def test_unshelve_needs_a_shelved_server(world, conductor):
    server = world.add_instance('cell1', host='c1')
    status, body, _ = _action(world, server, {'unshelve': None})
    assert status == 409
    assert _message(body) == ("Cannot 'unshelve' instance %s while it is "
                              "in vm_state active" % server)
    assert conductor.casts == []


def test_unshelve_zone_needs_2_77(world, conductor):
    server = world.add_instance('cell1', vm_state='shelved_offloaded')
    status, _body, _ = _action(world, server, {'unshelve': {
        'availability_zone': 'nova'}}, version='2.76')
    assert status == 400
    assert conductor.casts == []


def test_unshelve_into_an_available_zone(world, conductor):
    world.add_host('c1')
    server = world.add_instance('cell1', vm_state='shelved_offloaded')
    status, body, _ = _action(world, server, {'unshelve': {
        'availability_zone': 'elsewhere'}}, version='2.77')
    assert status == 400
    assert _message(body) == ('The requested availability zone is not '
                              'available')
    status, body, _ = _action(world, server, {'unshelve': {
        'availability_zone': 'nova'}}, version='2.77')
    assert status == 202, body
    assert conductor.casts[-1][1]['zone_given'] is True
    assert conductor.casts[-1][1]['availability_zone'] == 'nova'


def test_a_zone_for_a_server_not_offloaded_is_a_409(world, conductor):
    world.add_host('c1')
    server = world.add_instance('cell1', host='c1', vm_state='shelved')
    status, body, _ = _action(world, server, {'unshelve': {
        'availability_zone': 'nova'}}, version='2.77')
    assert status == 409
    assert _message(body) == (
        'Specifying an availability zone or a host when unshelving server '
        '%s with status SHELVED is not supported. The server status must '
        'be SHELVED_OFFLOADED.' % server)
    assert _state(world, server) == ('shelved', None)


def test_a_failed_unshelve_cast_puts_the_task_back(world, conductor):
    conductor.fail = True
    server = world.add_instance('cell1', vm_state='shelved_offloaded')
    status, _body, _ = _action(world, server, {'unshelve': None})
    assert status == 503
    assert _state(world, server) == ('shelved_offloaded', None)


# --- evacuate ---------------------------------------------------------------

def _migrations(world, server):
    return world.rows('cell1', cell_tables.migrations,
                      instance_uuid=server)


def test_evacuate_from_a_forced_down_host(world, conductor):
    world.add_host('c1', forced_down=True)
    world.add_host('c2')
    server = world.add_instance('cell1', host='c1')
    status, body, _ = _action(world, server, {'evacuate': {'host': 'c2'}})
    assert (status, body) == (200, None)
    assert _state(world, server) == ('active', 'rebuilding')
    assert _show(world, server)['status'] == 'REBUILD'
    assert _actions(world, server) == ['evacuate']
    [migration] = _migrations(world, server)
    assert (migration['migration_type'], migration['status'],
            migration['source_compute'], migration['dest_compute']) == (
        'evacuation', 'accepted', 'c1', 'c2')
    assert conductor.casts == [('evacuate_instance', {
        'instance_uuid': server, 'migration_uuid': migration['uuid'],
        'host': 'c2', 'force': False, 'target_state': None})]


def test_a_stopped_server_is_evacuated_to_stay_stopped(world, conductor):
    world.add_host('c1', age=3600)
    server = world.add_instance('cell1', host='c1', vm_state='stopped')
    status, body, _ = _action(world, server, {'evacuate': {}})
    assert status == 200, body
    assert conductor.casts[0][1]['target_state'] == 'stopped'
    assert conductor.casts[0][1]['host'] is None


def test_evacuate_is_refused_while_the_source_is_up(world, conductor):
    world.add_host('c1')
    server = world.add_instance('cell1', host='c1')
    status, body, _ = _action(world, server, {'evacuate': {}})
    assert status == 400
    assert _message(body) == 'Compute service of c1 is still in use.'
    assert _state(world, server) == ('active', None)
    assert _migrations(world, server) == []
    assert conductor.casts == []


@pytest.mark.parametrize('body,status,message', [
    ({'evacuate': {'host': 'c1'}}, 400,
     "The target host can't be the same one."),
    ({'evacuate': {'host': 'nowhere'}}, 404,
     'Compute host nowhere not found.'),
])
def test_bad_target_hosts(world, conductor, body, status, message):
    world.add_host('c1', forced_down=True)
    server = world.add_instance('cell1', host='c1')
    got, reply, _ = _action(world, server, body)
    assert got == status
    assert _message(reply) == message
    assert conductor.casts == []


def test_evacuate_is_for_admins_and_checks_the_state(world, conductor):
    world.add_host('c1', forced_down=True)
    mine = world.add_instance('cell1', host='c1', project_id='projA')
    status, _body, _ = _action(world, mine, {'evacuate': {}}, token=MEMBER)
    assert status == 403
    paused = world.add_instance('cell1', host='c1', vm_state='paused')
    status, body, _ = _action(world, paused, {'evacuate': {}})
    assert status == 409
    assert _message(body) == ("Cannot 'evacuate' instance %s while it is "
                              "in vm_state paused" % paused)


def test_evacuate_bodies_follow_the_microversion(world, conductor):
    world.add_host('c1', forced_down=True)
    world.add_host('c2')
    server = world.add_instance('cell1', host='c1')
    # onSharedStorage is required below 2.14, and answers the password.
    status, _body, _ = _action(world, server, {'evacuate': {}},
                               version='2.13')
    assert status == 400
    status, body, _ = _action(world, server, {'evacuate': {
        'onSharedStorage': False, 'adminPass': 'secret'}}, version='2.13')
    assert (status, body) == (200, {'adminPass': 'secret'})
    # force only from 2.29 to 2.67.
    other = world.add_instance('cell1', host='c1')
    status, _body, _ = _action(world, other, {'evacuate': {
        'host': 'c2', 'force': True}}, version='2.68')
    assert status == 400
    status, body, _ = _action(world, other, {'evacuate': {
        'host': 'c2', 'force': True}}, version='2.29')
    assert status == 200, body
    assert conductor.casts[-1][1]['force'] is True


def test_a_failed_evacuate_cast_undoes_everything(world, conductor):
    conductor.fail = True
    world.add_host('c1', forced_down=True)
    server = world.add_instance('cell1', host='c1')
    status, _body, _ = _action(world, server, {'evacuate': {}})
    assert status == 503
    assert _state(world, server) == ('active', None)
    assert [m['status'] for m in _migrations(world, server)] == ['error']


# --- 2.91: unshelve to a host, a null zone; 2.95: evacuated servers stop

def test_unshelve_to_a_host_from_2_91(world, conductor):
    world.add_host('c1')
    world.add_host('c2')
    server = world.add_instance('cell1', vm_state='shelved_offloaded',
                                project_id='projA')
    body = {'unshelve': {'host': 'c2'}}
    status, _reply, _ = _action(world, server, body, version='2.90')
    assert status == 400
    assert conductor.casts == []
    status, reply, _ = _action(world, server, body, version='2.91',
                               token=MEMBER)
    assert status == 403, reply
    status, reply, _ = _action(world, server, {'unshelve': {
        'host': 'nowhere'}}, version='2.91')
    assert (status, _message(reply)) == (
        400, 'Compute host nowhere could not be found.')
    status, reply, _ = _action(world, server, body, version='2.91')
    assert status == 202, reply
    assert conductor.casts == [('unshelve_instance', {
        'instance_uuid': server, 'zone_given': False,
        'availability_zone': None, 'host': 'c2'})]
    assert _state(world, server) == ('shelved_offloaded', 'unshelving')


def test_a_null_zone_unpins_from_2_91(world, conductor):
    world.add_host('c1')
    server = world.add_instance('cell1', vm_state='shelved_offloaded')
    body = {'unshelve': {'availability_zone': None}}
    status, _reply, _ = _action(world, server, body, version='2.90')
    assert status == 400
    status, reply, _ = _action(world, server, body, version='2.91')
    assert status == 202, reply
    assert conductor.casts[-1][1]['zone_given'] is True
    assert conductor.casts[-1][1]['availability_zone'] is None


def test_a_host_outside_the_requested_zone_is_a_400(world, conductor):
    world.add_host('c1')
    server = world.add_instance('cell1', vm_state='shelved_offloaded')
    status, reply, _ = _action(world, server, {'unshelve': {
        'host': 'c1', 'availability_zone': 'other'}}, version='2.91')
    assert status == 400
    assert conductor.casts == []


@pytest.mark.parametrize('vm_state,version,target', [
    ('active', '2.94', None),
    ('stopped', '2.94', 'stopped'),
    ('active', '2.95', 'stopped'),
    ('error', '2.95', 'stopped'),
])
def test_evacuated_servers_end_stopped_from_2_95(world, conductor, vm_state,
                                                 version, target):
    world.add_host('c1', forced_down=True)
    world.add_host('c2')
    server = world.add_instance('cell1', host='c1', vm_state=vm_state)
    status, body, _ = _action(world, server, {'evacuate': {'host': 'c2'}},
                              version=version)
    assert (status, body) == (200, None)
    [(name, cast)] = conductor.casts
    assert (name, cast['host'], cast['target_state']) == (
        'evacuate_instance', 'c2', target)
