# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The computes' part of a resize: prep, send, finish, confirm, revert,
and the failures that reschedule or roll back.
"""

import json
import uuid as uuid_lib

from oslo_utils import timeutils
import pytest

from common import context as context_mod
from common.objects import flavor as flavor_obj
from common.objects import instance as inst
from common.objects import migration as migration_obj
from services.compute import manager as manager_mod
from services.compute import resize

SRC, DST = 'cn-0', 'cn-1'


def _flavor(vcpus, memory_mb):
    return flavor_obj.Flavor(name='f%d' % vcpus, flavorid='f%d' % vcpus,
                             vcpus=vcpus, memory_mb=memory_mb,
                             root_gb=1).to_primitive()


class _Casts(object):
    """The compute casts the steps make, recorded (the test runs them)."""

    def __init__(self):
        self.sent = []
        self.carried = []

    def __getattr__(self, method):
        def cast(ctxt, host, instance_uuid, migration_uuid, **kwargs):
            self.sent.append((method, host))
            self.carried.append(kwargs)
        return cast


def _send(manager, instance, migration, dest=DST):
    """The source's step, cast by the destination's prep."""
    manager.resize_instance(_ctxt(), instance['uuid'], migration, host=SRC,
                            dest_compute=dest)


def _finish(manager, casts):
    """The destination's step, with what the source's cast carried."""
    assert casts.sent[-1] == ('finish_resize', DST)
    carried = casts.carried[-1]
    manager.finish_resize(_ctxt(), carried['instance']['uuid'],
                          carried['migration']['uuid'], host=DST,
                          instance=carried['instance'],
                          migration=carried['migration'])


@pytest.fixture
def move(make_agent, monkeypatch):
    """(agent, manager, instance uuid, migration uuid, casts) of a server
    on cn-0 the API marked resize_prep, going to cn-1 with 2 vCPUs.
    """
    casts = _Casts()
    monkeypatch.setattr(resize, 'compute_api', lambda: casts)

    def _make(old_vm_state=inst.ACTIVE, **options):
        agent = make_agent(fake_driver=dict({'host_count': 2}, **options))
        conductor = agent.conductor
        instance = conductor.add_instance(
            SRC, vcpus=1, memory_mb=256, task_state=inst.RESIZE_PREP,
            system_metadata={'old_vm_state': old_vm_state})
        migration = conductor.add_migration(
            uuid=str(uuid_lib.uuid4()), instance_uuid=instance['uuid'],
            migration_type=migration_obj.RESIZE,
            status=migration_obj.PRE_MIGRATING, source_compute=SRC,
            source_node=SRC, dest_compute=DST, dest_node=DST,
            old_flavor=_flavor(1, 256), new_flavor=_flavor(2, 1024))
        agent.start()
        return (agent, manager_mod.ComputeManager(agent),
                conductor.instance_get(None, instance['uuid']),
                migration['uuid'], casts)
    return _make


def _ctxt():
    return context_mod.get_admin_context()


def _prep(agent, manager, instance, migration):
    manager.prep_resize(_ctxt(), instance, migration, _flavor(2, 1024), {},
                        {'nodename': DST, 'limits': {}}, [], host=DST)


def _run_to_verify(agent, manager, instance, migration, casts):
    _prep(agent, manager, instance, migration)
    _send(manager, instance, migration)
    _finish(manager, casts)
    return agent.conductor.instance_get(None, instance['uuid'])


def _confirm(agent, manager, instance_uuid, migration):
    """The conductor's confirm: the migration confirming, then the cast
    with the instance and migration as it read them.
    """
    agent.conductor.migrations[migration]['status'] = 'confirming'
    manager.confirm_resize(
        _ctxt(), instance_uuid, migration, host=SRC,
        instance=agent.conductor.instance_get(None, instance_uuid),
        migration=dict(agent.conductor.migrations[migration]))


def _used(agent, host):
    agent.update_all()
    return agent.conductor.nodes[(host, host)]['vcpus_used']


def test_a_resize_runs_to_verify_resize_then_confirm(move):
    agent, manager, instance, migration, casts = move()
    _prep(agent, manager, instance, migration)
    row = agent.conductor.instance_get(None, instance['uuid'])
    assert row['migration_context']['migration_uuid'] == migration
    assert agent.conductor.migrations[migration]['status'] == 'migrating'
    assert casts.sent == [('resize_instance', SRC)]
    # NOTE: both sides count while the move is in flight.
    assert (_used(agent, SRC), _used(agent, DST)) == (1, 2)
    _send(manager, instance, migration)
    assert agent.driver.get_info(SRC, instance['uuid']) == inst.SHUTDOWN
    assert casts.sent[-1] == ('finish_resize', DST)
    _finish(manager, casts)
    row = agent.conductor.instance_get(None, instance['uuid'])
    assert (row['host'], row['flavor']['vcpus']) == (DST, 2)
    assert (row['vm_state'], row['task_state']) == (inst.RESIZED, None)
    assert inst.status_from_state(row['vm_state']) == 'VERIFY_RESIZE'
    assert agent.conductor.migrations[migration]['status'] == 'finished'
    assert (_used(agent, SRC), _used(agent, DST)) == (1, 2)
    _confirm(agent, manager, instance['uuid'], migration)
    row = agent.conductor.instance_get(None, instance['uuid'])
    assert (row['vm_state'], row['migration_context']) == (inst.ACTIVE,
                                                           None)
    assert agent.conductor.migrations[migration]['status'] == 'confirmed'
    assert instance['uuid'] not in agent.driver.list_guests(SRC)
    assert (_used(agent, SRC), _used(agent, DST)) == (0, 2)
    events = [(e, p, r) for u, e, p, r in agent.conductor.events]
    assert ('compute_finish_resize', 'finish', 'Success') in events
    assert ('compute_confirm_resize', 'finish', 'Success') in events


def test_a_revert_puts_the_server_back_with_its_old_flavor(move):
    agent, manager, instance, migration, casts = move()
    _run_to_verify(agent, manager, instance, migration, casts)
    agent.conductor.migrations[migration]['status'] = 'reverting'
    agent.conductor.instances[instance['uuid']]['task_state'] = \
        inst.RESIZE_REVERTING
    manager.revert_resize(_ctxt(), instance['uuid'], migration, host=DST)
    assert instance['uuid'] not in agent.driver.list_guests(DST)
    assert casts.sent[-1] == ('finish_revert_resize', SRC)
    manager.finish_revert_resize(_ctxt(), instance['uuid'], migration,
                                 host=SRC)
    row = agent.conductor.instance_get(None, instance['uuid'])
    assert (row['host'], row['flavor']['vcpus']) == (SRC, 1)
    assert (row['vm_state'], row['task_state']) == (inst.ACTIVE, None)
    assert agent.driver.get_info(SRC, instance['uuid']) == inst.RUNNING
    assert agent.conductor.migrations[migration]['status'] == 'reverted'
    assert (_used(agent, SRC), _used(agent, DST)) == (1, 0)


_VF_REQUEST = {'count': 1, 'spec': [{'vendor_id': '8086',
                                     'product_id': '154c'}]}


def test_a_revert_takes_back_the_pci_requests_the_resize_brought(move):
    # NOTE: a server with no PCI request resized to a flavor with one:
    # back on its source it has no device, so it asks for none either.
    agent, manager, instance, migration, casts = move(pci_device=[
        json.dumps({'address': '0000:81:00.0', 'vendor_id': '8086',
                    'product_id': '1572', 'vfs': 2,
                    'vf_product_id': '154c', 'numa_node': 0})])
    manager.prep_resize(_ctxt(), instance, migration, _flavor(2, 1024),
                        {'pci_requests': [_VF_REQUEST]},
                        {'nodename': DST, 'limits': {}}, [], host=DST)
    _send(manager, instance, migration)
    _finish(manager, casts)
    row = agent.conductor.instance_get(None, instance['uuid'])
    assert row['pci_requests'] == [_VF_REQUEST]
    agent.conductor.migrations[migration]['status'] = 'reverting'
    agent.conductor.instances[instance['uuid']]['task_state'] = \
        inst.RESIZE_REVERTING
    manager.revert_resize(_ctxt(), instance['uuid'], migration, host=DST)
    manager.finish_revert_resize(_ctxt(), instance['uuid'], migration,
                                 host=SRC)
    row = agent.conductor.instance_get(None, instance['uuid'])
    assert (row['host'], row['pci_requests']) == (SRC, [])
    assert agent.driver.list_guests(SRC)[instance['uuid']].pci_devices == []


def test_a_stopped_server_stays_stopped(move):
    agent, manager, instance, migration, casts = move(
        old_vm_state=inst.STOPPED)
    row = _run_to_verify(agent, manager, instance, migration, casts)
    assert row['power_state'] == inst.SHUTDOWN
    assert agent.driver.get_info(DST, instance['uuid']) == inst.SHUTDOWN
    _confirm(agent, manager, instance['uuid'], migration)
    row = agent.conductor.instance_get(None, instance['uuid'])
    assert row['vm_state'] == inst.STOPPED


def test_a_destination_that_fails_asks_for_a_reschedule(move):
    agent, manager, instance, migration, casts = move(
        fail_actions=['prep_resize:%s' % DST])
    _prep(agent, manager, instance, migration)
    [call] = agent.conductor.move_calls
    assert call[0] == 'migrate_reschedule' and call[3] == DST
    assert casts.sent == []
    assert _used(agent, DST) == 2
    # NOTE: the claim is gone; what DST still counts is the migration
    # the conductor has not moved on yet.
    agent.conductor.migrations[migration]['status'] = 'error'
    assert _used(agent, DST) == 0


def test_a_source_that_fails_rolls_the_move_back(move):
    agent, manager, instance, migration, casts = move(
        fail_actions=['migrate_disk_and_power_off'])
    _prep(agent, manager, instance, migration)
    _send(manager, instance, migration)
    [call] = agent.conductor.move_calls
    assert call[:3] == ('revert_resize', instance['uuid'], migration)
    assert 'fail_actions' in call[3]
    assert agent.conductor.faults[-1]['uuid'] == instance['uuid']
    # NOTE: the conductor's revert reaches the destination, which hands
    # the server back; the migration ends in error.
    manager.revert_resize(_ctxt(), instance['uuid'], migration, host=DST,
                          reason=call[3])
    manager.finish_revert_resize(_ctxt(), instance['uuid'], migration,
                                 host=SRC, reason=call[3])
    row = agent.conductor.instance_get(None, instance['uuid'])
    assert (row['host'], row['vm_state'], row['task_state']) == (
        SRC, inst.ACTIVE, None)
    assert agent.conductor.migrations[migration]['status'] == 'error'
    assert (_used(agent, SRC), _used(agent, DST)) == (1, 0)


def test_old_finished_moves_are_confirmed_after_the_window(move):
    agent, manager, instance, migration, casts = move()
    _run_to_verify(agent, manager, instance, migration, casts)
    agent.conductor.migrations[migration]['updated_at'] = \
        timeutils.utcnow().isoformat()
    agent.update_all()
    assert resize.confirm_expired(agent, _ctxt(), 3600) == []
    agent.conductor.migrations[migration]['updated_at'] = \
        '2020-01-01T00:00:00'
    agent.update_all()
    assert resize.confirm_expired(agent, _ctxt(), 3600) == [migration]
    assert agent.conductor.migrations[migration]['status'] == 'confirming'
    # NOTE: as a user's confirm: cast to the source, the conductor only
    # writes the claim.
    assert casts.sent[-1] == ('confirm_resize', SRC)
    assert not getattr(agent.conductor, 'move_calls', [])
    assert agent.conductor.actions == [(instance['uuid'], 'confirmResize')]


def _expired(agent, manager, instance, migration, casts):
    _run_to_verify(agent, manager, instance, migration, casts)
    agent.conductor.migrations[migration]['updated_at'] = \
        '2020-01-01T00:00:00'
    agent.update_all()
    return len(casts.sent)


def test_an_expired_move_of_a_busy_server_is_left_for_the_next_round(move):
    agent, manager, instance, migration, casts = move()
    sent = _expired(agent, manager, instance, migration, casts)
    agent.conductor.instances[instance['uuid']]['task_state'] = \
        inst.DELETING
    assert resize.confirm_expired(agent, _ctxt(), 3600) == []
    assert agent.conductor.migrations[migration]['status'] == 'finished'
    assert len(casts.sent) == sent
    agent.conductor.instances[instance['uuid']]['task_state'] = None
    assert resize.confirm_expired(agent, _ctxt(), 3600) == [migration]


@pytest.mark.parametrize('gone', [False, True])
def test_an_expired_move_of_a_server_not_resized_is_set_to_error(move, gone):
    agent, manager, instance, migration, casts = move()
    sent = _expired(agent, manager, instance, migration, casts)
    # NOTE: e.g. an administrator's reset-state, or a row gone.
    if gone:
        del agent.conductor.instances[instance['uuid']]
    else:
        agent.conductor.instances[instance['uuid']]['vm_state'] = \
            inst.ACTIVE
    assert resize.confirm_expired(agent, _ctxt(), 3600) == []
    assert agent.conductor.migrations[migration]['status'] == 'error'
    assert len(casts.sent) == sent
    assert not getattr(agent.conductor, 'actions', [])


def test_a_restart_while_sending_rolls_the_move_back(move):
    agent, manager, instance, migration, casts = move()
    _prep(agent, manager, instance, migration)
    agent.conductor.instances[instance['uuid']]['task_state'] = \
        inst.RESIZE_MIGRATING
    rows = agent.conductor.instances_get_by_host(None, SRC)
    resize.recover(agent, _ctxt(), SRC, rows)
    assert agent.conductor.move_calls == [
        ('revert_resize', instance['uuid'], migration, resize.INTERRUPTED)]
    assert agent.conductor.faults[-1]['message'] == resize.INTERRUPTED


def test_a_send_still_queued_at_a_restart_finds_its_move_rolled_back(move):
    """The prep wrote ``resize_migrating`` and cast the send; the source
    restarted before it took the cast: the move goes back, and the cast
    taken afterwards leaves the guest alone.
    """
    agent, manager, instance, migration, casts = move()
    _prep(agent, manager, instance, migration)
    row = agent.conductor.instance_get(None, instance['uuid'])
    assert row['task_state'] == inst.RESIZE_MIGRATING
    resize.recover(agent, _ctxt(), SRC,
                   agent.conductor.instances_get_by_host(None, SRC))
    assert agent.conductor.move_calls == [
        ('revert_resize', instance['uuid'], migration, resize.INTERRUPTED)]
    _send(manager, instance, migration)
    assert agent.driver.get_info(SRC, instance['uuid']) == inst.RUNNING
    assert casts.sent == [('resize_instance', SRC)]
    assert agent.conductor.migrations[migration]['status'] == 'migrating'


def test_a_finish_that_fails_rolls_the_move_back(move):
    agent, manager, instance, migration, casts = move(
        fail_actions=['finish_migration:%s' % DST])
    _prep(agent, manager, instance, migration)
    _send(manager, instance, migration)
    _finish(manager, casts)
    [call] = agent.conductor.move_calls
    assert call[:3] == ('revert_resize', instance['uuid'], migration)
    assert instance['uuid'] not in agent.driver.list_guests(DST)
    row = agent.conductor.instance_get(None, instance['uuid'])
    assert row['host'] == SRC
    events = [(e, r) for u, e, p, r in agent.conductor.events
              if p == 'finish']
    assert ('compute_finish_resize', 'Error') in events


# --- a server deleted mid-move ----------------------------------------------

V = 'placement 1.39'


def _hold(agent, placement, consumer, host, consumer_type, vcpus):
    """``consumer`` holds ``vcpus`` on ``host`` in placement."""
    resp = placement.request(
        '/allocations/%s' % consumer, 'PUT',
        headers={'OpenStack-API-Version': V},
        json={'allocations': {agent.conductor.nodes[(host, host)]['uuid']: {
            'resources': {'VCPU': vcpus}}}, 'consumer_generation': None,
            'project_id': 'p1', 'user_id': 'u1',
            'consumer_type': consumer_type})
    assert resp.status_code == 204, resp.text


def _held(placement, consumer):
    resp = placement.request('/allocations/%s' % consumer, 'GET',
                             headers={'OpenStack-API-Version': V})
    return json.loads(resp.content)['allocations']


def _placed(agent, placement, instance, migration):
    """The conductor's placement writes before prep_resize: the source
    held by the migration, the destination claimed for the instance.
    """
    _hold(agent, placement, migration, SRC, 'MIGRATION', 1)
    _hold(agent, placement, instance['uuid'], DST, 'INSTANCE', 2)


def test_the_source_drops_the_migrations_allocation_when_it_confirms(
        move, placement):
    agent, manager, instance, migration, casts = move()
    _placed(agent, placement, instance, migration)
    _run_to_verify(agent, manager, instance, migration, casts)
    assert _held(placement, migration) != {}
    _confirm(agent, manager, instance['uuid'], migration)
    assert agent.conductor.migrations[migration]['status'] == 'confirmed'
    assert _held(placement, migration) == {}
    assert list(_held(placement, instance['uuid'])) == [
        agent.conductor.nodes[(DST, DST)]['uuid']]


def test_a_failed_confirm_still_frees_the_source(move, placement):
    agent, manager, instance, migration, casts = move()
    _placed(agent, placement, instance, migration)
    _run_to_verify(agent, manager, instance, migration, casts)
    agent.driver.confirm_migration = _boom
    _confirm(agent, manager, instance['uuid'], migration)
    assert agent.conductor.instances[instance['uuid']]['vm_state'] == \
        inst.ERROR
    assert _held(placement, migration) == {}


def _boom(*args):
    raise RuntimeError('the old guest would not go')


@pytest.mark.parametrize('reason', [None, 'the send failed'])
def test_the_destination_gives_the_source_back_when_it_reverts(
        move, placement, reason):
    # NOTE: a user's revert (from the API) and a rollback (from the
    # conductor) alike; first, so a driver that fails keeps nothing.
    agent, manager, instance, migration, casts = move()
    _placed(agent, placement, instance, migration)
    _run_to_verify(agent, manager, instance, migration, casts)
    agent.conductor.migrations[migration]['status'] = 'reverting'
    agent.conductor.instances[instance['uuid']]['task_state'] = \
        inst.RESIZE_REVERTING
    agent.driver.destroy = _boom
    manager.revert_resize(_ctxt(), instance['uuid'], migration, host=DST,
                          reason=reason)
    assert _held(placement, migration) == {}
    assert list(_held(placement, instance['uuid'])) == [
        agent.conductor.nodes[(SRC, SRC)]['uuid']]


def test_a_server_deleted_while_it_is_sent_drops_its_whole_move(
        move, placement):
    agent, manager, instance, migration, casts = move()
    _placed(agent, placement, instance, migration)
    _prep(agent, manager, instance, migration)
    # NOTE: the API marks the delete while the source sends the guest.
    agent.conductor.instances[instance['uuid']]['task_state'] = \
        inst.DELETING
    _send(manager, instance, migration)
    assert casts.sent == [('resize_instance', SRC)]
    assert agent.conductor.migrations[migration]['status'] == 'error'
    assert _held(placement, migration) == {}
    assert _held(placement, instance['uuid']) == {}
    assert instance['uuid'] not in agent.driver.list_guests(SRC)
    # NOTE: the destination's move claim too (the row still counts on
    # its source until the delete ends).
    assert (_used(agent, SRC), _used(agent, DST)) == (1, 0)


def test_a_step_after_the_delete_drops_the_move(move, placement):
    agent, manager, instance, migration, casts = move()
    _placed(agent, placement, instance, migration)
    _prep(agent, manager, instance, migration)
    _send(manager, instance, migration)
    # NOTE: the delete ran on the source meanwhile (its own allocation,
    # its row); finish_resize then finds no server.
    agent.conductor.instance_destroy(_ctxt(), instance['uuid'])
    _finish(manager, casts)
    assert agent.conductor.migrations[migration]['status'] == 'error'
    assert _held(placement, migration) == {}
    assert instance['uuid'] not in agent.driver.list_guests(DST)
    assert (_used(agent, SRC), _used(agent, DST)) == (0, 0)


def test_a_confirm_after_the_delete_drops_the_migration_once(
        move, placement, monkeypatch):
    agent, manager, instance, migration, casts = move()
    _placed(agent, placement, instance, migration)
    _run_to_verify(agent, manager, instance, migration, casts)
    client = agent.report.client
    deletes = []
    delete = client.delete_allocations

    def counted(ctxt, consumer, **kwargs):
        deletes.append(consumer)
        return delete(ctxt, consumer, **kwargs)
    monkeypatch.setattr(client, 'delete_allocations', counted)
    # NOTE: the API claimed the confirm with the server it read; the
    # server is deleted before the source runs the step.
    sent = agent.conductor.instance_get(None, instance['uuid'])
    agent.conductor.migrations[migration]['status'] = 'confirming'
    agent.conductor.instance_destroy(_ctxt(), instance['uuid'])
    manager.confirm_resize(
        _ctxt(), instance['uuid'], migration, host=SRC, instance=sent,
        migration=dict(agent.conductor.migrations[migration]))
    assert deletes.count(migration) == 1
    assert _held(placement, migration) == {}
    assert instance['uuid'] not in agent.driver.list_guests(SRC)


def test_a_prep_after_the_delete_drops_its_claim(move, placement):
    agent, manager, instance, migration, casts = move()
    _placed(agent, placement, instance, migration)
    agent.conductor.instance_destroy(_ctxt(), instance['uuid'])
    _prep(agent, manager, instance, migration)
    assert casts.sent == []
    assert getattr(agent.conductor, 'move_calls', []) == []
    assert agent.conductor.migrations[migration]['status'] == 'error'
    assert _held(placement, migration) == {}
    assert _held(placement, instance['uuid']) == {}
    assert _used(agent, DST) == 0


def test_a_move_ended_by_someone_else_is_left_to_them(move, placement):
    agent, manager, instance, migration, casts = move()
    _placed(agent, placement, instance, migration)
    _prep(agent, manager, instance, migration)
    # NOTE: e.g. the conductor's stuck-move bound: task cleared.
    agent.conductor.instances[instance['uuid']]['task_state'] = None
    _send(manager, instance, migration)
    assert casts.sent == [('resize_instance', SRC)]
    assert agent.conductor.migrations[migration]['status'] == 'migrating'
    assert _held(placement, migration) != {}
    assert _held(placement, instance['uuid']) != {}


class _Sent(object):
    def __init__(self):
        self.sent = []

    def info(self, ctxt, event_type, payload):
        self.sent.append((event_type, payload['nova_object.data']))

    error = info


def test_notifications_show_each_step_and_cost_no_reads_when_off(
        move, monkeypatch):
    """With notifications off a step reads the instance only when it
    needs it; with them on, the payloads still show every moment.
    """
    from services.compute import notifier as notifier_mod

    def steps(agent, manager, instance, migration, casts):
        del agent.conductor.calls[:]
        _prep(agent, manager, instance, migration)
        _send(manager, instance, migration)
        _finish(manager, casts)
        calls = [c for c in agent.conductor.calls if c.startswith(
            ('instance', 'move'))]
        primitives = (
            agent.conductor.instance_get(None, instance['uuid']),
            dict(agent.conductor.migrations[migration], status='confirming'))
        agent.conductor.migrations[migration]['status'] = 'confirming'
        del agent.conductor.calls[:]
        manager.confirm_resize(_ctxt(), instance['uuid'], migration,
                               host=SRC, instance=primitives[0],
                               migration=primitives[1])
        return calls + [c for c in agent.conductor.calls if c.startswith(
            ('instance', 'move'))]
    # NOTE: one write per step, at its end; none reads the move.
    assert steps(*move()) == ['move_update'] * 4

    agent, manager, instance, migration, casts = move()
    sent = _Sent()
    for host in (SRC, DST):
        monkeypatch.setattr(notifier_mod.for_host(host), '_notifier', sent)
    assert steps(agent, manager, instance, migration, casts) == [
        'move_update', 'instance_get'] + ['move_update'] * 3
    shown = [(event, data['state'], data['task_state'], data['host'])
             for event, data in sent.sent]
    assert shown == [
        ('instance.resize.start', inst.ACTIVE, inst.RESIZE_MIGRATING, SRC),
        ('instance.resize.end', inst.ACTIVE, inst.RESIZE_MIGRATING, SRC),
        ('instance.resize_finish.start', inst.ACTIVE, inst.RESIZE_FINISH,
         SRC),
        ('instance.resize_finish.end', inst.ACTIVE, inst.RESIZE_FINISH,
         SRC),
        ('instance.resize_confirm.start', inst.RESIZED, None, DST),
        ('instance.resize_confirm.end', inst.ACTIVE, None, DST)]


def test_batched_steps_write_through_move_updates(make_agent, monkeypatch):
    """With ``record_save_delay`` the steps' writes go in move_updates
    calls, and the move ends exactly as when each goes alone.
    """
    casts = _Casts()
    monkeypatch.setattr(resize, 'compute_api', lambda: casts)
    agent = make_agent(fake_driver={'host_count': 2},
                       compute={'record_save_delay': 0.02})
    conductor = agent.conductor
    instance = conductor.add_instance(SRC, vcpus=1, memory_mb=256,
                                      task_state=inst.RESIZE_PREP)
    migration = conductor.add_migration(
        uuid=str(uuid_lib.uuid4()), instance_uuid=instance['uuid'],
        migration_type=migration_obj.MIGRATION,
        status=migration_obj.PRE_MIGRATING, source_compute=SRC,
        source_node=SRC, dest_compute=DST, dest_node=DST,
        old_flavor=_flavor(1, 256), new_flavor=_flavor(1, 256))['uuid']
    agent.start()
    manager = manager_mod.ComputeManager(agent)
    del conductor.calls[:]
    _run_to_verify(agent, manager, conductor.instance_get(
        None, instance['uuid']), migration, casts)
    _confirm(agent, manager, instance['uuid'], migration)
    agent.stop()
    row = conductor.instance_get(None, instance['uuid'])
    assert (row['host'], row['vm_state'], row['task_state']) == (
        DST, inst.ACTIVE, None)
    assert conductor.migrations[migration]['status'] == 'confirmed'
    assert 'move_update' not in conductor.calls
    # prep, resize_instance, finish_resize, confirm: one write each
    assert conductor.calls.count('move_updates') == 4
    assert [(e, p, r) for u, e, p, r in conductor.events
            if e == 'compute_resize_instance'] == [
        ('compute_resize_instance', 'start', None),
        ('compute_resize_instance', 'finish', 'Success')]
