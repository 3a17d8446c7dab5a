# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""POST /os-aggregates/{id}/images (2.81): image pre-caching requests."""

import pytest

from tests.unit.api import helpers
from tests.unit.api.helpers import V

VERSION = '2.81'


def _aggregate(world, hosts=()):
    status, body, _ = world.client.post(V + '/os-aggregates', {
        'aggregate': {'name': 'fast'}})
    assert status == 200, body
    agg = body['aggregate']
    for host in hosts:
        world.add_host(host)
        status, body, _ = world.client.post(
            V + '/os-aggregates/%s/action' % agg['id'],
            {'add_host': {'host': host}})
        assert status == 200, body
    return agg


def _cache(world, agg_id, body, version=VERSION, token='admin'):
    return world.client.post(V + '/os-aggregates/%s/images' % agg_id, body,
                             version=version, token=token)


def test_the_request_is_accepted_and_cast(world):
    agg = _aggregate(world, ['c1', 'c2'])
    images = [helpers.make_image(world.client, name=n) for n in 'ab']
    status, body, resp = _cache(world, agg['id'], {'cache': [
        {'id': images[0]}, {'id': images[1]}]})
    assert (status, body, resp.body) == (202, None, b'')
    [(sent, image_ids)] = world.conductor.image_caches
    assert image_ids == images
    assert (sent['id'], sent['uuid'], sent['name'], sorted(sent['hosts'])) \
        == (agg['id'], agg['uuid'], 'fast', ['c1', 'c2'])


def test_below_2_81_there_is_no_such_resource(world):
    agg = _aggregate(world)
    image = helpers.make_image(world.client)
    status, body, _ = _cache(world, agg['id'], {'cache': [{'id': image}]},
                             version='2.80')
    assert status == 404, body
    assert not getattr(world.conductor, 'image_caches', None)


@pytest.mark.parametrize('body,message', [
    ({'cache': []}, 'cache'),
    ({'cache': [{'id': 'not-a-uuid'}]}, 'cache/0/id'),
    ({'cache': [{'id': '155d900f-4e14-4e4c-a73d-069cbf4541e6',
                 'name': 'x'}]}, 'cache/0'),
    ({'images': []}, 'body'),
])
def test_bad_bodies_are_400(world, body, message):
    agg = _aggregate(world)
    status, answer, _ = _cache(world, agg['id'], body)
    assert status == 400, answer
    assert ('field/attribute %s.' % message) in answer['badRequest'][
        'message']


def test_nova_checks_and_messages(world):
    agg = _aggregate(world)
    image = helpers.make_image(world.client)
    status, body, _ = _cache(world, agg['uuid'], {'cache': [{'id': image}]})
    assert status == 400
    assert body['badRequest']['message'] == (
        'Invalid input received: id must be an integer')
    status, body, _ = _cache(world, agg['id'], {'cache': [
        {'id': image}, {'id': image}]})
    assert (status, body['badRequest']['message']) == (
        400, 'Duplicate images in request')
    status, body, _ = _cache(world, 999, {'cache': [{'id': image}]})
    assert status == 404, body
    missing = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
    status, body, _ = _cache(world, agg['id'], {'cache': [
        {'id': image}, {'id': missing}]})
    assert (status, body['badRequest']['message']) == (
        400, 'Image %s could not be found.' % missing)
    assert not getattr(world.conductor, 'image_caches', None)


def test_only_admins_may_ask(world):
    agg = _aggregate(world)
    image = helpers.make_image(world.client)
    status, body, _ = _cache(world, agg['id'], {'cache': [{'id': image}]},
                             token='u:p')
    assert status == 403, body
