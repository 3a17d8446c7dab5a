# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The shelve, shelveOffload, unshelve and evacuate server actions."""

import pytest

from common.db import cell_tables
from common.db import instance_records
from services.api.actions import evacuate
from services.api import boot
from services.api import cell_hosts
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


@pytest.mark.parametrize('value', [{}, {'availability_zone': 'nowhere'},
                                   'anything'])
def test_unshelve_ignores_its_body_below_2_77(world, conductor, value):
    # NOTE: Nova validates no unshelve body before 2.77 (Tempest sends
    # {}); the zone is then not read either.
    server = world.add_instance('cell1', vm_state='shelved_offloaded')
    status, body, _ = _action(world, server, {'unshelve': value},
                              version='2.76')
    assert (status, body) == (202, None)
    assert conductor.casts == [('unshelve_instance', {
        'instance_uuid': server, 'zone_given': False,
        'availability_zone': None, 'host': None})]


@pytest.mark.parametrize('version,status', [('2.77', 400), ('2.91', 202)])
def test_an_empty_unshelve_object_from_2_77(world, conductor, version,
                                            status):
    # NOTE: 2.77 requires the zone in an object; 2.91 requires nothing.
    server = world.add_instance('cell1', vm_state='shelved_offloaded')
    got, body, _ = _action(world, server, {'unshelve': {}},
                           version=version)
    assert got == status, body
    if status == 202:
        assert conductor.casts[-1][1]['zone_given'] is False


@pytest.mark.parametrize('action,vm_state,task', [
    ('shelve', 'active', 'shelving'),
    ('shelveOffload', 'shelved', 'shelving_offloading'),
    ('unshelve', 'shelved', 'unshelving')])
@pytest.mark.parametrize('value', [{}, 'anything'])
def test_shelve_bodies_are_not_validated(world, conductor, action,
                                         vm_state, task, value):
    world.add_host('c1')
    server = world.add_instance('cell1', host='c1', vm_state=vm_state)
    status, body, _ = _action(world, server, {action: value},
                              version='2.1')
    assert (status, body) == (202, None)
    assert _state(world, server) == (vm_state, task)


def test_an_empty_shelve_body_still_checks_the_state(world):
    server = world.add_instance('cell1', host='c1', vm_state='shelved')
    status, body, _ = _action(world, server, {'shelve': {}})
    assert status == 409
    assert _message(body) == ("Cannot 'shelve' instance %s while it is in "
                              "vm_state shelved" % server)


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
        '"%s" with status "shelved" is not supported. The server status '
        'must be SHELVED_OFFLOADED.' % server)
    assert _state(world, server) == ('shelved', None)


def test_a_member_naming_a_host_for_a_shelved_server_gets_the_409(
        world, conductor):
    # NOTE: Nova checks the state before the unshelve_to_host policy.
    world.add_host('c1')
    server = world.add_instance('cell1', host='c1', vm_state='shelved',
                                project_id='projA')
    status, body, _ = _action(world, server, {'unshelve': {'host': 'c1'}},
                              version='2.91', token=MEMBER)
    assert status == 409, body
    assert _message(body).startswith(
        'Specifying an availability zone or a host when unshelving server '
        '"%s" with status "shelved"' % server)
    assert conductor.casts == []


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


@pytest.mark.parametrize('version,body', [
    ('2.29', {'force': True}),
    ('2.67', {'force': 'yes', 'adminPass': 'x'}),
])
def test_forcing_an_evacuation_without_a_host_is_a_400(world, conductor,
                                                       version, body):
    world.add_host('c1', forced_down=True)
    server = world.add_instance('cell1', host='c1')
    status, reply, _ = _action(world, server, {'evacuate': body},
                               version=version)
    assert (status, _message(reply)) == (
        400, "Can't force to a non-provided destination")
    assert _state(world, server) == ('active', None)
    assert _migrations(world, server) == []
    assert conductor.casts == []
    # not forced, the scheduler chooses
    status, reply, _ = _action(world, server, {'evacuate': {
        'force': False}}, version=version)
    assert (status, reply) == (200, None)
    assert conductor.casts[-1][1]['force'] is False


@pytest.mark.parametrize('vm_state,task_state', [
    ('active', 'rebooting'),
    ('active', 'migrating'),
    ('stopped', 'powering-on'),
    ('error', 'spawning'),
])
def test_evacuate_whatever_the_task_state(world, conductor, vm_state,
                                          task_state):
    # NOTE: a host that died mid-operation leaves its servers in a task.
    world.add_host('c1', forced_down=True)
    server = world.add_instance('cell1', host='c1', vm_state=vm_state,
                                task_state=task_state)
    status, body, _ = _action(world, server, {'evacuate': {}})
    assert (status, body) == (200, None)
    assert _state(world, server) == (vm_state, 'rebuilding')
    assert _actions(world, server) == ['evacuate']
    assert [m['status'] for m in _migrations(world, server)] == [
        'accepted']


@pytest.mark.parametrize('task_state', ['rebuilding', 'rebuild_spawning'])
def test_no_evacuation_on_top_of_one_under_way(world, conductor,
                                               task_state):
    world.add_host('c1', forced_down=True)
    server = world.add_instance('cell1', host='c1', task_state=task_state)
    status, body, _ = _action(world, server, {'evacuate': {}})
    assert status == 409
    assert body['conflictingRequest']['message'] == (
        "Cannot 'evacuate' instance %s while it is in task_state %s"
        % (server, task_state))
    assert _migrations(world, server) == []


def test_a_task_changed_meanwhile_still_stops_an_evacuation(
        world, conductor, monkeypatch):
    world.add_host('c1', forced_down=True)
    server = world.add_instance('cell1', host='c1', task_state='migrating')
    checked = evacuate._check_source_down

    def racing(ctxt, instance, cell):
        checked(ctxt, instance, cell)
        instance_records.update_instance(
            ctxt, cell_hosts.database(cell), instance.uuid,
            {'task_state': 'deleting'})
    monkeypatch.setattr(evacuate, '_check_source_down', racing)
    status, body, _ = _action(world, server, {'evacuate': {}})
    assert status == 409
    assert _message(body) == ("Cannot 'evacuate' instance %s while it is "
                              "in task_state deleting" % server)
    assert _state(world, server) == ('active', 'deleting')
    assert _migrations(world, server) == []
    assert conductor.casts == []


def test_a_failed_evacuate_cast_puts_the_task_back(world, conductor):
    conductor.fail = True
    world.add_host('c1', forced_down=True)
    server = world.add_instance('cell1', host='c1', task_state='migrating')
    status, _body, _ = _action(world, server, {'evacuate': {}})
    assert status == 503
    assert _state(world, server) == ('active', 'migrating')


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


def test_an_unavailable_zone_with_a_host_is_a_400(world, conductor):
    world.add_host('c1')
    server = world.add_instance('cell1', vm_state='shelved_offloaded')
    status, reply, _ = _action(world, server, {'unshelve': {
        'host': 'c1', 'availability_zone': 'other'}}, version='2.91')
    assert (status, _message(reply)) == (
        400, 'The requested availability zone is not available')
    assert conductor.casts == []


def test_a_host_outside_the_requested_zone_is_a_409(world, conductor):
    # NOTE: Nova's UnshelveHostNotInAZ is one of its conflicts.
    world.add_host('c1')
    world.add_host('c2')
    status, agg, _ = world.client.post(V + '/os-aggregates', {
        'aggregate': {'name': 'rack2', 'availability_zone': 'az2'}})
    assert status == 200, agg
    status, reply, _ = world.client.post(
        V + '/os-aggregates/%s/action' % agg['aggregate']['id'],
        {'add_host': {'host': 'c2'}})
    assert status == 200, reply
    server = world.add_instance('cell1', vm_state='shelved_offloaded')
    status, reply, _ = _action(world, server, {'unshelve': {
        'host': 'c1', 'availability_zone': 'az2'}}, version='2.91')
    assert (status, _message(reply)) == (
        409, 'Host "c1" is not in the availability zone "az2".')
    assert conductor.casts == []
    assert _state(world, server) == ('shelved_offloaded', None)


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
