# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server power, lock and reset-state actions through every process.

Every service runs as its own process (tests/functional/stack.py) on the
real RabbitMQ and MariaDB. The REST API drives each action; the test
checks the states the server goes through, its instance actions and
their compute events, the versioned notifications received on the real
broker (an oslo.messaging notification listener on the stack's virtual
host, topic ``notifications``), that placement allocations do not move
with power actions, and a driver failure ending in a fault and a clean
state. The real ``openstack`` client then runs the same actions.
"""

import threading
import time

from oslo_config import cfg
import oslo_messaging as messaging
import pytest

from tests.functional import osc as osc_mod
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack_fixture

HOSTS = ('stack-host0', 'stack-host1')


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    """The running deployment; suspends fail on the second simulated
    host (``[fake_driver] fail_actions``) for the failure test.
    """
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('actions')), hosts=len(HOSTS),
            extra_conf={('fake_driver', 'fail_actions'): 'suspend:%s'
                        % HOSTS[1],
                        ('fake_driver', 'action_latency'): 0.2,
                        ('oslo_messaging_notifications', 'driver'):
                            'messagingv2'}
    ) as deployment:
        yield deployment


class Collector(object):
    """Notification endpoint keeping every (event_type, payload)."""

    def __init__(self):
        self.received = []
        self.lock = threading.Lock()

    def _keep(self, ctxt, publisher_id, event_type, payload, metadata):
        with self.lock:
            self.received.append((event_type, publisher_id, payload))

    info = error = _keep

    def events(self, uuid):
        with self.lock:
            return [(e, p) for e, p, payload in self.received
                    if payload.get('nova_object.data', {}).get('uuid') ==
                    uuid]

    def wait_for(self, uuid, event_type, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(e == event_type for e, _p in self.events(uuid)):
                return
            time.sleep(0.2)
        raise AssertionError('%s of %s never arrived; got %s' % (
            event_type, uuid, self.events(uuid)))


@pytest.fixture(scope='module')
def notes(cloud):
    """A listener on the stack's broker, topic ``notifications``."""
    conf = cfg.ConfigOpts()
    transport = messaging.get_notification_transport(
        conf, url=cloud.vhost.url)
    # NOTE: the services declare their queues durable (the stack's
    # config); a consumer must declare them alike.
    conf.set_override('amqp_durable_queues', True,
                      group='oslo_messaging_rabbit')
    collector = Collector()
    listener = messaging.get_notification_listener(
        transport, [messaging.Target(topic='notifications')], [collector],
        executor='threading')
    listener.start()
    yield collector
    listener.stop()
    listener.wait()
    transport.cleanup()


@pytest.fixture(scope='module')
def boot_args(cloud):
    """(flavor id, image id) for the test servers."""
    return (cloud.compute.create_flavor('tiny'),
            cloud.compute.create_image('cirros'))


def _boot(cloud, boot_args, name, host):
    made = cloud.compute.create_server(name, *boot_args,
                                       zone='nova:%s' % host)
    shown = cloud.compute.wait_for_server(made['id'], 'ACTIVE')
    assert shown['OS-EXT-SRV-ATTR:host'] == host
    return made['id']


@pytest.fixture(scope='module')
def server(cloud, notes, boot_args):
    """A server on the first host, where every operation works."""
    return _boot(cloud, boot_args, 'vm', HOSTS[0])


@pytest.fixture(scope='module')
def failing(cloud, notes, boot_args):
    """A server on the second host, where suspends fail."""
    return _boot(cloud, boot_args, 'unlucky', HOSTS[1])


def _action(cloud, uuid, body, expect=(202,)):
    return cloud.compute.request('POST', '/servers/%s/action' % uuid,
                                 body, expect=expect)


def _wait_state(cloud, uuid, vm_state, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown = cloud.compute.get_server(uuid)
        if (shown['OS-EXT-STS:vm_state'] == vm_state and
                shown['OS-EXT-STS:task_state'] is None):
            return shown
        time.sleep(0.2)
    raise AssertionError('server %s never reached %s: %s' % (
        uuid, vm_state, shown))


def _allocations(cloud, uuid):
    return cloud.placement.request('GET', '/allocations/%s' % uuid)[
        'allocations']


def _latest_action(cloud, uuid):
    actions = cloud.compute.request(
        'GET', '/servers/%s/os-instance-actions' % uuid)['instanceActions']
    latest = actions[0]
    detail = cloud.compute.request(
        'GET', '/servers/%s/os-instance-actions/%s' % (
            uuid, latest['request_id']))['instanceAction']
    return detail['action'], [(e['event'], e['result'])
                              for e in detail['events']]


STEPS = [
    ({'os-stop': None}, 'powering-off', 'stopped', 'SHUTOFF', 4, 'stop',
     'power_off'),
    ({'os-start': None}, 'powering-on', 'active', 'ACTIVE', 1, 'start',
     'power_on'),
    ({'reboot': {'type': 'SOFT'}}, 'rebooting', 'active', 'ACTIVE', 1,
     'reboot', 'reboot'),
    ({'pause': None}, 'pausing', 'paused', 'PAUSED', 3, 'pause', 'pause'),
    ({'unpause': None}, 'unpausing', 'active', 'ACTIVE', 1, 'unpause',
     'unpause'),
    ({'reboot': {'type': 'HARD'}}, 'rebooting_hard', 'active', 'ACTIVE', 1,
     'reboot', 'reboot'),
]


def test_power_actions_through_every_process(cloud, notes, server):
    allocations = _allocations(cloud, server)
    assert allocations
    notes.wait_for(server, 'instance.create.end')
    for body, task, vm_state, status, power, action, note in STEPS:
        _action(cloud, server, body)
        shown = cloud.compute.get_server(server)
        # NOTE: the task state is set before the answer; the fake
        # hypervisor's 0.2 s latency keeps it visible here.
        assert shown['OS-EXT-STS:task_state'] in (
            task, 'reboot_started', 'reboot_started_hard', None), shown
        shown = _wait_state(cloud, server, vm_state)
        assert (shown['status'], shown['OS-EXT-STS:power_state']) == (
            status, power)
        event = 'compute_%s_instance' % action
        assert _latest_action(cloud, server) == (action, [(event,
                                                           'Success')])
        notes.wait_for(server, 'instance.%s.end' % note)
        assert _allocations(cloud, server) == allocations, body
    received = [e for e, _p in notes.events(server)]
    for note in ('power_off', 'power_on', 'reboot', 'pause', 'unpause'):
        assert received.index('instance.%s.start' % note) < \
            received.index('instance.%s.end' % note)
    publishers = {p for e, p in notes.events(server)
                  if e.startswith('instance.power_off')}
    assert publishers == {'compute.%s' % cloud.compute.get_server(
        server)['OS-EXT-SRV-ATTR:host']}


def test_wrong_state_and_locks(cloud, notes, server):
    _wait_state(cloud, server, 'active')
    resp = cloud.compute.http.post('/servers/%s/action' % server,
                                   json={'os-start': None})
    assert resp.status_code == 409
    assert resp.json()['conflictingRequest']['message'] == (
        "Cannot 'start' instance %s while it is in vm_state active"
        % server)
    _action(cloud, server, {'lock': {'locked_reason': 'maintenance'}})
    notes.wait_for(server, 'instance.lock')
    shown = cloud.compute.request(
        'GET', '/servers/%s' % server, None)['server']
    assert shown['locked'] is True
    _action(cloud, server, {'unlock': None})
    notes.wait_for(server, 'instance.unlock')
    assert cloud.compute.get_server(server)['locked'] is False


def test_a_driver_failure_leaves_a_fault_and_a_clean_state(
        cloud, notes, failing):
    server = failing
    _wait_state(cloud, server, 'active')
    allocations = _allocations(cloud, server)
    _action(cloud, server, {'suspend': None})
    notes.wait_for(server, 'instance.suspend.error')
    shown = _wait_state(cloud, server, 'active')
    assert shown['OS-EXT-STS:power_state'] == 1
    assert _latest_action(cloud, server) == (
        'suspend', [('compute_suspend_instance', 'Error')])
    [(_e, _p, payload)] = [n for n in notes.received
                           if n[0] == 'instance.suspend.error']
    fault = payload['nova_object.data']['fault']
    assert fault['exception'] == 'PowerActionError'
    assert _allocations(cloud, server) == allocations


def test_reset_state(cloud, server):
    _wait_state(cloud, server, 'active')
    _action(cloud, server, {'os-resetState': {'state': 'error'}})
    assert cloud.compute.get_server(server)['status'] == 'ERROR'
    _action(cloud, server, {'os-resetState': {'state': 'active'}})
    assert cloud.compute.get_server(server)['status'] == 'ACTIVE'
    assert _latest_action(cloud, server)[0] == 'resetState'


class OSC(osc_mod.Client):
    """``openstack`` against berth-api with the noauth2 settings."""

    def __init__(self, url):
        super().__init__(
            OS_AUTH_TYPE='admin_token', OS_TOKEN='admin',
            OS_ENDPOINT=url + '/v2.1',
            OS_IMAGE_ENDPOINT_OVERRIDE=url + '/image',
            OS_IDENTITY_API_VERSION='3',
            OS_IDENTITY_ENDPOINT_OVERRIDE=url + '/identity',
            OS_COMPUTE_API_VERSION='2.79')


VM_STATES = {'ACTIVE': 'active', 'SHUTOFF': 'stopped', 'PAUSED': 'paused',
             'SUSPENDED': 'suspended'}
CLI_STEPS = [
    (('server', 'stop'), 'SHUTOFF'),
    (('server', 'start'), 'ACTIVE'),
    (('server', 'reboot'), 'ACTIVE'),
    (('server', 'reboot', '--hard'), 'ACTIVE'),
    (('server', 'pause'), 'PAUSED'),
    (('server', 'unpause'), 'ACTIVE'),
    (('server', 'suspend'), 'SUSPENDED'),
    (('server', 'resume'), 'ACTIVE'),
    (('server', 'lock', '--reason', 'cli'), 'ACTIVE'),
    (('server', 'unlock'), 'ACTIVE'),
]


@osc_mod.skip_without_cli
def test_the_openstack_client(cloud, notes, server):
    _wait_state(cloud, server, 'active')
    cli = OSC(cloud.api_url)
    for args, status in CLI_STEPS:
        cli.run(*(args + (server,)))
        shown = _wait_state(cloud, server, VM_STATES[status])
        assert shown['status'] == status, args
        if args[1] == 'lock':
            assert cli.json('server', 'show', server)['locked'] is True
    bad = cli.run('server', 'resume', server, expect_ok=False)
    assert bad.returncode != 0 and 'vm_state active' in bad.stderr
