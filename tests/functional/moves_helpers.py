# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""What the functional tests of server moves share.

The tests of resize, cold and live migration, evacuation and shelving
(test_resize_migrate.py, test_live_migration.py, test_evacuate_shelve.py,
test_move_races.py, test_moves_postgresql.py) drive a
:class:`tests.functional.stack.Stack` through the REST API (and the real
``openstack`` client) and end each scenario with the same check:
placement holds on every host exactly the flavors of the servers placed
there, and no consumer but those servers (no migration consumer left
behind) - see :func:`assert_placement_matches_servers`.
"""

import time

import sqlalchemy as sa

from tests.functional import osc as osc_mod
from tests.functional import stack as stack_mod

TIMEOUT = 90
POLL = 0.3
MIGRATE_HOST_VERSION = '2.56'
SERVICE_FORCE_DOWN_VERSION = '2.53'
CLI_COMPUTE_VERSION = '2.79'


def call(cloud, method, path, body=None, version=None):
    """(status, decoded body or None) of one compute API request."""
    headers = {}
    if version:
        headers['openstack-api-version'] = 'compute %s' % version
    resp = cloud.compute.http.request(method, path, json=body,
                                      headers=headers)
    return resp.status_code, (resp.json() if resp.content else None)


def action(cloud, server_id, body, version=None):
    """POST /servers/{id}/action: (status, body or None)."""
    return call(cloud, 'POST', '/servers/%s/action' % server_id, body,
                version)


def boot(cloud, flavor, image, host, name='vm', hints=None):
    """A server booted onto ``host`` and ACTIVE there; its id."""
    made = cloud.compute.create_server(name, flavor, image,
                                       zone='nova:%s' % host, hints=hints)
    shown = cloud.compute.wait_for_server(made['id'], ('ACTIVE', 'ERROR'))
    assert (shown['status'], stack_mod.host_of(shown)) == (
        'ACTIVE', host), shown
    return made['id']


def wait(cloud, server_id, status, task=None, timeout=TIMEOUT):
    """The server once its status is ``status`` and its task ``task``.

    NOTE: the status word comes before the last step's own end: waiting
    for the task as well means the move is over.
    """
    deadline = time.monotonic() + timeout
    shown = None
    while time.monotonic() < deadline:
        shown = cloud.compute.get_server(server_id)
        if shown is not None and shown['status'] == status and (
                shown['OS-EXT-STS:task_state'] == task):
            return shown
        if shown is not None and shown['status'] == 'ERROR':
            raise AssertionError('%s went to ERROR instead of %s: %s' % (
                server_id, status, shown.get('fault')))
        time.sleep(POLL)
    raise AssertionError('%s never reached %s/%s: %s' % (
        server_id, status, task, shown and (
            shown['status'], shown['OS-EXT-STS:task_state'],
            shown.get('fault'))))


def settled(cloud, server_id, timeout=TIMEOUT):
    """The server once its task state is None (whatever its status)."""
    deadline = time.monotonic() + timeout
    while True:
        shown = cloud.compute.get_server(server_id)
        if shown['OS-EXT-STS:task_state'] is None:
            return shown
        assert time.monotonic() < deadline, shown
        time.sleep(POLL)


def wait_for_task(cloud, server_id, task_states, timeout=TIMEOUT):
    """The server once its task state is one of ``task_states``."""
    deadline = time.monotonic() + timeout
    while True:
        shown = cloud.compute.get_server(server_id)
        if shown['OS-EXT-STS:task_state'] in task_states:
            return shown
        assert time.monotonic() < deadline, (task_states, shown)
        time.sleep(0.05)


def confirm(cloud, server_id):
    """Confirm a server's VERIFY_RESIZE; the server once ACTIVE."""
    status, body = action(cloud, server_id, {'confirmResize': None})
    assert status == 204, body
    return wait(cloud, server_id, 'ACTIVE')


def actions(cloud, server_id):
    """The names of the server's actions, newest first."""
    listed = cloud.compute.request(
        'GET', '/servers/%s/os-instance-actions' % server_id)
    return [a['action'] for a in listed['instanceActions']]


def events(cloud, server_id, action_name):
    """(event, result, host) of the server's latest ``action_name``."""
    listed = cloud.compute.request(
        'GET', '/servers/%s/os-instance-actions' % server_id)
    for item in listed['instanceActions']:
        if item['action'] == action_name:
            shown = cloud.compute.request(
                'GET', '/servers/%s/os-instance-actions/%s'
                % (server_id, item['request_id']))['instanceAction']
            return sorted((e['event'], e['result'], e.get('host'))
                          for e in shown['events'])
    return []


def migrations(cloud, server_id):
    """The server's migration rows (the cell database), oldest first."""
    engine = sa.create_engine(cloud.urls['cell1'])
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                'SELECT id, uuid, status, source_compute, dest_compute, '
                'migration_type, memory_total, memory_processed '
                'FROM migrations WHERE instance_uuid = :uuid ORDER BY id'),
                {'uuid': server_id})
            return [dict(r._mapping) for r in rows]
    finally:
        engine.dispose()


def faults(cloud, server_id):
    """The messages of the server's faults, newest first.

    NOTE: from the cell database: the API shows a fault only while the
    server is in ERROR, and a move ended on its source leaves it ACTIVE.
    """
    engine = sa.create_engine(cloud.urls['cell1'])
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                'SELECT message FROM instance_faults WHERE instance_uuid = '
                ':uuid ORDER BY id DESC'), {'uuid': server_id})
            return [r.message for r in rows]
    finally:
        engine.dispose()


def wait_for_migration(cloud, server_id, statuses, timeout=TIMEOUT):
    """The server's latest migration once its status is in ``statuses``.
    """
    deadline = time.monotonic() + timeout
    while True:
        found = migrations(cloud, server_id)
        if found and found[-1]['status'] in statuses:
            return found[-1]
        assert time.monotonic() < deadline, found
        time.sleep(0.1)


def force_down(cloud, host, down=True):
    """Declare ``host``'s compute service forced down (or not)."""
    services = cloud.compute.request(
        'GET', '/os-services?binary=berth-compute&host=%s' % host)
    status, body = call(cloud, 'PUT', '/os-services/%s'
                        % services['services'][0]['id'],
                        {'forced_down': down},
                        version=SERVICE_FORCE_DOWN_VERSION)
    assert status == 200, body


def set_hosts(cloud, hosts, status):
    """Enable or disable the compute services of ``hosts``."""
    services = cloud.compute.request(
        'GET', '/os-services?binary=berth-compute')['services']
    for service in services:
        if service['host'] in hosts:
            code, body = call(cloud, 'PUT', '/os-services/%s'
                              % service['id'], {'status': status},
                              version=SERVICE_FORCE_DOWN_VERSION)
            assert code == 200, body


def openstack_client(cloud, version=CLI_COMPUTE_VERSION):
    """The real ``openstack`` client against the stack (noauth2)."""
    url = cloud.api_url
    return osc_mod.Client(
        OS_AUTH_TYPE='admin_token', OS_TOKEN='admin',
        OS_ENDPOINT=url + '/v2.1',
        OS_IMAGE_ENDPOINT_OVERRIDE=url + '/image',
        OS_IDENTITY_API_VERSION='3',
        OS_IDENTITY_ENDPOINT_OVERRIDE=url + '/identity',
        OS_COMPUTE_API_VERSION=version)


def add_tiny_and_small(cloud):
    """Flavors ``cloud.tiny`` (1 vCPU, 256 MB) and ``cloud.small`` (2
    vCPUs, 512 MB), each with a 1 GB disk, and image ``cloud.image``.
    """
    cloud.tiny = cloud.compute.create_flavor('tiny', vcpus=1, ram=256,
                                             disk=1)
    cloud.small = cloud.compute.create_flavor('small', vcpus=2, ram=512,
                                              disk=1)
    cloud.image = cloud.compute.create_image('cirros')


# --- placement against the servers ----------------------------------------

def flavor_usage(flavor):
    """{resource class: amount} a server of ``flavor`` (as the API
    embeds it) holds: dedicated CPUs are PCPU.
    """
    pinned = (flavor.get('extra_specs') or {}).get(
        'hw:cpu_policy') == 'dedicated'
    usage = {'PCPU' if pinned else 'VCPU': flavor['vcpus'],
             'MEMORY_MB': flavor['ram'],
             'DISK_GB': flavor['disk'] + flavor.get('ephemeral', 0)}
    return {rc: n for rc, n in usage.items() if n}


def _add(usage, more):
    for rc, n in more.items():
        usage[rc] = usage.get(rc, 0) + n


def _expected(cloud, held_by_migrations):
    """{host: ({rc: used}, {server ids}, migration consumers expected)}.
    """
    servers = {s['id']: s for s in cloud.compute.servers(all_tenants=1)}
    expected = {}
    for server in servers.values():
        host = stack_mod.host_of(server)
        if host is None or server['status'] in ('DELETED',
                                                'SHELVED_OFFLOADED'):
            continue
        used, ids, _held = expected.setdefault(host, ({}, set(), 0))
        _add(used, flavor_usage(server['flavor']))
        ids.add(server['id'])
    for host, held in (held_by_migrations or {}).items():
        used, ids, _held = expected.setdefault(host, ({}, set(), 0))
        for server_id in held:
            _add(used, flavor_usage(servers[server_id]['flavor']))
        expected[host] = (used, ids, len(held))
    return expected


def _found(cloud):
    """{host: ({rc: used}, {consumer uuids})} as placement has them."""
    found = {}
    for rp in cloud.placement.request(
            'GET', '/resource_providers')['resource_providers']:
        usages = cloud.placement.usages(rp['uuid'])
        consumers = cloud.placement.request(
            'GET', '/resource_providers/%s/allocations'
            % rp['uuid'])['allocations']
        found[rp['name']] = ({rc: n for rc, n in usages.items() if n},
                             set(consumers))
    return found


def _differences(cloud, held_by_migrations):
    expected = _expected(cloud, held_by_migrations)
    wrong = {}
    for host, (used, consumers) in _found(cloud).items():
        want_used, servers, held = expected.get(host, ({}, set(), 0))
        strangers = consumers - servers
        if used != want_used or not servers <= consumers or (
                len(strangers) != held):
            wrong[host] = {'used': used, 'expected': want_used,
                           'missing': servers - consumers,
                           'strangers': strangers}
    return wrong


def assert_placement_matches_servers(cloud, held_by_migrations=None,
                                     timeout=30):
    """On every host placement's usage is the sum of the flavors of the
    servers placed there, and no consumer but them holds anything: no
    migration consumer is left behind (polled: the last step of a move
    may still be settling).

    :param held_by_migrations: {host: [server ids]} whose flavors
        migration consumers still hold there (an evacuated server's
        down source).
    """
    deadline = time.monotonic() + timeout
    while True:
        wrong = _differences(cloud, held_by_migrations)
        if not wrong:
            return
        if time.monotonic() > deadline:
            raise AssertionError('placement differs from the servers: %s'
                                 % wrong)
        time.sleep(0.5)


def assert_audit_clean(cloud):
    """``berth-manage placement audit`` finds nothing: no orphaned or
    ended migration allocation, no server in a task state (any age);
    ``manage`` fails on any exit code but 0.
    """
    out = cloud.manage('placement', 'audit', '--verbose', '--stuck_after',
                       '0')
    assert 'can be deleted' not in out and 'task state' not in out, out
