# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The rebuild and createImage server actions at the API."""

import pytest

from common.conf import CONF
from services.api.records import images as image_records
from services.api import server_lookup
from tests.unit.api import helpers
from tests.unit.api.helpers import V


def _message(body):
    [fault] = body.values()
    return fault['message']


def _action(world, server, body, **kw):
    return world.client.post(V + '/servers/%s/action' % server, body, **kw)


def _server(world, server):
    status, body, _ = world.client.get(V + '/servers/%s' % server)
    assert status == 200, body
    return body['server']


def _actions(world, server):
    _s, body, _ = world.client.get(
        V + '/servers/%s/os-instance-actions' % server)
    return [a['action'] for a in body['instanceActions']]


@pytest.fixture
def image(world):
    return helpers.make_image(world.client, name='new', hw_arch='x86_64')


# --- rebuild ---------------------------------------------------------------

def test_rebuild_records_the_new_image_and_casts_the_conductor(world, image):
    server = world.add_instance('cell1', host='c1', image_ref='old-image',
                                metadata='{"a": "1"}')
    status, body, _ = _action(world, server, {'rebuild': {
        'imageRef': image, 'name': 'renamed', 'metadata': {'b': '2'},
        'adminPass': 'sekrit', 'preserve_ephemeral': True}})
    assert status == 202, body
    server_body = body['server']
    assert server_body['adminPass'] == 'sekrit'
    assert server_body['name'] == 'renamed'
    assert server_body['metadata'] == {'b': '2'}
    assert server_body['image']['id'] == image
    assert server_body['OS-EXT-STS:task_state'] == 'rebuilding'
    [cast] = world.conductor.rebuilds
    assert cast['instance_uuid'] == server
    assert cast['image_ref'] == image
    assert cast['orig_image_ref'] == 'old-image'
    assert cast['orig_vm_state'] == 'active'
    assert cast['preserve_ephemeral'] is True
    assert cast['image_meta'].properties == {'hw_arch': 'x86_64'}
    assert _actions(world, server) == ['rebuild']


def test_rebuild_generates_a_password_unless_disabled(world, image):
    server = world.add_instance('cell1', host='c1')
    status, body, _ = _action(world, server, {'rebuild': {'imageRef': image}})
    assert status == 202
    assert len(body['server']['adminPass']) == CONF.password_length
    CONF.set_override('enable_instance_password', False, group='api')
    try:
        server = world.add_instance('cell1', host='c1')
        status, body, _ = _action(world, server,
                                  {'rebuild': {'imageRef': image}})
    finally:
        CONF.clear_override('enable_instance_password', group='api')
    assert status == 202
    assert 'adminPass' not in body['server']


@pytest.mark.parametrize('body,field', [
    ({'rebuild': {}}, 'rebuild'),
    ({'rebuild': {'imageRef': 'x', 'bogus': 1}}, 'rebuild'),
    ({'rebuild': {'imageRef': 'x', 'preserve_ephemeral': 'maybe'}},
     'rebuild/preserve_ephemeral'),
    ({'rebuild': {'imageRef': 'x', 'accessIPv4': '300.1.1.1'}},
     'rebuild/accessIPv4'),
    ({'rebuild': {'imageRef': 'x', 'metadata': {'k': 1}}},
     'rebuild/metadata/k'),
    ({'rebuild': None}, 'rebuild'),
])
def test_rebuild_bodies_nova_refuses_are_400_naming_the_field(world, body,
                                                              field):
    server = world.add_instance('cell1', host='c1')
    status, reply, _ = _action(world, server, body)
    assert status == 400, reply
    assert 'Invalid input for field/attribute %s.' % field in _message(reply)
    assert _server(world, server)['OS-EXT-STS:task_state'] is None
    assert _actions(world, server) == []


@pytest.mark.parametrize('version,field,ok', [
    ('2.18', 'description', False), ('2.19', 'description', True),
    ('2.53', 'key_name', False), ('2.56', 'personality', True),
    ('2.57', 'personality', False), ('2.89', 'hostname', False),
    ('2.90', 'hostname', True),
])
def test_rebuild_fields_follow_the_microversion(world, image, version, field,
                                                ok):
    server = world.add_instance('cell1', host='c1')
    value = {'description': 'd', 'key_name': 'k', 'personality': [],
             'hostname': 'hh'}[field]
    status, reply, _ = _action(world, server, {'rebuild': {
        'imageRef': image, field: value}}, version=version)
    assert (status == 202) == ok, reply


def test_rebuild_description_and_unset_key_name(world, image):
    server = world.add_instance('cell1', host='c1', key_name='k1')
    status, body, _ = _action(world, server, {'rebuild': {
        'imageRef': image, 'description': 'fresh', 'key_name': None}},
        version='2.54')
    assert status == 202, body
    instance, _cell = server_lookup.find(world.admin_context(), server)
    assert instance.display_description == 'fresh'
    assert instance.key_name is None


def test_rebuild_with_an_unknown_key_name_is_400(world, image):
    server = world.add_instance('cell1', host='c1')
    status, body, _ = _action(world, server, {'rebuild': {
        'imageRef': image, 'key_name': 'nope'}}, version='2.54')
    assert status == 400
    assert _message(body) == 'Invalid key_name provided.'


def test_rebuild_refuses_user_data_berth_cannot_deliver(world, image):
    server = world.add_instance('cell1', host='c1')
    status, body, _ = _action(world, server, {'rebuild': {
        'imageRef': image, 'user_data': 'aGk='}}, version='2.57')
    assert status == 400
    assert 'user_data' in _message(body)


def test_rebuild_with_an_unknown_image_is_400(world):
    server = world.add_instance('cell1', host='c1')
    status, body, _ = _action(world, server, {'rebuild': {
        'imageRef': 'f0f0f0f0-0000-4000-8000-000000000000'}})
    assert status == 400
    assert _message(body) == ('Image f0f0f0f0-0000-4000-8000-000000000000 '
                              'could not be found.')


def test_rebuild_with_an_image_too_big_for_the_flavor_is_400(world):
    big = helpers.make_image(world.client, name='big', min_ram=4096)
    server = world.add_instance('cell1', host='c1')
    status, body, _ = _action(world, server, {'rebuild': {'imageRef': big}})
    assert status == 400
    assert _message(body) == ("Flavor's memory is too small for requested "
                              "image.")


@pytest.mark.parametrize('vm_state,task_state,message', [
    ('building', 'spawning', 'vm_state building'),
    ('paused', None, 'vm_state paused'),
    ('active', 'rebuilding', 'task_state rebuilding'),
])
def test_rebuild_in_the_wrong_state_is_409(world, image, vm_state,
                                           task_state, message):
    server = world.add_instance('cell1', host='c1', vm_state=vm_state,
                                task_state=task_state)
    status, body, _ = _action(world, server, {'rebuild': {'imageRef': image}})
    assert status == 409
    assert _message(body) == "Cannot 'rebuild' instance %s while it is in " \
        "%s" % (server, message)
    assert _actions(world, server) == []


@pytest.mark.parametrize('vm_state', ['active', 'stopped', 'error'])
def test_rebuild_from_each_allowed_state(world, image, vm_state):
    server = world.add_instance('cell1', host='c1', vm_state=vm_state)
    status, _body, _ = _action(world, server,
                               {'rebuild': {'imageRef': image}})
    assert status == 202
    assert world.conductor.rebuilds[-1]['orig_vm_state'] == vm_state


def test_a_locked_server_is_rebuilt_by_admins_only(world, image):
    server = world.add_instance('cell1', host='c1', project_id='projA',
                                locked=True, locked_by='owner')
    status, body, _ = _action(world, server, {'rebuild': {'imageRef': image}},
                              token='alice:projA')
    assert status == 409
    assert _message(body) == 'Instance %s is locked' % server
    status, body, _ = _action(world, server, {'rebuild': {'imageRef': image}})
    assert status == 202, body


def test_rebuild_policy_denies_readers_and_hides_other_projects(world,
                                                                image):
    server = world.add_instance('cell1', host='c1', project_id='projA')
    status, _b, _ = _action(world, server, {'rebuild': {'imageRef': image}},
                            token='rita:projA',
                            headers={'X-Roles': 'reader'})
    assert status == 403
    status, _b, _ = _action(world, server, {'rebuild': {'imageRef': image}},
                            token='bob:projB')
    assert status == 404


def test_rebuild_metadata_over_quota_is_403(world, image):
    CONF.set_override('metadata_items', 1, group='quota')
    try:
        server = world.add_instance('cell1', host='c1')
        status, body, _ = _action(world, server, {'rebuild': {
            'imageRef': image, 'metadata': {'a': '1', 'b': '2'}}})
    finally:
        CONF.clear_override('metadata_items', group='quota')
    assert status == 403
    assert _message(body) == 'Maximum number of metadata items exceeds 1'


# --- createImage -------------------------------------------------------------

def test_create_image_makes_a_queued_snapshot_and_casts(world, image):
    server = world.add_instance('cell1', host='c1', image_ref=image,
                                project_id='projA')
    status, body, _ = _action(world, server, {'createImage': {
        'name': 'snap', 'metadata': {'purpose': 'backup'}}},
        token='alice:projA')
    assert status == 202, body
    image_id = body['image_id']
    snap = image_records.get_image(world.admin_context(), image_id)
    assert snap['status'] == 'queued'
    assert snap['name'] == 'snap'
    assert snap['owner'] == 'projA'
    assert snap['min_disk'] == 1
    props = snap['properties']
    assert props['image_type'] == 'snapshot'
    assert props['instance_uuid'] == server
    assert props['base_image_ref'] == image
    assert props['user_id'] == 'alice'
    assert props['purpose'] == 'backup'
    assert props['hw_arch'] == 'x86_64'
    assert world.compute.snapshots == [('c1', server, image_id)]
    got = _server(world, server)
    assert got['OS-EXT-STS:task_state'] == 'image_snapshot'
    assert _actions(world, server) == ['createImage']


def test_create_image_before_2_45_answers_a_location(world):
    server = world.add_instance('cell1', host='c1')
    status, body, resp = _action(world, server,
                                 {'createImage': {'name': 's'}},
                                 version='2.44')
    assert status == 202
    image_id = world.compute.snapshots[0][2]
    assert resp.headers['Location'].endswith('/images/%s' % image_id)


@pytest.mark.parametrize('body', [
    {'createImage': {}}, {'createImage': {'name': 's', 'x': 1}},
    {'createImage': {'name': 's', 'metadata': {'a': 1}}},
    {'createImage': None}])
def test_bad_create_image_bodies_are_400_and_leave_nothing(world, body):
    server = world.add_instance('cell1', host='c1')
    before = len(image_records.list_images(world.admin_context(),
                                           is_admin=True))
    status, reply, _ = _action(world, server, body)
    assert status == 400, reply
    assert len(image_records.list_images(world.admin_context(),
                                         is_admin=True)) == before


@pytest.mark.parametrize('vm_state,task_state,ok', [
    ('active', None, True), ('stopped', None, True), ('paused', None, True),
    ('suspended', None, True), ('error', None, False),
    ('active', 'image_snapshot', False)])
def test_create_image_states(world, vm_state, task_state, ok):
    server = world.add_instance('cell1', host='c1', vm_state=vm_state,
                                task_state=task_state)
    before = len(image_records.list_images(world.admin_context(),
                                           is_admin=True))
    status, body, _ = _action(world, server, {'createImage': {'name': 's'}})
    assert (status == 202) == ok, body
    if not ok:
        assert status == 409
        assert "Cannot 'createImage' instance" in _message(body)
        assert len(image_records.list_images(
            world.admin_context(), is_admin=True)) == before


def test_create_image_metadata_over_quota_is_403_until_2_39(world):
    CONF.set_override('metadata_items', 1, group='quota')
    body = {'createImage': {'name': 's', 'metadata': {'a': '1', 'b': '2'}}}
    try:
        server = world.add_instance('cell1', host='c1')
        status, reply, _ = _action(world, server, body, version='2.38')
        assert status == 403
        assert _message(reply) == 'Image metadata limit exceeded'
        status, reply, _ = _action(world, server, body, version='2.39')
        assert status == 202, reply
    finally:
        CONF.clear_override('metadata_items', group='quota')


def test_create_image_policy(world):
    server = world.add_instance('cell1', host='c1', project_id='projA')
    status, _b, _ = _action(world, server, {'createImage': {'name': 's'}},
                            token='rita:projA', headers={'X-Roles': 'reader'})
    assert status == 403
    status, _b, _ = _action(world, server, {'createImage': {'name': 's'}},
                            token='bob:projB')
    assert status == 404


def test_a_rebuild_the_conductor_never_heard_of_is_undone(world, image,
                                                          monkeypatch):
    def unreachable(ctxt, **kwargs):
        raise RuntimeError('conductor unreachable')
    monkeypatch.setattr(world.conductor, 'rebuild_instance', unreachable)
    server = world.add_instance('cell1', host='c1', image_ref='old-image')
    status, body, _ = _action(world, server, {'rebuild': {
        'imageRef': image, 'name': 'new-name'}})
    assert status == 503, body
    got = _server(world, server)
    assert got['OS-EXT-STS:task_state'] is None
    assert got['image']['id'] == 'old-image'
    assert got['name'].startswith('vm-')


def test_a_snapshot_the_compute_never_heard_of_is_undone(world,
                                                         monkeypatch):
    def unreachable(*args):
        raise RuntimeError('compute unreachable')
    monkeypatch.setattr(world.compute, 'snapshot_instance', unreachable)
    server = world.add_instance('cell1', host='c1')
    before = len(image_records.list_images(world.admin_context(),
                                           is_admin=True))
    status, body, _ = _action(world, server, {'createImage': {'name': 's'}})
    assert status == 503, body
    assert _server(world, server)['OS-EXT-STS:task_state'] is None
    assert len(image_records.list_images(world.admin_context(),
                                         is_admin=True)) == before


def test_a_new_image_may_not_change_the_numa_topology(world):
    pinned = helpers.make_image(world.client, name='pinned',
                                hw_cpu_policy='dedicated')
    server = world.add_instance('cell1', host='c1', image_ref='old-image')
    status, body, _ = _action(world, server,
                              {'rebuild': {'imageRef': pinned}})
    assert status == 400
    assert _message(body).startswith("An instance's NUMA topology cannot "
                                     "be changed as part of a rebuild.")
    assert _actions(world, server) == []
