# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""RPC over the in-process ``fake://`` transport: what callers notice."""

import threading
import time

from oslo_config import cfg
import oslo_messaging as messaging
from oslo_messaging._drivers import amqpdriver
from oslo_messaging.notify import _impl_test as test_notifier
import pytest

from common import context
from common import exception
from common import manager
from common import rpc
from tests.unit import rpc_versions

TOPIC = 'unit-rpc'


class EchoManager(manager.Manager):
    """A server speaking 1.2: 1.0 echo, 1.1 record (cast), 1.2 slow."""

    target = messaging.Target(version='1.2')

    def __init__(self, host):
        super().__init__(host=host, service_name='echo')
        self.recorded = []
        self.got = threading.Event()

    def echo(self, ctxt, value):
        return {'value': value, 'host': self.host,
                'context_class': type(ctxt).__name__,
                'user_id': ctxt.user_id, 'project_id': ctxt.project_id,
                'roles': ctxt.roles, 'request_id': ctxt.request_id}

    def record(self, ctxt, value):
        self.recorded.append(value)
        self.got.set()

    def slow(self, ctxt, seconds):
        time.sleep(seconds)
        return seconds

    @messaging.expected_exceptions(exception.ServiceNotFound)
    def missing(self, ctxt):
        raise exception.ServiceNotFound(host=self.host, binary='berth-x')

    def _private(self, ctxt):
        return 'secret'


class EchoAPI(object):
    """Client of EchoManager.

    API version history:

    * 1.0 - Initial version: echo.
    * 1.1 - Add record (a cast).
    * 1.2 - Add slow.
    """

    VERSION_ALIASES = {'2026.1': '1.1'}

    def __init__(self, version_cap=None):
        target = messaging.Target(topic=TOPIC, version='1.0')
        self.client = rpc.get_client(target, version_cap=version_cap)

    def echo(self, ctxt, value):
        return self.client.prepare(version='1.0').call(ctxt, 'echo',
                                                       value=value)

    def record(self, ctxt, value, fanout=False):
        self.client.prepare(version='1.1', fanout=fanout).cast(
            ctxt, 'record', value=value)

    def slow(self, ctxt, seconds, timeout=None):
        return self.client.prepare(version='1.2', timeout=timeout).call(
            ctxt, 'slow', seconds=seconds)


@pytest.fixture
def overrides():
    """``overrides(name=value, group=None)``; all cleared afterwards."""
    rpc.register_opts(rpc.CONF)
    done = []

    def _set(group=None, **values):
        for name, value in values.items():
            rpc.CONF.set_override(name, value, group=group)
            done.append((name, group))
    yield _set
    for name, group in done:
        rpc.CONF.clear_override(name, group=group)


@pytest.fixture
def fake_rpc(overrides):
    """An initialized fake:// transport, cleaned up afterwards."""
    overrides(transport_url='fake:///', rpc_response_timeout=5)
    rpc.init(rpc.CONF)
    yield
    rpc.cleanup()


@pytest.fixture
def servers(fake_rpc):
    """Factory: ``servers('h1', 'h2')`` -> started managers by host."""
    started = []

    def _start(*hosts):
        managers = {}
        for host in hosts:
            mgr = EchoManager(host)
            server = rpc.get_server(
                messaging.Target(topic=TOPIC, server=host), [mgr])
            server.start()
            started.append(server)
            managers[host] = mgr
        return managers
    yield _start
    for server in started:
        server.stop()
        server.wait()


def _ctxt():
    return context.RequestContext(user_id='u1', project_id='p1',
                                  roles=['member', 'reader'])


def test_call_carries_the_request_context(servers):
    servers('h1')
    ctxt = _ctxt()
    result = EchoAPI().echo(ctxt, {'nested': [1, 'two']})
    assert result == {'value': {'nested': [1, 'two']}, 'host': 'h1',
                      'context_class': 'RequestContext', 'user_id': 'u1',
                      'project_id': 'p1', 'roles': ['member', 'reader'],
                      'request_id': ctxt.request_id}


def test_cast_reaches_one_server_and_fanout_all(servers):
    managers = servers('h1', 'h2')
    api = EchoAPI()
    api.record(_ctxt(), 'once')
    api.record(_ctxt(), 'everyone', fanout=True)
    for mgr in managers.values():
        assert mgr.got.wait(5)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        got = sorted(v for m in managers.values() for v in m.recorded)
        if got == ['everyone', 'everyone', 'once']:
            break
        time.sleep(0.05)
    assert got == ['everyone', 'everyone', 'once']


def test_direct_call_to_one_server(servers):
    servers('h1', 'h2')
    cctxt = EchoAPI().client.prepare(server='h2')
    assert cctxt.call(_ctxt(), 'echo', value=1)['host'] == 'h2'


def test_version_cap_refuses_a_newer_method(servers):
    servers('h1')
    api = EchoAPI(version_cap='1.1')
    assert api.client.can_send_version('1.1')
    assert not api.client.can_send_version('1.2')
    with pytest.raises(messaging.RPCVersionCapError) as err:
        api.slow(_ctxt(), 0)
    assert '1.2' in str(err.value) and '1.1' in str(err.value)
    # NOTE: older methods still go through under the cap.
    assert api.echo(_ctxt(), 'x')['value'] == 'x'


def test_server_refuses_a_newer_version(servers):
    servers('h1')
    cctxt = EchoAPI().client.prepare(version='1.3')
    with pytest.raises(messaging.UnsupportedVersion):
        cctxt.call(_ctxt(), 'echo', value=1)


def test_private_methods_are_not_exposed(servers):
    servers('h1')
    with pytest.raises(messaging.NoSuchMethod):
        EchoAPI().client.call(_ctxt(), '_private')


def test_expected_exception_arrives_as_itself(servers):
    servers('h1')
    with pytest.raises(exception.ServiceNotFound) as err:
        EchoAPI().client.call(_ctxt(), 'missing')
    assert 'berth-x' in str(err.value)


def test_call_without_server_times_out(fake_rpc, overrides):
    overrides(rpc_response_timeout=1)
    started = time.monotonic()
    with pytest.raises(messaging.MessagingTimeout):
        EchoAPI().echo(_ctxt(), 'nobody')
    assert time.monotonic() - started < 5


def test_slow_call_times_out_with_its_own_timeout(servers):
    servers('h1')
    with pytest.raises(messaging.MessagingTimeout):
        EchoAPI().slow(_ctxt(), 2, timeout=0.3)
    assert EchoAPI().slow(_ctxt(), 0.1, timeout=3) == 0.1


def test_long_call_options(fake_rpc, overrides):
    overrides(long_rpc_timeout=900, rpc_response_timeout=30)
    assert rpc.long_call_options() == {'timeout': 900,
                                       'call_monitor_timeout': 30}


@pytest.mark.parametrize('value, expected', [
    (None, None), ('1.4', '1.4'), ('2026.1', '1.1')])
def test_version_cap_from_upgrade_levels(overrides, value, expected):
    overrides(group='upgrade_levels', scheduler=value)
    assert rpc.version_cap('scheduler',
                           EchoAPI.VERSION_ALIASES) == expected


def test_bad_upgrade_level_is_a_clear_error(overrides):
    overrides(group='upgrade_levels', compute='zed')
    with pytest.raises(exception.ConfigurationError) as err:
        rpc.version_cap('compute', EchoAPI.VERSION_ALIASES)
    assert 'compute = zed' in str(err.value)
    assert '2026.1' in str(err.value)


def test_not_initialized_is_a_clear_error():
    rpc.cleanup()
    with pytest.raises(exception.ConfigurationError) as err:
        rpc.get_transport()
    assert 'rpc.init' in str(err.value)


def test_notifier_publishes_with_context(overrides):
    overrides(transport_url='fake:///')
    overrides(group='oslo_messaging_notifications', driver=['test'])
    rpc.init(rpc.CONF)
    try:
        test_notifier.reset()
        rpc.get_notifier('scheduler.h1').info(
            _ctxt(), 'scheduler.select_destinations.start', {'n': 1})
        [(ctxt, message, priority, retry)] = test_notifier.NOTIFICATIONS
    finally:
        rpc.cleanup()
    assert message['publisher_id'] == 'scheduler.h1'
    assert message['event_type'] == 'scheduler.select_destinations.start'
    assert message['payload'] == {'n': 1}
    assert priority == 'INFO'
    assert ctxt['project_id'] == 'p1'


def test_versions_in_sync_helper():
    rpc_versions.assert_versions_in_sync(EchoAPI, EchoManager)

    class OldManager(EchoManager):
        target = messaging.Target(version='1.1')

    with pytest.raises(AssertionError) as err:
        rpc_versions.assert_versions_in_sync(EchoAPI, OldManager)
    assert '1.2' in str(err.value) and '1.1' in str(err.value)


@pytest.mark.parametrize('prefetch, expected', [
    (0, rpc.LISTENER_POLL_MIN), (10, 0.001)])
def test_listeners_poll_at_most_every_50_ms_without_a_prefetch_limit(
        monkeypatch, prefetch, expected):
    """Without a prefetch limit the broker never waits for the queued
    acknowledgements, so a listener need not wake up every millisecond
    to send them; with one it must (oslo.messaging's own 1 ms).
    """
    monkeypatch.setattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN', 0.001)
    monkeypatch.setattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MAX', 5.0)
    conf = cfg.ConfigOpts()
    rpc.register_opts(conf)
    conf([])
    conf.set_override('rabbit_qos_prefetch_count', prefetch,
                      group='oslo_messaging_rabbit')
    rpc._cap_listener_poll(conf)
    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN == expected
    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX == rpc.LISTENER_POLL_MAX
