# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Both ends of a live migration on one agent simulating two hosts."""

import json
import threading
import time

import pytest

from common import context
from common import exception
from common.numa import constraints
from common.objects import flavor as flavor_obj
from common.objects import migration as migration_obj
from common.objects import request_spec as spec_obj
from common.placement import move_allocations
from services.compute import build
from services.compute import live_migration
from services.compute.virt import migration as virt_migration
from tests.unit import calls

CTXT = context.get_admin_context()
V = 'placement 1.39'
HOSTS = ('cn0', 'cn1')
DEDICATED = {'hw:cpu_policy': 'dedicated'}


class Local(object):
    """The compute RPC API between the two hosts of the one agent."""

    def __init__(self, agent):
        self.agent = agent

    def pre_live_migration(self, ctxt, host, instance_uuid, migration_uuid):
        return live_migration.pre_live_migration(
            self.agent, ctxt, host, instance_uuid, migration_uuid)

    def post_live_migration_at_destination(self, ctxt, host, instance_uuid,
                                           migration_uuid, migrate_data):
        return live_migration.post_live_migration_at_destination(
            self.agent, ctxt, host, instance_uuid, migration_uuid,
            migrate_data)

    def rollback_live_migration_at_destination(self, ctxt, host,
                                               instance_uuid,
                                               migration_uuid):
        live_migration.rollback_live_migration_at_destination(
            self.agent, ctxt, host, instance_uuid, migration_uuid)


@pytest.fixture
def agent(make_agent):
    made = make_agent(fake_driver={'host_count': 2,
                                   'host_name_pattern': 'cn{index}'},
                      compute={'cpu_dedicated_set': '0-7'})
    made.start()
    made.compute_api = Local(made)
    return made


def _root(agent, host):
    return agent.conductor.nodes[(host, host)]['uuid']


def _build(agent, placement, host, vcpus=2, extra_specs=DEDICATED):
    """A server built on ``host`` (claim, spawn, placement); (instance,
    request spec).
    """
    flavor = flavor_obj.Flavor(name='f', flavorid='f', vcpus=vcpus,
                               memory_mb=64, root_gb=1,
                               extra_specs=extra_specs)
    numa = constraints.get_constraints(flavor, None)
    numa = numa and numa.to_primitive()
    inst = agent.conductor.add_instance(
        host, vcpus=vcpus, memory_mb=64, vm_state='building',
        task_state='scheduling', numa_topology=numa)
    inst['flavor'] = flavor.to_primitive()
    agent.conductor.instances[inst['uuid']]['flavor'] = inst['flavor']
    spec = spec_obj.RequestSpec(instance_uuid=inst['uuid'], flavor=flavor,
                                numa_topology=numa).to_primitive()
    request = {'allocations': {_root(agent, host): {'resources': {
        'PCPU': vcpus, 'MEMORY_MB': 64, 'DISK_GB': 1}}}}
    resp = placement.request('/allocations/%s' % inst['uuid'], 'PUT',
                             headers={'OpenStack-API-Version': V},
                             json=dict(request, consumer_generation=None,
                                       project_id='p1', user_id='u1',
                                       consumer_type='INSTANCE'))
    assert resp.status_code == 204, resp.text
    build.BuildTask(agent, CTXT, host, inst, spec, {
        'service_host': host, 'nodename': host, 'limits': {},
        'allocation_request': json.dumps(request)}, []).run()
    return agent.conductor.instances[inst['uuid']], spec


def _allocations(placement, consumer):
    resp = placement.request('/allocations/%s' % consumer, 'GET',
                             headers={'OpenStack-API-Version': V})
    return {rp: a['resources'] for rp, a in
            json.loads(resp.content)['allocations'].items()}


def _pins(row):
    return sorted(pin for cell in row['numa_topology']['cells']
                  for pin in (cell.get('cpu_pinning') or {}).values())


def _start(agent, placement, inst, spec, block_migration=None):
    """What the API and the conductor did before the cast: task
    migrating, the migration, the source allocation moved to it and the
    destination claimed in placement, the destination's check; (migration
    primitive, migrate data).
    """
    uuid = inst['uuid']
    agent.conductor.instances[uuid]['task_state'] = 'migrating'
    migration = agent.conductor.add_migration(
        uuid='0b9f4a52-57f6-4c52-9f5c-6f1d0e2b3c4d', instance_uuid=uuid,
        migration_type=migration_obj.LIVE_MIGRATION,
        status=migration_obj.ACCEPTED, source_compute='cn0',
        source_node='cn0', dest_compute='cn1', dest_node='cn1',
        old_flavor=inst['flavor'], new_flavor=inst['flavor'])
    client = agent.report.client
    held = move_allocations.to_migration(client, CTXT, uuid,
                                         migration['uuid'], 'p1', 'u1')
    [resources] = held.values()
    resp = client.put_allocations(CTXT, uuid, {_root(agent, 'cn1'): {
        'resources': resources}}, 'p1', 'u1', version='1.36')
    assert resp.ok, resp.body
    data = live_migration.check_can_live_migrate_destination(
        agent, CTXT, 'cn1', agent.conductor.instances[uuid], migration,
        spec, {}, None, block_migration)
    agent.conductor.instances[uuid]['migration_context'] = {
        'migration_uuid': migration['uuid'],
        'old_numa_topology': inst['numa_topology'],
        'new_numa_topology': data['dest_numa_topology']}
    return migration, data


def _migrate(agent, migration, data):
    live_migration.live_migration(agent, CTXT, 'cn0',
                                  migration['instance_uuid'],
                                  migration['uuid'], 'cn1', data)
    assert agent.live_migrations.wait_idle(timeout=30)
    return (agent.conductor.instances.get(migration['instance_uuid']),
            agent.conductor.migrations[migration['uuid']])


def _events(agent, uuid, name):
    return [e[2:] for e in agent.conductor.events
            if e[0] == uuid and e[1] == name]


def test_a_pinned_server_moves_with_new_pins_and_its_allocation(
        agent, placement):
    # NOTE: a server on cn1 first takes the CPUs the migrating one has on
    # cn0, so its pinning must change on the way.
    _build(agent, placement, 'cn1')
    inst, spec = _build(agent, placement, 'cn0')
    old_pins = _pins(inst)
    migration, data = _start(agent, placement, inst, spec)
    assert data['block_migration'] is True
    row, migration = _migrate(agent, migration, data)
    assert (row['host'], row['node'], row['task_state'], row['vm_state']) \
        == ('cn1', 'cn1', None, 'active')
    assert row['migration_context'] is None
    assert _pins(row) and set(_pins(row)).isdisjoint(old_pins)
    assert migration['status'] == 'completed'
    assert (migration['memory_total'], migration['memory_remaining']) == (
        64 * 1024 * 1024, 0)
    assert migration['disk_total'] == migration['disk_processed'] == 1024 ** 3
    assert inst['uuid'] in agent.driver.list_guests('cn1')
    assert inst['uuid'] not in agent.driver.list_guests('cn0')
    assert _allocations(placement, migration['uuid']) == {}
    assert _allocations(placement, inst['uuid']) == {
        _root(agent, 'cn1'): {'PCPU': 2, 'MEMORY_MB': 64, 'DISK_GB': 1}}
    assert agent.conductor.nodes[('cn0', 'cn0')]['vcpus_used'] == 0
    assert agent.conductor.nodes[('cn1', 'cn1')]['vcpus_used'] == 4
    assert _events(agent, inst['uuid'], live_migration.EVENT) == [
        ('finish', 'Success')]


def _statuses(agent, monkeypatch):
    """The migration statuses the source's writes set, in order."""
    written = []
    update = agent.move_updates.update

    def recorded(ctxt, uuid, migration_uuid, **changes):
        status = (changes.get('migration_values') or {}).get('status')
        if status:
            written.append((changes.get('expected_status'), status))
        return update(ctxt, uuid, migration_uuid, **changes)
    monkeypatch.setattr(agent.move_updates, 'update', recorded)
    return written


def test_a_migration_with_a_free_slot_starts_without_queueing(
        agent, placement, monkeypatch):
    inst, spec = _build(agent, placement, 'cn0')
    migration, data = _start(agent, placement, inst, spec)
    written = _statuses(agent, monkeypatch)
    row, ended = _migrate(agent, migration, data)
    assert (row['host'], ended['status']) == ('cn1', 'completed')
    assert written[0] == ('accepted', 'preparing')
    assert 'queued' not in [status for _from, status in written]


def test_a_migration_waiting_for_its_hosts_slot_shows_queued(
        agent, placement, monkeypatch):
    inst, spec = _build(agent, placement, 'cn0')
    migration, data = _start(agent, placement, inst, spec)
    written = _statuses(agent, monkeypatch)
    gate = threading.Event()
    # NOTE: another migration from cn0 holds its one slot.
    assert agent.live_migrations.start_now('cn0', lambda: gate.wait(30))
    live_migration.live_migration(agent, CTXT, 'cn0', inst['uuid'],
                                  migration['uuid'], 'cn1', data)
    assert agent.conductor.migrations[migration['uuid']]['status'] == \
        'queued'
    gate.set()
    assert agent.live_migrations.wait_idle(timeout=30)
    assert written[:2] == [('accepted', 'queued'), ('queued', 'preparing')]
    assert agent.conductor.migrations[migration['uuid']]['status'] == \
        'completed'


@pytest.mark.parametrize('queued', [False, True])
def test_a_cast_carrying_the_instance_reads_nothing_back(
        agent, placement, monkeypatch, queued):
    inst, spec = _build(agent, placement, 'cn0')
    migration, data = _start(agent, placement, inst, spec)
    reads = calls.record_calls(
        monkeypatch, agent.move_updates, 'update',
        lambda ctxt, uuid, migration_uuid, **changes: (
            changes.get('migration_values'), changes.get('brief')))
    gate = threading.Event()
    if queued:
        assert agent.live_migrations.start_now('cn0',
                                               lambda: gate.wait(30))
    live_migration.live_migration(
        agent, CTXT, 'cn0', inst['uuid'], migration['uuid'], 'cn1', data,
        instance=dict(agent.conductor.instances[inst['uuid']]))
    gate.set()
    assert agent.live_migrations.wait_idle(timeout=30)
    row = agent.conductor.instances[inst['uuid']]
    assert (row['host'], row['task_state']) == ('cn1', None)
    assert agent.conductor.migrations[migration['uuid']]['status'] == \
        'completed'
    # NOTE: the writes before the destination's (which reads the moved
    # row back for the source) are all brief.
    statuses = [(values or {}).get('status') for values, _brief in reads]
    before = reads[:statuses.index('running') + 1]
    assert [status for status in statuses if status in (
        'queued', 'preparing')] == (['queued', 'preparing'] if queued
                                    else ['preparing'])
    assert all(brief for _values, brief in before)


def test_a_destination_without_room_refuses_and_holds_nothing(
        agent, placement):
    _build(agent, placement, 'cn1', vcpus=8)
    inst, spec = _build(agent, placement, 'cn0')
    migration = {'uuid': '0b9f4a52-57f6-4c52-9f5c-6f1d0e2b3c4d',
                 'dest_node': 'cn1'}
    with pytest.raises(exception.MigrationPreCheckError) as caught:
        live_migration.check_can_live_migrate_destination(
            agent, CTXT, 'cn1', inst, migration, spec, {}, None, None)
    assert 'cannot fit' in str(caught.value)
    assert not agent.tracker('cn1').holds_claim(
        '0b9f4a52-57f6-4c52-9f5c-6f1d0e2b3c4d')
    assert _events(agent, inst['uuid'], live_migration.DEST_CHECK_EVENT) \
        == [('finish', 'Error')]


def _assert_rolled_back(agent, placement, inst, migration, status):
    row = agent.conductor.instances[inst['uuid']]
    assert (row['host'], row['task_state'], row['migration_context']) == (
        'cn0', None, None)
    assert _pins(row) == _pins(inst)
    assert agent.conductor.migrations[migration['uuid']]['status'] == status
    assert _allocations(placement, migration['uuid']) == {}
    assert _allocations(placement, inst['uuid']) == {
        _root(agent, 'cn0'): {'PCPU': 2, 'MEMORY_MB': 64, 'DISK_GB': 1}}
    assert not agent.tracker('cn1').holds_claim(migration['uuid'])
    assert agent.conductor.nodes[('cn1', 'cn1')]['vcpus_used'] == 0
    assert inst['uuid'] in agent.driver.list_guests('cn0')
    assert inst['uuid'] not in agent.driver.list_guests('cn1')


def test_a_failed_copy_rolls_back_with_a_fault(make_agent, placement, conf):
    agent = make_agent(fake_driver={
        'host_count': 2, 'host_name_pattern': 'cn{index}',
        'fail_live_migrations': ['copy:cn1']},
        compute={'cpu_dedicated_set': '0-7'})
    agent.start()
    agent.compute_api = Local(agent)
    inst, spec = _build(agent, placement, 'cn0')
    migration, data = _start(agent, placement, inst, spec)
    _migrate(agent, migration, data)
    _assert_rolled_back(agent, placement, inst, migration, 'error')
    [fault] = agent.conductor.faults
    assert 'copy:cn1 is in [fake_driver] fail_live_migrations' in \
        fault['message']
    assert _events(agent, inst['uuid'], live_migration.EVENT) == [
        ('finish', 'Error')]


def _during_copy(agent, monkeypatch, request):
    """Have ``request(agent, ctxt, host, instance, migration)`` arrive
    while the copy runs (as the RPC thread would deliver it).
    """
    copy = agent.driver.live_migration

    def copying(guest, dest, block, sizes, control, progress):
        request(agent, CTXT, 'cn0', guest.uuid,
                '0b9f4a52-57f6-4c52-9f5c-6f1d0e2b3c4d')
        return copy(guest, dest, block, sizes, control, progress)
    monkeypatch.setattr(agent.driver, 'live_migration', copying)


def test_an_abort_during_the_copy_cancels_and_rolls_back(
        agent, placement, monkeypatch):
    inst, spec = _build(agent, placement, 'cn0')
    migration, data = _start(agent, placement, inst, spec)
    _during_copy(agent, monkeypatch, live_migration.live_migration_abort)
    _migrate(agent, migration, data)
    _assert_rolled_back(agent, placement, inst, migration, 'cancelled')
    assert agent.conductor.faults == []
    assert _events(agent, inst['uuid'], live_migration.ABORT_EVENT) == [
        ('finish', 'Success')]


def test_force_complete_finishes_the_copy(agent, placement, monkeypatch):
    inst, spec = _build(agent, placement, 'cn0')
    migration, data = _start(agent, placement, inst, spec)
    _during_copy(agent, monkeypatch,
                 live_migration.live_migration_force_complete)
    row, migration = _migrate(agent, migration, data)
    assert (row['host'], migration['status']) == ('cn1', 'completed')
    assert _events(agent, inst['uuid'], live_migration.FORCE_EVENT) == [
        ('finish', 'Success')]


def test_a_request_for_a_migration_not_running_here_is_refused(agent):
    inst = agent.conductor.add_instance('cn0', task_state='migrating')
    assert not live_migration.live_migration_abort(
        agent, CTXT, 'cn0', inst['uuid'], 'nope')
    assert _events(agent, inst['uuid'], live_migration.ABORT_EVENT) == [
        ('finish', 'Error')]


def test_a_destination_that_lost_its_claim_rolls_back(agent, placement):
    inst, spec = _build(agent, placement, 'cn0')
    migration, data = _start(agent, placement, inst, spec)
    # NOTE: as after a restart of the destination's agent.
    live_migration.drop_move_claim_at_destination(agent, CTXT, 'cn1',
                                                  migration['uuid'])
    _migrate(agent, migration, data)
    _assert_rolled_back(agent, placement, inst, migration, 'error')
    assert 'no longer holds the claim' in agent.conductor.faults[0][
        'message']


def test_the_source_check_wants_a_running_guest(agent, placement):
    inst, _spec = _build(agent, placement, 'cn0', extra_specs={})
    assert live_migration.check_can_live_migrate_source(
        agent, CTXT, 'cn0', inst['uuid']) == {}
    agent.driver.power_off('cn0', inst['uuid'])
    with pytest.raises(exception.MigrationPreCheckError):
        live_migration.check_can_live_migrate_source(agent, CTXT, 'cn0',
                                                     inst['uuid'])


def test_a_restart_rolls_back_an_interrupted_migration(agent, placement):
    inst, spec = _build(agent, placement, 'cn0')
    migration, _data = _start(agent, placement, inst, spec)
    agent.conductor.migrations[migration['uuid']]['status'] = 'running'
    live_migration.recover(agent, CTXT, 'cn0', [
        agent.conductor.instances[inst['uuid']]])
    _assert_rolled_back(agent, placement, inst, migration, 'error')


def test_fake_copy_reports_progress_and_heeds_the_control(conf):
    from services.compute.virt import fake
    conf.config(group='fake_driver', live_migration_time=0.0)
    driver = fake.FakeDriver(conf.conf)
    guest = driver.list_guests  # noqa: F841 (the driver is enough)
    seen = []
    control = virt_migration.Control()

    class G(object):
        uuid, host = 'g', 'cn'
    driver.live_migration(G(), 'other', False, (100, 1000), control,
                          seen.append)
    assert [(p.memory_processed, p.disk_total) for p in seen] == [(100, 0)]
    control.abort()
    with pytest.raises(virt_migration.LiveMigrationAborted):
        driver.live_migration(G(), 'other', True, (100, 1000), control,
                              seen.append)


def test_the_destination_audit_keeps_a_migrating_servers_allocation(
        agent, placement):
    inst, spec = _build(agent, placement, 'cn0')
    _start(agent, placement, inst, spec)
    agent.update_all(CTXT)
    assert _allocations(placement, inst['uuid']) == {
        _root(agent, 'cn1'): {'PCPU': 2, 'MEMORY_MB': 64, 'DISK_GB': 1}}


def test_a_server_deleted_during_the_copy_leaves_nothing_held(
        agent, placement, monkeypatch):
    from services.compute import delete
    inst, spec = _build(agent, placement, 'cn0')
    migration, data = _start(agent, placement, inst, spec)

    def deleted(agent, ctxt, host, uuid, migration_uuid):
        delete.terminate(agent, ctxt, host, uuid)
    _during_copy(agent, monkeypatch, deleted)
    _migrate(agent, migration, data)
    assert inst['uuid'] not in agent.conductor.instances
    assert agent.conductor.migrations[migration['uuid']]['status'] == 'error'
    assert _allocations(placement, migration['uuid']) == {}
    assert _allocations(placement, inst['uuid']) == {}
    assert not agent.tracker('cn1').holds_claim(migration['uuid'])
    assert agent.driver.list_guests('cn1') == {}


def test_a_destination_may_have_its_own_copy_time(conf):
    from services.compute.virt import fake
    conf.config(group='fake_driver', live_migration_time=30.0,
                live_migration_time_by_host={'quick': '0', 'slow': '0.5'})
    driver = fake.FakeDriver(conf.conf)

    class G(object):
        uuid, host = 'g', 'cn'
    took = {}
    for dest in ('quick', 'slow'):
        started = time.monotonic()
        driver.live_migration(G(), dest, False, (100, 0),
                              virt_migration.Control(), lambda p: None)
        took[dest] = time.monotonic() - started
    assert took['quick'] < 0.2 and 0.4 < took['slow'] < 5, took


def test_progress_is_recorded_every_few_seconds_and_last_with_the_end(
        agent, placement, monkeypatch):
    """A copy reporting progress often is recorded at most every
    PROGRESS_INTERVAL seconds; its last report goes with the final
    status, so a finished migration shows the whole copy done.
    """
    inst, spec = _build(agent, placement, 'cn0')
    migration, data = _start(agent, placement, inst, spec)
    now = [1000.0]
    monkeypatch.setattr(time, 'monotonic', lambda: now[0])
    recorded = []
    update = agent.conductor.move_update

    def recording(ctxt, instance_uuid, migration_uuid, **changes):
        recorded.append(dict(changes.get('migration_values') or {}))
        return update(ctxt, instance_uuid, migration_uuid, **changes)
    monkeypatch.setattr(agent.conductor, 'move_update', recording)

    def copy(guest, dest, block, sizes, control, progress):
        memory = sizes[0]
        for second, fraction in ((1, 0.1), (6, 0.5), (7, 0.7), (8, 1.0)):
            now[0] = 1000.0 + second
            progress(virt_migration.Progress.at(fraction, memory, 0))
    monkeypatch.setattr(agent.driver, 'live_migration', copy)
    _row, migration = _migrate(agent, migration, data)
    processed = [(v.get('status'), v.get('memory_processed'))
                 for v in recorded if 'memory_processed' in v]
    total = migration['memory_total']
    assert processed == [(None, total // 2), ('completed', total)]
    assert migration['memory_processed'] == total


def test_a_claim_made_after_the_updates_read_is_kept(agent, placement,
                                                     monkeypatch):
    """A destination's pre-check between the periodic update's read of
    every host's instances and that host's own update: the read could
    not see the migration, so it must not drop the claim.
    """
    from services.compute import instance_sync
    inst, spec = _build(agent, placement, 'cn0')
    read = instance_sync.sync_many
    checked = {}

    def read_then_check(conductor, ctxt, copies, **kwargs):
        replies = read(conductor, ctxt, copies, **kwargs)
        checked['migration'], _data = _start(agent, placement, inst, spec)
        return replies
    monkeypatch.setattr(instance_sync, 'sync_many', read_then_check)
    agent.update_all(CTXT)
    assert agent.tracker('cn1').holds_claim(checked['migration']['uuid'])
