# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The conductor's live migration: destination, pre-checks, the cast,
and the clean ending of every refusal.
"""

import uuid as uuid_lib

import oslo_messaging as messaging
from oslo_utils import timeutils
import pytest

from common.conf import CONF
from common.db import action_records
from common.db import cell_tables
from common.db import instance_records
from common.db import migration_records
from common import exception
from services.conductor import build_flow
from services.conductor import live_migrate_flow
from services.conductor import unstarted_live_migrations
from tests.unit import calls
from tests.unit.conductor import fakes
from tests.unit.db import records_fixtures as fx


class MoveScheduler(fakes.FakeScheduler):
    """The fake scheduler, honouring ignore_hosts and a requested host."""

    def select_destinations(self, ctxt, spec, uuids, return_alternates,
                            hand_over=None):
        everyone = self.hosts
        wanted = spec.requested_destination
        self.hosts = [h for h in everyone
                      if h[0] not in (spec.ignore_hosts or []) and
                      (wanted is None or wanted.host is None or
                       wanted.host == h[0])]
        try:
            if not self.hosts:
                raise fakes.no_valid_host('no host left')
            return super().select_destinations(ctxt, spec, uuids,
                                               return_alternates, hand_over)
        finally:
            self.hosts = everyone


def _post_allocations(placement):
    """POST /allocations for the fake placement: each consumer's entry
    written as its PUT would be (enough for the moves' swaps).
    """
    def post(url, body, version, context=None, **kwargs):
        assert url == '/allocations'
        for consumer, entry in body.items():
            resp = placement.put('/allocations/%s' % consumer, {
                'allocations': entry['allocations'],
                'consumer_generation': entry['consumer_generation'],
                'project_id': entry['project_id'],
                'user_id': entry['user_id']}, version)
            if not resp.ok:
                return resp
        return resp
    placement.post = post


class Computes(object):
    """The pre-checks and casts the flow sends to compute agents."""

    def __init__(self):
        self.refuse = {}
        self.calls = []

    def check_can_live_migrate_destination(self, ctxt, host, instance,
                                           migration, request_spec, limits,
                                           mappings, block_migration):
        self.calls.append(('dest-check', host, migration['dest_node']))
        if host in self.refuse:
            raise self.refuse[host]
        return {'block_migration': True, 'dest_node': host,
                'dest_numa_topology': {'cells': 'on-%s' % host},
                'dest_pci_devices': []}

    def check_can_live_migrate_source(self, ctxt, host, instance_uuid):
        self.calls.append(('source-check', host))
        return {}

    def drop_move_claim_at_destination(self, ctxt, host, migration_uuid):
        self.calls.append(('drop', host))

    def live_migration(self, ctxt, host, instance_uuid, migration_uuid,
                       dest, migrate_data, instance=None):
        self.calls.append(('live_migration', host, dest))
        self.sent = instance


@pytest.fixture
def world(tmp_path):
    world = fakes.World(tmp_path)
    world.manager._scheduler_api = world.scheduler = MoveScheduler(
        world.placement, world.scheduler.hosts)
    computes = Computes()
    for name in ('check_can_live_migrate_destination',
                 'check_can_live_migrate_source',
                 'drop_move_claim_at_destination', 'live_migration'):
        setattr(world.compute, name, getattr(computes, name))
    world.computes = computes
    _post_allocations(world.placement)
    for host in ('h1', 'h2', 'h3'):
        _service(world, host)
    yield world
    world.close()
    CONF.clear_override('migrate_max_retries')


def _service(world, host, age=0):
    now = timeutils.utcnow()

    def insert(ctx):
        ctx.session.execute(cell_tables.services.insert().values(
            uuid=str(uuid_lib.uuid4()), host=host, binary='berth-compute',
            topic='compute', report_count=1, disabled=False,
            forced_down=False, version=0, deleted=0, created_at=now,
            last_seen_up=now - timeutils.datetime.timedelta(seconds=age)))
    world.cell1.writer(insert)(fx.ctxt())


def _migrating(world):
    """A server built on h1, ACTIVE, then marked migrating as the API
    leaves it; its uuid.
    """
    spec, instances = world.boot(1)
    build_flow.schedule_and_build_instances(world.manager, fx.ctxt(), spec,
                                            [instances[0].uuid], instances)
    uuid = instances[0].uuid
    instance_records.update_instance(fx.ctxt(), world.cell1, uuid,
                                     {'vm_state': 'active',
                                      'task_state': None})
    instance_records.begin_action(fx.ctxt(), world.cell1, uuid,
                                  'live-migration',
                                  {'task_state': 'migrating'})
    world.scheduler.calls[:] = []
    world.scheduler.hand_overs[:] = []
    return uuid


def _migrate(world, uuid, **kwargs):
    live_migrate_flow.live_migrate_instance(
        world.manager, fx.ctxt(),
        live_migrate_flow.LiveMigrate(instance_uuid=uuid, **kwargs))


def _only_migration(world, uuid):
    [migration] = migration_records.list_migrations(
        fx.ctxt(), world.cell1,
        migration_records.Filters(instance_uuid=uuid))
    return migration


def _events(world, uuid):
    action = action_records.list_actions(fx.ctxt(), world.cell1, uuid)[0]
    return [(e['event'], e['result']) for e in action['events']]


def _resources(world, host):
    return {world.nodes[host]: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}}


def test_scheduled_destination_is_checked_claimed_and_cast(world):
    uuid = _migrating(world)
    _migrate(world, uuid, block_migration=None)
    migration = _only_migration(world, uuid)
    assert (migration.migration_type, migration.status) == (
        'live-migration', 'accepted')
    assert (migration.source_compute, migration.dest_compute,
            migration.dest_node) == ('h1', 'h2', 'h2')
    # the source is held by the migration, the destination by the server
    assert world.placement.allocations(migration.uuid) == _resources(
        world, 'h1')
    assert world.placement.allocations(uuid) == _resources(world, 'h2')
    [(spec, _uuids)] = world.scheduler.calls
    assert spec['move_type'] == 'live-migrate'
    assert spec['ignore_hosts'] == ['h1']
    assert world.computes.calls == [('dest-check', 'h2', 'h2'),
                                    ('source-check', 'h1'),
                                    ('live_migration', 'h1', 'h2')]
    row = instance_records.get_instance(fx.ctxt(), world.cell1, uuid)
    assert row.task_state == 'migrating' and row.host == 'h1'
    assert row.migration_context['migration_uuid'] == migration.uuid
    assert row.migration_context['new_numa_topology'] == {
        'cells': 'on-h2'}
    # NOTE: the source gets the server as written, so it reads nothing.
    sent = world.computes.sent
    assert (sent['uuid'], sent['task_state'], sent['host']) == (
        uuid, 'migrating', 'h1')
    assert sent['migration_context'] == row.migration_context
    assert _events(world, uuid) == [(live_migrate_flow.EVENT, 'Success')]


def test_a_lone_move_hands_its_source_over_in_the_claim(world,
                                                        monkeypatch):
    uuid = _migrating(world)
    writes = calls.record_calls(monkeypatch, world.placement, 'post',
                                lambda url, body, *a, **k: sorted(body))
    _migrate(world, uuid)
    migration = _only_migration(world, uuid)
    [hand_over] = world.scheduler.hand_overs
    assert hand_over['migration_uuid'] == migration.uuid
    assert hand_over['allocations'] == _resources(world, 'h1')
    # one write: the claim, which moved the source to the migration
    assert writes == [sorted([uuid, migration.uuid])]
    assert world.placement.allocations(migration.uuid) == _resources(
        world, 'h1')
    assert world.placement.allocations(uuid) == _resources(world, 'h2')


def test_a_move_off_a_busy_source_hands_over_before_it_schedules(world):
    uuid = _migrating(world)
    seen = []

    def before(spec, uuids):
        # NOTE: the source is held by the migration before the scheduler
        # is asked: the claim only writes the destination.
        [migration] = migration_records.list_migrations(
            fx.ctxt(), world.cell1,
            migration_records.Filters(instance_uuid=uuid))
        seen.append(world.placement.allocations(migration.uuid))
    world.scheduler.before = before
    with live_migrate_flow.BUSY_SOURCES.choosing_from('h1') as alone:
        assert alone
        _migrate(world, uuid)
    assert world.scheduler.hand_overs == [None]
    assert seen == [_resources(world, 'h1')]
    migration = _only_migration(world, uuid)
    assert world.placement.allocations(migration.uuid) == _resources(
        world, 'h1')
    assert world.placement.allocations(uuid) == _resources(world, 'h2')
    # the source is no longer busy once the destination is chosen
    with live_migrate_flow.BUSY_SOURCES.choosing_from('h1') as alone:
        assert alone


def test_no_valid_host_for_a_lone_move_leaves_the_server_its_source(world):
    uuid = _migrating(world)
    world.scheduler.fail = fakes.no_valid_host('nothing fits')
    with pytest.raises(exception.NoValidHost):
        _migrate(world, uuid)
    _assert_rolled_back(world, uuid)
    assert world.scheduler.hand_overs[0] is not None


def test_a_refused_destination_moves_on_to_the_next_alternate(world):
    uuid = _migrating(world)
    world.computes.refuse['h2'] = exception.MigrationPreCheckError(
        reason='no room for the pinned CPUs')
    _migrate(world, uuid)
    migration = _only_migration(world, uuid)
    assert migration.dest_compute == 'h3'
    # NOTE: a destination that refuses holds nothing; one that did not
    # answer may (see the timeout test).
    assert ('drop', 'h2') not in world.computes.calls
    assert world.placement.allocations(uuid) == _resources(world, 'h3')
    assert world.placement.used(world.nodes['h2']) == {}


def _assert_rolled_back(world, uuid, vm_state='active', status='error'):
    migration = _only_migration(world, uuid)
    assert migration.status == status
    assert world.placement.allocations(migration.uuid) == {}
    assert world.placement.allocations(uuid) == _resources(world, 'h1')
    row = instance_records.get_instance(fx.ctxt(), world.cell1, uuid)
    assert (row.vm_state, row.task_state, row.host) == (vm_state, None,
                                                        'h1')
    assert row.migration_context is None
    assert _events(world, uuid) == [(live_migrate_flow.EVENT, 'Error')]
    return row


def test_no_destination_left_gives_everything_back(world):
    uuid = _migrating(world)
    refused = exception.MigrationPreCheckError(reason='refused')
    world.computes.refuse.update(h2=refused, h3=refused)
    with pytest.raises(exception.NoValidHost):
        _migrate(world, uuid)
    row = _assert_rolled_back(world, uuid)
    assert row.fault['message'].startswith('No valid host was found.')
    assert not [c for c in world.computes.calls if c[0] ==
                'live_migration']


def test_migrate_max_retries_bounds_the_destinations_tried(world):
    CONF.set_override('migrate_max_retries', 0)
    uuid = _migrating(world)
    world.computes.refuse['h2'] = exception.MigrationPreCheckError(
        reason='refused')
    with pytest.raises(exception.MaxRetriesExceeded):
        _migrate(world, uuid)
    row = _assert_rolled_back(world, uuid)
    assert 'Exceeded max scheduling retries 0' in row.fault['message']
    assert [c[1] for c in world.computes.calls
            if c[0] == 'dest-check'] == ['h2']


def test_a_named_host_goes_through_the_scheduler(world):
    uuid = _migrating(world)
    _migrate(world, uuid, host='h3')
    [(spec, _uuids)] = world.scheduler.calls
    assert spec['requested_destination']['host'] == 'h3'
    assert _only_migration(world, uuid).dest_compute == 'h3'


def test_a_named_host_that_refuses_is_no_valid_host(world):
    uuid = _migrating(world)
    world.computes.refuse['h3'] = exception.MigrationPreCheckError(
        reason='refused')
    with pytest.raises(exception.NoValidHost):
        _migrate(world, uuid, host='h3')
    _assert_rolled_back(world, uuid)


def test_a_forced_host_skips_the_scheduler_but_is_claimed(world):
    uuid = _migrating(world)
    _migrate(world, uuid, host='h3', force=True)
    assert world.scheduler.calls == []
    migration = _only_migration(world, uuid)
    assert migration.dest_compute == 'h3'
    assert world.placement.allocations(uuid) == _resources(world, 'h3')
    assert world.placement.allocations(migration.uuid) == _resources(
        world, 'h1')


@pytest.mark.parametrize('host,error', [
    ('h1', exception.UnableToMigrateToSelf),
    ('h9', exception.ComputeHostNotFound),
    ('down', exception.ComputeServiceUnavailable)])
def test_a_forced_host_is_checked_as_nova_does(world, host, error):
    _service(world, 'down', age=3600)
    uuid = _migrating(world)
    with pytest.raises(error):
        _migrate(world, uuid, host=host, force=True)
    _assert_rolled_back(world, uuid)


def test_a_check_timing_out_counts_as_refused(world):
    uuid = _migrating(world)
    world.computes.refuse['h2'] = messaging.MessagingTimeout('slow')
    _migrate(world, uuid)
    assert _only_migration(world, uuid).dest_compute == 'h3'
    assert ('drop', 'h2') in world.computes.calls


def test_an_unexpected_failure_puts_the_server_in_error(world):
    uuid = _migrating(world)
    world.computes.refuse['h2'] = RuntimeError('agent bug')
    with pytest.raises(exception.MigrationError):
        _migrate(world, uuid)
    _assert_rolled_back(world, uuid, vm_state='error', status='failed')


def test_a_server_no_longer_migrating_is_left_alone(world):
    uuid = _migrating(world)
    instance_records.update_instance(fx.ctxt(), world.cell1, uuid,
                                     {'task_state': None})
    _migrate(world, uuid)
    assert migration_records.list_migrations(
        fx.ctxt(), world.cell1,
        migration_records.Filters(instance_uuid=uuid)) == []
    assert world.computes.calls == []


def test_a_server_deleted_during_the_checks_leaves_nothing_held(world):
    uuid = _migrating(world)
    check = world.computes.check_can_live_migrate_destination

    def deleted_meanwhile(*args, **kwargs):
        instance_records.destroy_instance(fx.ctxt(), world.cell1, uuid)
        return check(*args, **kwargs)
    world.compute.check_can_live_migrate_destination = deleted_meanwhile
    with pytest.raises(exception.MigrationError):
        _migrate(world, uuid)
    migration = _only_migration(world, uuid)
    assert migration.status == 'failed'
    assert world.placement.allocations(migration.uuid) == {}
    assert world.placement.allocations(uuid) == {}
    assert ('drop', 'h2') in world.computes.calls
    assert not [c for c in world.computes.calls
                if c[0] == 'live_migration']


# --- the bound for live migrations never cast to a compute -------------------

def _age(world, table, uuid_column, uuid, seconds):
    then = timeutils.utcnow() - timeutils.datetime.timedelta(seconds=seconds)

    def update(ctx):
        ctx.session.execute(table.update().where(
            table.c[uuid_column] == uuid).values(created_at=then,
                                                 updated_at=then))
    world.cell1.writer(update)(fx.ctxt())


def test_a_migration_whose_conductor_died_is_ended(world):
    uuid = _migrating(world)
    # NOTE: the flow stops after the scheduler's claim, as if killed.
    world.computes.refuse['h2'] = SystemExit()
    with pytest.raises(SystemExit):
        _migrate(world, uuid)
    migration = _only_migration(world, uuid)
    assert world.placement.allocations(migration.uuid) == _resources(
        world, 'h1')
    assert unstarted_live_migrations.run(world.manager, fx.ctxt(), 60) == []
    _age(world, cell_tables.migrations, 'uuid', migration.uuid, 120)
    assert unstarted_live_migrations.run(world.manager, fx.ctxt(),
                                         60) == [uuid]
    row = _assert_rolled_back(world, uuid)
    assert 'was not started within 60 seconds' in row.fault['message']
    # the destination it was checking is told to drop any claim
    assert ('drop', 'h2') in world.computes.calls


def test_a_server_left_migrating_without_a_migration_loses_its_task(world):
    uuid = _migrating(world)
    _age(world, cell_tables.instances, 'uuid', uuid, 120)
    assert unstarted_live_migrations.run(world.manager, fx.ctxt(),
                                         60) == [uuid]
    row = instance_records.get_instance(fx.ctxt(), world.cell1, uuid)
    assert (row.vm_state, row.task_state) == ('active', None)
    assert 'was not started within 60 seconds' in row.fault['message']


# --- the instance the API sends ---------------------------------------------

def _sent(world, uuid):
    instance = instance_records.get_instance(fx.ctxt(), world.cell1, uuid)
    instance.cell_uuid = fakes.CELL1_UUID
    return instance.to_primitive()


def test_the_instance_the_api_sent_is_not_read_again(world, monkeypatch):
    uuid = _migrating(world)
    sent = _sent(world, uuid)
    reads = calls.record_calls(monkeypatch, instance_records,
                               'get_instance', lambda *a, **k: a[2])
    live_migrate_flow.live_migrate_instance(
        world.manager, fx.ctxt(),
        live_migrate_flow.LiveMigrate(instance_uuid=uuid), instance=sent)
    assert reads == []
    assert _only_migration(world, uuid).dest_compute == 'h2'
    assert ('live_migration', 'h1', 'h2') in world.computes.calls


def test_a_sent_instance_deleted_since_leaves_nothing_held(world):
    uuid = _migrating(world)
    sent = _sent(world, uuid)
    instance_records.destroy_instance(fx.ctxt(), world.cell1, uuid)
    with pytest.raises(exception.MigrationError):
        live_migrate_flow.live_migrate_instance(
            world.manager, fx.ctxt(),
            live_migrate_flow.LiveMigrate(instance_uuid=uuid),
            instance=sent)
    migration = _only_migration(world, uuid)
    assert migration.status == 'failed'
    assert world.placement.allocations(migration.uuid) == {}
    assert world.placement.allocations(uuid) == {}
    assert not [c for c in world.computes.calls
                if c[0] == 'live_migration']
