# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The resize, confirmResize, revertResize and migrate server actions."""

import json
import uuid as uuid_lib

from oslo_utils import timeutils
import pytest

from common.db import boot_records
from common.db import cell_tables
from common.db import cells
from common.objects import flavor as flavor_obj
from common.objects import request_spec as spec_obj
from tests.unit.api import conftest
from tests.unit.api import helpers
from tests.unit.api.helpers import V

MEMBER = 'alice:projA'


def _action(world, server, body, **kw):
    return world.client.post(V + '/servers/%s/action' % server, body, **kw)


def _show(world, server):
    return world.client.get(V + '/servers/%s' % server)[1]['server']


def _message(body):
    [fault] = body.values()
    return fault['message']


def _server(world, **values):
    if not world.rows('cell1', cell_tables.services, host='src'):
        world.add_host('src')
    return world.add_instance('cell1', host='src', project_id='projA',
                              **values)


def _finished(world, server, status='finished', migration_type='resize',
              **values):
    migration = str(uuid_lib.uuid4())
    world.insert('cell1', cell_tables.migrations, uuid=migration,
                 instance_uuid=server, migration_type=migration_type,
                 status=status, source_compute='src', source_node='src',
                 dest_compute='dst', dest_node='dst', hidden=False,
                 cross_cell_move=False, deleted=0,
                 created_at=timeutils.utcnow(), **values)
    return migration


def _migration_status(world, migration):
    [row] = world.rows('cell1', cell_tables.migrations, uuid=migration)
    return row['status']


def test_resize_calls_the_conductor_with_the_new_flavors_requests(world):
    flavor = helpers.make_flavor(world.client, name='big', vcpus=2,
                                 ram=1024, disk=2,
                                 specs={'hw:cpu_policy': 'dedicated'})
    server = _server(world)
    status, body, _r = _action(world, server,
                               {'resize': {'flavorRef': flavor}},
                               token=MEMBER)
    assert status == 202, body
    [move] = world.conductor.moves
    assert move['instance_uuid'] == server
    assert move['flavor']['flavorid'] == flavor
    assert move['host'] is None
    # NOTE: the NUMA request a boot with this flavor would make.
    assert move['numa_topology']['cells'][0]['cpu_policy'] == 'dedicated'
    shown = _show(world, server)
    assert shown['status'] == 'RESIZE'
    actions = world.client.get(
        V + '/servers/%s/os-instance-actions' % server)[1]
    assert [a['action'] for a in actions['instanceActions']] == ['resize']


def test_resize_refusals_have_novas_messages(world):
    same = helpers.make_flavor(world.client, name='cur', disk=1)
    server = _server(world, flavor=json.dumps(
        {'name': 'cur', 'flavorid': same, 'vcpus': 1, 'memory_mb': 512,
         'root_gb': 1, 'ephemeral_gb': 0, 'swap': 0, 'extra_specs': {}}))
    smaller = helpers.make_flavor(world.client, name='tiny', disk=0)
    server_big_disk = _server(world, flavor=json.dumps(
        {'name': 'cur2', 'flavorid': 'cur2', 'vcpus': 1,
         'memory_mb': 512, 'root_gb': 5, 'ephemeral_gb': 0, 'swap': 0,
         'extra_specs': {}}))
    status, body, _r = _action(world, server_big_disk,
                               {'resize': {'flavorRef': same}})
    assert status == 400
    assert _message(body) == ('Server disk was unable to be resized '
                              'because: Unable to resize disk down.')
    for ref, message in (
            ('nope', 'Unable to locate requested flavor.'),
            (same, 'Resize requires a flavor change.'),
            (smaller, 'Server disk was unable to be resized because: '
                      'Resize to zero disk flavor is not allowed.')):
        status, body, _r = _action(world, server,
                                   {'resize': {'flavorRef': ref}})
        assert status == 400, (ref, body)
        assert _message(body) == message
    assert _show(world, server)['status'] == 'ACTIVE'
    assert not getattr(world.conductor, 'moves', [])


def test_resize_of_a_paused_server_is_a_conflict(world):
    flavor = helpers.make_flavor(world.client, name='big', vcpus=2)
    server = _server(world, vm_state='paused')
    status, body, _r = _action(world, server,
                               {'resize': {'flavorRef': flavor}})
    assert status == 409
    assert _message(body) == ("Cannot 'resize' instance %s while it is in "
                              "vm_state paused" % server)


def test_resize_over_the_cores_quota_is_forbidden(world):
    world.client.put(V + '/os-quota-sets/projA',
                     {'quota_set': {'cores': 2}})
    flavor = helpers.make_flavor(world.client, name='big', vcpus=4)
    server = _server(world)
    status, body, _r = _action(world, server,
                               {'resize': {'flavorRef': flavor}},
                               token=MEMBER)
    assert status == 403, body
    assert 'Quota exceeded for cores' in _message(body)


def test_no_valid_host_is_a_400_and_the_server_is_left_alone(world):
    flavor = helpers.make_flavor(world.client, name='big', vcpus=2)
    server = _server(world)
    world.conductor.no_valid_host = 'nothing fits'
    status, body, _r = _action(world, server,
                               {'resize': {'flavorRef': flavor}})
    assert status == 400
    assert _message(body) == 'No valid host was found. nothing fits'


def test_a_disabled_or_forced_down_target_is_refused_before_any_write(
        world):
    server = _server(world)
    world.add_host('off', disabled=True)
    world.add_host('gone', forced_down=True)
    headers = {'OpenStack-API-Version': 'compute 2.56'}
    for host, reason in (
            ('off', 'the compute service of off is disabled: no reason '
                    'given'),
            ('gone', 'the compute service of gone is forced down')):
        status, body, _r = _action(world, server,
                                   {'migrate': {'host': host}},
                                   headers=headers)
        assert status == 400, body
        assert _message(body) == 'No valid host was found. ' + reason
    assert not getattr(world.conductor, 'moves', [])
    assert _show(world, server)['OS-EXT-STS:task_state'] is None
    assert world.client.get(
        V + '/servers/%s/os-instance-actions' % server)[1][
            'instanceActions'] == []


def test_migrate_is_for_admins_and_takes_a_host_from_2_56(world):
    server = _server(world)
    world.add_host('other')
    status, _b, _r = _action(world, server, {'migrate': None},
                             token=MEMBER)
    assert status == 403
    headers = {'OpenStack-API-Version': 'compute 2.56'}
    for host, message in (
            ('nowhere', 'Compute host nowhere could not be found.'),
            ('src', 'Cannot migrate to the host where the server exists.')):
        status, body, _r = _action(world, server,
                                   {'migrate': {'host': host}},
                                   headers=headers)
        assert status == 400, body
        assert _message(body) == message
    status, body, _r = _action(world, server, {'migrate': {'host': 'other'}},
                               headers=headers)
    assert status == 202, body
    [move] = world.conductor.moves
    assert move['host'] == 'other' and move['flavor'] is None
    # the server as written, which the conductor then need not read
    instance = move['instance']
    assert (instance.uuid, instance.task_state, instance.cell_uuid) == (
        server, 'resize_prep', conftest.CELL1_UUID)
    assert instance.system_metadata['old_vm_state'] == 'active'


def test_confirm_needs_verify_resize_and_a_finished_migration(world):
    server = _server(world)
    status, body, _r = _action(world, server, {'confirmResize': None})
    assert status == 409
    resized = _server(world, vm_state='resized')
    status, body, _r = _action(world, resized, {'confirmResize': None})
    assert status == 400
    assert _message(body) == 'Instance has not been resized.'
    migration = _finished(world, resized)
    status, body, _r = _action(world, resized, {'confirmResize': None},
                               token=MEMBER)
    assert status == 204, body
    assert _migration_status(world, migration) == 'confirming'
    assert len(world.compute.confirms) == 1
    # NOTE: the second confirm finds no finished migration.
    status, body, _r = _action(world, resized, {'confirmResize': None})
    assert status == 400


def _force_down(world, host):
    services = cell_tables.services
    with cells.get_cell_database(world.urls['cell1']).engine().begin() as c:
        c.execute(services.update().where(services.c.host == host).values(
            forced_down=True))


def _actions(world, server):
    listed = world.client.get(
        V + '/servers/%s/os-instance-actions' % server)[1]
    return [a['action'] for a in listed['instanceActions']]


def test_a_server_whose_compute_is_down_is_not_moved(world):
    # NOTE: Nova's check_instance_host(check_is_up=True) on resize (and
    # so migrate): its compute would never take the move.
    flavor = helpers.make_flavor(world.client, name='big', vcpus=2)
    server = _server(world)
    _force_down(world, 'src')
    for body in ({'resize': {'flavorRef': flavor}}, {'migrate': None}):
        status, data, _r = _action(world, server, body)
        assert (status, _message(data)) == (
            409, 'Service is unavailable at this time.'), body
    assert getattr(world.conductor, 'moves', []) == []
    assert _show(world, server)['status'] == 'ACTIVE'
    assert _actions(world, server) == []


def test_a_confirm_whose_source_is_down_is_refused_and_can_come_again(
        world):
    resized = _server(world, vm_state='resized')
    migration = _finished(world, resized)
    _force_down(world, 'src')
    status, body, _r = _action(world, resized, {'confirmResize': None})
    assert (status, _message(body)) == (
        409, 'Service is unavailable at this time.')
    assert _migration_status(world, migration) == 'finished'
    assert getattr(world.compute, 'confirms', []) == []
    assert _actions(world, resized) == []


@pytest.mark.parametrize('migration_type', ['resize', 'migration'])
def test_a_confirm_goes_straight_to_the_source(world, migration_type):
    # NOTE: as claimed (the source need not read them); a resize's flavor
    # has been in the stored spec since it was scheduled, so no confirm
    # needs the conductor.
    resized = _server(world, vm_state='resized')
    migration = _finished(world, resized, migration_type=migration_type)
    status, body, _r = _action(world, resized, {'confirmResize': None})
    assert status == 204, body
    [(host, instance, sent)] = world.compute.confirms
    assert (host, instance.uuid, instance.vm_state, sent.uuid,
            sent.status) == ('src', resized, 'resized', migration,
                             'confirming')


def test_revert_sets_revert_resize_and_casts_to_the_destination(world):
    resized = _server(world, vm_state='resized',
                      system_metadata=json.dumps({'old_vm_state': 'active'}))
    migration = _finished(world, resized)
    status, body, _r = _action(world, resized, {'revertResize': None},
                               token=MEMBER)
    assert status == 202, body
    assert _migration_status(world, migration) == 'reverting'
    assert _show(world, resized)['status'] == 'REVERT_RESIZE'
    # NOTE: as in Nova: the destination gives the source allocation back
    # and hands the server to its source; the conductor is not involved.
    assert world.compute.reverts == [('dst', resized, migration, None)]
    assert not getattr(world.conductor, 'reverts', [])


@pytest.mark.parametrize('migration_type,kept', [('resize', 'small'),
                                                 ('migration', 'big')])
def test_a_reverted_resize_gives_the_stored_spec_its_old_flavor(
        world, migration_type, kept):
    small = flavor_obj.Flavor(name='small', flavorid='small', vcpus=1,
                              memory_mb=512, root_gb=1)
    big = flavor_obj.Flavor(name='big', flavorid='big', vcpus=2,
                            memory_mb=1024, root_gb=2)
    ctx = world.admin_context()
    resized = _server(world, vm_state='resized')
    # NOTE: as the resize left it when it was scheduled.
    boot_records.save_request_spec(ctx, resized, spec_obj.RequestSpec(
        instance_uuid=resized, flavor=big))
    _finished(world, resized, migration_type=migration_type,
              old_flavor=json.dumps(small.to_primitive()),
              new_flavor=json.dumps(big.to_primitive()))
    status, body, _r = _action(world, resized, {'revertResize': None})
    assert status == 202, body
    assert boot_records.get_request_spec(ctx, resized).flavor.flavorid == (
        kept)


def test_deleting_a_resized_server_confirms_its_move_first(world):
    world.add_host('dst')
    resized = world.add_instance('cell1', host='dst', project_id='projA',
                                 vm_state='resized')
    migration = _finished(world, resized)
    status, _b, _r = world.client.delete(V + '/servers/%s' % resized)
    assert status == 204
    assert _migration_status(world, migration) == 'confirming'
    [(host, instance, sent)] = world.compute.confirms
    assert (host, instance.uuid, sent.uuid, sent.status) == (
        'src', resized, migration, 'confirming')


def test_a_revert_racing_another_task_leaves_the_migration_finished(
        world, monkeypatch):
    # NOTE: the migration's claim and the instance's task move in one
    # transaction: a task state changed after the checks (a racing
    # delete here) refuses both, and the server can still be reverted.
    from services.api.actions import checks
    resized = _server(world, vm_state='resized')
    migration = _finished(world, resized)
    checked = checks.check_state

    def racing(instance, method, vm_states, *args, **kwargs):
        checked(instance, method, vm_states, *args, **kwargs)
        engine = cells.get_cell_database(world.urls['cell1']).engine()
        with engine.begin() as conn:
            conn.execute(cell_tables.instances.update().where(
                cell_tables.instances.c.uuid == resized).values(
                task_state='deleting'))

    monkeypatch.setattr(checks, 'check_state', racing)
    status, body, _r = _action(world, resized, {'revertResize': None})
    assert status == 409, body
    assert 'task_state deleting' in _message(body)
    assert _migration_status(world, migration) == 'finished'
    assert getattr(world.conductor, 'reverts', []) == []
    assert [a['action'] for a in world.rows(
        'cell1', cell_tables.instance_actions,
        instance_uuid=resized)] == []


@pytest.mark.parametrize('key,answer,status', [
    ('confirmResize', 204, 'confirming'),
    ('revertResize', 202, 'reverting')])
@pytest.mark.parametrize('value', [{}, 'anything'])
def test_confirm_and_revert_take_any_value(world, key, answer, status,
                                           value):
    # NOTE: Nova's schemas accept any value (Tempest sends {}).
    resized = _server(world, vm_state='resized')
    migration = _finished(world, resized)
    got, body, _r = _action(world, resized, {key: value})
    assert (got, body) == (answer, None)
    assert _migration_status(world, migration) == status


@pytest.mark.parametrize('version,value', [
    ('2.1', {}), ('2.1', {'other': 1}), ('2.55', {'host': None}),
    ('2.55', {'host': 'other'}), ('2.1', 'anything'), ('2.56', {}),
    ('2.56', None)])
def test_migrate_takes_the_bodies_nova_does(world, version, value):
    # NOTE: below 2.56 Nova reads no body: a host there is ignored.
    server = _server(world)
    world.add_host('other')
    status, body, _r = _action(world, server, {'migrate': value},
                               version=version)
    assert (status, body) == (202, None)
    [move] = world.conductor.moves
    assert move['host'] is None
