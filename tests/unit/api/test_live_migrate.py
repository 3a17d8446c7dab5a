# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""os-migrateLive and the force-complete / abort of a server's migration,
as the API answers them (the conductor and computes faked).
"""

import uuid as uuid_lib

from oslo_utils import timeutils
import pytest

from common.db import cell_tables
from common import exception
from tests.unit.api import conftest
from tests.unit.api.helpers import V


@pytest.fixture
def hosts(world):
    for host in ('h0', 'h1'):
        world.add_host(host)
    world.add_host('h-down', age=3600)
    return world


def _server(world, **values):
    return world.add_instance('cell1', host='h0', **values)


def _live(world, uuid, body, version='2.79', token='admin'):
    return world.client.post(V + '/servers/%s/action' % uuid,
                             {'os-migrateLive': body}, version=version,
                             token=token)


def _row(world, uuid):
    [row] = world.rows('cell1', cell_tables.instances, uuid=uuid)
    return row


def _actions(world, uuid):
    return [a['action'] for a in world.rows(
        'cell1', cell_tables.instance_actions, instance_uuid=uuid)]


def test_live_migrate_to_the_schedulers_choice(hosts):
    uuid = _server(hosts)
    status, body, _r = _live(hosts, uuid, {'host': None,
                                           'block_migration': 'auto'})
    assert (status, body) == (202, None)
    assert _row(hosts, uuid)['task_state'] == 'migrating'
    assert _actions(hosts, uuid) == ['live-migration']
    [sent] = hosts.conductor.live_migrations
    instance = sent.pop('instance')
    assert sent == {'uuid': uuid, 'host': None, 'block_migration': None,
                    'force': False, 'sync': False}
    # the server as written, which the conductor then need not read
    assert (instance.uuid, instance.task_state, instance.cell_uuid) == (
        uuid, 'migrating', conftest.CELL1_UUID)


@pytest.mark.parametrize('version,body,force', [
    ('2.1', {'host': 'h1', 'block_migration': False,
             'disk_over_commit': False}, True),
    ('2.30', {'host': 'h1', 'block_migration': True, 'force': True}, True),
    ('2.30', {'host': 'h1', 'block_migration': True}, False),
    ('2.68', {'host': 'h1', 'block_migration': 'auto'}, False)])
def test_a_named_host_is_forced_as_nova_forces_it(hosts, version, body,
                                                  force):
    uuid = _server(hosts)
    status, data, _r = _live(hosts, uuid, body, version=version)
    assert status == 202, data
    [sent] = hosts.conductor.live_migrations
    assert (sent['host'], sent['force']) == ('h1', force)
    # NOTE: below 2.34 the API waits for the conductor's checks.
    assert sent['sync'] is (version in ('2.1', '2.30'))


@pytest.mark.parametrize('version,body,message', [
    ('2.1', {'host': None, 'block_migration': False}, 'disk_over_commit'),
    ('2.1', {'host': None, 'block_migration': 'auto',
             'disk_over_commit': False}, 'block_migration'),
    ('2.25', {'host': None, 'block_migration': 'auto',
              'disk_over_commit': False}, 'disk_over_commit'),
    ('2.25', {'host': None, 'block_migration': 'auto', 'force': True},
     'force'),
    ('2.68', {'host': 'h1', 'block_migration': 'auto', 'force': False},
     'force'),
    ('2.30', {'host': None, 'block_migration': 'auto', 'force': True},
     "Can't force to a non-provided destination"),
    ('2.79', {'block_migration': 'auto'}, "'host' is a required property"),
    ('2.79', {'host': 'bad host!', 'block_migration': 'auto'}, 'host'),
    # Nova's host name: 1-255 letters, digits, '-', '.' and '_'.
    ('2.25', {'host': '', 'block_migration': 'auto'},
     'os-migrateLive/host. Value: . '),
    ('2.25', {'host': 'h1:node', 'block_migration': 'auto'},
     'os-migrateLive/host. Value: h1:node.'),
    ('2.1', {'host': 'h' * 256, 'block_migration': False,
             'disk_over_commit': False}, 'is too long')])
def test_bodies_are_nova_s_at_each_microversion(hosts, version, body,
                                                message):
    uuid = _server(hosts)
    status, data, _r = _live(hosts, uuid, body, version=version)
    assert status == 400, data
    assert message in data['badRequest']['message']
    assert _row(hosts, uuid)['task_state'] is None
    assert _actions(hosts, uuid) == []


@pytest.mark.parametrize('host,message', [
    ('nowhere', 'Compute host nowhere could not be found.'),
    ('h0', 'to current host (h0).'),
    ('h-down', 'Compute service of h-down is unavailable at this time.')])
def test_bad_target_hosts_are_400s(hosts, host, message):
    uuid = _server(hosts)
    status, data, _r = _live(hosts, uuid, {'host': host,
                                           'block_migration': 'auto'})
    assert status == 400, data
    assert data['badRequest']['message'].endswith(message)
    assert _row(hosts, uuid)['task_state'] is None
    assert not getattr(hosts.conductor, 'live_migrations', [])


@pytest.mark.parametrize('values,attr,state', [
    ({'vm_state': 'stopped'}, 'vm_state', 'stopped'),
    ({'task_state': 'rebooting'}, 'task_state', 'rebooting')])
def test_wrong_state_is_409_with_nova_s_message(hosts, values, attr, state):
    uuid = _server(hosts, **values)
    status, data, _r = _live(hosts, uuid, {'host': None,
                                           'block_migration': 'auto'})
    assert status == 409
    assert data['conflictingRequest']['message'] == (
        "Cannot 'os-migrateLive' instance %s while it is in %s %s"
        % (uuid, attr, state))


def test_a_paused_server_may_move_and_a_member_may_not(hosts):
    uuid = _server(hosts, vm_state='paused', project_id='projA')
    body = {'host': None, 'block_migration': 'auto'}
    assert _live(hosts, uuid, body, token='alice:projA')[0] == 403
    assert _live(hosts, uuid, body)[0] == 202


def test_a_synchronous_refusal_is_the_400_answered(hosts, monkeypatch):
    uuid = _server(hosts)

    def refuse(ctxt, instance_uuid, **kwargs):
        raise exception.NoValidHost(reason='every host refused')
    monkeypatch.setattr(hosts.conductor, 'live_migrate_instance', refuse)
    status, data, _r = _live(hosts, uuid, {
        'host': None, 'block_migration': False}, version='2.33')
    assert status == 400
    assert data['badRequest']['message'] == (
        'No valid host was found. every host refused')


def test_a_cast_that_fails_clears_the_task(hosts, monkeypatch):
    uuid = _server(hosts)

    def unreachable(ctxt, instance_uuid, **kwargs):
        raise RuntimeError('no broker')
    monkeypatch.setattr(hosts.conductor, 'live_migrate_instance',
                        unreachable)
    status, _d, _r = _live(hosts, uuid, {'host': None,
                                         'block_migration': 'auto'})
    assert status == 503
    assert _row(hosts, uuid)['task_state'] is None


# --- force_complete and abort ------------------------------------------------

def _migration(world, uuid, status='running'):
    world.insert('cell1', cell_tables.migrations, uuid=str(uuid_lib.uuid4()),
                 instance_uuid=uuid, migration_type='live-migration',
                 status=status, source_compute='h0', dest_compute='h1',
                 hidden=False, cross_cell_move=False, deleted=0,
                 created_at=timeutils.utcnow())
    [row] = [r for r in world.rows('cell1', cell_tables.migrations,
                                   instance_uuid=uuid)
             if r['status'] == status]
    return row


def _force(world, uuid, mid, version='2.79'):
    return world.client.post(
        V + '/servers/%s/migrations/%s/action' % (uuid, mid),
        {'force_complete': None}, version=version)


def _abort(world, uuid, mid, version='2.79'):
    return world.client.delete(
        V + '/servers/%s/migrations/%s' % (uuid, mid), version=version)


def test_force_complete_of_a_running_live_migration(hosts):
    uuid = _server(hosts, task_state='migrating')
    migration = _migration(hosts, uuid)
    assert _force(hosts, uuid, migration['id'], version='2.21')[0] == 404
    status, body, _r = _force(hosts, uuid, migration['id'])
    assert (status, body) == (202, None)
    assert hosts.compute.casts == [('live_migration_force_complete', 'h0',
                                    uuid, {'migration_uuid':
                                           migration['uuid']})]
    assert _actions(hosts, uuid) == ['live_migration_force_complete']


def test_force_complete_wants_a_running_migration_of_this_server(hosts):
    uuid = _server(hosts, task_state='migrating')
    queued = _migration(hosts, uuid, status='queued')
    status, data, _r = _force(hosts, uuid, queued['id'])
    assert status == 400
    assert data['badRequest']['message'] == (
        'Migration %s state of instance %s is queued. Cannot force '
        'complete while the migration is in this state.'
        % (queued['id'], uuid))
    status, data, _r = _force(hosts, uuid, 999)
    assert status == 400
    assert 'Migration 999 not found for instance' in \
        data['badRequest']['message']
    assert hosts.compute.casts == []


def test_abort_of_a_running_and_from_2_65_a_queued_migration(hosts):
    uuid = _server(hosts, task_state='migrating')
    queued = _migration(hosts, uuid, status='queued')
    status, data, _r = _abort(hosts, uuid, queued['id'], version='2.64')
    assert status == 400
    assert 'is queued. Cannot abort live migration' in \
        data['badRequest']['message']
    assert _abort(hosts, uuid, queued['id'], version='2.23')[0] == 404
    status, _d, _r = _abort(hosts, uuid, queued['id'], version='2.65')
    assert status == 202
    assert hosts.compute.casts == [('live_migration_abort', 'h0', uuid,
                                    {'migration_uuid': queued['uuid']})]
    assert _actions(hosts, uuid) == ['live_migration_cancel']
    assert _abort(hosts, uuid, 999)[0] == 404


def test_migration_actions_need_a_migrating_server(hosts):
    uuid = _server(hosts)
    migration = _migration(hosts, uuid)
    status, data, _r = _abort(hosts, uuid, migration['id'])
    assert status == 409
    assert data['conflictingRequest']['message'] == (
        "Cannot 'abort live migration' instance %s while it is in "
        "task_state None" % uuid)
    assert _force(hosts, uuid, migration['id'])[0] == 409


def test_the_live_migration_of_a_paused_server_may_be_aborted(hosts):
    # NOTE: Nova's abort wants only the task; force-complete an ACTIVE
    # server too.
    uuid = _server(hosts, vm_state='paused', task_state='migrating')
    migration = _migration(hosts, uuid)
    status, data, _r = _force(hosts, uuid, migration['id'])
    assert status == 409
    assert data['conflictingRequest']['message'] == (
        "Cannot 'force_complete' instance %s while it is in vm_state "
        "paused" % uuid)
    assert _abort(hosts, uuid, migration['id'])[0] == 202
    assert hosts.compute.casts == [('live_migration_abort', 'h0', uuid,
                                    {'migration_uuid': migration['uuid']})]
