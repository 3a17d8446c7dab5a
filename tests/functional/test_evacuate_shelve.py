# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Evacuate, shelve, shelveOffload and unshelve through every process.

Every service runs as its own process (tests/functional/stack.py) on the
real RabbitMQ and MariaDB. The four simulated hosts share one compute
agent, so a "failed" host is one forced down through ``os-services``
(Nova's way to declare a host fenced), and "the source agent comes back"
is that agent restarted. ``[DEFAULT] shelved_offload_time = -1`` keeps
shelved servers on their host until ``shelveOffload``.

After each scenario placement is checked against the servers: on every
host the usage is the sum of the flavors of the servers placed there,
and no consumer but those servers holds anything (no migration consumer
left behind), unless the scenario says which migration still holds a
down source host.
"""

import pytest

from tests.functional import moves_helpers as moves
from tests.functional import osc as osc_mod
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack_fixture

HOSTS = ('stack-host0', 'stack-host1', 'stack-host2', 'stack-host3')


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('evacshelve')), hosts=len(HOSTS),
            extra_conf={('DEFAULT', 'shelved_offload_time'): -1}
    ) as deployment:
        yield deployment


@pytest.fixture(scope='module')
def boot_args(cloud):
    return (cloud.compute.create_flavor('tiny'),
            cloud.compute.create_image('cirros'))


def _boot(cloud, boot_args, name, host, group=None):
    return moves.boot(cloud, boot_args[0], boot_args[1], host, name,
                      hints={'group': group} if group else None)


# --- evacuate ---------------------------------------------------------------

def test_evacuate_is_refused_while_the_source_is_up(cloud, boot_args):
    server = _boot(cloud, boot_args, 'up', HOSTS[0])
    status, body = moves.action(cloud, server, {'evacuate': {}})
    assert status == 400, body
    assert body['badRequest']['message'] == (
        'Compute service of %s is still in use.' % HOSTS[0])
    assert cloud.compute.get_server(server)['status'] == 'ACTIVE'
    assert 'evacuate' not in moves.actions(cloud, server)
    cloud.compute.delete_server(server)
    moves.assert_placement_matches_servers(cloud)


def test_evacuate_from_a_forced_down_host_and_clean_up_at_restart(
        cloud, boot_args):
    chosen = _boot(cloud, boot_args, 'evac-any', HOSTS[1])
    targeted = _boot(cloud, boot_args, 'evac-to', HOSTS[1])
    stopped = _boot(cloud, boot_args, 'evac-stopped', HOSTS[1])
    moves.action(cloud, stopped, {'os-stop': None})
    moves.wait(cloud, stopped, 'SHUTOFF')
    moves.force_down(cloud, HOSTS[1])
    try:
        status, body = moves.action(cloud, targeted,
                                    {'evacuate': {'host': HOSTS[1]}})
        assert status == 400, body
        assert body['badRequest']['message'] == (
            "The target host can't be the same one.")
        status, body = moves.action(cloud, targeted,
                                    {'evacuate': {'host': 'no-such-host'}})
        assert status == 404, body

        status, body = moves.action(cloud, chosen, {'evacuate': {}})
        assert (status, body) == (200, None)
        status, body = moves.action(cloud, targeted,
                                    {'evacuate': {'host': HOSTS[2]}})
        assert status == 200, body
        status, body = moves.action(cloud, stopped, {'evacuate': {}})
        assert status == 200, body

        shown = moves.wait(cloud, chosen, 'ACTIVE')
        assert shown['OS-EXT-SRV-ATTR:host'] not in (HOSTS[1], None)
        assert moves.wait(cloud, targeted, 'ACTIVE')[
            'OS-EXT-SRV-ATTR:host'] == HOSTS[2]
        assert moves.wait(cloud, stopped, 'SHUTOFF')[
            'OS-EXT-SRV-ATTR:host'] != HOSTS[1]
        for server in (chosen, targeted, stopped):
            assert moves.actions(cloud, server)[0] == 'evacuate'
        # NOTE: the down source stays accounted, under the migrations.
        moves.assert_placement_matches_servers(cloud, held_by_migrations={
            HOSTS[1]: [chosen, targeted, stopped]})
        # NOTE: berth-manage fails the call on any exit code but 0 (3:
        # orphans found): the migrations' allocations are no orphans.
        cloud.manage('placement', 'audit')
    finally:
        moves.force_down(cloud, HOSTS[1], down=False)
    # The agent comes back: it destroys the evacuated guests and deletes
    # the source allocations.
    cloud.restart('berth-compute')
    cloud.wait_for_hosts()
    moves.assert_placement_matches_servers(cloud, timeout=60)
    for server in (chosen, targeted, stopped):
        cloud.compute.delete_server(server)
    moves.assert_placement_matches_servers(cloud)


def test_evacuate_honours_anti_affinity(cloud, boot_args):
    group = cloud.compute.create_server_group('apart', 'anti-affinity')
    first = _boot(cloud, boot_args, 'apart-0', HOSTS[0], group)
    second = _boot(cloud, boot_args, 'apart-3', HOSTS[3], group)
    moves.force_down(cloud, HOSTS[3])
    try:
        # The group's other member is on the only host named: no host.
        status, body = moves.action(cloud, second,
                                    {'evacuate': {'host': HOSTS[0]}})
        assert status == 200, body
        shown = moves.wait(cloud, second, 'ERROR')
        assert shown['OS-EXT-SRV-ATTR:host'] == HOSTS[3]
        assert 'No valid host' in shown['fault']['message']
        moves.assert_placement_matches_servers(cloud)
        status, body = moves.action(cloud, second, {'os-resetState': {
            'state': 'active'}})
        assert status == 202, body
        status, body = moves.action(cloud, second, {'evacuate': {}})
        assert status == 200, body
        shown = moves.wait(cloud, second, 'ACTIVE')
        assert shown['OS-EXT-SRV-ATTR:host'] not in (HOSTS[0], HOSTS[3])
    finally:
        moves.force_down(cloud, HOSTS[3], down=False)
    cloud.restart('berth-compute')
    cloud.wait_for_hosts()
    for server in (first, second):
        cloud.compute.delete_server(server)
    moves.assert_placement_matches_servers(cloud)


# --- shelve and unshelve ----------------------------------------------------

def test_shelve_unshelve_in_place_then_offload(cloud, boot_args):
    server = _boot(cloud, boot_args, 'shelf', HOSTS[0])
    status, body = moves.action(cloud, server, {'shelve': None})
    assert (status, body) == (202, None)
    shown = moves.wait(cloud, server, 'SHELVED')
    assert shown['OS-EXT-SRV-ATTR:host'] == HOSTS[0]
    moves.assert_placement_matches_servers(cloud)

    status, body = moves.action(cloud, server, {'unshelve': None})
    assert status == 202, body
    assert moves.wait(cloud, server, 'ACTIVE')['OS-EXT-SRV-ATTR:host'] == \
        HOSTS[0]

    moves.action(cloud, server, {'shelve': None})
    moves.wait(cloud, server, 'SHELVED')
    status, body = moves.action(cloud, server, {'shelveOffload': None})
    assert status == 202, body
    shown = moves.wait(cloud, server, 'SHELVED_OFFLOADED')
    assert shown['OS-EXT-SRV-ATTR:host'] is None
    assert cloud.placement.allocations(server) == {}
    moves.assert_placement_matches_servers(cloud)
    assert moves.actions(cloud, server)[:4] == [
        'shelveOffload', 'shelve', 'unshelve', 'shelve']

    status, body = moves.action(cloud, server, {'unshelve': None})
    assert status == 202, body
    shown = moves.wait(cloud, server, 'ACTIVE')
    assert shown['OS-EXT-SRV-ATTR:host'] is not None
    moves.assert_placement_matches_servers(cloud)
    cloud.compute.delete_server(server)
    moves.assert_placement_matches_servers(cloud)


def test_unshelve_into_a_zone_and_anti_affinity(cloud, boot_args):
    group = cloud.compute.create_server_group('shelf-apart',
                                              'anti-affinity')
    keeper = _boot(cloud, boot_args, 'keeper', HOSTS[0], group)
    mover = _boot(cloud, boot_args, 'mover', HOSTS[1], group)
    cloud.compute.create_aggregate('zone-a', [HOSTS[0]], zone='zone-a')
    cloud.compute.create_aggregate('zone-b', [HOSTS[2]], zone='zone-b')
    for action in ('shelve', 'shelveOffload'):
        moves.action(cloud, mover, {action: None})
        moves.wait(cloud, mover, 'SHELVED' if action == 'shelve'
                   else 'SHELVED_OFFLOADED')

    status, body = moves.action(cloud, mover, {'unshelve': {
        'availability_zone': 'no-such-zone'}}, version='2.77')
    assert status == 400, body
    # zone-a holds only the group's other member's host: no valid host,
    # the server stays offloaded with no task and holds nothing.
    status, body = moves.action(cloud, mover, {'unshelve': {
        'availability_zone': 'zone-a'}}, version='2.77')
    assert status == 202, body
    moves.wait(cloud, mover, 'SHELVED_OFFLOADED')
    assert cloud.placement.allocations(mover) == {}
    moves.assert_placement_matches_servers(cloud)

    status, body = moves.action(cloud, mover, {'unshelve': {
        'availability_zone': 'zone-b'}}, version='2.77')
    assert status == 202, body
    shown = moves.wait(cloud, mover, 'ACTIVE')
    assert shown['OS-EXT-SRV-ATTR:host'] == HOSTS[2]
    assert shown['OS-EXT-AZ:availability_zone'] == 'zone-b'
    moves.assert_placement_matches_servers(cloud)
    for server in (keeper, mover):
        cloud.compute.delete_server(server)
    moves.assert_placement_matches_servers(cloud)


# --- the openstack client ---------------------------------------------------

@osc_mod.skip_without_cli
def test_the_openstack_client(cloud, boot_args):
    """Runs after the zone test: zone-a is stack-host0, zone-b
    stack-host2, the default zone the other two. The module's last test:
    the evacuated server's source agent is not restarted, so that host
    stays held by the migration (the first evacuation test covers the
    clean-up at restart).

    NOTE: without ``--wait``: the client polls every five seconds; the
    test's own wait is quicker.
    """
    cli = moves.openstack_client(cloud)
    shelf = _boot(cloud, boot_args, 'cli-shelf', HOSTS[1])
    cli.run('server', 'shelve', '--offload', shelf)
    moves.wait(cloud, shelf, 'SHELVED_OFFLOADED')
    moves.assert_placement_matches_servers(cloud)
    cli.run('server', 'unshelve', '--availability-zone', 'zone-b', shelf)
    assert moves.wait(cloud, shelf, 'ACTIVE')['OS-EXT-SRV-ATTR:host'] == \
        HOSTS[2]

    moving = _boot(cloud, boot_args, 'cli-evac', HOSTS[1])
    moves.force_down(cloud, HOSTS[1])
    try:
        cli.run('server', 'evacuate', moving)
        shown = moves.wait(cloud, moving, 'ACTIVE')
        assert shown['OS-EXT-SRV-ATTR:host'] == HOSTS[3]
    finally:
        moves.force_down(cloud, HOSTS[1], down=False)
    moves.assert_placement_matches_servers(
        cloud, held_by_migrations={HOSTS[1]: [moving]})


# --- microversions 2.95 and 2.91 ---------------------------------------------

def test_evacuate_at_2_95_ends_shutoff_on_the_new_host(cloud, boot_args):
    """Runs after the client test, whose evacuated server's source is
    still held: the agent restart at the end cleans both up.
    """
    server = _boot(cloud, boot_args, 'evac-2.95', HOSTS[3])
    moves.force_down(cloud, HOSTS[3])
    try:
        status, body = moves.action(cloud, server, {'evacuate': {
            'host': HOSTS[1]}}, version='2.95')
        assert (status, body) == (200, None)
        shown = moves.wait(cloud, server, 'SHUTOFF')
        assert shown['OS-EXT-SRV-ATTR:host'] == HOSTS[1]
        assert shown['OS-EXT-STS:power_state'] == 4
        assert moves.actions(cloud, server)[0] == 'evacuate'
        assert [m['status'] for m in moves.migrations(cloud, server)] == [
            'done']
    finally:
        moves.force_down(cloud, HOSTS[3], down=False)
    cloud.restart('berth-compute')
    cloud.wait_for_hosts()
    moves.assert_placement_matches_servers(cloud, timeout=60)
    cloud.compute.delete_server(server)
    moves.assert_placement_matches_servers(cloud)


def test_unshelve_at_2_91_to_a_named_host(cloud, boot_args):
    server = _boot(cloud, boot_args, 'shelf-2.91', HOSTS[1])
    for action, status in (('shelve', 'SHELVED'),
                           ('shelveOffload', 'SHELVED_OFFLOADED')):
        moves.action(cloud, server, {action: None})
        moves.wait(cloud, server, status)
    status, body = moves.action(cloud, server, {'unshelve': {
        'host': HOSTS[3]}}, version='2.90')
    assert status == 400, body
    # The server's zone (the default one) still binds the host (a 409,
    # as Nova's UnshelveHostNotInAZ).
    status, body = moves.action(cloud, server, {'unshelve': {
        'host': HOSTS[2]}}, version='2.91')
    assert status == 409, body
    assert body['conflictingRequest']['message'] == (
        'Host "%s" is not in the availability zone "nova".' % HOSTS[2])
    status, body = moves.action(cloud, server, {'unshelve': {
        'host': HOSTS[3]}}, version='2.91')
    assert (status, body) == (202, None)
    shown = moves.wait(cloud, server, 'ACTIVE')
    assert shown['OS-EXT-SRV-ATTR:host'] == HOSTS[3]
    moves.assert_placement_matches_servers(cloud)
    cloud.compute.delete_server(server)
    moves.assert_placement_matches_servers(cloud)
