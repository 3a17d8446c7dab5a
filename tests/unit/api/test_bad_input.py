# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Bad input is a 400 (or 403) naming the problem, and nothing is written.

One test per class of issue 19: values no encoder or backend takes
("stored poison"), unbounded multi-create, requests that are not text,
integers beyond their column, unchecked image PATCH values, image owners.
Every test also checks that the lists still answer afterwards.
"""

import pytest

from common.conf import CONF
from common.db import boot_records
from services.api import errors
from services.api.handlers import images as image_handlers
from services.api.records import images as image_records
from services.api import util as api_util
from tests.unit.api import helpers
from tests.unit.api.helpers import V

USER = {'token': 'u1:p1', 'headers': {'X-Roles': 'member,reader'}}
PATCH = 'application/openstack-images-v2.1-json-patch'
UNSTORABLE = 'a NUL character or a lone UTF-16 surrogate is not allowed'
HUGE = '1000000000000000000000000000000'


def _images(world, **kw):
    status, body, _ = world.client.get('/image/v2/images', **kw)
    assert status == 200, body
    return body['images']


def _message(body):
    [fault] = body.values()
    return fault['message']


def _patch(world, image, operations, **kw):
    kw.setdefault('headers', {'Content-Type': PATCH})
    return world.client.request('PATCH', '/image/v2/images/' + image,
                                body=operations, **kw)


# --- stored poison ----------------------------------------------------------

def test_lone_surrogate_in_image_property_is_refused(world):
    status, body, _ = world.client.post('/image/v2/images', {
        'name': 'poison', 'visibility': 'community',
        'hw_cpu_policy': '\ud800'}, **USER)
    assert status == 400
    assert UNSTORABLE in _message(body)
    assert 'hw_cpu_policy' in _message(body)
    assert _images(world) == [] and _images(world, **USER) == []


def test_lone_surrogate_in_server_name_is_refused(world):
    world.add_host('h1')
    flavor = helpers.make_flavor(world.client)
    image = helpers.make_image(world.client)
    status, body = helpers.boot(world.client, flavor, image, name='\ud800')
    assert status == 400
    assert 'server/name' in _message(body) and UNSTORABLE in _message(body)
    assert world.conductor.builds == []
    assert boot_records.list_build_requests(world.admin_context()) == []
    status, body, _ = world.client.get(V + '/servers/detail?all_tenants=1')
    assert status == 200 and body['servers'] == []


@pytest.mark.parametrize('value', [HUGE, int(HUGE), '2147483648'])
def test_server_group_limit_beyond_its_column_is_refused(world, value):
    status, body, _ = world.client.post(V + '/os-server-groups', {
        'server_group': {'name': 'g', 'policy': 'anti-affinity',
                         'rules': {'max_server_per_host': value}}},
        version='2.64')
    assert status == 400
    message = _message(body)
    assert 'max_server_per_host' in message
    assert 'is greater than the maximum of 2147483647' in message
    status, body, _ = world.client.get(V + '/os-server-groups',
                                       version='2.64')
    assert status == 200 and body['server_groups'] == []


def test_a_write_whose_result_cannot_be_rendered_is_not_committed(
        world, monkeypatch):
    # NOTE: the body checks would refuse the surrogate; skip them, as a
    # value that slipped past every check would, to reach the write.
    original = api_util.extract_json

    def unchecked(req, schema):
        data = original(req, schema)
        data['hw_cpu_policy'] = '\ud800'
        return data
    monkeypatch.setattr(image_handlers.util, 'extract_json', unchecked)
    status, body, _ = world.client.post('/image/v2/images', {'name': 'x'})
    assert status == 400
    assert 'Nothing was changed' in _message(body)
    assert 'surrogates not allowed' in _message(body)
    monkeypatch.setattr(image_handlers.util, 'extract_json', original)
    assert _images(world) == []
    # The same write function with a renderable result is committed.
    helpers.make_image(world.client, name='fine')
    assert [i['name'] for i in _images(world)] == ['fine']


def test_record_writes_roll_back_an_unrenderable_result(world):
    ctx = world.admin_context()
    with pytest.raises(errors.BadRequest) as info:
        image_records.create_image(ctx, {'name': 'n'},
                                   properties={'k': '\ud800'})
    assert 'Nothing was changed' in info.value.message
    assert image_records.list_images(ctx, is_admin=True) == []


# --- unbounded multi-create -------------------------------------------------

@pytest.mark.parametrize('counts,needle', [
    ({'max_count': 2147483647}, 'max_servers_per_request'),
    ({'min_count': 2147483647}, 'max_servers_per_request'),
    ({'max_count': '2147483648'}, 'greater than the maximum of 2147483647'),
    ({'max_count': '9' * 60}, 'greater than the maximum of 2147483647'),
    ({'min_count': HUGE, 'max_count': HUGE}, 'greater than the maximum'),
])
def test_multi_create_beyond_the_bound_is_refused_at_once(
        world, monkeypatch, counts, needle):
    world.add_host('h1')
    flavor = helpers.make_flavor(world.client)
    image = helpers.make_image(world.client)

    def no_records(*args, **kwargs):
        raise AssertionError('records built for a refused request')
    monkeypatch.setattr('services.api.boot.build_records', no_records)
    status, body = helpers.boot(world.client, flavor, image, **counts)
    assert status == 400, body
    assert needle in _message(body)
    assert world.conductor.builds == []
    assert boot_records.list_build_requests(world.admin_context()) == []


def test_max_servers_per_request_is_configurable(world):
    world.add_host('h1')
    flavor = helpers.make_flavor(world.client)
    image = helpers.make_image(world.client)
    CONF.set_override('max_servers_per_request', 2, group='api')
    try:
        status, body = helpers.boot(world.client, flavor, image,
                                    max_count=3)
        assert status == 400
        assert 'more than the 2 servers' in _message(body)
        status, body = helpers.boot(world.client, flavor, image,
                                    min_count=2, max_count=2)
        assert status == 202, body
    finally:
        CONF.clear_override('max_servers_per_request', group='api')
    [(_spec, uuids)] = world.conductor.builds
    assert len(uuids) == 2


# --- bad input answered with 500 --------------------------------------------

@pytest.mark.parametrize('path,headers,message', [
    (V + '/flavors/%ff', {}, 'The path is not valid UTF-8.'),
    (V + '/servers/%ed%a0%80', {}, 'The path is not valid UTF-8.'),
    (V + '/flavors/a%00b', {}, 'The path holds a NUL character.'),
    ('/image/v2/images/%ff', {}, 'The path is not valid UTF-8.'),
    (V + '/servers?name=%ff', {}, 'The query string is not valid UTF-8.'),
    (V + '/servers?name=%00', {}, 'The query string holds a NUL character.'),
    (V + '/servers', {'X-Auth-Token': 'admin\xff'},
     'The X-Auth-Token header is not valid UTF-8.'),
])
def test_requests_that_are_not_text_are_refused(world, path, headers,
                                                message):
    status, body, _ = world.client.get(path, headers=headers)
    assert status == 400
    assert _message(body) == message


def test_deeply_nested_json_is_refused(world):
    for depth in (40, 100000):
        raw = b'{"flavor": ' + b'[' * depth + b']' * depth + b'}'
        status, body, _ = world.client.request('POST', V + '/flavors',
                                               raw=raw)
        assert status == 400
        assert 'nests deeper than 32 levels' in _message(body)
    assert world.client.get(V + '/flavors')[1]['flavors'] == []


@pytest.mark.parametrize('path,body', [
    (V + '/flavors', {'flavor': {'name': '\ud800', 'ram': 1, 'vcpus': 1,
                                 'disk': 1}}),
    (V + '/os-aggregates', {'aggregate': {'name': 'a',
                                          'availability_zone': '\udfff'}}),
    (V + '/os-aggregates', {'aggregate': {'name': 'a\x00b'}}),
    (V + '/os-server-groups', {'server_group': {'name': '\ud800',
                                                'policies': ['affinity']}}),
])
def test_unstorable_strings_are_refused(world, path, body):
    status, answer, _ = world.client.post(path, body, version='2.1')
    assert status == 400
    assert UNSTORABLE in _message(answer)
    status, listed, _ = world.client.get(path, version='2.1')
    assert status == 200 and list(listed.values())[0] == []


def test_unstorable_extra_spec_is_refused(world):
    flavor = helpers.make_flavor(world.client)
    for specs in ({'hw:cpu_policy': '\ud800'}, {'\ud800': 'x'}):
        status, body, _ = world.client.post(
            V + '/flavors/%s/os-extra_specs' % flavor,
            {'extra_specs': specs})
        assert status == 400
        assert UNSTORABLE in _message(body)
    status, body, _ = world.client.get(
        V + '/flavors/%s/os-extra_specs' % flavor)
    assert status == 200 and body['extra_specs'] == {}


def test_extra_spec_integers_are_bounded(world):
    flavor = helpers.make_flavor(world.client)
    status, body, _ = world.client.post(
        V + '/flavors/%s/os-extra_specs' % flavor,
        {'extra_specs': {'hw:cpu_sockets': HUGE}})
    assert status == 400
    assert 'must be an integer >= 1 and <= 2147483647' in _message(body)
    status, body, _ = world.client.get(
        V + '/flavors/%s/os-extra_specs' % flavor)
    assert status == 200 and body['extra_specs'] == {}


@pytest.mark.parametrize('path,body,field', [
    (V + '/flavors', {'flavor': {'name': 'f', 'ram': '99999999999',
                                 'vcpus': 1, 'disk': 1}}, 'flavor/ram'),
    (V + '/flavors', {'flavor': {'name': 'f', 'ram': 1, 'vcpus': 2 ** 31,
                                 'disk': 1}}, 'flavor/vcpus'),
    (V + '/flavors', {'flavor': {'name': 'f', 'ram': 1, 'vcpus': 1,
                                 'disk': 1, 'rxtx_factor': '9' * 50}},
     'flavor/rxtx_factor'),
    (V + '/flavors', {'flavor': {'name': 'f', 'ram': 1, 'vcpus': 1,
                                 'disk': 1, 'id': 1e300}}, 'flavor/id'),
    (V + '/os-quota-sets/p1', {'quota_set': {'instances': HUGE}},
     'quota_set/instances'),
    (V + '/os-quota-sets/p1', {'quota_set': {'cores': 2 ** 31}},
     'quota_set/cores'),
    ('/image/v2/images', {'name': 'i', 'min_ram': 2 ** 31}, 'min_ram'),
    ('/image/v2/images', {'name': 'i', 'min_disk': 2 ** 64}, 'min_disk'),
])
def test_integers_beyond_their_column_are_refused(world, path, body, field):
    method = 'PUT' if 'quota' in path else 'POST'
    status, answer, _ = world.client.request(method, path, body=body)
    assert status == 400, answer
    assert field in _message(answer)
    assert 'greater than the maximum' in _message(answer)
    assert world.client.get(V + '/flavors')[1]['flavors'] == []
    assert _images(world) == []
    _s, quota, _ = world.client.get(V + '/os-quota-sets/p1')
    assert quota['quota_set']['instances'] == CONF.quota.instances


@pytest.mark.parametrize('path', [
    V + '/os-aggregates/' + '9' * 30, V + '/os-aggregates/' + '9' * 5000,
    V + '/os-aggregates/%C2%B2',
])
def test_aggregate_ids_beyond_the_column_are_not_found(world, path):
    status, body, _ = world.client.get(path)
    assert status == 404
    assert 'could not be found' in _message(body)


def test_quota_project_id_beyond_the_column_is_refused(world):
    status, body, _ = world.client.put(
        V + '/os-quota-sets/' + 'p' * 256, {'quota_set': {'instances': 5}})
    assert status == 400
    assert 'longer than 255 characters' in _message(body)


def test_nan_is_refused(world):
    raw = (b'{"flavor": {"name": "f", "ram": 1, "vcpus": 1, "disk": 1, '
           b'"rxtx_factor": NaN}}')
    status, body, _ = world.client.request('POST', V + '/flavors', raw=raw)
    assert status == 400
    assert 'NaN is not a JSON number' in _message(body)


def test_query_integers_are_bounded(world):
    status, body, _ = world.client.get(V + '/flavors?minRam=%s' % HUGE)
    assert status == 400
    assert 'minRam' in _message(body) and '<= 2147483647' in _message(body)


@pytest.mark.parametrize('operation,message', [
    ({'op': 'replace', 'path': '/min_ram', 'value': 'abc'},
     "min_ram. Value: abc. 'abc' is not of type 'integer'"),
    ({'op': 'replace', 'path': '/min_disk', 'value': 2 ** 40},
     'min_disk'),
    ({'op': 'replace', 'path': '/visibility', 'value': 'everyone'},
     'visibility'),
    ({'op': 'replace', 'path': '/protected', 'value': 'yes'},
     'protected'),
    ({'op': 'add', 'path': '/tags', 'value': 'not-a-list'}, 'tags'),
    ({'op': 'add', 'path': '/hw_cpu_policy', 'value': 'x' * 70000},
     'hw_cpu_policy'),
    ({'op': 'add', 'path': '/hw_cpu_policy', 'value': '\ud800'},
     UNSTORABLE),
])
def test_image_patch_values_are_validated(world, operation, message):
    world.add_host('h1')
    image = helpers.make_image(world.client, min_ram=0)
    status, body, _ = _patch(world, image, [
        {'op': 'replace', 'path': '/name', 'value': 'renamed'}, operation])
    assert status == 400
    assert message in _message(body)
    status, shown, _ = world.client.get('/image/v2/images/' + image)
    assert status == 200
    assert shown['name'] == 'cirros' and shown['min_ram'] == 0
    assert 'hw_cpu_policy' not in shown
    # The image still boots.
    flavor = helpers.make_flavor(world.client)
    assert helpers.boot(world.client, flavor, image)[0] == 202


def test_image_patch_keeps_property_values_as_text(world):
    image = helpers.make_image(world.client)
    status, body, _ = _patch(world, image, [
        {'op': 'add', 'path': '/hw_numa_nodes', 'value': 2},
        {'op': 'replace', 'path': '/min_ram', 'value': 256}])
    assert status == 200, body
    assert body['hw_numa_nodes'] == '2' and body['min_ram'] == 256


# --- authorization: image owners ------------------------------------------

def test_member_cannot_give_an_image_to_another_project(world):
    status, body, _ = world.client.post('/image/v2/images', {
        'name': 'planted', 'owner': 'victim',
        'visibility': 'private'}, **USER)
    assert status == 403
    assert _message(body) == ("You are not permitted to create images "
                              "owned by 'victim'.")
    assert _images(world) == []
    status, body, _ = world.client.post('/image/v2/images', {
        'name': 'mine', 'owner': 'p1'}, **USER)
    assert status == 201 and body['owner'] == 'p1'
    image = body['id']
    status, body, _ = _patch(world, image, [
        {'op': 'replace', 'path': '/owner', 'value': 'victim'}],
        token=USER['token'], headers=dict(USER['headers'],
                                          **{'Content-Type': PATCH}))
    assert status == 403
    assert _message(body) == ("You are not permitted to modify 'owner' on "
                              "this image.")
    assert world.client.get('/image/v2/images/' + image)[1]['owner'] == 'p1'


def test_admin_may_set_any_owner(world):
    status, body, _ = world.client.post('/image/v2/images', {
        'name': 'given', 'owner': 'p2'})
    assert status == 201 and body['owner'] == 'p2'
    status, body, _ = _patch(world, body['id'], [
        {'op': 'replace', 'path': '/owner', 'value': 'p3'}])
    assert status == 200 and body['owner'] == 'p3'
