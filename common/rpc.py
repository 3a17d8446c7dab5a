# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Berth's RPC backbone: transports, clients, servers and the notifier.

Every service calls :func:`init` once per process (the service runner does
it in each worker, after the fork) and :func:`cleanup` on its way out. The
transport comes from ``[DEFAULT] transport_url``: ``rabbit://...`` in
production, ``fake://`` inside one process (unit tests, all-in-one).

Payloads are JSON primitives: domain objects call ``to_primitive()``
themselves before a call and ``from_primitive()`` on the other side. The
one serializer, :class:`RequestContextSerializer`, only carries the
:class:`common.context.RequestContext` across.
"""

import importlib
import logging
import re

from oslo_config import cfg
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts
from oslo_messaging.rpc import dispatcher

import common.conf
from common import context as berth_context
from common import exception

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

# NOTE: the exchange every Berth topic lives in, so that Berth can share a
# RabbitMQ virtual host with other OpenStack services without clashing.
CONTROL_EXCHANGE = 'berth'

TRANSPORT = None
NOTIFICATION_TRANSPORT = None
NOTIFIER = None

# NOTE: a server's exception reaches the caller as the same class only when
# its module is listed here; anything else arrives as RemoteError. Services
# add their own exception modules with add_extra_exmods().
ALLOWED_EXMODS = [exception.__name__]
EXTRA_EXMODS = []

_VERSION_RE = re.compile(r'^\d+\.\d+$')

# NOTE: an idle RabbitMQ listener waits up to this long on its socket
# before it checks whether it was stopped; oslo.messaging's 5 s made each
# idle service take 5 s to stop (15 s for an all-in-one stopping its
# services one after the other). One second costs one wake-up per second
# per idle listener.
LISTENER_POLL_MAX = 1.0
# NOTE: and at least this long after each message. oslo.messaging starts
# again from 1 ms after every message and doubles the wait each time it
# times out, so that acknowledgements queued by other threads go out at
# once; between two messages 10 ms apart a listener thus woke up four
# times for nothing, each wake-up a timed-out socket read raised and
# caught: a server took 1.3 ms of CPU per message at 200 casts/s and 2.7
# ms at 50/s, against 1.0 and 1.2 ms with this bound (doc/benchmarks.md).
# A message that arrives ends the wait at once whatever its length: only
# the acknowledgements queued by other threads go out up to this much
# later, which the broker does not wait for unless a prefetch limit is
# set ([oslo_messaging_rabbit] rabbit_qos_prefetch_count): with one, the
# bound is left to oslo.messaging.
LISTENER_POLL_MIN = 0.05

# NOTE: option groups oslo.messaging registers on the global cfg.CONF at
# import time only and leaves out of its list_opts(); a ConfigOpts of its
# own (a functional test's client) needs them too. Module, attribute.
_IMPORT_TIME_GROUPS = {
    'oslo_messaging_metrics': ('oslo_messaging._metrics.client',
                               'oslo_messaging_metrics'),
    'oslo_messaging_tracing': ('oslo_messaging._tracing.client',
                               'oslo_messaging_tracing'),
}


def register_opts(conf):
    """Register oslo.messaging's options on ``conf`` ahead of the transport.

    oslo.messaging registers them lazily (the transport options when a
    transport is made, the rabbit options when the driver loads, the
    timeout when a client is made); registering the same option objects
    up front lets a config file or a test override any of them before
    :func:`init`. Re-registering an identical option is a no-op.
    """
    messaging.set_transport_defaults(control_exchange=CONTROL_EXCHANGE)
    for group, opts in messaging_opts.list_opts():
        conf.register_opts(opts, group=group)
    for group, (module, name) in _IMPORT_TIME_GROUPS.items():
        try:
            opts = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
        conf.register_opts(opts, group=group)


def init(conf):
    """Create this process's transports and notifier from ``conf``.

    :param conf: the ConfigOpts holding ``transport_url`` and friends
        (normally ``common.conf.CONF``).
    :raises oslo_messaging.InvalidTransportURL: for a malformed URL.
    """
    global TRANSPORT, NOTIFICATION_TRANSPORT, NOTIFIER
    register_opts(conf)
    _cap_listener_poll(conf)
    exmods = get_allowed_exmods()
    TRANSPORT = messaging.get_rpc_transport(
        conf, allowed_remote_exmods=exmods)
    NOTIFICATION_TRANSPORT = messaging.get_notification_transport(
        conf, allowed_remote_exmods=exmods)
    # NOTE: topics and driver come from [oslo_messaging_notifications];
    # with no driver configured the notifier drops everything cheaply.
    NOTIFIER = messaging.Notifier(NOTIFICATION_TRANSPORT,
                                  serializer=RequestContextSerializer())


def _cap_listener_poll(conf):
    """Bound the poll of RabbitMQ listeners and reply waiters between
    :data:`LISTENER_POLL_MIN` (without a prefetch limit) and
    :data:`LISTENER_POLL_MAX`.

    NOTE: seam: ``amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN`` and ``_MAX``,
    module constants read at each poll (checked against oslo.messaging
    18.3.1); tests/unit/test_library_seams.py fails naming them if they
    go.
    """
    try:
        from oslo_messaging._drivers import amqpdriver
    except ImportError:
        return
    if hasattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MAX'):
        amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX = min(
            amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX, LISTENER_POLL_MAX)
    if _prefetch_limit(conf) == 0 and hasattr(
            amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN'):
        amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN = max(
            amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN, LISTENER_POLL_MIN)


def _prefetch_limit(conf):
    """``[oslo_messaging_rabbit] rabbit_qos_prefetch_count`` (0: none)."""
    try:
        return conf.oslo_messaging_rabbit.rabbit_qos_prefetch_count or 0
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
        return 0


def cleanup():
    """Close the transports; :func:`init` may be called again after."""
    global TRANSPORT, NOTIFICATION_TRANSPORT, NOTIFIER
    for transport in (TRANSPORT, NOTIFICATION_TRANSPORT):
        if transport is not None:
            transport.cleanup()
    TRANSPORT = NOTIFICATION_TRANSPORT = NOTIFIER = None


def reset_after_fork():
    """Forget transports inherited from a parent process.

    NOTE: the connections belong to the parent; closing them from a child
    would close the parent's sockets too, so the child drops its references
    and makes its own with :func:`init`.
    """
    global TRANSPORT, NOTIFICATION_TRANSPORT, NOTIFIER
    TRANSPORT = NOTIFICATION_TRANSPORT = NOTIFIER = None


def initialized():
    """True once :func:`init` has run in this process."""
    return TRANSPORT is not None


def notifications_enabled():
    """True once :func:`init` has run with a notification driver set.

    NOTE: with no driver (the default) oslo.messaging's notifier still
    serializes the payload and the context before it drops them; senders
    ask this first so that they build nothing nobody reads.
    """
    return NOTIFIER is not None and bool(NOTIFIER._driver_mgr.extensions)


def add_extra_exmods(*modules):
    """Let exceptions of ``modules`` cross RPC as themselves."""
    EXTRA_EXMODS.extend(modules)


def clear_extra_exmods():
    """Undo :func:`add_extra_exmods` (tests)."""
    del EXTRA_EXMODS[:]


def get_allowed_exmods():
    """The exception modules whose classes are rebuilt on the caller."""
    return ALLOWED_EXMODS + EXTRA_EXMODS


def get_transport():
    """This process's RPC transport.

    :raises common.exception.ConfigurationError: before :func:`init`.
    """
    if TRANSPORT is None:
        raise exception.ConfigurationError(
            reason='RPC is not initialized: call common.rpc.init() first')
    return TRANSPORT


def version_cap(service, aliases=None):
    """The ``[upgrade_levels] <service>`` cap as a version string, or None.

    :param service: ``scheduler``, ``conductor`` or ``compute``.
    :param aliases: release name -> version of that service's RPC API.
    :raises common.exception.ConfigurationError: for a value that is
        neither a ``X.Y`` version nor a known release alias.
    """
    value = getattr(CONF.upgrade_levels, service)
    if not value:
        return None
    if aliases and value in aliases:
        return aliases[value]
    if not _VERSION_RE.match(value):
        raise exception.ConfigurationError(
            reason='[upgrade_levels] %s = %s is neither a version (X.Y) '
                   'nor a release alias (%s)'
                   % (service, value, ', '.join(sorted(aliases or ()))
                      or 'none known'))
    return value


def get_client(target, version_cap=None, serializer=None,
               call_monitor_timeout=None, timeout=None):
    """An RPC client for ``target``.

    Every call times out: ``timeout`` if given, else ``[DEFAULT]
    rpc_response_timeout``. A long call passes ``call_monitor_timeout``
    (the server heartbeats the caller while it works) together with a
    larger ``timeout``; see :func:`long_call_options`.

    :param target: an ``oslo_messaging.Target`` (topic, optional server,
        namespace, version).
    :param version_cap: the highest version this client may send; a method
        prepared with a newer version raises ``RPCVersionCapError``.
    :param serializer: an optional entity serializer under the context
        serializer.
    """
    return messaging.get_rpc_client(
        get_transport(), target, version_cap=version_cap,
        serializer=RequestContextSerializer(serializer),
        call_monitor_timeout=call_monitor_timeout, timeout=timeout)


def long_call_options():
    """``prepare()`` keywords for a call that may run for minutes.

    NOTE: the caller waits up to ``long_rpc_timeout`` but learns within
    ``rpc_response_timeout`` if the server died, thanks to the heartbeat
    that ``call_monitor_timeout`` turns on. The options are read from the
    configuration the transport was made with (a client may have its own).
    """
    conf = TRANSPORT.conf if TRANSPORT is not None else CONF
    return {'timeout': getattr(conf, 'long_rpc_timeout',
                               CONF.long_rpc_timeout),
            'call_monitor_timeout': conf.rpc_response_timeout}


def get_server(target, endpoints, serializer=None, server_cls=None):
    """An RPC server for ``target`` dispatching to ``endpoints``.

    With ``target.server`` set the server listens on ``topic`` (shared
    with the other servers of that topic), ``topic.server`` (direct) and
    the topic's fanout.

    :param target: an ``oslo_messaging.Target`` with topic and server.
    :param endpoints: objects whose public methods become RPC methods; each
        may carry a ``target`` naming its namespace and version.
    :param serializer: an optional entity serializer under the context
        serializer.
    :param server_cls: an ``oslo_messaging.RPCServer`` subclass (see
        :mod:`common.rpc_hosts`); default the plain one.
    """
    # NOTE: no executor argument: passing one is deprecated, and
    # oslo.messaging picks `threading` unless eventlet has patched the
    # process (the opt-in BERTH_EVENTLET mode, common/eventlet_mode.py).
    # DefaultRPCAccessPolicy keeps private methods (_name) unreachable.
    extra = {'server_cls': server_cls} if server_cls else {}
    return messaging.get_rpc_server(
        get_transport(), target, endpoints,
        serializer=RequestContextSerializer(serializer),
        access_policy=dispatcher.DefaultRPCAccessPolicy, **extra)


def stop_server(server):
    """Stop ``server`` taking messages, losing none the broker sent it.

    NOTE: oslo.messaging's RPC listener acknowledges a message as it
    arrives, and after ``stop()`` its connection's heartbeat thread still
    reads the socket until ``wait()`` closes it. Every message the broker
    delivers in between (while in-flight work drains, which for a compute
    build can take minutes) is acknowledged and then dropped: a cast to a
    stopping service is lost instead of waiting in its queue for the next
    one. So, on RabbitMQ, the consumers are cancelled at once, and what
    arrived before the cancel is handed to the server's executor, which
    ``wait()`` drains. Other drivers only get ``stop()``.

    The listener, its connection and the executor hand-off are private to
    oslo.messaging (checked against 18.3.1); each is looked up with a
    default, so a library that moves them degrades to a plain ``stop()``,
    and tests/unit/test_library_seams.py fails naming the attribute.
    """
    server.stop()
    listener = getattr(getattr(server, 'listener', None),
                       '_poll_style_listener', None)
    context = getattr(listener, 'conn', None)
    connection = getattr(context, 'connection', None)
    cancel = getattr(connection, 'reset', None)
    if cancel is None or not hasattr(listener, 'incoming'):
        return
    try:
        cancel()
    except Exception:
        LOG.warning('Could not cancel the consumers of %s; messages '
                    'delivered while it drains may be lost', server.target,
                    exc_info=True)
    leftovers = listener.incoming
    while leftovers:
        # NOTE: already acknowledged: run them, as a running server would.
        server._on_incoming([leftovers.pop(0)])


class ServerGroup(object):
    """Several RPC servers of one service, started and stopped as one.

    NOTE: each server has its own executor (thread pool): a service
    splits its methods over servers when slow ones must never take every
    thread from fast ones.

    :param servers: oslo.messaging servers, not started.
    """

    def __init__(self, servers):
        self.servers = list(servers)

    @property
    def target(self):
        """The first server's target (for logs)."""
        return self.servers[0].target

    def start(self):
        """Start consuming on every server."""
        for server in self.servers:
            server.start()

    def stop(self):
        """Stop consuming, losing nothing that arrived (:func:`stop_server`).
        """
        for server in self.servers:
            stop_server(server)

    def wait(self):
        """Wait for the messages taken to be handled."""
        for server in self.servers:
            server.wait()


def get_notifier(publisher_id):
    """A notifier publishing as ``publisher_id`` (``service.host``).

    :raises common.exception.ConfigurationError: before :func:`init`.
    """
    if NOTIFIER is None:
        raise exception.ConfigurationError(
            reason='RPC is not initialized: call common.rpc.init() first')
    return NOTIFIER.prepare(publisher_id=publisher_id)


class RequestContextSerializer(messaging.Serializer):
    """Carries the request context across RPC; entities pass through.

    :param base: an optional serializer for the entities themselves; by
        default they go as they are, since they are JSON primitives.
    """

    def __init__(self, base=None):
        self._base = base

    def serialize_entity(self, context, entity):
        """Entity to wire form (unchanged unless a base serializer)."""
        if self._base is None:
            return entity
        return self._base.serialize_entity(context, entity)

    def deserialize_entity(self, context, entity):
        """Wire form to entity (unchanged unless a base serializer)."""
        if self._base is None:
            return entity
        return self._base.deserialize_entity(context, entity)

    def serialize_context(self, context):
        """A RequestContext to its dict; a dict goes unchanged."""
        if isinstance(context, dict):
            return context
        return context.to_dict()

    def deserialize_context(self, context):
        """The dict from the wire back into a RequestContext."""
        return berth_context.RequestContext.from_dict(context)
