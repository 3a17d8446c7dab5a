# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Bad input to the compute API on MariaDB and PostgreSQL: 400, no write.

The backends refuse what SQLite stores: PostgreSQL a NUL in text, both
an integer beyond its column, MariaDB a string where an integer goes.
Each used to be a 500 (and on SQLite a stored value that broke later
reads). The compute API runs in-process (the unit tests' world) on real
databases; every refusal must name the problem and leave every list as
it was.
"""

import pytest

from services.api.handlers import images as image_handlers
from services.api import util as api_util
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional.placement.conftest import make_database  # noqa
from tests.functional.placement.conftest import real_backend  # noqa
from tests.unit.api import conftest as api_conftest
from tests.unit.api import helpers
from tests.unit.api.helpers import V

HUGE = '1000000000000000000000000000000'
PATCH = 'application/openstack-images-v2.1-json-patch'


@pytest.fixture
def world(real_backend, make_database, tmp_path, monkeypatch):  # noqa
    urls = {name: make_database(real_backend)
            for name in ('api', 'cell0', 'cell1')}
    yield from api_conftest.running_world(
        api_conftest.World(tmp_path, urls=urls), monkeypatch)


def _refused(answer, *needles):
    status, body, _ = answer
    assert status == 400, body
    [fault] = body.values()
    for needle in needles:
        assert needle in fault['message'], fault['message']


def _lists_unchanged(client, image):
    _s, body, _ = client.get('/image/v2/images')
    assert [i['id'] for i in body['images']] == [image]
    _s, body, _ = client.get(V + '/flavors')
    assert [f['name'] for f in body['flavors']] == ['m1']
    for path in (V + '/os-aggregates', V + '/os-server-groups'):
        status, body, _ = client.get(path, version='2.64')
        assert status == 200 and list(body.values())[0] == []
    _s, body, _ = client.get(V + '/os-quota-sets/p1')
    assert body['quota_set']['instances'] == 10


def test_bad_input_is_refused_and_writes_nothing(world, monkeypatch):
    client = world.client
    image = helpers.make_image(client, min_ram=0)
    flavor = helpers.make_flavor(client)
    nul = 'a NUL character or a lone UTF-16 surrogate is not allowed'
    # A NUL (PostgreSQL refuses it in text) in bodies, paths and queries.
    _refused(client.post(V + '/flavors', {'flavor': {
        'name': 'a\x00b', 'ram': 1, 'vcpus': 1, 'disk': 1}}),
        'flavor/name', nul)
    _refused(client.post(V + '/os-aggregates', {'aggregate': {
        'name': 'a', 'availability_zone': 'z\x00'}}), nul)
    _refused(client.post('/image/v2/images', {
        'name': 'i', 'hw_cpu_policy': '\x00'}), 'hw_cpu_policy', nul)
    _refused(client.get(V + '/flavors/a%00b'),
             'The path holds a NUL character.')
    _refused(client.get('/image/v2/images?name=%00'),
             'The query string holds a NUL character.')
    _refused(client.get(V + '/flavors/%ff'), 'The path is not valid UTF-8.')
    # Integers beyond their column, as numbers and as digit strings.
    _refused(client.post(V + '/flavors', {'flavor': {
        'name': 'big', 'ram': '99999999999', 'vcpus': 1, 'disk': 1}}),
        'flavor/ram', 'greater than the maximum of 2147483647')
    _refused(client.post(V + '/os-server-groups', {'server_group': {
        'name': 'g', 'policy': 'anti-affinity',
        'rules': {'max_server_per_host': HUGE}}}, version='2.64'),
        'max_server_per_host', 'greater than the maximum')
    _refused(client.put(V + '/os-quota-sets/p1', {'quota_set': {
        'instances': 2 ** 31}}), 'quota_set/instances')
    _refused(client.post('/image/v2/images', {'name': 'i',
                                              'min_ram': 2 ** 31}),
             'min_ram', 'greater than the maximum')
    _refused(client.get(V + '/flavors?minRam=' + HUGE), 'minRam')
    status, _b, _r = client.get(V + '/os-aggregates/' + HUGE)
    assert status == 404
    _refused(client.put(V + '/os-quota-sets/' + 'p' * 256, {'quota_set': {
        'instances': 5}}), 'longer than 255 characters')
    # Image PATCH values (a string for min_ram was a 500 on MariaDB).
    _refused(client.request('PATCH', '/image/v2/images/' + image, body=[
        {'op': 'replace', 'path': '/min_ram', 'value': 'abc'}],
        headers={'Content-Type': PATCH}),
        "min_ram. Value: abc. 'abc' is not of type 'integer'")
    _refused(client.request('PATCH', '/image/v2/images/' + image, body=[
        {'op': 'replace', 'path': '/min_disk', 'value': 2 ** 40}],
        headers={'Content-Type': PATCH}), 'min_disk')
    status, body = helpers.boot(client, flavor, image, max_count=2147483647)
    _refused((status, body, None), 'max_servers_per_request')
    assert world.conductor.builds == []
    _lists_unchanged(client, image)

    # A write whose result cannot be rendered is rolled back: the body
    # checks are skipped to let a lone surrogate reach the database,
    # which stores it (escaped in the JSON column) without complaint.
    original = api_util.extract_json

    def unchecked(req, schema):
        data = original(req, schema)
        data['hw_cpu_policy'] = '\ud800'
        return data
    monkeypatch.setattr(image_handlers.util, 'extract_json', unchecked)
    _refused(client.post('/image/v2/images', {'name': 'poison'}),
             'Nothing was changed')
    monkeypatch.setattr(image_handlers.util, 'extract_json', original)
    _lists_unchanged(client, image)
