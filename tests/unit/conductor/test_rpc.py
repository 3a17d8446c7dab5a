# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The conductor over the in-process fake:// transport.

The ConductorAPI client against a ConductorManager server: the build cast
end to end, and every record call the compute agents make, with the
exceptions they must see as themselves.
"""

import threading
import time

import oslo_messaging as messaging
import pytest

from common.conf import CONF
from common.db import action_records
from common.db import boot_records
from common.db import host_instances
from common.db import instance_records
from common.db import migration_records
from common import exception
from common.objects import migration as migration_obj
from common import rpc
from common import servicegroup
from services.conductor import manager
from services.conductor import rpcapi
from tests.unit import calls
from tests.unit.conductor import fakes
from tests.unit.db import records_fixtures as fx
from tests.unit import rpc_versions


def test_client_and_server_versions_are_in_sync():
    rpc_versions.assert_versions_in_sync(rpcapi.ConductorAPI,
                                         manager.ConductorManager)


class _Delegate(object):
    """An endpoint forwarding to the current test's object.

    NOTE: one server for the module: stopping a fake:// server takes a
    second, which per test would dominate this file's run time.
    """

    def __init__(self, pick):
        self._pick = pick
        self.target = messaging.Target(version=manager.ConductorManager.
                                       target.version)

    def __getattr__(self, name):
        if name.startswith('_'):
            raise AttributeError(name)
        return getattr(self._pick(), name)


@pytest.fixture(scope='module')
def server():
    """The current World (set per test) served on fake://."""
    rpc.register_opts(CONF)
    CONF.set_override('transport_url', 'fake:///')
    CONF.set_override('rpc_response_timeout', 10)
    rpc.init(CONF)
    current = {}
    endpoints = [_Delegate(lambda: current['world'].manager),
                 _Delegate(lambda: current['world'].manager.records)]
    # NOTE: the dispatcher looks at its endpoints when it is made.
    current['world'] = None
    servers = rpc.ServerGroup([
        rpc.get_server(messaging.Target(topic=rpcapi.RPC_TOPIC,
                                        server='conductor-1'), endpoints),
        rpc.get_server(messaging.Target(topic=rpcapi.RECORDS_TOPIC,
                                        server='conductor-1'),
                       endpoints[1:])])
    servers.start()
    try:
        yield current
    finally:
        servers.stop()
        servers.wait()
        rpc.cleanup()
        CONF.clear_override('transport_url')
        CONF.clear_override('rpc_response_timeout')


@pytest.fixture
def served(server, tmp_path):
    """(world, ConductorAPI) for this test."""
    world = fakes.World(tmp_path)
    CONF.set_override('connection', world.cell1.connection,
                      group='database')
    server['world'] = world
    try:
        yield world, rpcapi.ConductorAPI()
    finally:
        server['world'] = None
        CONF.clear_override('connection', group='database')
        world.close()


def test_record_calls_have_their_own_topic(served):
    api = rpcapi.ConductorAPI()
    assert api._records().target.topic == 'conductor_records'


def test_schedule_and_build_cast_reaches_the_compute(served):
    world, api = served
    spec, instances = world.boot(1)
    api.schedule_and_build_instances(fx.ctxt(), spec, [instances[0].uuid],
                                     instances)
    assert world.compute.done.wait(10)
    assert world.compute.builds[0]['instance']['uuid'] == instances[0].uuid


def test_the_cast_carries_the_build_requests(served, monkeypatch):
    """The conductor builds from the instances the API sent, without
    reading them back.
    """
    world, api = served
    spec, instances = world.boot(1)
    reads = calls.record_calls(monkeypatch, boot_records,
                               'get_build_requests', lambda *a, **k: a[1])
    api.schedule_and_build_instances(fx.ctxt(), spec, [instances[0].uuid],
                                     build_requests=instances)
    assert world.compute.done.wait(10)
    built = world.compute.builds[0]['instance']
    assert (built['uuid'], built['display_name']) == (
        instances[0].uuid, instances[0].display_name)
    assert reads == []


def test_service_records_and_heartbeats(served):
    world, api = served
    ctxt = fx.ctxt()
    joined = servicegroup.ServiceRecord.from_primitive(
        api.service_join(ctxt, 'h9', 'berth-compute', 'compute'))
    assert (joined.host, joined.report_count) == ('h9', 0)
    reported = api.service_report(ctxt, 'h9', 'berth-compute')
    assert reported['report_count'] == 1
    api.service_join(ctxt, 'h8', 'berth-compute', 'compute')
    assert api.service_report_many(ctxt, ['h8', 'h9', 'ghost'],
                                   'berth-compute') is None
    assert api.service_get(ctxt, 'h9', 'berth-compute')['report_count'] == 2
    assert api.service_get(ctxt, 'nowhere', 'berth-compute') is None
    with pytest.raises(exception.ServiceNotFound):
        api.service_report(ctxt, 'nowhere', 'berth-compute')


def test_compute_node_records(served):
    world, api = served
    ctxt = fx.ctxt()
    saved = api.compute_node_save(ctxt, 'h9', 'n9', {
        'uuid': '99999999-9999-4999-8999-999999999999', 'vcpus': 8,
        'memory_mb': 8192, 'local_gb': 80,
        'numa_topology': {'cells': [{'id': 0}]},
        'stats': {'num_instances': 0}})
    assert saved['uuid'] == '99999999-9999-4999-8999-999999999999'
    assert saved['numa_topology'] == {'cells': [{'id': 0}]}
    again = api.compute_node_save(ctxt, 'h9', 'n9', {'vcpus_used': 2})
    assert again['id'] == saved['id'] and again['vcpus_used'] == 2
    # A brief save answers the node's id and uuid only.
    brief = api.compute_node_save(ctxt, 'h9', 'n9', {'vcpus_used': 3},
                                  brief=True)
    assert brief == {'id': saved['id'], 'uuid': saved['uuid']}
    assert api.compute_nodes_get_by_host(ctxt, 'h9')[0]['vcpus_used'] == 3
    assert [n['hypervisor_hostname'] for n in
            api.compute_nodes_get_by_host(ctxt, 'h9')] == ['n9']
    api.compute_node_delete(ctxt, 'h9', 'n9')
    assert api.compute_nodes_get_by_host(ctxt, 'h9') == []


def test_several_compute_node_records_in_one_call(served):
    """Brief saves of several nodes, answered in order."""
    world, api = served
    ctxt = fx.ctxt()
    first = api.compute_node_save(ctxt, 'h7', 'n7', {
        'vcpus': 8, 'memory_mb': 8192, 'local_gb': 80}, brief=True)
    saved = api.compute_nodes_save(ctxt, [
        {'host': 'h8', 'nodename': 'n8', 'values': {
            'vcpus': 4, 'memory_mb': 4096, 'local_gb': 40}},
        {'host': 'h7', 'nodename': 'n7', 'values': {'vcpus_used': 5}}])
    assert saved[1] == first and saved[0]['uuid'] != first['uuid']
    assert api.compute_nodes_get_by_host(ctxt, 'h7')[0]['vcpus_used'] == 5
    again = api.compute_nodes_save(ctxt, [
        {'host': 'h7', 'nodename': 'n7', 'values': {'vcpus_used': 6}},
        {'host': 'h8', 'nodename': 'n8', 'values': {'vcpus_used': 1}}])
    assert again == [saved[1], saved[0]]
    assert api.compute_nodes_get_by_host(ctxt, 'h8')[0]['vcpus_used'] == 1


def _built(world, ctxt, count):
    """``count`` instances scheduled and built by the conductor; their
    uuids.
    """
    spec, instances = world.boot(count)
    world.manager.schedule_and_build_instances(
        ctxt, spec.to_primitive(), [i.uuid for i in instances],
        [i.to_primitive() for i in instances])
    return [i.uuid for i in instances]


def test_instance_records(served):
    world, api = served
    ctxt = fx.ctxt()
    uuid, = _built(world, ctxt, 1)
    got = api.instance_get(ctxt, uuid)
    assert got['host'] == 'h1' and got['cell_uuid'] == fakes.CELL1_UUID
    assert [i['uuid'] for i in api.instances_get_by_host(ctxt, 'h1')] == [
        uuid]
    updated = api.instance_update(ctxt, uuid, {'task_state': 'spawning'},
                                  expected_task_state='scheduling')
    assert updated['task_state'] == 'spawning'
    with pytest.raises(exception.UnexpectedTaskStateError) as err:
        api.instance_update(ctxt, uuid, {'task_state': None},
                            expected_task_state=['deleting'])
    assert err.value.kwargs['actual'] == 'spawning'
    # A brief update answers None; the guard still applies.
    assert api.instance_update(ctxt, uuid, {'power_state': 1},
                               expected_task_state='spawning',
                               brief=True) is None
    assert api.instance_get(ctxt, uuid)['power_state'] == 1
    with pytest.raises(exception.UnexpectedTaskStateError):
        api.instance_update(ctxt, uuid, {'power_state': 0},
                            expected_task_state='deleting', brief=True)
    api.action_event_start(ctxt, uuid, 'compute_build_and_run_instance',
                           'h1')
    api.action_event_finish(ctxt, uuid, 'compute_build_and_run_instance',
                            'h1', 'Success')
    api.instance_fault_create(ctxt, uuid, 500, 'boom', 'trace', 'h1')
    action, = action_records.list_actions(ctxt, world.cell1, uuid)
    assert action['events'][0]['result'] == 'Success'
    assert instance_records.get_instance(ctxt, world.cell1, uuid).fault[
        'message'] == 'boom'
    api.instance_destroy(ctxt, uuid)
    assert world.mapping(uuid)['queued_for_delete']
    with pytest.raises(exception.InstanceNotFound):
        api.instance_get(ctxt, uuid)
    with pytest.raises(exception.InstanceNotFound):
        api.instance_destroy(ctxt, uuid)


def test_several_instance_updates_in_one_call(served):
    """Each update answered on its own, as instance_update raises."""
    world, api = served
    ctxt = fx.ctxt()
    first, second = _built(world, ctxt, 2)
    event = {'phase': 'start', 'event': 'compute_build_and_run_instance',
             'host': 'h1'}
    results = api.instance_updates(ctxt, [
        {'instance_uuid': first, 'values': {'task_state': 'spawning'},
         'expected_task_state': 'scheduling', 'action_event': event},
        {'instance_uuid': second, 'values': {'task_state': 'spawning'},
         'expected_task_state': 'deleting'},
        {'instance_uuid': 'no-such-instance', 'values': {'host': 'h'}},
        {'instance_uuid': second, 'values': {'uuid': 'other'}}])
    assert results[0] is None
    assert isinstance(results[1], exception.UnexpectedTaskStateError)
    assert results[1].kwargs['actual'] == 'scheduling'
    assert second in str(results[1])
    assert isinstance(results[2], exception.InstanceNotFound)
    assert 'no-such-instance' in str(results[2])
    assert isinstance(results[3], ValueError)
    assert api.instance_get(ctxt, first)['task_state'] == 'spawning'
    assert api.instance_get(ctxt, second)['task_state'] == 'scheduling'
    action, = action_records.list_actions(ctxt, world.cell1, first)
    assert [e['event'] for e in action['events']] == [
        'compute_build_and_run_instance']


def test_several_move_steps_in_one_call(served):
    """Each step answered on its own, as move_update answers or raises."""
    world, api = served
    ctxt = fx.ctxt()
    uuid, = _built(world, ctxt, 1)
    migration = migration_records.create_migration(
        ctxt, world.cell1, migration_obj.Migration(
            instance_uuid=uuid, status=migration_obj.MIGRATING,
            migration_type=migration_obj.MIGRATION, source_compute='h1',
            dest_compute='h2'))
    answers = api.move_updates(ctxt, [
        {'instance_uuid': uuid, 'migration_uuid': migration.uuid,
         'migration_values': {'status': migration_obj.POST_MIGRATING},
         'expected_status': migration_obj.MIGRATING},
        {'instance_uuid': uuid, 'migration_uuid': migration.uuid,
         'migration_values': {'status': migration_obj.FINISHED},
         'expected_status': migration_obj.MIGRATING, 'brief': True},
        {'instance_uuid': uuid, 'migration_uuid': 'no-such-migration',
         'migration_values': {'status': migration_obj.FINISHED}},
        {'instance_uuid': 'no-such-instance',
         'migration_uuid': migration.uuid},
    ])
    assert answers[0]['instance']['uuid'] == uuid
    assert answers[0]['instance']['cell_uuid'] == fakes.CELL1_UUID
    assert answers[0]['migration']['status'] == migration_obj.POST_MIGRATING
    assert isinstance(answers[1], exception.UnexpectedMigrationStatusError)
    assert answers[1].kwargs['actual'] == migration_obj.POST_MIGRATING
    assert isinstance(answers[2], exception.MigrationNotFound)
    assert 'no-such-migration' in str(answers[2])
    assert isinstance(answers[3], exception.InstanceNotFound)
    assert migration_records.get_migration(
        ctxt, world.cell1, migration.uuid).status == \
        migration_obj.POST_MIGRATING


def test_the_automatic_confirm_claims_over_rpc(served):
    """The claim, and the guard a user's confirm won, over the broker."""
    world, api = served
    ctxt = fx.ctxt()
    uuid, = _built(world, ctxt, 1)
    instance_records.update_instance(
        ctxt, world.cell1, uuid, {'vm_state': 'resized', 'task_state': None})
    migration = migration_records.create_migration(
        ctxt, world.cell1, migration_obj.Migration(
            instance_uuid=uuid, status=migration_obj.FINISHED,
            migration_type=migration_obj.RESIZE, source_compute='h1',
            dest_compute='h2'))
    claimed = api.move_claim_expired(ctxt, uuid, migration.uuid)
    assert claimed['instance']['cell_uuid'] == fakes.CELL1_UUID
    assert claimed['migration']['status'] == migration_obj.CONFIRMING
    assert action_records.list_actions(ctxt, world.cell1, uuid)[0][
        'action'] == 'confirmResize'
    with pytest.raises(exception.UnexpectedMigrationStatusError):
        api.move_claim_expired(ctxt, uuid, migration.uuid)


def test_reschedule_cast(served):
    world, api = served
    ctxt = fx.ctxt()
    uuid, = _built(world, ctxt, 1)
    build = world.compute.builds.pop()
    world.compute.done.clear()
    world.placement.delete('/allocations/%s' % uuid, '1.36')
    api.build_instances(ctxt, build['instance'], build['request_spec'],
                        build['alternates'], 'h1', 'h1', 'spawn failed')
    assert world.compute.done.wait(10)
    deadline = time.monotonic() + 5
    while not world.compute.builds and time.monotonic() < deadline:
        time.sleep(0.05)
    assert world.compute.builds[0]['host'] == 'h2'


def _on_h1(world, ctxt, count):
    """``count`` instances built, then all moved to h1; their uuids."""
    uuids = _built(world, ctxt, count)
    for uuid in uuids:
        world.manager.records.instance_update(
            ctxt, uuid, {'host': 'h1', 'node': 'h1'})
    return uuids


def test_instances_sync_of_a_host(served):
    world, api = served
    ctxt = fx.ctxt()
    first, second = _on_h1(world, ctxt, 2)
    full = api.instances_get_by_host(ctxt, 'h1',
                                     changed_since=rpcapi.SINCE_EVER)
    assert sorted(full['uuids']) == sorted([first, second])
    assert sorted(r['uuid'] for r in full['instances']) == sorted(
        full['uuids'])
    assert set(full['instances'][0]) == set(
        host_instances.TRACKED_FIELDS) | {'deleted'}
    quiet = api.instances_get_by_host(ctxt, 'h1',
                                      changed_since=full['as_of'])
    assert quiet['instances'] == [] and quiet['as_of'] >= full['as_of']
    api.instance_update(ctxt, first, {'task_state': 'rebooting'})
    api.instance_destroy(ctxt, second)
    changed = api.instances_get_by_host(ctxt, 'h1',
                                        changed_since=full['as_of'])
    assert [r['task_state'] for r in changed['instances']] == ['rebooting']
    assert changed['uuids'] == [first]
    # NOTE: without changed_since, the whole Instance primitives.
    assert [i['uuid'] for i in api.instances_get_by_host(ctxt, 'h1')] == [
        first]


class _Prepared(object):
    def __init__(self, answer):
        self.answer = answer

    def call(self, ctxt, method, **kwargs):
        return self.answer


@pytest.mark.parametrize('schedule_timeout, timeout', [(None, 1800),
                                                       (120, 120)])
def test_a_move_call_notices_a_dead_conductor_within_the_rpc_timeout(
        served, monkeypatch, schedule_timeout, timeout):
    """The API must not wait ``long_rpc_timeout`` for a conductor that
    died with its call (or that nobody runs): the call monitor ends the
    wait after ``rpc_response_timeout`` (10 here) without heartbeats.
    """
    _world, api = served
    CONF.set_override('long_rpc_timeout', 1800)
    CONF.set_override('schedule_timeout', schedule_timeout,
                      group='conductor')
    seen = {}

    def prepare(**kwargs):
        seen.update(kwargs)
        return _Prepared('h2')
    monkeypatch.setattr(api.client, 'prepare', prepare)
    try:
        assert api.migrate_server(fx.ctxt(), 'a-server') == 'h2'
    finally:
        CONF.clear_override('long_rpc_timeout')
        CONF.clear_override('schedule_timeout', group='conductor')
    assert (seen['timeout'], seen['call_monitor_timeout']) == (timeout, 10)


def test_the_image_pre_cache_cast_reaches_the_workflow(served, monkeypatch):
    _world, api = served
    seen = []
    done = threading.Event()

    def cache_images(conductor, ctxt, aggregate, image_ids):
        seen.append((aggregate, image_ids))
        done.set()
    monkeypatch.setattr(manager.image_cache, 'cache_images', cache_images)
    aggregate = {'id': 1, 'uuid': 'u', 'name': 'a', 'hosts': ['h1'],
                 'metadata': {}}
    api.cache_images(fx.ctxt(), aggregate, ('image-1',))
    assert done.wait(10)
    assert seen == [(aggregate, ['image-1'])]
