# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""SIGKILL of each service mid-stream of boots leaves no build behind.

Every service runs as its own process, as its systemd unit runs it, on
the real RabbitMQ and MariaDB (tests/functional/stack.py). While boots
stream in, the compute agent, the conductor, the scheduler and placement
each get SIGKILL once (no draining: whatever they held is dropped) and
are started again. Afterwards:

* every server is ACTIVE, or ERROR with a fault; none stays in BUILD
  (a restarted compute agent ends the builds its last process dropped,
  the conductor buries build requests older than ``[conductor]
  build_request_timeout``, a dead scheduler is noticed within
  ``rpc_response_timeout``);
* placement holds exactly the ACTIVE servers' flavors plus what ERROR
  servers keep: as in Nova, an ERROR server whose build ended on its host
  (a restarted agent, the build timeout) keeps its flavor there until it
  is deleted; one without a host holds nothing;
* ``berth-manage placement audit`` finds no orphaned allocation and no
  server stuck in a task state.

A last round makes the lost cast certain: with the conductor dead, a boot
is cast and the conductor's queue purged; the build request is buried in
cell0 by the restarted conductor's bound, with a fault that says so.

Intervals and timeouts are shortened through the configuration so the
whole test stays within about a minute and a half on two cores.
"""

import os
import signal
import time
import uuid

import pytest

from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import rabbit
from tests.functional import stack as stack_mod
from tests.functional import stack_fixture

HOSTS = 3
SERVERS_BEFORE_KILL = 4
SERVERS_WHILE_DOWN = 2
# NOTE: long enough that builds are still spawning when their agent
# dies, short enough to keep the test quick.
SPAWN_LATENCY = 0.5
# NOTE: the compute agent first: at start it ends the builds of its
# hosts its previous process dropped, and only this round's should be in
# flight then.
KILL_ORDER = ('berth-compute', 'berth-conductor', 'berth-scheduler',
              'berth-placement-api')
BUILD_REQUEST_TIMEOUT = 15
SETTLE_TIMEOUT = 75
FLAVOR = {'vcpus': 1, 'ram': 128, 'disk': 1}


@pytest.fixture(scope='module')
def stack(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('kills')), hosts=HOSTS,
            extra_conf={
                ('fake_driver', 'spawn_latency'): SPAWN_LATENCY,
                # NOTE: a call whose server died fails after this long.
                ('DEFAULT', 'rpc_response_timeout'): 10,
                ('DEFAULT', 'periodic_fuzzy_delay'): 0,
                ('conductor', 'build_request_timeout'):
                    BUILD_REQUEST_TIMEOUT,
                # NOTE: a build whose cast died with its conductor.
                ('compute', 'instance_build_timeout'): 20,
                # NOTE: builds the killed agent had taken end 5 s after
                # its restart; those cast while it was down still run.
                ('compute', 'restart_build_grace'): 5,
                ('audit', 'allocation_audit_interval'): -1,
            }) as deployment:
        yield deployment


def _kill(stack, binary):
    """SIGKILL the service's whole process group, then start it again."""
    process = stack.processes[binary]
    os.killpg(process.proc.pid, signal.SIGKILL)
    process.proc.wait()
    return process


def _boot(api, flavor_id, image_id, count):
    ids = []
    for _ in range(count):
        server = api.create_server('k-%s' % uuid.uuid4().hex[:6], flavor_id,
                                   image_id)
        ids.append(server['id'])
    return ids


def _settled(api, server_ids, timeout):
    """Every server once none is in BUILD any more (or the last look)."""
    deadline = time.monotonic() + timeout
    while True:
        servers = [api.get_server(i) for i in server_ids]
        building = [s['id'] for s in servers if s['status'] == 'BUILD']
        if not building or time.monotonic() > deadline:
            return servers
        time.sleep(1)


def _flavor_on(providers, server):
    return {providers[stack_mod.host_of(server)]: {
        'VCPU': FLAVOR['vcpus'], 'MEMORY_MB': FLAVOR['ram'],
        'DISK_GB': FLAVOR['disk']}}


def _held(stack, servers, providers):
    """provider uuid -> resources the servers hold, checked per server:
    an ACTIVE server its flavor on its host; an ERROR one its flavor on
    its host (kept, as Nova keeps it, when its build ended there) or
    nothing (its build ended elsewhere, or without a host).
    """
    total = {}
    for server in servers:
        held = stack.placement.allocations(server['id'])
        if server['status'] == 'ACTIVE':
            assert held == _flavor_on(providers, server), server
        elif held:
            assert stack_mod.host_of(server), server
            assert held == _flavor_on(providers, server), server
        for provider, resources in held.items():
            usage = total.setdefault(provider, {})
            for rc, amount in resources.items():
                usage[rc] = usage.get(rc, 0) + amount
    return total


def test_sigkill_each_service_mid_stream(stack):
    api = stack.compute
    flavor_id = api.create_flavor('kill-small', **FLAVOR)
    image_id = api.create_image('kill-image')
    server_ids = []
    for binary in KILL_ORDER:
        server_ids.extend(_boot(api, flavor_id, image_id,
                                SERVERS_BEFORE_KILL))
        # NOTE: the boots are in flight (cast, scheduled, spawning).
        time.sleep(0.3)
        _kill(stack, binary)
        server_ids.extend(_boot(api, flavor_id, image_id,
                                SERVERS_WHILE_DOWN))
        stack.start_service(binary)
        if binary == 'berth-compute':
            # NOTE: the restarted agent has ended this round's builds
            # (its start) before the next round boots.
            stack.wait_for_hosts()
            _settled(api, server_ids, BUILD_REQUEST_TIMEOUT)

    # NOTE: a cast lost with its conductor, made certain: the queue the
    # dead conductor would have taken it from is purged.
    _kill(stack, 'berth-conductor')
    lost = _boot(api, flavor_id, image_id, 1)
    rabbit.rabbitmqctl('purge_queue', '-p', stack.vhost.name, 'conductor')
    stack.start_service('berth-conductor')
    server_ids.extend(lost)

    servers = _settled(api, server_ids, SETTLE_TIMEOUT)
    states = [(s['id'], s['status'], stack_mod.host_of(s), s.get('fault'))
              for s in servers]
    assert not [s for s in states if s[1] not in ('ACTIVE', 'ERROR')], (
        states, stack.log_tails())
    assert not [s for s in states if s[1] == 'ERROR' and not s[3]], states
    fault = servers[-1].get('fault') or {}
    assert (servers[-1]['status'], stack_mod.host_of(servers[-1])) == (
        'ERROR', None), servers[-1]
    assert 'not scheduled within %d seconds' % BUILD_REQUEST_TIMEOUT in (
        fault.get('message', '')), fault
    # NOTE: the boots after the agent's restart still build.
    first = SERVERS_BEFORE_KILL + SERVERS_WHILE_DOWN
    assert any(s[1] == 'ACTIVE' for s in states[first:]), states

    providers = {
        p['name']: p['uuid'] for p in stack.placement.request(
            'GET', '/resource_providers')['resource_providers']}
    want = _held(stack, servers, providers)
    for name, provider in providers.items():
        usages = {rc: n for rc, n in stack.placement.usages(provider).items()
                  if n}
        assert usages == want.get(provider, {}), (name, states)
    # NOTE: exit code 0 (else manage raises): no orphaned allocation and
    # no server in a task state, whatever its age.
    out = stack.manage('placement', 'audit', '--verbose',
                       '--stuck_after', '0')
    assert 'can be deleted' not in out and 'task state' not in out, out
