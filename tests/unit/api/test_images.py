# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The built-in image catalog (Glance v2 paths) and image lookups."""

from common.conf import CONF
from tests.unit.api import helpers
from tests.unit.api.helpers import V

USER = {'token': 'u1:p1', 'headers': {'X-Roles': 'member,reader'}}
PATCH = 'application/openstack-images-v2.1-json-patch'


def test_versions_need_no_token(world):
    status, body, _ = world.client.get('/image', token=None)
    assert status == 200
    assert body['versions'][0]['links'][0]['href'].endswith('/image/v2/')


def test_create_list_show_patch_delete(world):
    client = world.client
    image = helpers.make_image(client, hw_cpu_policy='dedicated',
                               tags=['a'], min_ram=128)
    status, body, _ = client.get('/image/v2/images/' + image)
    assert status == 200
    assert body['hw_cpu_policy'] == 'dedicated'
    assert body['status'] == 'active' and body['tags'] == ['a']
    assert body['min_ram'] == 128
    _s, body, _ = client.get('/image/v2/images?name=cirros')
    assert [i['id'] for i in body['images']] == [image]
    _s, body, _ = client.get('/image/v2/images?name=other')
    assert body['images'] == []
    status, body, _ = client.request(
        'PATCH', '/image/v2/images/' + image,
        body=[{'op': 'add', 'path': '/hw_numa_nodes', 'value': '2'},
              {'op': 'remove', 'path': '/hw_cpu_policy'},
              {'op': 'replace', 'path': '/name', 'value': 'c2'}],
        headers={'Content-Type': PATCH})
    assert status == 200, body
    assert body['hw_numa_nodes'] == '2' and 'hw_cpu_policy' not in body
    assert body['name'] == 'c2'
    status, _b, _r = client.request(
        'PATCH', '/image/v2/images/' + image,
        body=[{'op': 'remove', 'path': '/nothing'}],
        headers={'Content-Type': PATCH})
    assert status == 409
    status, _b, _r = client.request(
        'PUT', '/image/v2/images/%s/file' % image, raw=b'x' * 10,
        headers={'Content-Type': 'application/octet-stream'})
    assert status == 204
    _s, body, _ = client.get('/image/v2/images/' + image)
    assert body['size'] == 10
    assert client.request('PUT', '/image/v2/images/%s/tags/b' % image)[
        0] == 204
    _s, body, _ = client.get('/image/v2/images/' + image)
    assert body['tags'] == ['a', 'b']
    assert client.delete('/image/v2/images/' + image)[0] == 204
    assert client.get('/image/v2/images/' + image)[0] == 404


def test_visibility(world):
    client = world.client
    private = helpers.make_image(client, name='priv', visibility='private')
    public = helpers.make_image(client, name='pub', visibility='public')
    _s, body, _ = client.get('/image/v2/images', **USER)
    assert [i['id'] for i in body['images']] == [public]
    assert client.get('/image/v2/images/' + private, **USER)[0] == 404
    status, _b, _r = client.post('/image/v2/images', {
        'name': 'x', 'visibility': 'public'}, **USER)
    assert status == 403
    status, body, _ = client.post('/image/v2/images', {
        'name': 'x', 'min_ram': 'lots'}, **USER)
    assert status == 400


def test_image_properties_reach_the_request_spec(world):
    flavor = helpers.make_flavor(world.client, vcpus=2)
    image = helpers.make_image(world.client, hw_cpu_policy='dedicated',
                               hw_numa_nodes='2')
    status, body = helpers.boot(world.client, flavor, image)
    assert status == 202, body
    spec = world.conductor.builds[0][0]
    assert spec.image.properties['hw_cpu_policy'] == 'dedicated'
    assert len(spec.numa_topology['cells']) == 2


def test_min_ram_checked_against_flavor(world):
    flavor = helpers.make_flavor(world.client, ram=256)
    image = helpers.make_image(world.client, min_ram=512)
    status, body = helpers.boot(world.client, flavor, image)
    assert status == 400 and 'memory' in body['badRequest']['message']


def test_glance_is_read_when_configured(world, monkeypatch):
    from services.api import images as image_api
    seen = []

    def fake_get(self, ctxt, image_id):
        seen.append(image_id)
        return image_api.from_glance({
            'id': image_id, 'name': 'g', 'status': 'active', 'min_ram': 0,
            'min_disk': 0, 'size': 1, 'hw_numa_nodes': '1'})

    monkeypatch.setattr(image_api.GlanceClient, 'get', fake_get)
    CONF.set_override('endpoint_override', 'http://glance.invalid:9292',
                      group='glance')
    try:
        assert world.client.get('/image/v2/images')[0] == 404
        flavor = helpers.make_flavor(world.client)
        image = '11111111-2222-3333-4444-555555555555'
        status, body = helpers.boot(
            world.client, flavor, 'http://glance.invalid:9292/v2/images/' +
            image)
        assert status == 202, body
        assert seen == [image]
        spec = world.conductor.builds[0][0]
        assert spec.image.properties == {'hw_numa_nodes': '1'}
        assert spec.numa_topology is not None
        _s, body, _ = world.client.get(V + '/servers/detail')
        assert body['servers'][0]['image']['id'] == image
    finally:
        CONF.clear_override('endpoint_override', group='glance')
