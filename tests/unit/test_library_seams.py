# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Each use of a library's private API (a "seam") still works.

Berth reaches into oslo.messaging, SQLAlchemy, oslo.db, oslo.policy and
oslo.service where they offer no public way (see each seam's NOTE). A
release may rename or drop what a seam uses without notice; these tests
run each seam against the installed library and fail naming the library,
the attribute and the seam to update.
"""

import importlib
import inspect
import threading
import types

from oslo_config import cfg
import oslo_messaging as messaging
from oslo_messaging._drivers import amqpdriver
from oslo_messaging._drivers import base as driver_base
from oslo_messaging._drivers import impl_fake
from oslo_messaging._drivers import impl_rabbit
from oslo_policy import _checks
from oslo_policy import policy as oslo_policy
from oslo_service import periodic_task
import pytest
import sqlalchemy as sa

from common.db import api as db_api
from common import policy
from common import rpc
from common import rpc_hosts
from services.conductor import manager as conductor_manager


def _require(obj, name, library, seam):
    """Fail unless ``obj`` has attribute ``name``, saying what to update."""
    owner = getattr(obj, '__name__', type(obj).__name__)
    assert hasattr(obj, name), '%s no longer has %s.%s; update %s' % (
        library, owner, name, seam)
    return getattr(obj, name)


# --- oslo.messaging: common/rpc_hosts.py ------------------------------------

MESSAGING = 'oslo.messaging'


@pytest.fixture
def fake_transport():
    """A real oslo.messaging transport on the in-process fake driver.

    NOTE: on the global CONF, where oslo.messaging registers its tracing
    options at import.
    """
    transport = messaging.get_rpc_transport(cfg.CONF, url='fake:///')
    yield transport
    transport.cleanup()


class _Echo(object):
    target = messaging.Target(version='1.0')

    def __init__(self):
        self.seen = []
        self.arrived = threading.Event()

    def echo(self, ctxt, host):
        self.seen.append(host)
        self.arrived.set()


def test_transport_driver(fake_transport):
    seam = 'common/rpc_hosts.py:_transport_driver'
    _require(fake_transport, '_driver', MESSAGING, seam)
    assert isinstance(rpc_hosts._transport_driver(fake_transport),
                      impl_fake.FakeDriver), (
        '%s Transport._driver is no longer the driver; update %s'
        % (MESSAGING, seam))
    assert rpc_hosts.can_share(fake_transport)


def test_driver_listener_and_the_server_target(fake_transport):
    target = messaging.Target(topic='seams', server='h1')
    server = messaging.get_rpc_server(fake_transport, target, [_Echo()],
                                      executor='threading')
    seam = 'common/rpc_hosts.py:_SharedRPCServer'
    create = _require(server, '_create_listener', MESSAGING, seam)
    assert _require(server, '_target', MESSAGING, seam) is target
    adapter = create()
    try:
        seam = 'common/rpc_hosts.py:_driver_listener'
        _require(adapter, '_poll_style_listener', MESSAGING, seam)
        assert isinstance(rpc_hosts._driver_listener(adapter),
                          impl_fake.FakeListener), (
            '%s listener adapters no longer wrap the driver listener in '
            '_poll_style_listener; update %s' % (MESSAGING, seam))
    finally:
        adapter.cleanup()


def test_attach_fake(fake_transport):
    seam = 'common/rpc_hosts.py:_attach_fake'
    driver = rpc_hosts._transport_driver(fake_transport)
    _require(driver, '_default_exchange', MESSAGING, seam)
    adapter = driver.listen(messaging.Target(topic='seams', server='h1'),
                            1, None)
    listener = rpc_hosts._driver_listener(adapter)
    _require(listener, '_exchange_manager', MESSAGING, seam)
    assert isinstance(_require(listener, '_targets', MESSAGING, seam),
                      list), '%s FakeListener._targets is no longer a ' \
        'list; update %s' % (MESSAGING, seam)
    rpc_hosts._attach_fake(driver, listener,
                           messaging.Target(topic='seams', server='h1'),
                           ['h2'])
    client = messaging.get_rpc_client(
        fake_transport, messaging.Target(topic='seams', server='h2'))
    client.cast({}, 'echo', host='h2')
    polled = listener.poll(timeout=5)
    assert polled and polled[0].message['method'] == 'echo', (
        'a fake:// listener no longer receives the queues added by %s'
        % seam)
    adapter.cleanup()


def test_shared_server_answers_for_every_host(fake_transport):
    """The seams together: one server, the casts of two hosts."""
    endpoint = _Echo()
    server = messaging.get_rpc_server(
        fake_transport, messaging.Target(topic='seams', server='h1'),
        [endpoint], executor='threading',
        server_cls=rpc_hosts._SharedRPCServer)
    server.extra_servers = ('h2',)
    server.start()
    try:
        client = messaging.get_rpc_client(
            fake_transport, messaging.Target(topic='seams', server='h2'))
        client.cast({}, 'echo', host='h2')
        assert endpoint.arrived.wait(10), (
            'the shared listener of common/rpc_hosts.py:_SharedRPCServer '
            'no longer receives the other hosts\' casts')
    finally:
        server.stop()
        server.wait()
    assert endpoint.seen == ['h2']


def test_attach_amqp():
    seam = 'common/rpc_hosts.py:_attach_amqp'
    get_exchange = _require(amqpdriver.AMQPDriverBase, '_get_exchange',
                            MESSAGING, seam)
    driver = types.SimpleNamespace(_default_exchange='berth')
    assert get_exchange(driver, messaging.Target(topic='t')) == 'berth', (
        '%s AMQPDriverBase._get_exchange no longer answers the default '
        'exchange; update %s' % (MESSAGING, seam))
    conn = object()
    listener = amqpdriver.AMQPListener(
        types.SimpleNamespace(prefetch_size=1), conn)
    assert _require(listener, 'conn', MESSAGING, seam) is conn
    declare = _require(impl_rabbit.Connection, 'declare_topic_consumer',
                       MESSAGING, seam)
    params = inspect.signature(declare).parameters
    assert {'exchange_name', 'topic', 'callback'} <= set(params), (
        '%s Connection.declare_topic_consumer takes %s now; update %s'
        % (MESSAGING, list(params), seam))


# --- SQLAlchemy and oslo.db: common/db/api.py -------------------------------

@pytest.fixture
def oslo_engine(tmp_path):
    """A file SQLite engine as oslo.db makes it (NullPool, its listeners)."""
    from oslo_db.sqlalchemy import engines
    engine = engines.create_engine('sqlite:///%s' % (tmp_path / 's.db'))
    yield engine
    engine.dispose()


class _CountingConnection(object):
    """A DBAPI connection that counts the rollbacks the pool sends."""

    def __init__(self):
        self.rollbacks = 0

    def rollback(self):
        self.rollbacks += 1

    def close(self):
        pass


def test_queue_pool_like(oslo_engine):
    seam = 'common/db/api.py:_queue_pool_like'
    old = oslo_engine.pool
    _require(old, '_creator', 'SQLAlchemy', seam)
    _require(old, '_dialect', 'SQLAlchemy', seam)
    assert '_dispatch' in inspect.signature(
        sa.pool.Pool.__init__).parameters, (
        'SQLAlchemy pools no longer take _dispatch; update %s' % seam)
    new = db_api._queue_pool_like(old, pool_size=1, max_overflow=0)
    assert isinstance(new, sa.pool.QueuePool)
    assert set(old.dispatch.connect) <= set(new.dispatch.connect), (
        'the pool made by %s lost oslo.db\'s connect listeners' % seam)
    conn = new.connect()
    try:
        assert conn.cursor().execute('SELECT 1').fetchone() == (1,)
    finally:
        conn.close()
        new.dispose()


def test_set_reset_on_return():
    seam = 'common/db/api.py:_set_reset_on_return'
    made = []

    def creator():
        made.append(_CountingConnection())
        return made[-1]
    pool = sa.pool.QueuePool(creator, pool_size=1, max_overflow=0)
    assert isinstance(_require(pool, '_reset_on_return', 'SQLAlchemy',
                               seam), sa.pool.base.ResetStyle)
    pool.connect().close()
    assert made[0].rollbacks == 1
    db_api._set_reset_on_return(pool, sa.pool.base.ResetStyle.reset_none)
    pool.connect().close()
    assert made[0].rollbacks == 1, (
        'SQLAlchemy pools no longer read _reset_on_return when a '
        'connection returns; update %s' % seam)


def test_set_pre_ping(oslo_engine):
    seam = 'common/db/api.py:_set_pre_ping'
    # NOTE: oslo.db turns the ping on; that is what the seam turns off.
    assert _require(oslo_engine.pool, '_pre_ping', 'SQLAlchemy',
                    seam) is True, (
        'oslo.db engines no longer pre-ping (Pool._pre_ping); review %s'
        % seam)
    db_api._set_pre_ping(oslo_engine.pool, False)
    assert oslo_engine.pool._pre_ping is False


def test_oslo_sqlite_begin_listeners(oslo_engine):
    seam = 'common/db/api.py:_oslo_sqlite_begin_listeners'
    found = db_api._oslo_sqlite_begin_listeners(oslo_engine)
    assert len(found) == 1, (
        'oslo.db no longer registers its SQLite BEGIN listener as %s; '
        'update %s' % (db_api._OSLO_SQLITE_BEGIN, seam))


# --- oslo.policy: common/policy.py ------------------------------------------

def test_check_parts():
    seam = 'common/policy.py:_check_parts'
    for name in policy._PURE_CHECK_NAMES:
        _require(_checks, name, 'oslo.policy', seam)
    conf = cfg.ConfigOpts()
    conf(args=[], default_config_files=[])
    enforcer = oslo_policy.Enforcer(conf)
    enforcer.register_defaults([
        oslo_policy.RuleDefault('a', 'role:admin or rule:b'),
        oslo_policy.RuleDefault('b', 'not role:x'),
        oslo_policy.RuleDefault('c', 'http://example.com/check')])
    enforcer.load_rules()
    rules = enforcer.rules
    pure, name, subs = policy._check_parts(rules['a'])
    assert (pure, name) == (True, None) and len(subs) == 2, (
        'oslo.policy OrCheck.rules no longer lists the alternatives; '
        'update %s' % seam)
    assert policy._check_parts(subs[1]) == (True, 'b', ()), (
        'oslo.policy RuleCheck.match no longer names the rule; update %s'
        % seam)
    pure, name, (negated,) = policy._check_parts(rules['b'])
    assert isinstance(negated, _checks.RoleCheck), (
        'oslo.policy NotCheck.rule no longer holds the negated check; '
        'update %s' % seam)
    assert policy._check_parts(rules['c'])[0] is False
    assert policy._is_pure(rules, rules['a'], {'a'})


# --- oslo.service: services/conductor/manager.py ----------------------------

def test_add_instance_task():
    seam = 'services/conductor/manager.py:_add_instance_task'
    ran = []

    class Tasks(periodic_task.PeriodicTasks):
        pass

    def task(self, ctxt):
        ran.append(self)
    task = periodic_task.periodic_task(spacing=60, run_immediately=True,
                                       name='seam_task')(task)
    for name in ('_periodic_name', '_periodic_spacing',
                 '_periodic_last_run'):
        _require(task, name, 'oslo.service', seam)
    for name in ('_periodic_tasks', '_periodic_spacing'):
        _require(Tasks, name, 'oslo.service', seam)
    mine, other = Tasks(cfg.ConfigOpts()), Tasks(cfg.ConfigOpts())
    _require(mine, '_periodic_last_run', 'oslo.service', seam)
    conductor_manager._add_instance_task(mine, task)
    mine.run_periodic_tasks(None)
    other.run_periodic_tasks(None)
    assert ran == [mine], (
        'oslo.service no longer runs a task added by %s (or runs it for '
        'every manager)' % seam)


# --- oslo.messaging: common/rpc.py ------------------------------------------

def test_import_time_option_groups():
    seam = 'common/rpc.py:_IMPORT_TIME_GROUPS'
    for group, (module, name) in rpc._IMPORT_TIME_GROUPS.items():
        try:
            found = importlib.import_module(module)
        except ImportError:
            pytest.fail('oslo.messaging no longer has the module %s (the '
                        '[%s] options); update %s' % (module, group, seam))
        opts = _require(found, name, MESSAGING, seam)
        assert opts and all(isinstance(o, cfg.Opt) for o in opts), (
            '%s.%s is no longer a list of options; update %s'
            % (module, name, seam))


def test_stop_server_reaches_the_listener_and_its_executor():
    seam = 'common/rpc.py:stop_server'
    _require(messaging.MessageHandlingServer, '_on_incoming', MESSAGING,
             seam)
    # NOTE: the adapter sets the attribute in __init__; its code names it.
    names = driver_base.PollStyleListenerAdapter.__init__.__code__.co_names
    assert '_poll_style_listener' in names, (
        'oslo.messaging PollStyleListenerAdapter no longer keeps '
        '_poll_style_listener; update %s' % seam)
    _require(impl_rabbit.Connection, 'reset', MESSAGING, seam)
    _require(amqpdriver.AMQPListener, '__init__', MESSAGING, seam)
    names = amqpdriver.AMQPListener.__init__.__code__.co_names
    for name in ('incoming', 'conn'):
        assert name in names, (
            'oslo.messaging AMQPListener no longer keeps %s; update %s'
            % (name, seam))


def test_listener_poll_cap():
    seam = 'common/rpc.py:_cap_listener_poll'
    # NOTE: poll is wrapped (without functools.wraps) by a batch helper.
    for name in ('ACK_REQUEUE_EVERY_SECONDS_MAX',
                 'ACK_REQUEUE_EVERY_SECONDS_MIN'):
        _require(amqpdriver, name, MESSAGING, seam)
        for reader in (amqpdriver.AMQPListener, amqpdriver.ReplyWaiter):
            assert name in inspect.getsource(reader), (
                'oslo.messaging %s no longer reads %s; update %s' % (
                    reader.__name__, name, seam))
