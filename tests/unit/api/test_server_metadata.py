# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""/servers/{id}/metadata: list, merge, replace, one item; refusals."""

import json

from common.db import api_tables
from common.db import cell_tables
from tests.unit.api import helpers
from tests.unit.api.helpers import V

ALICE = {'token': 'alice:projA'}


def _server(world, **values):
    values.setdefault('metadata', json.dumps({'a': '1', 'b': '2'}))
    return world.add_instance('cell1', host='node0', project_id='projA',
                              **values)


def _stored(world, uuid):
    [row] = world.rows('cell1', cell_tables.instances, uuid=uuid)
    return json.loads(row['metadata'])


def _url(uuid, key=None):
    url = V + '/servers/%s/metadata' % uuid
    return url if key is None else url + '/' + key


def test_list_and_show_item(world):
    uuid = _server(world)
    status, body, _r = world.client.get(_url(uuid), **ALICE)
    assert (status, body) == (200, {'metadata': {'a': '1', 'b': '2'}})
    status, body, _r = world.client.get(_url(uuid, 'a'), **ALICE)
    assert (status, body) == (200, {'meta': {'a': '1'}})
    status, body, _r = world.client.get(_url(uuid, 'zz'), **ALICE)
    assert status == 404
    assert body['itemNotFound']['message'] == 'Metadata item was not found'


def test_post_merges_and_put_replaces(world):
    uuid = _server(world)
    status, body, _r = world.client.post(
        _url(uuid), {'metadata': {'b': 'two', 'c': '3'}}, **ALICE)
    assert status == 200
    assert body == {'metadata': {'a': '1', 'b': 'two', 'c': '3'}}
    assert _stored(world, uuid) == body['metadata']
    status, body, _r = world.client.put(_url(uuid), {'metadata': {'z': '0'}},
                                        **ALICE)
    assert (status, body) == (200, {'metadata': {'z': '0'}})
    assert _stored(world, uuid) == {'z': '0'}
    status, body, _r = world.client.get(V + '/servers/%s' % uuid, **ALICE)
    assert body['server']['metadata'] == {'z': '0'}


def test_put_and_delete_one_item(world):
    uuid = _server(world)
    status, body, _r = world.client.put(_url(uuid, 'c'),
                                        {'meta': {'c': '3'}}, **ALICE)
    assert (status, body) == (200, {'meta': {'c': '3'}})
    status, _b, _r = world.client.delete(_url(uuid, 'a'), **ALICE)
    assert status == 204
    assert _stored(world, uuid) == {'b': '2', 'c': '3'}
    status, body, _r = world.client.delete(_url(uuid, 'a'), **ALICE)
    assert status == 404


def test_item_body_must_name_the_url_key(world):
    uuid = _server(world)
    status, body, _r = world.client.put(_url(uuid, 'c'),
                                        {'meta': {'d': '4'}}, **ALICE)
    assert status == 400
    assert body['badRequest']['message'] == 'Request body and URI mismatch'
    status, _b, _r = world.client.put(
        _url(uuid, 'c'), {'meta': {'c': '3', 'd': '4'}}, **ALICE)
    assert status == 400
    assert _stored(world, uuid) == {'a': '1', 'b': '2'}


def test_bad_keys_and_values_are_400(world):
    uuid = _server(world)
    for items in ({'k' * 256: 'v'}, {'k': 'v' * 256}, {'': 'v'},
                  {'k': 1}, {'bad/key': 'v'}):
        status, _b, _r = world.client.post(_url(uuid), {'metadata': items},
                                           **ALICE)
        assert status == 400, items
    status, _b, _r = world.client.post(_url(uuid), {'meta': {}}, **ALICE)
    assert status == 400
    assert _stored(world, uuid) == {'a': '1', 'b': '2'}


def test_quota_on_metadata_items_is_403(world):
    uuid = _server(world)
    world.insert('api', api_tables.quotas, project_id='projA',
                 resource='metadata_items', hard_limit=3)
    status, body, _r = world.client.post(
        _url(uuid), {'metadata': {'c': '3', 'd': '4'}}, **ALICE)
    assert status == 403
    assert body['forbidden']['message'] == (
        'Maximum number of metadata items exceeds 3')
    assert _stored(world, uuid) == {'a': '1', 'b': '2'}
    # NOTE: a change within the limit and a deletion are allowed.
    assert world.client.post(_url(uuid), {'metadata': {'c': '3'}},
                             **ALICE)[0] == 200
    world.client.put(V + '/os-quota-sets/projA',
                     {'quota_set': {'metadata_items': 0}})
    assert world.client.delete(_url(uuid, 'a'), **ALICE)[0] == 204


def test_locked_server_is_409_for_its_owner_not_for_an_admin(world):
    uuid = _server(world, locked=True, locked_by='admin')
    status, body, _r = world.client.post(
        _url(uuid), {'metadata': {'c': '3'}}, **ALICE)
    assert status == 409
    assert body['conflictingRequest']['message'] == (
        'Instance %s is locked' % uuid)
    assert world.client.delete(_url(uuid, 'a'), **ALICE)[0] == 409
    assert _stored(world, uuid) == {'a': '1', 'b': '2'}
    assert world.client.post(_url(uuid), {'metadata': {'c': '3'}})[0] == 200


def test_server_in_another_state_is_409(world):
    uuid = _server(world, vm_state='error')
    status, body, _r = world.client.put(_url(uuid, 'c'),
                                        {'meta': {'c': '3'}}, **ALICE)
    assert status == 409
    assert body['conflictingRequest']['message'] == (
        "Cannot 'update metadata' instance %s while it is in vm_state "
        "error" % uuid)
    uuid = _server(world, task_state='deleting')
    status, body, _r = world.client.delete(_url(uuid, 'a'), **ALICE)
    assert status == 409
    assert 'task_state deleting' in body['conflictingRequest']['message']


def test_server_still_building_is_409(world):
    flavor = helpers.make_flavor(world.client)
    image = helpers.make_image(world.client, visibility='public')
    status, body = helpers.boot(world.client, flavor, image,
                                metadata={'a': '1'}, **ALICE)
    uuid = body['server']['id']
    status, body, _r = world.client.get(_url(uuid), **ALICE)
    assert (status, body) == (200, {'metadata': {'a': '1'}})
    status, _b, _r = world.client.post(_url(uuid), {'metadata': {'b': '2'}},
                                       **ALICE)
    assert status == 409


def test_other_project_is_404_and_reader_may_only_read(world):
    uuid = _server(world)
    assert world.client.get(_url(uuid), token='bob:projB')[0] == 404
    assert world.client.post(_url(uuid), {'metadata': {'c': '3'}},
                             token='bob:projB')[0] == 404
    reader = {'token': 'rita:projA', 'headers': {'X-Roles': 'reader'}}
    assert world.client.get(_url(uuid), **reader)[0] == 200
    assert world.client.post(_url(uuid), {'metadata': {'c': '3'}},
                             **reader)[0] == 403
    assert _stored(world, uuid) == {'a': '1', 'b': '2'}
