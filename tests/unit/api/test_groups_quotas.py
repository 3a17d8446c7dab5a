# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""os-server-groups (per microversion), os-quota-sets and limits."""

from tests.unit.api import helpers
from tests.unit.api.helpers import V

USER = {'token': 'u1:p1', 'headers': {'X-Roles': 'member,reader'}}


def _group(client, version='2.79', **body):
    return client.post(V + '/os-server-groups', {'server_group': body},
                       version=version)


def test_group_shapes_by_microversion(world):
    client = world.client
    status, body, _ = _group(client, name='g', policy='anti-affinity',
                             rules={'max_server_per_host': 2})
    assert status == 200
    group = body['server_group']
    assert group['policy'] == 'anti-affinity'
    assert group['rules'] == {'max_server_per_host': 2}
    assert group['members'] == [] and group['project_id'] == 'admin'
    _s, body, _ = client.get(V + '/os-server-groups/' + group['id'],
                             version='2.63')
    assert body['server_group']['policies'] == ['anti-affinity']
    assert 'rules' not in body['server_group']
    status, body, _ = _group(client, name='g', policy='affinity',
                             rules={'max_server_per_host': 2})
    assert status == 400 and 'anti-affinity' in body['badRequest']['message']
    assert _group(client, name='g', policies=['soft-affinity'],
                  version='2.14')[0] == 400
    assert _group(client, name='g', policies=['soft-affinity'],
                  version='2.15')[0] == 200
    assert _group(client, name='g', policies=['affinity'])[0] == 400
    _s, body, _ = client.get(V + '/os-server-groups')
    assert len(body['server_groups']) == 2
    assert client.delete(V + '/os-server-groups/' + group['id'])[0] == 204
    assert client.get(V + '/os-server-groups/' + group['id'])[0] == 404


def test_groups_are_per_project(world):
    client = world.client
    _group(client, name='admins', policy='affinity')
    status, body, _ = _group(client, name='mine', policy='affinity', **{})
    _s, body, _ = client.get(V + '/os-server-groups', **USER)
    assert body['server_groups'] == []
    status, body, _ = client.post(V + '/os-server-groups', {
        'server_group': {'name': 'p1g', 'policy': 'affinity'}}, **USER)
    assert status == 200
    gid = body['server_group']['id']
    _s, body, _ = client.get(V + '/os-server-groups?all_projects=1')
    assert len(body['server_groups']) == 3
    assert client.get(V + '/os-server-groups/' + gid, **USER)[0] == 200
    other = {'token': 'u2:p2', 'headers': {'X-Roles': 'member,reader'}}
    assert client.get(V + '/os-server-groups/' + gid, **other)[0] == 403


def test_server_group_quota(world):
    client = world.client
    client.put(V + '/os-quota-sets/admin',
               {'quota_set': {'server_groups': 1}})
    assert _group(client, name='a', policy='affinity')[0] == 200
    status, body, _ = _group(client, name='b', policy='affinity')
    assert status == 403


def test_quota_sets_and_limits(world):
    client = world.client
    _s, body, _ = client.get(V + '/os-quota-sets/p1')
    assert body['quota_set']['cores'] == 20
    assert body['quota_set']['instances'] == 10
    assert body['quota_set']['id'] == 'p1'
    status, body, _ = client.put(V + '/os-quota-sets/p1', {
        'quota_set': {'cores': 100, 'ram': -1}})
    assert status == 200 and body['quota_set']['cores'] == 100
    _s, body, _ = client.get(V + '/os-quota-sets/p1', **USER)
    assert body['quota_set']['ram'] == -1
    assert client.put(V + '/os-quota-sets/p1', {
        'quota_set': {'cores': 1}}, **USER)[0] == 403
    assert client.put(V + '/os-quota-sets/p1', {
        'quota_set': {'cores': -2}})[0] == 400
    flavor = helpers.make_flavor(client, vcpus=4)
    image = helpers.make_image(client, visibility='public')
    project = {'token': 'u1:p1', 'headers': {'X-Roles': 'member,reader'}}
    assert helpers.boot(client, flavor, image, **project)[0] == 202
    _s, body, _ = client.get(V + '/os-quota-sets/p1/detail')
    assert body['quota_set']['cores'] == {'limit': 100, 'in_use': 4,
                                          'reserved': 0}
    status, body, _ = client.put(V + '/os-quota-sets/p1', {
        'quota_set': {'cores': 2}})
    assert status == 400
    assert client.put(V + '/os-quota-sets/p1', {
        'quota_set': {'cores': 2, 'force': True}})[0] == 200
    _s, body, _ = client.get(V + '/limits', **USER)
    absolute = body['limits']['absolute']
    assert absolute['maxTotalCores'] == 2 and absolute['totalCoresUsed'] == 4
    assert absolute['totalInstancesUsed'] == 1
    _s, body, _ = client.get(V + '/limits?tenant_id=p1')
    assert body['limits']['absolute']['totalCoresUsed'] == 4
    assert client.delete(V + '/os-quota-sets/p1')[0] == 202
    _s, body, _ = client.get(V + '/os-quota-sets/p1/defaults')
    assert body['quota_set']['cores'] == 20


def test_noop_quota_driver(world):
    from common.conf import CONF
    CONF.set_override('driver', 'noop', group='quota')
    try:
        _s, body, _ = world.client.get(V + '/os-quota-sets/p1')
        assert body['quota_set']['instances'] == -1
        flavor = helpers.make_flavor(world.client, vcpus=64)
        image = helpers.make_image(world.client)
        status, _b = helpers.boot(world.client, flavor, image, max_count=20)
        assert status == 202
        assert len(world.conductor.builds[0][1]) == 20
    finally:
        CONF.clear_override('driver', group='quota')


def test_group_members_join_and_leave_in_batches(world):
    from services.api.records import server_groups as group_records
    ctxt = world.admin_context()
    _s, body, _ = _group(world.client, name='g', policy='affinity')
    gid = body['server_group']['id']
    uuids = ['%08d-0000-0000-0000-000000000000' % i for i in range(4)]
    group = group_records.add_members(ctxt, gid, uuids[:3])
    assert group['members'] == uuids[:3]
    group = group_records.add_members(ctxt, gid, uuids[2:])
    assert group['members'] == uuids
    group_records.remove_members(ctxt, [])
    group_records.remove_members(ctxt, uuids[1:2])
    assert group_records.get_group(ctxt, gid)['members'] == [
        uuids[0], uuids[2], uuids[3]]
    group_records.remove_members(ctxt, [uuids[0], uuids[3], 'other'])
    assert group_records.get_group(ctxt, gid)['members'] == [uuids[2]]
    assert group_records.groups_of_instance(ctxt, uuids[2]) == [gid]
