# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Every kind of server move once, on PostgreSQL.

The move modules run on MariaDB (test_resize_migrate.py,
test_live_migration.py, test_evacuate_shelve.py, test_move_races.py);
this one runs each operation once on a stack whose databases (api,
cell0, cell1, placement) are PostgreSQL, every service its own process
on RabbitMQ: resize then confirm, resize then revert, cold migration,
live migration with and without a host, shelve-offload then unshelve,
and evacuation from a forced-down host. After each, placement holds on
every host exactly the flavors of the servers placed there and no
migration consumer (but the evacuated server's down source, until that
host's agent comes back), and ``berth-manage placement audit`` finds
nothing.
"""

import pytest

from tests.functional import moves_helpers as moves
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack as stack_mod
from tests.functional import stack_fixture

HOSTS = ('stack-host0', 'stack-host1', 'stack-host2')


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'postgresql',
            str(tmp_path_factory.mktemp('moves-pg')), hosts=len(HOSTS),
            extra_conf={('DEFAULT', 'shelved_offload_time'): -1}
    ) as deployment:
        moves.add_tiny_and_small(deployment)
        yield deployment


@pytest.fixture
def server(cloud):
    """A server ACTIVE on the first host, deleted after the test."""
    server_id = moves.boot(cloud, cloud.tiny, cloud.image, HOSTS[0])
    yield server_id
    cloud.compute.delete_server(server_id)
    moves.assert_placement_matches_servers(cloud)


def _checked(cloud):
    moves.assert_placement_matches_servers(cloud)
    moves.assert_audit_clean(cloud)


def _accepted(cloud, server_id, body, version=None, status=202):
    code, answer = moves.action(cloud, server_id, body, version)
    assert code == status, answer


def test_resize_then_confirm_then_revert(cloud, server):
    _accepted(cloud, server, {'resize': {'flavorRef': cloud.small}})
    shown = moves.wait(cloud, server, 'VERIFY_RESIZE')
    dest = stack_mod.host_of(shown)
    assert dest != HOSTS[0]
    shown = moves.confirm(cloud, server)
    assert (stack_mod.host_of(shown), shown['flavor']['vcpus']) == (dest, 2)
    _checked(cloud)
    _accepted(cloud, server, {'resize': {'flavorRef': cloud.tiny}})
    moves.wait(cloud, server, 'VERIFY_RESIZE')
    _accepted(cloud, server, {'revertResize': None})
    shown = moves.wait(cloud, server, 'ACTIVE')
    assert (stack_mod.host_of(shown), shown['flavor']['vcpus']) == (dest, 2)
    _checked(cloud)


def test_cold_then_live_migration(cloud, server):
    _accepted(cloud, server, {'migrate': None})
    shown = moves.wait(cloud, server, 'VERIFY_RESIZE')
    assert stack_mod.host_of(shown) != HOSTS[0]
    moves.confirm(cloud, server)
    _checked(cloud)
    _accepted(cloud, server, {'os-migrateLive': {
        'host': HOSTS[0], 'block_migration': 'auto'}})
    shown = moves.settled(cloud, server)
    assert (shown['status'], stack_mod.host_of(shown)) == (
        'ACTIVE', HOSTS[0])
    _accepted(cloud, server, {'os-migrateLive': {
        'host': None, 'block_migration': 'auto'}})
    shown = moves.settled(cloud, server)
    assert shown['status'] == 'ACTIVE'
    assert stack_mod.host_of(shown) != HOSTS[0]
    assert [m['status'] for m in moves.migrations(cloud, server)] == [
        'confirmed', 'completed', 'completed']
    _checked(cloud)


def test_shelve_offload_then_unshelve(cloud, server):
    _accepted(cloud, server, {'shelve': None})
    moves.wait(cloud, server, 'SHELVED')
    _accepted(cloud, server, {'shelveOffload': None})
    shown = moves.wait(cloud, server, 'SHELVED_OFFLOADED')
    assert stack_mod.host_of(shown) is None
    assert cloud.placement.allocations(server) == {}
    _checked(cloud)
    _accepted(cloud, server, {'unshelve': None})
    shown = moves.wait(cloud, server, 'ACTIVE')
    assert stack_mod.host_of(shown) in HOSTS
    _checked(cloud)


def test_evacuate_from_a_forced_down_host(cloud):
    """The module's last test: the source's agent is not restarted, so
    its migration keeps holding it (as Nova's does until then).
    """
    server = moves.boot(cloud, cloud.tiny, cloud.image, HOSTS[2])
    moves.force_down(cloud, HOSTS[2])
    try:
        code, body = moves.action(cloud, server, {'evacuate': {}})
        assert code == 200, body
        shown = moves.wait(cloud, server, 'ACTIVE')
        assert stack_mod.host_of(shown) in HOSTS[:2]
        moves.assert_placement_matches_servers(
            cloud, held_by_migrations={HOSTS[2]: [server]})
        # NOTE: a migration holding a down source is no orphan.
        moves.assert_audit_clean(cloud)
    finally:
        moves.force_down(cloud, HOSTS[2], down=False)
