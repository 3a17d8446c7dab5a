# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""One RPC server for many hosts over the real RabbitMQ."""

import threading
import time

import oslo_messaging as messaging

from common import context
from common import rpc
from common import rpc_hosts

TOPIC = 'berth-hosts-test'
HOSTS = ['sim-%d' % index for index in range(40)]


class Endpoint(object):
    target = messaging.Target(version='1.0')

    def __init__(self):
        self.seen = []
        self.lock = threading.Lock()

    def which(self, ctxt, host):
        return host

    def note(self, ctxt, host, value):
        with self.lock:
            self.seen.append((host, value))


def _consumers(vhost):
    out = vhost.ctl(
        'list_queues',
        '-p',
        vhost.name,
        '--quiet',
        '--no-table-headers',
        'name',
        'consumers',
    )
    return dict(line.split('\t') for line in out.splitlines() if line.strip())


def _wait_for(predicate, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_every_host_is_answered_by_one_listener(vhost_rpc):
    endpoint = Endpoint()
    server = rpc_hosts.HostsServer(TOPIC, HOSTS, [endpoint])
    server.start()
    try:
        client = rpc.get_client(messaging.Target(topic=TOPIC, version='1.0'))
        ctxt = context.get_admin_context()
        for host in HOSTS:
            assert (
                client.prepare(server=host).call(ctxt, 'which', host=host)
                == host
            )
        queues = _consumers(vhost_rpc)
        direct = {'%s.%s' % (TOPIC, h) for h in HOSTS}
        assert direct <= set(queues)
        assert {queues[name] for name in direct} == {'1'}
        assert len(server.servers) == 1
    finally:
        server.stop()
        server.wait()


def test_a_cast_to_a_stopped_agent_waits_for_the_next(vhost_rpc):
    """Stopping cancels every host's consumer: nothing is taken and lost."""
    first = Endpoint()
    server = rpc_hosts.HostsServer(TOPIC, HOSTS, [first])
    server.start()
    client = rpc.get_client(messaging.Target(topic=TOPIC, version='1.0'))
    ctxt = context.get_admin_context()
    server.stop()
    server.wait()
    for host in HOSTS[-3:]:
        client.prepare(server=host).cast(ctxt, 'note', host=host, value=1)
    second = Endpoint()
    again = rpc_hosts.HostsServer(TOPIC, HOSTS, [second])
    again.start()
    try:
        assert _wait_for(lambda: len(second.seen) == 3)
        assert sorted(second.seen) == sorted((h, 1) for h in HOSTS[-3:])
        assert first.seen == []
    finally:
        again.stop()
        again.wait()
