# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server tags (2.26), tags and description at boot, the tag list
filters and ``deleted=true``.
"""

import datetime

from common import context as berth_context
from common.db import archive
from common.db import cell_tables
from common.db import cells
from common.db import instance_records
from common.objects import instance as instance_obj
from tests.unit.api import helpers
from tests.unit.api.helpers import V

ALICE = {'token': 'alice:projA'}


def _server(world, tags=(), **values):
    uuid = world.add_instance('cell1', host='node0', project_id='projA',
                              **values)
    for tag in tags:
        world.insert('cell1', cell_tables.tags, resource_id=uuid, tag=tag)
    return uuid


def _stored(world, uuid):
    rows = world.rows('cell1', cell_tables.tags, resource_id=uuid)
    return sorted(r['tag'] for r in rows)


def _url(uuid, tag=None):
    url = V + '/servers/%s/tags' % uuid
    return url if tag is None else url + '/' + tag


def test_list_replace_and_delete_all(world):
    uuid = _server(world, tags=['b', 'a'])
    status, body, _r = world.client.get(_url(uuid), **ALICE)
    assert (status, body) == (200, {'tags': ['a', 'b']})
    status, body, _r = world.client.put(_url(uuid), {'tags': ['x', 'y']},
                                        **ALICE)
    assert (status, body) == (200, {'tags': ['x', 'y']})
    assert _stored(world, uuid) == ['x', 'y']
    status, body, _r = world.client.get(V + '/servers/%s' % uuid, **ALICE)
    assert body['server']['tags'] == ['x', 'y']
    assert world.client.delete(_url(uuid), **ALICE)[0] == 204
    assert _stored(world, uuid) == []


def test_check_add_and_delete_one(world):
    uuid = _server(world, tags=['a'])
    assert world.client.get(_url(uuid, 'a'), **ALICE)[0] == 204
    status, body, _r = world.client.get(_url(uuid, 'b'), **ALICE)
    assert status == 404
    assert body['itemNotFound']['message'] == (
        "Server %s has no tag 'b'" % uuid)
    status, _b, resp = world.client.put(_url(uuid, 'b'), None, **ALICE)
    assert status == 201
    assert resp.headers['Location'].endswith('/servers/%s/tags/b' % uuid)
    assert world.client.put(_url(uuid, 'b'), None, **ALICE)[0] == 204
    assert _stored(world, uuid) == ['a', 'b']
    assert world.client.delete(_url(uuid, 'a'), **ALICE)[0] == 204
    status, body, _r = world.client.delete(_url(uuid, 'a'), **ALICE)
    assert status == 404
    assert body['itemNotFound']['message'] == (
        "Instance %s has no tag 'a'" % uuid)
    assert _stored(world, uuid) == ['b']


def test_limits_and_bad_tags_are_400_and_change_nothing(world):
    uuid = _server(world, tags=['t%d' % i for i in range(50)])
    for tag in ('more', 't0'):
        status, body, _r = world.client.put(_url(uuid, tag), None, **ALICE)
        assert status == 400
        assert body['badRequest']['message'] == (
            'The number of tags exceeded the per-server limit 50')
    status, body, _r = world.client.put(
        _url(uuid), {'tags': ['n%d' % i for i in range(51)]}, **ALICE)
    assert status == 400
    assert body['badRequest']['message'] == (
        'The number of tags exceeded the per-server limit 50')
    for bad in ({'tags': ['a,b']}, {'tags': ['']}, {'tags': ['x' * 61]},
                {'tags': 'a'}, {'tag': ['a']}):
        assert world.client.put(_url(uuid), bad, **ALICE)[0] == 400, bad
    assert len(_stored(world, uuid)) == 50
    other = _server(world)
    for tag in ('x' * 61, 'a,b'):
        status, body, _r = world.client.put(_url(other, tag), None, **ALICE)
        assert status == 400, tag
        assert body['badRequest']['message'].startswith(
            "Tag '%s' is invalid. It must be a non empty string without "
            "characters '/' and ','." % tag)
    assert _stored(world, other) == []


def test_tags_need_2_26(world):
    uuid = _server(world, tags=['a'])
    assert world.client.get(_url(uuid), version='2.25',
                            **ALICE)[0] == 404
    status, body, _r = world.client.get(V + '/servers/%s' % uuid,
                                        version='2.25', **ALICE)
    assert 'tags' not in body['server']


def test_writes_refused_in_other_states_and_for_other_projects(world):
    uuid = _server(world, tags=['a'], vm_state='error')
    status, body, _r = world.client.put(_url(uuid, 'b'), None, **ALICE)
    assert status == 409
    assert body['conflictingRequest']['message'] == (
        "Cannot 'update tag' instance %s while it is in vm_state error"
        % uuid)
    assert world.client.delete(_url(uuid), **ALICE)[0] == 409
    assert _stored(world, uuid) == ['a']
    mine = _server(world, tags=['a'])
    assert world.client.get(_url(mine), token='bob:projB')[0] == 404
    assert world.client.delete(_url(mine), token='bob:projB')[0] == 404
    reader = {'token': 'rita:projA', 'headers': {'X-Roles': 'reader'}}
    assert world.client.delete(_url(mine), **reader)[0] == 403
    assert _stored(world, mine) == ['a']


def _boot(world, **server):
    if not hasattr(world, 'boot_refs'):
        world.boot_refs = (helpers.make_flavor(world.client),
                           helpers.make_image(world.client,
                                              visibility='public'))
    return helpers.boot(world.client, *world.boot_refs, **ALICE, **server)


def test_tags_and_description_at_boot_travel_with_the_build_request(world):
    status, body = _boot(world, tags=['web', 'blue'],
                         description='the web server')
    assert status == 202, body
    [sent] = world.conductor.build_requests
    assert sent.tags == ['blue', 'web']
    assert sent.display_description == 'the web server'
    uuid = body['server']['id']
    status, body, _r = world.client.get(V + '/servers/%s' % uuid, **ALICE)
    assert body['server']['tags'] == ['blue', 'web']
    assert body['server']['description'] == 'the web server'
    assert world.client.get(_url(uuid), **ALICE)[1] == {
        'tags': ['blue', 'web']}
    # NOTE: no row to tag while the server is a build request.
    assert world.client.put(_url(uuid, 'x'), None, **ALICE)[0] == 409
    # NOTE: the conductor writes the row and its tags together, and a
    # destroyed instance keeps none.
    ctxt = berth_context.get_admin_context()
    database = cells.get_cell_database(world.urls['cell1'])
    sent.cell_uuid = None
    created = instance_records.create_instance(ctxt, database, sent)
    assert created.tags == ['blue', 'web']
    assert _stored(world, uuid) == ['blue', 'web']
    instance_records.destroy_instance(ctxt, database, uuid)
    assert _stored(world, uuid) == []


def test_boot_refuses_bad_tags_and_descriptions(world):
    for server in ({'tags': ['a/b']}, {'tags': ['t%d' % i
                                                for i in range(51)]},
                   {'description': 'd' * 256}):
        status, _b = _boot(world, **server)
        assert status == 400, server
    # NOTE: tags at boot need 2.52; descriptions 2.19.
    assert _boot(world, tags=['a'], version='2.51')[0] == 400
    assert _boot(world, description='d', version='2.18')[0] == 400
    assert world.conductor.builds == []


def _soft_delete(world, uuid):
    engine = cells.get_cell_database(world.urls['cell1']).engine()
    with engine.begin() as conn:
        conn.execute(cell_tables.instances.update().where(
            cell_tables.instances.c.uuid == uuid).values(
            deleted=cell_tables.instances.c.id,
            vm_state=instance_obj.DELETED,
            deleted_at=datetime.datetime(2026, 1, 1)))


def test_archive_drops_leftover_tags(world):
    uuid = _server(world, tags=['a'])
    _soft_delete(world, uuid)
    database = cells.get_cell_database(world.urls['cell1'])
    world.insert('cell1', cell_tables.tags, resource_id='other', tag='k')
    archive.Archiver(database, api_database=world.api_db).instance_batch()
    assert _stored(world, uuid) == []
    assert _stored(world, 'other') == ['k']


def test_update_sets_and_clears_the_description(world):
    uuid = _server(world)
    status, body, _r = world.client.put(
        V + '/servers/%s' % uuid, {'server': {'description': 'd1'}},
        **ALICE)
    assert status == 200, body
    assert body['server']['description'] == 'd1'
    [row] = world.rows('cell1', cell_tables.instances, uuid=uuid)
    assert row['display_description'] == 'd1'
    status, body, _r = world.client.put(
        V + '/servers/%s' % uuid, {'server': {'description': None}},
        **ALICE)
    assert body['server']['description'] is None
    status, _b, _r = world.client.put(
        V + '/servers/%s' % uuid, {'server': {'description': 'x' * 256}},
        **ALICE)
    assert status == 400
    status, _b, _r = world.client.put(
        V + '/servers/%s' % uuid, {'server': {'description': 'd'}},
        version='2.18', **ALICE)
    assert status == 400


def _ids(world, query, **caller):
    status, body, _r = world.client.get(V + '/servers/detail?' + query,
                                        **caller)
    assert status == 200, body
    return {s['id'] for s in body['servers']}


def test_tag_filters(world):
    ab = _server(world, tags=['a', 'b'])
    a = _server(world, tags=['a'])
    c = _server(world, tags=['c'])
    none = _server(world)
    assert _ids(world, 'tags=a,b', **ALICE) == {ab}
    assert _ids(world, 'tags=a', **ALICE) == {ab, a}
    assert _ids(world, 'tags-any=b,c', **ALICE) == {ab, c}
    assert _ids(world, 'not-tags=a,b', **ALICE) == {a, c, none}
    assert _ids(world, 'not-tags-any=a,c', **ALICE) == {none}
    assert _ids(world, 'tags=a&not-tags-any=b', **ALICE) == {a}
    status, body, _r = world.client.get(V + '/servers?tags=c', **ALICE)
    assert [s['id'] for s in body['servers']] == [c]


def test_deleted_true_lists_deleted_servers_for_admins_only(world):
    live = _server(world)
    gone = _server(world)
    _soft_delete(world, gone)
    status, body, _r = world.client.get(
        V + '/servers/detail?deleted=true&all_tenants=1')
    assert [s['id'] for s in body['servers']] == [gone]
    assert body['servers'][0]['status'] == 'DELETED'
    assert _ids(world, 'deleted=false&all_tenants=1') == {live}
    assert _ids(world, 'deleted=maybe&all_tenants=1') == {live}
    # NOTE: as Nova, another caller's deleted filter is dropped.
    assert _ids(world, 'deleted=true', **ALICE) == {live}
