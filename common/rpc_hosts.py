# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""One RPC server answering for many server names.

A compute agent of the fake driver stands for up to thousands of hosts,
each addressed as ``server=<host>`` on topic ``compute``. A plain
oslo.messaging server per host costs a broker connection, a polling
thread and an executor each: a thousand simulated hosts were a thousand
sockets (RabbitMQ's default limit is not much higher) and more threads
than two cores can schedule. :class:`HostsServer` gives the agent one
connection, one poller and one executor: the listener of the first host
also consumes the direct queue (``topic.<host>``) of every other host.

Which host a message was meant for travels in the message itself (the
caller passes ``host=``), since the dispatcher does not tell endpoints
which queue a message came from.

Sharing needs the driver's listener: it is done for RabbitMQ and the
in-process ``fake://`` driver. Any other driver gets one plain server per
host, which behaves the same at the old cost.
"""

import logging

import oslo_messaging as messaging
from oslo_messaging._drivers import amqpdriver
from oslo_messaging._drivers import impl_fake
from oslo_messaging.rpc import server as rpc_server

from common import rpc

LOG = logging.getLogger(__name__)

# --- seams: the only uses of oslo.messaging internals ----------------------
#
# NOTE: oslo.messaging has no public way to let one listener consume the
# direct queues of several server names, so sharing reaches into its
# drivers (the private modules imported above). Each use is one function
# below, checked against oslo.messaging 18.3.1 (older releases down to
# requirements.txt's minimum are not checked). tests/unit/
# test_library_seams.py fails naming the seam to update when a release
# renames or drops what one uses.


def _transport_driver(transport):
    """The driver of an oslo.messaging Transport, or None.

    NOTE: seam: ``Transport._driver``; the transport API hides the driver
    and the listener it makes.
    """
    return getattr(transport, '_driver', None)


def _driver_listener(adapter):
    """The driver's poll-style listener behind an RPC server's listener.

    NOTE: seam: ``PollStyleListenerAdapter._poll_style_listener``, the
    object that holds the driver's connection and consumed targets.
    """
    return getattr(adapter, '_poll_style_listener', None)


def _attach_amqp(driver, listener, target, servers):
    """Let an AMQP (RabbitMQ) listener consume ``servers``' direct queues.

    NOTE: seam: ``AMQPDriverBase._get_exchange`` (the exchange the
    driver's own consumers use) and ``AMQPListener.conn`` with its
    ``declare_topic_consumer``. Declared consumers are kept by the
    connection and declared again after a reconnection, the extra queues
    included.
    """
    exchange = driver._get_exchange(target)
    for server in servers:
        listener.conn.declare_topic_consumer(
            exchange_name=exchange, topic='%s.%s' % (target.topic, server),
            callback=listener)


def _attach_fake(driver, listener, target, servers):
    """Let a ``fake://`` listener poll ``servers``' queues too.

    NOTE: seam: ``FakeDriver._default_exchange``, and
    ``FakeListener._exchange_manager`` and ``_targets`` (the targets it
    polls in turn).
    """
    exchange = target.exchange or driver._default_exchange
    exchanges = listener._exchange_manager.get_exchange(exchange)
    for server in servers:
        extra = messaging.Target(topic=target.topic, server=server,
                                 exchange=exchange)
        exchanges.ensure_queue(extra, None)
        listener._targets.append(extra)


_ATTACHERS = (
    (amqpdriver.AMQPDriverBase, amqpdriver.AMQPListener, _attach_amqp),
    (impl_fake.FakeDriver, impl_fake.FakeListener, _attach_fake),
)


def _attacher(driver, listener):
    for driver_cls, listener_cls, attach in _ATTACHERS:
        if isinstance(driver, driver_cls) and isinstance(listener,
                                                         listener_cls):
            return attach
    return None


def can_share(transport):
    """True when one listener of ``transport`` can serve many hosts."""
    driver = _transport_driver(transport)
    return any(isinstance(driver, driver_cls)
               for driver_cls, _listener, _attach in _ATTACHERS)


class _SharedRPCServer(rpc_server.RPCServer):
    """An RPCServer whose listener also consumes ``extra_servers``.

    NOTE: seam: overrides ``RPCServer._create_listener`` (called once, at
    start, to make the listener) and reads the server's ``_target``.
    """

    extra_servers = ()

    def _create_listener(self):
        adapter = super()._create_listener()
        listener = _driver_listener(adapter)
        driver = _transport_driver(self.transport)
        attach = _attacher(driver, listener)
        if attach is None:
            raise TypeError('cannot share a listener of %s' % type(driver))
        attach(driver, listener, self._target, self.extra_servers)
        return adapter


class HostsServer(rpc.ServerGroup):
    """The RPC server of every host of one process.

    :param topic: the topic (``compute``).
    :param hosts: the server names, the first one the server's own.
    :param endpoints: the endpoints every host's messages go to.
    """

    def __init__(self, topic, hosts, endpoints):
        if not hosts:
            raise ValueError('no hosts to serve')
        self.topic = topic
        self.hosts = list(hosts)
        lead = messaging.Target(topic=topic, server=self.hosts[0])
        if can_share(rpc.get_transport()):
            server = rpc.get_server(lead, endpoints,
                                    server_cls=_SharedRPCServer)
            server.extra_servers = tuple(self.hosts[1:])
            servers = [server]
        else:
            LOG.warning('The %s transport cannot share a listener: one RPC '
                        'server (and connection) per host for %d hosts',
                        type(_transport_driver(
                            rpc.get_transport())).__name__,
                        len(self.hosts))
            servers = [rpc.get_server(
                messaging.Target(topic=topic, server=host), endpoints)
                for host in self.hosts]
        super().__init__(servers)
