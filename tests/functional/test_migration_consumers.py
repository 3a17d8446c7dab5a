# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Operations and the API with a migration consumer, on a real stack.

Every service runs as its own process on RabbitMQ and MariaDB. A server
is booted, then a move is staged by hand as the conductor stages one: a
migration row in the cell database and the server's allocation handed to
the migration's consumer (consumer type MIGRATION) in one POST
/allocations. While the migration runs, ``berth-manage placement audit``
finds nothing and ``heal_allocations`` leaves the server alone (its own
consumer is empty); ``/os-migrations`` and ``/servers/{id}/migrations``
show the move. Once the migration has ended, the audit reports the
migration's allocation and ``--delete`` removes it. At the end placement
holds exactly the server's flavor on its host and no migration consumer.
"""

import datetime
import subprocess
import sys
import uuid

from oslo_utils import timeutils
import pytest
import sqlalchemy as sa

from common.db import cell_tables
from tests.functional import osc as osc_mod
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack as stack_mod
from tests.functional import stack_fixture

HOSTS = 2
FLAVOR = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
MOVE_VERSION = 'placement 1.38'


@pytest.fixture(scope='module')
def stack(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('migration-consumers')),
            hosts=HOSTS,
            # NOTE: the conductor's periodic audit is unit-tested; here
            # only the commands change placement.
            extra_conf={('audit', 'allocation_audit_interval'): -1}
    ) as deployment:
        yield deployment


def _manage(stack, *args):
    """(exit code, stdout) of ``berth-manage`` (audit exits 3 and 4)."""
    result = subprocess.run(
        [sys.executable, '-m', 'services.manage.main', '--config-file',
         stack.conf_file] + list(args), capture_output=True, text=True,
        timeout=300)
    return result.returncode, result.stdout + result.stderr


def _providers(stack):
    return {p['name']: p['uuid'] for p in stack.placement.request(
        'GET', '/resource_providers')['resource_providers']}


def _allocations(stack, consumer):
    """provider -> resources the consumer holds."""
    return {rp: alloc['resources'] for rp, alloc in stack.placement.request(
        'GET', '/allocations/%s' % consumer)['allocations'].items()}


def _move_allocations(stack, body):
    resp = stack.placement.http.post(
        '/allocations', json=body,
        headers={'openstack-api-version': MOVE_VERSION})
    assert resp.status_code == 204, resp.text


def _entry(allocations, generation, consumer_type):
    return {'allocations': allocations, 'consumer_generation': generation,
            'project_id': 'admin', 'user_id': 'admin',
            'consumer_type': consumer_type}


def _add_migration(stack, server, host, status):
    engine = sa.create_engine(stack.urls['cell1'])
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


def _set_status(stack, migration_uuid, status):
    engine = sa.create_engine(stack.urls['cell1'])
    try:
        with engine.begin() as conn:
            conn.execute(cell_tables.migrations.update().where(
                cell_tables.migrations.c.uuid == migration_uuid).values(
                status=status, updated_at=timeutils.utcnow()))
    finally:
        engine.dispose()


def assert_placement_matches(stack, servers):
    """Usage on each host is the flavors of its servers; no consumer but
    the servers' holds anything.
    """
    providers = _providers(stack)
    want = {}
    for server in servers:
        shown = stack.compute.get_server(server)
        rp = providers[stack_mod.host_of(shown)]
        for rc, n in FLAVOR.items():
            want.setdefault(rp, {})[rc] = want.get(rp, {}).get(rc, 0) + n
    consumers = set()
    for name, rp in providers.items():
        usages = {rc: n for rc, n in stack.placement.usages(rp).items()
                  if n}
        assert usages == want.get(rp, {}), name
        consumers |= set(stack.placement.request(
            'GET', '/resource_providers/%s/allocations' % rp)['allocations'])
    assert consumers == set(servers)


def test_audit_finds_a_migration_consumer_only_once_its_move_ended(stack):
    flavor = stack.compute.create_flavor('mig', vcpus=1, ram=512, disk=1)
    image = stack.compute.create_image('cirros')
    made = stack.compute.create_server('mover', flavor, image)
    server = stack.compute.wait_for_server(made['id'], ('ACTIVE',))
    host = stack_mod.host_of(server)
    rp = _providers(stack)[host]
    assert _allocations(stack, server['id']) == {rp: FLAVOR}

    # A live migration in progress, staged as the conductor stages it.
    migration = _add_migration(stack, server['id'], host, 'running')
    held = stack.placement.request('GET', '/allocations/%s' % server['id'])
    _move_allocations(stack, {
        migration: _entry({rp: {'resources': FLAVOR}}, None, 'MIGRATION'),
        server['id']: _entry({}, held['consumer_generation'], 'INSTANCE')})
    assert _allocations(stack, server['id']) == {}
    assert stack.placement.usages(rp)['VCPU'] == 1

    code, out = _manage(stack, 'placement', 'audit', '--verbose')
    assert code == 0, out
    assert 'can be deleted' not in out
    code, out = _manage(stack, 'placement', 'heal_allocations', '--verbose')
    assert code == 4, out
    assert 'Instance %s is being migrated' % server['id'] in out
    assert _allocations(stack, server['id']) == {}

    # The API shows the move, read from the real databases.
    listed = stack.compute.request(
        'GET', '/os-migrations?instance_uuid=%s' % server['id'])
    [shown] = listed['migrations']
    assert (shown['uuid'], shown['status']) == (migration, 'running')
    assert shown['links'][0]['href'].endswith(
        '/servers/%s/migrations/%d' % (server['id'], shown['id']))
    mine = stack.compute.request('GET', '/servers/%s/migrations'
                                 % server['id'])['migrations']
    assert [m['uuid'] for m in mine] == [migration]

    # The move ends on the source: the server holds its source again,
    # and the migration's allocation is left behind (as a conductor
    # killed between the two writes would leave it).
    _set_status(stack, migration, 'completed')
    held = stack.placement.request('GET', '/allocations/%s' % server['id'])
    stack.placement.request('PUT', '/allocations/%s' % server['id'], {
        'allocations': {rp: {'resources': FLAVOR}},
        'consumer_generation': held.get('consumer_generation'),
        'project_id': 'admin', 'user_id': 'admin',
        'consumer_type': 'INSTANCE'})
    code, out = _manage(stack, 'placement', 'audit', '--verbose')
    assert code == 3, out
    assert ('Allocations for consumer UUID %s on Resource Provider %s can '
            'be deleted' % (migration, rp)) in out
    assert 'ended (completed)' in out
    code, out = _manage(stack, 'placement', 'audit', '--delete')
    assert code == 4, out
    assert 'Deleted allocations for consumer UUID %s' % migration in out
    assert _allocations(stack, migration) == {}
    code, out = _manage(stack, 'placement', 'audit')
    assert code == 0, out
    assert stack.compute.request('GET', '/servers/%s/migrations'
                                 % server['id'])['migrations'] == []
    assert_placement_matches(stack, [server['id']])


@osc_mod.skip_without_cli
def test_the_openstack_client_lists_and_shows_migrations(stack):
    flavor = stack.compute.create_flavor('cli', vcpus=1, ram=512, disk=1)
    image = stack.compute.create_image('cli')
    made = stack.compute.create_server('cli-mover', flavor, image)
    server = stack.compute.wait_for_server(made['id'], ('ACTIVE',))
    migration = _add_migration(stack, server['id'],
                               stack_mod.host_of(server), 'running')
    cli = osc_mod.Client(
        OS_AUTH_TYPE='admin_token', OS_TOKEN='admin',
        OS_ENDPOINT=stack.api_url + '/v2.1',
        OS_IDENTITY_API_VERSION='3',
        OS_IDENTITY_ENDPOINT_OVERRIDE=stack.api_url + '/identity',
        OS_COMPUTE_API_VERSION='2.80')
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
    _set_status(stack, migration, 'completed')
    assert cli.json('server', 'migration', 'list', '--server', server['id'],
                    '--status', 'running') == []
    missing = cli.run('server', 'migration', 'show', server['id'],
                      migration, expect_ok=False)
    assert missing.returncode != 0
    assert 'is not found for server' in missing.stderr
    # The API's own answer for the ended one (what the CLI cannot ask).
    resp = stack.compute.http.get('/servers/%s/migrations/%d' % (
        server['id'], row['Id']))
    assert resp.status_code == 404
    assert 'is not in progress' in resp.json()['itemNotFound']['message']
