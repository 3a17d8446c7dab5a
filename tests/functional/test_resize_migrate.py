# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Resize and cold migration through every process.

Every service runs as its own process (tests/functional/stack.py) on the
real RabbitMQ and MariaDB, four simulated hosts; ``prep_resize`` always
fails on the last one (``[fake_driver] fail_actions``), so any move the
scheduler sends there is rescheduled to an alternate, and
``[DEFAULT] allow_resize_to_same_host`` is on. The REST API drives the
moves, and the real ``openstack`` client its ``server resize --flavor``,
``server resize confirm|revert`` and ``server migrate [--host]``. After
every test, placement's usage of each host is the sum of the flavors of
the servers on it and every consumer there is a server: no migration
consumer is left behind (tests/functional/moves_helpers.py).

The last section stages a move by hand, as the conductor stages one, to
check ``berth-manage placement audit`` and ``heal_allocations``, the
migration APIs and the ``openstack server migration list|show`` client
with a migration consumer in placement (it shares this module's stack).
"""

import datetime
import subprocess
import sys
import uuid

from oslo_utils import timeutils
import pytest
import sqlalchemy as sa

from common.db import cell_tables
from tests.functional import moves_helpers as moves
from tests.functional import osc as osc_mod
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack as stack_mod
from tests.functional import stack_fixture

HOSTS = tuple('stack-host%d' % i for i in range(4))
FAILING = HOSTS[3]
MIGRATE_HOST = moves.MIGRATE_HOST_VERSION


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('resize')), hosts=len(HOSTS),
            extra_conf={('fake_driver', 'fail_actions'):
                        'prep_resize:%s' % FAILING,
                        ('DEFAULT', 'allow_resize_to_same_host'): True}
    ) as deployment:
        yield deployment


@pytest.fixture(scope='module')
def flavors(cloud):
    """(tiny, small, image): the boot flavor, a bigger one, the image."""
    return (cloud.compute.create_flavor('tiny', vcpus=1, ram=256, disk=1),
            cloud.compute.create_flavor('small', vcpus=2, ram=1024,
                                        disk=2),
            cloud.compute.create_image('cirros'))


def _boot(cloud, flavors, name, host, hints=None):
    return moves.boot(cloud, flavors[0], flavors[2], host, name, hints)


@pytest.fixture
def clean(cloud):
    """Servers made by a test, deleted after it; then the check."""
    made = []
    yield made
    for server_id in made:
        cloud.compute.delete_server(server_id)
    moves.assert_placement_matches_servers(cloud)


def _events(cloud, server_id, action):
    """(event, result) of the server's latest ``action``."""
    events = moves.events(cloud, server_id, action)
    assert events, 'no %s action' % action
    return [(event, result) for event, result, _host in events]


def _migrate_and_confirm(cloud, server):
    """Cold migrate ``server`` and confirm: the move schedules and claims
    with the server's stored request spec, so the placement check after
    it shows that spec has the flavor the server has.
    """
    status, body = moves.action(cloud, server, {'migrate': None})
    assert status == 202, body
    moves.wait(cloud, server, 'VERIFY_RESIZE')
    assert moves.action(cloud, server, {'confirmResize': None})[0] == 204
    moves.wait(cloud, server, 'ACTIVE')
    moves.assert_placement_matches_servers(cloud)


def test_resize_then_confirm_keeps_only_the_new_flavor(cloud, flavors,
                                                       clean):
    server = _boot(cloud, flavors, 'resize-confirm', HOSTS[0])
    clean.append(server)
    status, body = moves.action(cloud, server, {'resize': {
        'flavorRef': flavors[1]}})
    assert status == 202, body
    shown = moves.wait(cloud, server, 'VERIFY_RESIZE')
    dest = stack_mod.host_of(shown)
    assert dest not in (HOSTS[0], FAILING)
    assert shown['flavor']['vcpus'] == 2
    status, body = moves.action(cloud, server, {'confirmResize': None})
    assert status == 204, body
    shown = moves.wait(cloud, server, 'ACTIVE')
    assert stack_mod.host_of(shown) == dest
    moves.assert_placement_matches_servers(cloud)
    events = _events(cloud, server, 'resize')
    for event in ('conductor_migrate_server', 'compute_prep_resize',
                  'compute_resize_instance', 'compute_finish_resize'):
        assert (event, 'Success') in events, events
    _migrate_and_confirm(cloud, server)


def test_resize_then_revert_gives_the_old_flavor_back(cloud, flavors,
                                                      clean):
    server = _boot(cloud, flavors, 'resize-revert', HOSTS[0])
    clean.append(server)
    assert moves.action(cloud, server, {'resize': {
        'flavorRef': flavors[1]}})[0] == 202
    moves.wait(cloud, server, 'VERIFY_RESIZE')
    status, body = moves.action(cloud, server, {'revertResize': None})
    assert status == 202, body
    shown = moves.wait(cloud, server, 'ACTIVE')
    assert stack_mod.host_of(shown) == HOSTS[0]
    assert shown['flavor']['vcpus'] == 1
    moves.assert_placement_matches_servers(cloud)
    _migrate_and_confirm(cloud, server)


def test_a_stopped_server_stays_stopped(cloud, flavors, clean):
    server = _boot(cloud, flavors, 'stopped', HOSTS[0])
    clean.append(server)
    assert moves.action(cloud, server, {'os-stop': None})[0] == 202
    moves.wait(cloud, server, 'SHUTOFF')
    assert moves.action(cloud, server, {'resize': {
        'flavorRef': flavors[1]}})[0] == 202
    shown = moves.wait(cloud, server, 'VERIFY_RESIZE')
    assert shown['OS-EXT-STS:power_state'] == 4
    assert moves.action(cloud, server, {'confirmResize': None})[0] == 204
    shown = moves.wait(cloud, server, 'SHUTOFF')
    assert shown['flavor']['vcpus'] == 2
    moves.assert_placement_matches_servers(cloud)


def test_same_host_resize_when_allowed(cloud, flavors, clean):
    server = _boot(cloud, flavors, 'same-host', HOSTS[0])
    clean.append(server)
    others = HOSTS[1:]
    moves.set_hosts(cloud, others, 'disabled')
    try:
        assert moves.action(cloud, server, {'resize': {
            'flavorRef': flavors[1]}})[0] == 202
        shown = moves.wait(cloud, server, 'VERIFY_RESIZE')
    finally:
        moves.set_hosts(cloud, others, 'enabled')
    assert stack_mod.host_of(shown) == HOSTS[0]
    assert moves.action(cloud, server, {'confirmResize': None})[0] == 204
    shown = moves.wait(cloud, server, 'ACTIVE')
    assert (stack_mod.host_of(shown), shown['flavor']['vcpus']) == (
        HOSTS[0], 2)
    moves.assert_placement_matches_servers(cloud)


def test_cold_migrate_with_and_without_a_host(cloud, flavors, clean):
    server = _boot(cloud, flavors, 'migrate', HOSTS[0])
    clean.append(server)
    assert moves.action(cloud, server, {'migrate': None})[0] == 202
    shown = moves.wait(cloud, server, 'VERIFY_RESIZE')
    first = stack_mod.host_of(shown)
    assert first not in (HOSTS[0], FAILING)
    assert moves.action(cloud, server, {'confirmResize': None})[0] == 204
    moves.wait(cloud, server, 'ACTIVE')
    moves.assert_placement_matches_servers(cloud)
    status, body = moves.action(
        cloud, server, {'migrate': {'host': HOSTS[0]}}, MIGRATE_HOST)
    assert status == 202, body
    shown = moves.wait(cloud, server, 'VERIFY_RESIZE')
    assert stack_mod.host_of(shown) == HOSTS[0]
    assert moves.action(cloud, server, {'confirmResize': None})[0] == 204
    shown = moves.wait(cloud, server, 'ACTIVE')
    assert shown['flavor']['vcpus'] == 1
    moves.assert_placement_matches_servers(cloud)


def test_a_failing_destination_is_rescheduled_to_an_alternate(
        cloud, flavors, clean):
    # NOTE: the other hosts busier, so that the weighers prefer FAILING.
    for host in HOSTS[1:3]:
        clean.append(_boot(cloud, flavors, 'busy', host))
    server = _boot(cloud, flavors, 'rescheduled', HOSTS[0])
    clean.append(server)
    assert moves.action(cloud, server, {'migrate': None})[0] == 202
    shown = moves.wait(cloud, server, 'VERIFY_RESIZE')
    assert stack_mod.host_of(shown) in HOSTS[1:3]
    events = _events(cloud, server, 'migrate')
    assert ('compute_prep_resize', 'Error') in events, events
    assert ('compute_prep_resize', 'Success') in events, events
    assert moves.action(cloud, server, {'confirmResize': None})[0] == 204
    moves.wait(cloud, server, 'ACTIVE')
    moves.assert_placement_matches_servers(cloud)


def test_anti_affinity_is_honoured(cloud, flavors, clean):
    group = cloud.compute.create_server_group('apart', 'anti-affinity')
    first = _boot(cloud, flavors, 'apart-0', HOSTS[0], {'group': group})
    clean.append(first)
    clean.append(_boot(cloud, flavors, 'apart-1', HOSTS[1],
                       {'group': group}))
    assert moves.action(cloud, first, {'migrate': None})[0] == 202
    shown = moves.wait(cloud, first, 'VERIFY_RESIZE')
    assert stack_mod.host_of(shown) == HOSTS[2]
    assert moves.action(cloud, first, {'confirmResize': None})[0] == 204
    moves.wait(cloud, first, 'ACTIVE')


def test_wrong_state_and_bad_hosts_are_refused(cloud, flavors, clean):
    server = _boot(cloud, flavors, 'refused', HOSTS[0])
    clean.append(server)
    status, body = moves.action(cloud, server, {'confirmResize': None})
    assert status == 409, body
    status, body = moves.action(cloud, server, {'revertResize': None})
    assert status == 409, body
    for host, message in (
            (HOSTS[0], 'Cannot migrate to the host where the server '
                       'exists.'),
            ('nowhere', 'Compute host nowhere could not be found.')):
        status, body = moves.action(
            cloud, server, {'migrate': {'host': host}}, MIGRATE_HOST)
        assert status == 400, body
        assert body['badRequest']['message'] == message
    others = HOSTS[1:]
    moves.set_hosts(cloud, others, 'disabled')
    try:
        # NOTE: a disabled target is refused by the API, nothing written;
        # the scheduler's own refusal ends a move it began.
        status, body = moves.action(
            cloud, server, {'migrate': {'host': HOSTS[1]}}, MIGRATE_HOST)
        assert status == 400, body
        assert body['badRequest']['message'] == (
            'No valid host was found. the compute service of %s is '
            'disabled: no reason given' % HOSTS[1])
        assert moves.migrations(cloud, server) == []
        status, body = moves.action(cloud, server, {'migrate': None})
    finally:
        moves.set_hosts(cloud, others, 'enabled')
    assert status == 400, body
    assert body['badRequest']['message'].startswith(
        'No valid host was found.')
    shown = moves.wait(cloud, server, 'ACTIVE')
    assert stack_mod.host_of(shown) == HOSTS[0]
    [failed] = moves.migrations(cloud, server)
    assert failed['status'] == 'error'
    assert moves.faults(cloud, server)[0].startswith(
        'No valid host was found.')
    assert ('conductor_migrate_server', 'Error') in _events(
        cloud, server, 'migrate')
    moves.assert_placement_matches_servers(cloud)


def test_deleting_a_resized_server_leaves_nothing_behind(cloud, flavors):
    server = _boot(cloud, flavors, 'deleted-resized', HOSTS[0])
    assert moves.action(cloud, server, {'resize': {
        'flavorRef': flavors[1]}})[0] == 202
    moves.wait(cloud, server, 'VERIFY_RESIZE')
    cloud.compute.delete_server(server)
    moves.assert_placement_matches_servers(cloud)


def _numa_nodes(cloud, server_id):
    topology = cloud.compute.request('GET', '/servers/%s/topology'
                                     % server_id)
    return [node['memory_mb'] for node in topology['nodes']]


def test_a_flavor_change_waits_for_a_resize(cloud, flavors, clean):
    """doc/behaviours.md B12: the server keeps the flavor it was built
    with; stop/start does not apply a changed extra spec, a resize does.
    """
    api = cloud.compute
    later = api.create_flavor('numa-later', vcpus=1, ram=256, disk=1)
    now = api.create_flavor('numa-now', vcpus=1, ram=512, disk=1,
                            extra_specs={'hw:numa_nodes': '1'})
    server = api.create_server('numa1', later, flavors[2],
                               zone='nova:%s' % HOSTS[0])
    clean.append(server['id'])
    moves.wait(cloud, server['id'], 'ACTIVE')
    assert _numa_nodes(cloud, server['id']) == []

    api.request('POST', '/flavors/%s/os-extra_specs' % later,
                {'extra_specs': {'hw:numa_nodes': '1'}})
    for action, status in (('os-stop', 'SHUTOFF'), ('os-start', 'ACTIVE')):
        assert moves.action(cloud, server['id'], {action: None})[0] == 202
        shown = moves.wait(cloud, server['id'], status)
    assert _numa_nodes(cloud, server['id']) == []
    assert 'hw:numa_nodes' not in shown['flavor']['extra_specs']

    fresh = api.create_server('numa2', later, flavors[2],
                              zone='nova:%s' % HOSTS[0])
    clean.append(fresh['id'])
    moves.wait(cloud, fresh['id'], 'ACTIVE')
    assert _numa_nodes(cloud, fresh['id']) == [256]

    assert moves.action(cloud, server['id'], {'resize': {'flavorRef': now}})[
        0] == 202
    moves.wait(cloud, server['id'], 'VERIFY_RESIZE')
    assert moves.action(cloud, server['id'], {'confirmResize': None})[0] == 204
    shown = moves.wait(cloud, server['id'], 'ACTIVE')
    assert shown['flavor']['extra_specs'] == {'hw:numa_nodes': '1'}
    assert _numa_nodes(cloud, server['id']) == [512]


@osc_mod.skip_without_cli
def test_the_openstack_client(cloud, flavors, clean):
    cli = moves.openstack_client(cloud)
    server = _boot(cloud, flavors, 'cli-moves', HOSTS[0])
    clean.append(server)
    cli.run('server', 'resize', '--flavor', flavors[1], server)
    shown = moves.wait(cloud, server, 'VERIFY_RESIZE')
    assert shown['flavor']['vcpus'] == 2
    cli.run('server', 'resize', 'revert', server)
    shown = moves.wait(cloud, server, 'ACTIVE')
    assert (stack_mod.host_of(shown), shown['flavor']['vcpus']) == (
        HOSTS[0], 1)
    moves.assert_placement_matches_servers(cloud)
    cli.run('server', 'migrate', '--host', HOSTS[1], server)
    shown = moves.wait(cloud, server, 'VERIFY_RESIZE')
    assert stack_mod.host_of(shown) == HOSTS[1]
    cli.run('server', 'resize', 'confirm', server)
    shown = moves.wait(cloud, server, 'ACTIVE')
    assert stack_mod.host_of(shown) == HOSTS[1]
    moves.assert_placement_matches_servers(cloud)
    cli.run('server', 'migrate', server)
    shown = moves.wait(cloud, server, 'VERIFY_RESIZE')
    assert stack_mod.host_of(shown) not in (HOSTS[1], FAILING)
    shown = moves.confirm(cloud, server)
    assert shown['flavor']['vcpus'] == 1
    moves.assert_placement_matches_servers(cloud)

# --- operations with a migration consumer -----------------------------------
#
# A server is booted, then a move is staged by hand as the conductor stages
# one: a migration row in the cell database and the server's allocation
# handed to the migration's consumer (consumer type MIGRATION) in one POST
# /allocations. While the migration runs, ``berth-manage placement audit``
# finds nothing and ``heal_allocations`` leaves the server alone (its own
# consumer is empty); ``/os-migrations`` and ``/servers/{id}/migrations``
# show the move. Once the migration has ended, the audit reports the
# migration's allocation and ``--delete`` removes it.


MIGRATION_FLAVOR = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
MOVE_VERSION = 'placement 1.38'


def _manage(cloud, *args):
    """(exit code, stdout) of ``berth-manage`` (audit exits 3 and 4)."""
    result = subprocess.run(
        [sys.executable, '-m', 'services.manage.main', '--config-file',
         cloud.conf_file] + list(args), capture_output=True, text=True,
        timeout=300)
    return result.returncode, result.stdout + result.stderr


def _providers(cloud):
    return {p['name']: p['uuid'] for p in cloud.placement.request(
        'GET', '/resource_providers')['resource_providers']}


def _allocations(cloud, consumer):
    """provider -> resources the consumer holds."""
    return {rp: alloc['resources'] for rp, alloc in cloud.placement.request(
        'GET', '/allocations/%s' % consumer)['allocations'].items()}


def _move_allocations(cloud, body):
    resp = cloud.placement.http.post(
        '/allocations', json=body,
        headers={'openstack-api-version': MOVE_VERSION})
    assert resp.status_code == 204, resp.text


def _entry(allocations, generation, consumer_type):
    return {'allocations': allocations, 'consumer_generation': generation,
            'project_id': 'admin', 'user_id': 'admin',
            'consumer_type': consumer_type}


def _add_migration(cloud, server, host, status):
    engine = sa.create_engine(cloud.urls['cell1'])
    try:
        migration_uuid = str(uuid.uuid4())
        with engine.begin() as conn:
            conn.execute(cell_tables.migrations.insert().values(
                uuid=migration_uuid, instance_uuid=server, status=status,
                migration_type='live-migration', source_compute=host,
                source_node=host, dest_compute=host, dest_node=host,
                project_id='admin', user_id='admin', hidden=False,
                cross_cell_move=False, deleted=0,
                created_at=timeutils.utcnow() - datetime.timedelta(
                    seconds=5)))
        return migration_uuid
    finally:
        engine.dispose()


def _set_status(cloud, migration_uuid, status):
    engine = sa.create_engine(cloud.urls['cell1'])
    try:
        with engine.begin() as conn:
            conn.execute(cell_tables.migrations.update().where(
                cell_tables.migrations.c.uuid == migration_uuid).values(
                status=status, updated_at=timeutils.utcnow()))
    finally:
        engine.dispose()


def test_audit_finds_a_migration_consumer_only_once_its_move_ended(
        cloud, clean):
    flavor = cloud.compute.create_flavor('mig', vcpus=1, ram=512, disk=1)
    image = cloud.compute.create_image('cirros')
    made = cloud.compute.create_server('mover', flavor, image)
    clean.append(made['id'])
    server = cloud.compute.wait_for_server(made['id'], ('ACTIVE',))
    host = stack_mod.host_of(server)
    rp = _providers(cloud)[host]
    assert _allocations(cloud, server['id']) == {rp: MIGRATION_FLAVOR}

    # A live migration in progress, staged as the conductor stages it.
    migration = _add_migration(cloud, server['id'], host, 'running')
    held = cloud.placement.request('GET', '/allocations/%s' % server['id'])
    _move_allocations(cloud, {
        migration: _entry({rp: {'resources': MIGRATION_FLAVOR}}, None,
                          'MIGRATION'),
        server['id']: _entry({}, held['consumer_generation'], 'INSTANCE')})
    assert _allocations(cloud, server['id']) == {}
    assert cloud.placement.usages(rp)['VCPU'] == 1

    code, out = _manage(cloud, 'placement', 'audit', '--verbose')
    assert code == 0, out
    assert 'can be deleted' not in out
    code, out = _manage(cloud, 'placement', 'heal_allocations', '--verbose')
    assert code == 4, out
    assert 'Instance %s is being migrated' % server['id'] in out
    assert _allocations(cloud, server['id']) == {}

    # The API shows the move, read from the real databases.
    listed = cloud.compute.request(
        'GET', '/os-migrations?instance_uuid=%s' % server['id'])
    [shown] = listed['migrations']
    assert (shown['uuid'], shown['status']) == (migration, 'running')
    assert shown['links'][0]['href'].endswith(
        '/servers/%s/migrations/%d' % (server['id'], shown['id']))
    mine = cloud.compute.request('GET', '/servers/%s/migrations'
                                 % server['id'])['migrations']
    assert [m['uuid'] for m in mine] == [migration]

    # The move ends on the source: the server holds its source again,
    # and the migration's allocation is left behind (as a conductor
    # killed between the two writes would leave it).
    _set_status(cloud, migration, 'completed')
    held = cloud.placement.request('GET', '/allocations/%s' % server['id'])
    cloud.placement.request('PUT', '/allocations/%s' % server['id'], {
        'allocations': {rp: {'resources': MIGRATION_FLAVOR}},
        'consumer_generation': held.get('consumer_generation'),
        'project_id': 'admin', 'user_id': 'admin',
        'consumer_type': 'INSTANCE'})
    code, out = _manage(cloud, 'placement', 'audit', '--verbose')
    assert code == 3, out
    assert ('Allocations for consumer UUID %s on Resource Provider %s can '
            'be deleted' % (migration, rp)) in out
    assert 'ended (completed)' in out
    code, out = _manage(cloud, 'placement', 'audit', '--delete')
    assert code == 4, out
    assert 'Deleted allocations for consumer UUID %s' % migration in out
    assert _allocations(cloud, migration) == {}
    code, out = _manage(cloud, 'placement', 'audit')
    assert code == 0, out
    assert cloud.compute.request('GET', '/servers/%s/migrations'
                                 % server['id'])['migrations'] == []
    moves.assert_placement_matches_servers(cloud)


@osc_mod.skip_without_cli
def test_the_openstack_client_lists_and_shows_migrations(cloud, clean):
    flavor = cloud.compute.create_flavor('cli', vcpus=1, ram=512, disk=1)
    image = cloud.compute.create_image('cli')
    made = cloud.compute.create_server('cli-mover', flavor, image)
    clean.append(made['id'])
    server = cloud.compute.wait_for_server(made['id'], ('ACTIVE',))
    migration = _add_migration(cloud, server['id'],
                               stack_mod.host_of(server), 'running')
    cli = moves.openstack_client(cloud, version='2.80')
    rows = cli.json('server', 'migration', 'list', '--server', server['id'],
                    '--status', 'running')
    assert [r['UUID'] for r in rows] == [migration], rows
    [row] = rows
    assert row['Server UUID'] == server['id']
    assert row['Type'] == 'live-migration'
    # NOTE: by uuid: with a numeric id, this openstackclient passes the
    # server and the migration to openstacksdk's get_server_migration in
    # the wrong order (it asks for /servers/<id>/migrations/<server>),
    # against any cloud. By uuid it reads /servers/{id}/migrations.
    shown = cli.json('server', 'migration', 'show', server['id'], migration)
    assert shown['ID'] == row['Id'] and shown['Status'] == 'running'
    assert shown['Server UUID'] == server['id']
    _set_status(cloud, migration, 'completed')
    assert cli.json('server', 'migration', 'list', '--server', server['id'],
                    '--status', 'running') == []
    missing = cli.run('server', 'migration', 'show', server['id'],
                      migration, expect_ok=False)
    assert missing.returncode != 0
    assert 'is not found for server' in missing.stderr
    # The API's own answer for the ended one (what the CLI cannot ask).
    resp = cloud.compute.http.get('/servers/%s/migrations/%d' % (
        server['id'], row['Id']))
    assert resp.status_code == 404
    assert 'is not in progress' in resp.json()['itemNotFound']['message']
