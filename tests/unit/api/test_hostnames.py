# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server hostnames: made from the name, chosen by the user from 2.90
(create, update, rebuild), fully qualified from 2.94, shown to everybody
from 2.90.
"""

import pytest

from common.db import boot_records
from services.api import hostnames
from services.api import server_lookup
from tests.unit.api import helpers
from tests.unit.api.helpers import V

MEMBER = 'alice:projA'
HOST_KEY = 'OS-EXT-SRV-ATTR:hostname'


@pytest.mark.parametrize('name,expected', [
    ('web', 'web'),
    ('My Web_Server.01', 'my-web-server-01'),
    ('-edge-', 'edge'),
    ('caf\u00e9 \u4e2d', 'caf\u00e9'),
    ('x' * 70, 'x' * 63),
    ('!!!', 'Server-00000000-0000-0000-0000-000000000001'),
])
def test_the_name_made_into_a_hostname(name, expected):
    assert hostnames.for_new_server(
        '00000000-0000-0000-0000-000000000001', name) == expected


@pytest.fixture
def boot_args(world):
    world.add_host('node1')
    return (helpers.make_flavor(world.client),
            helpers.make_image(world.client))


def _hostname_of_build(world, uuid):
    return boot_records.get_build_request(world.admin_context(),
                                          uuid).hostname


def test_create_without_a_hostname_takes_the_name(world, boot_args):
    status, body = helpers.boot(world.client, *boot_args, name='My VM')
    assert status == 202, body
    assert _hostname_of_build(world, body['server']['id']) == 'my-vm'


@pytest.mark.parametrize('version,hostname,ok', [
    ('2.89', 'chosen', False),
    ('2.90', 'chosen', True),
    ('2.90', 'x', False),
    ('2.90', '-bad', False),
    ('2.90', 'www.example.org', False),
    ('2.94', 'www.example.org', True),
    ('2.94', 'x' * 256, False),
])
def test_create_with_a_hostname(world, boot_args, version, hostname, ok):
    status, body = helpers.boot(world.client, *boot_args, name='vm',
                                version=version, hostname=hostname)
    if not ok:
        assert status == 400, body
        assert 'hostname' in body['badRequest']['message']
        assert not world.conductor.builds
        return
    assert status == 202, body
    assert _hostname_of_build(world, body['server']['id']) == hostname


def test_a_hostname_is_for_one_server_only(world, boot_args):
    status, body = helpers.boot(world.client, *boot_args, version='2.90',
                                hostname='chosen', max_count=2)
    assert status == 400
    assert body['badRequest']['message'] == hostnames.MULTIPLE
    assert not world.conductor.builds


def test_members_see_the_hostname_from_2_90(world):
    uuid = world.add_instance('cell1', host='c1', project_id='projA',
                              hostname='h1.example.org')
    for version, shown in (('2.89', False), ('2.90', True)):
        status, body, _ = world.client.get(V + '/servers/%s' % uuid,
                                           version=version, token=MEMBER)
        assert status == 200, body
        assert (HOST_KEY in body['server']) == shown, version
        # NOTE: only the hostname: the other attributes stay admins'.
        assert 'OS-EXT-SRV-ATTR:host' not in body['server']
    assert body['server'][HOST_KEY] == 'h1.example.org'
    # Admins have seen it since 2.3.
    _s, body, _ = world.client.get(V + '/servers/%s' % uuid, version='2.3')
    assert body['server'][HOST_KEY] == 'h1.example.org'


def test_an_old_row_shows_its_sanitized_name(world):
    uuid = world.add_instance('cell1', host='c1', display_name='Old One')
    _s, body, _ = world.client.get(V + '/servers/%s' % uuid, version='2.3')
    assert body['server'][HOST_KEY] == 'old-one'


def test_update_sets_the_hostname_from_2_90(world):
    uuid = world.add_instance('cell1', host='c1', project_id='projA',
                              hostname='before')
    path = V + '/servers/%s' % uuid
    status, body, _ = world.client.put(
        path, {'server': {'hostname': 'after'}}, version='2.89',
        token=MEMBER)
    assert status == 400, body
    status, body, _ = world.client.put(
        path, {'server': {'hostname': 'after'}}, version='2.90',
        token=MEMBER)
    assert status == 200, body
    assert body['server'][HOST_KEY] == 'after'
    status, body, _ = world.client.put(
        path, {'server': {'hostname': 'after.example.org'}}, version='2.90',
        token=MEMBER)
    assert status == 400, body
    status, body, _ = world.client.put(
        path, {'server': {'hostname': 'after.example.org',
                          'name': 'renamed'}}, version='2.94', token=MEMBER)
    assert status == 200, body
    instance, _cell = server_lookup.find(world.admin_context(), uuid)
    assert (instance.hostname, instance.display_name) == (
        'after.example.org', 'renamed')


def test_rebuild_sets_the_hostname_from_2_90(world):
    image = helpers.make_image(world.client, name='new')
    uuid = world.add_instance('cell1', host='c1', hostname='before')
    action = V + '/servers/%s/action' % uuid
    status, body, _ = world.client.post(action, {'rebuild': {
        'imageRef': image, 'hostname': 'a.example.org'}}, version='2.90')
    assert status == 400, body
    status, body, _ = world.client.post(action, {'rebuild': {
        'imageRef': image, 'hostname': 'a.example.org'}}, version='2.94')
    assert status == 202, body
    assert body['server'][HOST_KEY] == 'a.example.org'
    instance, _cell = server_lookup.find(world.admin_context(), uuid)
    assert instance.hostname == 'a.example.org'
