# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""rebuild and createImage through every service, on RabbitMQ + MariaDB.

Each service is its own process (tests/functional/stack.py). The REST API
drives a rebuild with the same image, with a new image, and with a new
image the server's host cannot run (ImagePropertiesFilter: another
architecture), and a createImage; the test checks states, instance
actions and events, the snapshot image, the placement allocation (never
changed by either) and the versioned notifications received on the real
broker. The real ``openstack`` client then runs ``server rebuild
--image`` and ``server image create``.
"""

import json
import time

import httpx
import kombu
import pytest

from tests.functional import osc
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack_fixture

HOSTS = ('stack-host0', 'stack-host1')
TIMEOUT = 90


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('rebuild')), hosts=len(HOSTS),
            extra_conf={
                ('oslo_messaging_notifications', 'driver'): 'messagingv2',
                ('filter_scheduler', 'enabled_filters'): ','.join((
                    'ComputeFilter', 'ImagePropertiesFilter',
                    'NUMATopologyFilter')),
            }) as deployment:
        yield deployment


def _settled(cloud, server_id, timeout=TIMEOUT):
    """The server once its task state is None."""
    deadline = time.monotonic() + timeout
    while True:
        server = cloud.compute.get_server(server_id)
        if server['OS-EXT-STS:task_state'] is None or \
                time.monotonic() > deadline:
            return server
        time.sleep(0.3)


def _action(cloud, server_id, body, expect=(202,)):
    return cloud.compute.request('POST', '/servers/%s/action' % server_id,
                                 body, expect=expect)


def _actions(cloud, server_id):
    listed = cloud.compute.request(
        'GET', '/servers/%s/os-instance-actions' % server_id)
    result = []
    for action in listed['instanceActions']:
        shown = cloud.compute.request(
            'GET', '/servers/%s/os-instance-actions/%s'
            % (server_id, action['request_id']))['instanceAction']
        result.append((shown['action'], sorted(
            (e['event'], e['result']) for e in shown['events'])))
    return result


def _allocations(cloud, server_id):
    return cloud.placement.request(
        'GET', '/allocations/%s' % server_id)['allocations']


def _image(cloud, image_id):
    resp = httpx.get(cloud.api_url + '/image/v2/images/%s' % image_id,
                     headers={'x-auth-token': 'admin'}, timeout=30)
    return resp.json() if resp.status_code == 200 else None


def _notifications(cloud):
    """Every versioned notification queued so far (drained)."""
    found = []
    url = cloud.vhost.kombu_url
    for queue in ('notifications.info', 'notifications.error'):
        with kombu.Connection(url, connect_timeout=5) as conn:
            channel = conn.channel()
            try:
                while True:
                    message = channel.basic_get(queue, no_ack=True)
                    if message is None:
                        break
                    body = json.loads(message.body)
                    body = json.loads(body.get('oslo.message', '{}')) \
                        if 'oslo.message' in body else body
                    found.append((body['event_type'], body['payload']))
            except Exception:
                # NOTE: the queue exists once a first notification of its
                # priority was sent.
                pass
    return found


def _events_of(found, uuid):
    return [event for event, payload in found
            if payload.get('nova_object.data', {}).get('uuid') == uuid]


def test_rebuild_and_create_image_through_the_api(cloud):
    compute = cloud.compute
    flavor = compute.create_flavor('small', vcpus=1, ram=256, disk=1)
    first = compute.create_image('first')
    second = compute.create_image('second',
                                  {'hw_architecture': 'x86_64'})
    arm = compute.create_image('arm', {'hw_architecture': 'aarch64'})
    server = compute.request('POST', '/servers', {'server': {
        'name': 'vm', 'flavorRef': flavor, 'imageRef': first,
        'networks': 'none'}})['server']
    uuid = server['id']
    assert compute.wait_for_server(uuid)['status'] == 'ACTIVE'
    allocations = _allocations(cloud, uuid)
    _notifications(cloud)

    # same image: no scheduler check.
    body = _action(cloud, uuid, {'rebuild': {'imageRef': first,
                                             'name': 'vm-1'}})
    assert body['server']['adminPass']
    shown = _settled(cloud, uuid)
    assert (shown['status'], shown['name']) == ('ACTIVE', 'vm-1')

    # a new image the host runs.
    _action(cloud, uuid, {'rebuild': {'imageRef': second,
                                      'metadata': {'k': 'v'}}})
    shown = _settled(cloud, uuid)
    assert shown['status'] == 'ACTIVE'
    assert shown['image']['id'] == second
    assert shown['metadata'] == {'k': 'v'}

    # a snapshot of it.
    reply = _action(cloud, uuid, {'createImage': {
        'name': 'snap', 'metadata': {'why': 'test'}}})
    image_id = reply['image_id']
    shown = _settled(cloud, uuid)
    assert shown['status'] == 'ACTIVE'
    deadline = time.monotonic() + TIMEOUT
    while _image(cloud, image_id)['status'] != 'active' and \
            time.monotonic() < deadline:
        time.sleep(0.3)
    snap = _image(cloud, image_id)
    assert snap['status'] == 'active' and snap['size'] > 0
    assert snap['image_type'] == 'snapshot'
    assert snap['instance_uuid'] == uuid
    assert snap['base_image_ref'] == second
    assert snap['why'] == 'test'

    # a new image the host cannot run: ERROR with Nova's fault, the old
    # image kept.
    _action(cloud, uuid, {'rebuild': {'imageRef': arm}})
    shown = _settled(cloud, uuid)
    assert shown['status'] == 'ERROR'
    assert shown['image']['id'] == second
    assert shown['fault']['message'].startswith('No valid host was found.')
    assert 'ImagePropertiesFilter' in shown['fault']['message']

    # states refused with Nova's 409, nothing changed.
    conflict = compute.http.post('/servers/%s/action' % uuid, json={
        'createImage': {'name': 'no'}})
    assert conflict.status_code == 409
    assert _allocations(cloud, uuid) == allocations

    history = _actions(cloud, uuid)
    assert [a for a, _e in history] == [
        'rebuild', 'createImage', 'rebuild', 'rebuild', 'create']
    assert ('compute_snapshot_instance', 'Success') in history[1][1]
    assert ('conductor_rebuild_server', 'Error') in history[0][1]
    assert ('compute_rebuild_instance', 'Success') in history[2][1]

    deadline = time.monotonic() + 10
    found = []
    while time.monotonic() < deadline:
        found += _notifications(cloud)
        if 'instance.rebuild_scheduled.error' in _events_of(found, uuid):
            break
        time.sleep(0.5)
    events = _events_of(found, uuid)
    for expected in ('instance.rebuild.start', 'instance.rebuild.end',
                     'instance.rebuild_scheduled.start',
                     'instance.rebuild_scheduled.end',
                     'instance.snapshot.start', 'instance.snapshot.end',
                     'instance.rebuild_scheduled.error'):
        assert expected in events, (expected, events)


@osc.skip_without_cli
def test_the_openstack_client_rebuilds_and_snapshots(cloud):
    url = cloud.api_url
    client = osc.Client(
        OS_AUTH_TYPE='admin_token', OS_TOKEN='admin',
        OS_ENDPOINT=url + '/v2.1',
        OS_IMAGE_ENDPOINT_OVERRIDE=url + '/image',
        OS_IDENTITY_API_VERSION='3',
        OS_IDENTITY_ENDPOINT_OVERRIDE=url + '/identity')
    compute = cloud.compute
    flavor = compute.create_flavor('cli', vcpus=1, ram=256, disk=1)
    first = compute.create_image('cli-first')
    other = compute.create_image('cli-other')
    uuid = compute.request('POST', '/servers', {'server': {
        'name': 'cli-vm', 'flavorRef': flavor, 'imageRef': first,
        'networks': 'none'}})['server']['id']
    compute.wait_for_server(uuid)
    allocations = _allocations(cloud, uuid)
    client.run('server', 'rebuild', '--image', other, '--wait', uuid)
    shown = _settled(cloud, uuid)
    assert (shown['status'], shown['image']['id']) == ('ACTIVE', other)
    client.run('server', 'image', 'create', '--name', 'cli-snap', '--wait',
               uuid)
    images = client.json('image', 'list', '--name', 'cli-snap')
    assert [i['Status'] for i in images] == ['active']
    assert _settled(cloud, uuid)['OS-EXT-STS:task_state'] is None
    assert _allocations(cloud, uuid) == allocations
