# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Host aggregates and zones: records, placement mirroring, scheduler
notices, and the one-zone-per-host rule.
"""

from tests.unit.api.helpers import V


def _create(client, name, zone=None):
    body = {'name': name}
    if zone:
        body['availability_zone'] = zone
    status, data, _ = client.post(V + '/os-aggregates', {'aggregate': body})
    assert status == 200, data
    return data['aggregate']


def _action(client, agg_id, action, value):
    return client.post(V + '/os-aggregates/%s/action' % agg_id,
                       {action: value})


def test_create_with_zone_and_list(world):
    agg = _create(world.client, 'agg1', 'az1')
    assert agg['availability_zone'] == 'az1' and 'uuid' in agg
    assert 'hosts' not in agg
    _s, body, _ = world.client.get(V + '/os-aggregates')
    [listed] = body['aggregates']
    assert listed['metadata'] == {'availability_zone': 'az1'}
    assert listed['hosts'] == []
    status, _b, _r = world.client.post(V + '/os-aggregates', {
        'aggregate': {'name': 'agg1'}})
    assert status == 409
    status, _b, _r = world.client.post(V + '/os-aggregates', {
        'aggregate': {'name': 'x', 'availability_zone': 'internal'}})
    assert status == 400
    assert world.scheduler_notices


def test_add_host_mirrors_into_placement(world):
    node = world.add_host('node1')
    agg = _create(world.client, 'io-fast')
    status, body, _ = _action(world.client, agg['id'], 'add_host',
                              {'host': 'node1'})
    assert status == 200 and body['aggregate']['hosts'] == ['node1']
    assert world.placement.aggregates[node] == [agg['uuid']]
    assert _action(world.client, agg['id'], 'add_host',
                   {'host': 'node1'})[0] == 409
    assert _action(world.client, agg['id'], 'add_host',
                   {'host': 'ghost'})[0] == 404
    status, body, _ = _action(world.client, agg['id'], 'set_metadata',
                              {'metadata': {'io': 'fast'}})
    assert body['aggregate']['metadata'] == {'io': 'fast'}
    status, body, _ = _action(world.client, agg['id'], 'set_metadata',
                              {'metadata': {'io': None}})
    assert body['aggregate']['metadata'] == {}
    assert world.client.delete(V + '/os-aggregates/%s' % agg['id'])[0] == (
        400)
    status, body, _ = _action(world.client, agg['id'], 'remove_host',
                              {'host': 'node1'})
    assert status == 200 and body['aggregate']['hosts'] == []
    assert world.placement.aggregates[node] == []
    assert _action(world.client, agg['id'], 'remove_host',
                   {'host': 'node1'})[0] == 404
    assert world.client.delete(V + '/os-aggregates/%s' % agg['id'])[0] == (
        200)
    assert world.client.get(V + '/os-aggregates/%s' % agg['id'])[0] == 404


def test_host_is_in_one_zone_only(world):
    world.add_host('node1')
    az1 = _create(world.client, 'a', 'az1')
    az2 = _create(world.client, 'b', 'az2')
    plain = _create(world.client, 'c')
    assert _action(world.client, az1['id'], 'add_host',
                   {'host': 'node1'})[0] == 200
    status, body, _ = _action(world.client, az2['id'], 'add_host',
                              {'host': 'node1'})
    assert status == 409 and 'az1' in body['conflictingRequest']['message']
    assert _action(world.client, plain['id'], 'add_host',
                   {'host': 'node1'})[0] == 200
    status, _b, _r = _action(world.client, plain['id'], 'set_metadata',
                             {'metadata': {'availability_zone': 'az9'}})
    assert status == 400
    status, _b, _r = world.client.put(
        V + '/os-aggregates/%s' % plain['id'],
        {'aggregate': {'availability_zone': 'az1', 'name': 'c2'}})
    assert status == 200


def test_placement_down_does_not_fail_the_request(world, monkeypatch):
    from common.placement import client as placement_client

    def unavailable(*args, **kwargs):
        raise placement_client.PlacementUnavailable('down')
    world.add_host('node1')
    monkeypatch.setattr(world.placement, 'get', unavailable)
    agg = _create(world.client, 'agg')
    assert _action(world.client, agg['id'], 'add_host',
                   {'host': 'node1'})[0] == 200
