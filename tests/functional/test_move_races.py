# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server moves racing a delete, or losing their conductor.

Every service runs as its own process (tests/functional/stack.py) on the
real RabbitMQ and MariaDB, two simulated hosts. Each step of a resize or
cold migration takes ``ACTION_TIME`` on the fake hypervisor and a live
migration's copy ``COPY_TIME``, so a test can act while a move is at a
chosen step:

* a server deleted while its resize, cold or live migration is under
  way is gone with its whole move: nothing of it stays in placement
  (neither the destination's claim nor the source allocation its
  migration consumer held) and its migration has ended;
* the conductor killed (SIGKILL of its process group) in the middle of a
  live migration's copy or of a resize, then started again: the server
  ends ACTIVE on one of the two hosts (or ERROR with a fault);
* a move whose conductor died before it wrote anything (the API's call
  lost with it) is ended by the restarted conductor's ``[conductor]
  move_timeout`` bound: the server back ACTIVE on its source, with a
  fault saying why;
* a confirm lost with its source compute (killed, its queue purged) is
  ended by the same bound as the confirm would have ended it: the server
  ACTIVE on its destination, with a fault.

After each: no server in a task state, placement holds on each host
exactly the flavors of the servers there and no migration consumer, and
``berth-manage placement audit`` finds nothing.
"""

import os
import signal

import pytest

from tests.functional import moves_helpers as moves
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import rabbit
from tests.functional import stack as stack_mod
from tests.functional import stack_fixture

SOURCE, DEST = 'stack-host0', 'stack-host1'
# NOTE: long enough to act (delete, kill) during one step, short enough
# for a quick test.
ACTION_TIME = 1.5
COPY_TIME = 6.0
# NOTE: the bound of the stuck-move periodic task (which also runs every
# MOVE_TIMEOUT seconds): above a conductor's restart on a busy machine,
# so that a move still going when it comes back is not ended under it.
MOVE_TIMEOUT = 20
# NOTE: a call to a dead conductor fails after this long (heartbeats).
RPC_TIMEOUT = 10
ENDED = ('error', 'failed', 'cancelled', 'completed', 'confirmed',
         'reverted')


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('move-races')), hosts=2,
            extra_conf={
                ('fake_driver', 'action_latency'): ACTION_TIME,
                ('fake_driver', 'live_migration_time'): COPY_TIME,
                ('conductor', 'move_timeout'): MOVE_TIMEOUT,
                ('DEFAULT', 'rpc_response_timeout'): RPC_TIMEOUT,
                ('DEFAULT', 'periodic_fuzzy_delay'): 0,
                ('audit', 'allocation_audit_interval'): -1,
            }) as deployment:
        deployment.flavor = deployment.compute.create_flavor(
            'small', vcpus=1, ram=256, disk=1)
        deployment.bigger = deployment.compute.create_flavor(
            'bigger', vcpus=2, ram=512, disk=1)
        deployment.image = deployment.compute.create_image('cirros')
        yield deployment


@pytest.fixture
def checked(cloud):
    """The servers a test leaves behind: checked, then deleted."""
    made = []
    yield made
    for server_id in made:
        assert moves.settled(cloud, server_id)['status'] in (
            'ACTIVE', 'ERROR')
    moves.assert_placement_matches_servers(cloud)
    moves.assert_audit_clean(cloud)
    for server_id in made:
        cloud.compute.delete_server(server_id)
    moves.assert_placement_matches_servers(cloud)


def _boot(cloud, name):
    return moves.boot(cloud, cloud.flavor, cloud.image, SOURCE, name)


def _start(cloud, server_id, kind):
    if kind == 'resize':
        body = {'resize': {'flavorRef': cloud.bigger}}
    elif kind == 'migrate':
        body = {'migrate': None}
    else:
        body = {'os-migrateLive': {'host': DEST,
                                   'block_migration': 'auto'}}
    status, answer = moves.action(cloud, server_id, body)
    assert status == 202, answer


def _ended(cloud, server_id):
    """The server's last migration once it has ended."""
    return moves.wait_for_migration(cloud, server_id, ENDED)


def _kill(cloud, binary):
    """SIGKILL a service's whole process group (no draining)."""
    process = cloud.processes[binary]
    os.killpg(process.proc.pid, signal.SIGKILL)
    process.proc.wait()


# --- a delete racing the move -----------------------------------------------

@pytest.mark.parametrize('kind,task', [
    ('resize', 'resize_prep'),
    ('migrate', 'resize_migrating'),
    ('resize', 'resize_finish'),
    ('live', 'running'),
])
def test_a_server_deleted_mid_move_leaves_nothing(cloud, kind, task):
    server_id = _boot(cloud, 'deleted-mid-%s' % kind)
    _start(cloud, server_id, kind)
    if kind == 'live':
        moves.wait_for_migration(cloud, server_id, (task,))
    else:
        moves.wait_for_task(cloud, server_id, (task,))
    cloud.compute.delete_server(server_id)
    assert _ended(cloud, server_id)['status'] in ENDED
    moves.assert_placement_matches_servers(cloud)
    moves.assert_audit_clean(cloud)


# --- the conductor killed mid-move ------------------------------------------

def test_conductor_killed_during_a_live_migration_copy(cloud, checked):
    server_id = _boot(cloud, 'live-kill')
    checked.append(server_id)
    _start(cloud, server_id, 'live')
    moves.wait_for_migration(cloud, server_id, ('running',))
    _kill(cloud, 'berth-conductor')
    cloud.start_service('berth-conductor')
    shown = moves.settled(cloud, server_id)
    assert shown['status'] == 'ACTIVE', shown
    assert stack_mod.host_of(shown) in (SOURCE, DEST)
    assert _ended(cloud, server_id)['status'] in ('completed', 'error')


def test_conductor_killed_during_a_resize(cloud, checked):
    server_id = _boot(cloud, 'resize-kill')
    checked.append(server_id)
    _start(cloud, server_id, 'resize')
    moves.wait_for_task(cloud, server_id, ('resize_migrating',))
    _kill(cloud, 'berth-conductor')
    cloud.start_service('berth-conductor')
    shown = moves.settled(cloud, server_id)
    if shown['status'] == 'VERIFY_RESIZE':
        shown = moves.confirm(cloud, server_id)
        assert (stack_mod.host_of(shown), shown['flavor']['vcpus']) == (
            DEST, 2)
    elif shown['status'] == 'ERROR':
        assert shown['fault'], shown
    else:
        # NOTE: rolled back (a step's call to the dead conductor failed).
        assert (shown['status'], stack_mod.host_of(shown)) == (
            'ACTIVE', SOURCE), shown
        assert moves.faults(cloud, server_id), shown


def test_a_move_lost_with_its_conductor_is_ended(cloud, checked):
    """The conductor dies with the API's call: the queue it would have
    taken it from is purged, so nothing of the move was ever written
    but the server's task.
    """
    server_id = _boot(cloud, 'lost-move')
    checked.append(server_id)
    _kill(cloud, 'berth-conductor')
    try:
        # NOTE: the API learns within the call monitor's timeout that no
        # conductor took the call, and answers that the move goes on.
        status, body = moves.action(cloud, server_id, {'migrate': None})
        assert status == 202, body
        rabbit.rabbitmqctl('purge_queue', '-p', cloud.vhost.name,
                           'conductor')
    finally:
        cloud.start_service('berth-conductor')
    assert cloud.compute.get_server(server_id)[
        'OS-EXT-STS:task_state'] == 'resize_prep'
    shown = moves.settled(cloud, server_id, timeout=3 * MOVE_TIMEOUT + 30)
    assert (shown['status'], stack_mod.host_of(shown)) == (
        'ACTIVE', SOURCE), shown
    assert 'move_timeout' in moves.faults(cloud, server_id)[0]


def test_a_confirm_lost_with_the_source_compute_ends_as_confirmed(
        cloud, checked):
    """The source compute dies with the confirm's cast (its queue purged):
    the bound ends the move as the confirm would have, rather than leave
    the server in VERIFY_RESIZE with no migration to confirm.
    """
    server_id = _boot(cloud, 'lost-confirm')
    checked.append(server_id)
    _start(cloud, server_id, 'migrate')
    moves.wait(cloud, server_id, 'VERIFY_RESIZE')
    _kill(cloud, 'berth-compute')
    try:
        status, body = moves.action(cloud, server_id,
                                    {'confirmResize': None})
        assert status == 204, body
        rabbit.rabbitmqctl('purge_queue', '-p', cloud.vhost.name,
                           'compute.%s' % SOURCE)
    finally:
        cloud.start_service('berth-compute')
    shown = moves.wait(cloud, server_id, 'ACTIVE',
                       timeout=3 * MOVE_TIMEOUT + 30)
    assert stack_mod.host_of(shown) == DEST, shown
    assert _ended(cloud, server_id)['status'] == 'error'
    assert 'move_timeout' in moves.faults(cloud, server_id)[0]
