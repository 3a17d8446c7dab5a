# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""schedule_and_build_instances: cells, mappings, casts and cell0."""

import json

import oslo_messaging as messaging
import pytest

from common.db import action_records
from common.db import boot_records
from common.db import cells
from common.db import instance_records
from common.objects import instance as instance_obj
from common.objects import instance_group as group_obj
from services.conductor import build_flow
from tests.unit.conductor import fakes
from tests.unit.db import records_fixtures as fx


@pytest.fixture
def world(tmp_path):
    world = fakes.World(tmp_path)
    yield world
    world.close()


def _run(world, spec, instances):
    return build_flow.schedule_and_build_instances(
        world.manager, fx.ctxt(), spec, [i.uuid for i in instances],
        instances)


def test_instances_land_in_the_cell_of_their_hosts(world):
    world.add_zone('az1', ['h1'])
    spec, instances = world.boot(2)
    cast = _run(world, spec, instances)
    assert cast == {instances[0].uuid: 'h1', instances[1].uuid: 'h2'}
    for instance, host, zone in zip(instances, ('h1', 'h2'),
                                    ('az1', 'nova')):
        row = instance_records.get_instance(fx.ctxt(), world.cell1,
                                            instance.uuid)
        assert (row.host, row.node, row.availability_zone) == (
            host, host, zone)
        assert (row.vm_state, row.task_state) == ('building', 'scheduling')
        assert world.mapping(instance.uuid)['cell_uuid'] == fakes.CELL1_UUID
        assert boot_records.get_build_request(
            fx.ctxt(), instance.uuid, database=world.api) is None
        actions = action_records.list_actions(fx.ctxt(), world.cell1,
                                              instance.uuid)
        assert [a['action'] for a in actions] == ['create']
        assert world.placement.allocations(instance.uuid)
    first = world.compute.builds[0]
    assert first['host'] == 'h1' and first['node'] == 'h1'
    assert first['instance']['uuid'] == instances[0].uuid
    assert first['instance']['cell_uuid'] == fakes.CELL1_UUID
    assert first['selection']['service_host'] == 'h1'
    assert [a['service_host'] for a in first['alternates']] == ['h2', 'h3']
    assert first['request_spec']['instance_uuid'] == instances[0].uuid
    assert first['request_spec']['retry'] == {
        'num_attempts': 1, 'hosts': [['h1', 'h1']]}
    assert world.scheduler.calls[0][0]['num_instances'] == 2


def test_the_scheduler_names_the_zones_and_cells(world):
    """Zones and cells come with the selections: a host the api database
    neither maps nor zones still gets the instance in its cell and zone.
    """
    world.scheduler.zones = {'h1': 'az9'}
    boot_records.delete_host_mapping(fx.ctxt(), 'h2', database=world.api)
    spec, instances = world.boot(2)
    assert _run(world, spec, instances) == {
        instances[0].uuid: 'h1', instances[1].uuid: 'h2'}
    zones = [instance_records.get_instance(
        fx.ctxt(), world.cell1, i.uuid).availability_zone
        for i in instances]
    assert zones == ['az9', 'nova']
    assert world.mapping(instances[1].uuid)['cell_uuid'] == fakes.CELL1_UUID


def test_no_valid_host_buries_every_instance_in_cell0(world):
    spec, instances = world.boot(2)
    world.scheduler.fail = fakes.no_valid_host()
    assert _run(world, spec, instances) == {}
    for instance in instances:
        row = instance_records.get_instance(fx.ctxt(), world.cell0,
                                            instance.uuid)
        assert row.vm_state == instance_obj.ERROR and row.host is None
        assert row.fault['code'] == 500
        assert row.fault['message'].startswith('No valid host was found.')
        assert 'RamFilter' in row.fault['message']
        assert json.loads(row.fault['details'])['filters'][0][
            'filter'] == 'RamFilter'
        assert world.mapping(instance.uuid)['cell_uuid'] == cells.CELL0_UUID
        assert boot_records.get_build_request(
            fx.ctxt(), instance.uuid, database=world.api) is None
        action, = action_records.list_actions(fx.ctxt(), world.cell0,
                                              instance.uuid)
        assert action['action'] == 'create' and action['message'] == 'Error'
        assert action['events'][0]['event'] == \
            'conductor_schedule_and_build_instances'
        # 2.84's details: the fault's message, as Nova words it.
        assert action['events'][0]['details'] == row.fault['message']
    assert world.compute.builds == []
    assert [e[1] for e in world.notifier.sent] == [
        'instance.create.error'] * 2
    data = world.notifier.sent[0][2]['nova_object.data']
    assert data['uuid'] == instances[0].uuid
    assert data['state'] == 'error'
    assert data['fault']['exception'] == 'NoValidHost'
    assert data['fault']['details']['hosts'] == 3


def test_a_scheduler_timeout_also_frees_claims(world):
    spec, instances = world.boot(1)
    world.scheduler.fail = messaging.MessagingTimeout('no answer')
    world.placement.put('/allocations/%s' % instances[0].uuid, {
        'allocations': {world.nodes['h1']: {'resources': {'VCPU': 1}}},
        'consumer_generation': None}, '1.36')
    _run(world, spec, instances)
    row = instance_records.get_instance(fx.ctxt(), world.cell0,
                                        instances[0].uuid)
    assert row.fault['message'].startswith('MessagingTimeout')
    assert 'Traceback' in row.fault['details']
    # NOTE: a library's exception: its class name only in the event.
    action, = action_records.list_actions(fx.ctxt(), world.cell0,
                                          instances[0].uuid)
    assert action['events'][0]['details'] == 'MessagingTimeout'
    assert world.placement.allocations(instances[0].uuid) == {}


def test_deleted_while_scheduling_frees_its_claim(world):
    """The instance made is destroyed when its build request cannot be
    finished: no build, no claim, no mapping, no live instance.
    """
    spec, instances = world.boot(2)
    gone = instances[1].uuid

    def user_deletes(_spec, _uuids):
        boot_records.delete_build_request(fx.ctxt(), gone,
                                          database=world.api)
    world.scheduler.before = user_deletes
    cast = _run(world, spec, instances)
    assert list(cast) == [instances[0].uuid]
    assert [b['instance']['uuid'] for b in world.compute.builds] == [
        instances[0].uuid]
    assert world.placement.allocations(gone) == {}
    assert world.mapping(gone) is None
    assert instance_records.get_instance(
        fx.ctxt(), world.cell1, gone, read_deleted=True).deleted


def test_deleted_after_the_instance_was_created_is_undone(world,
                                                          monkeypatch):
    spec, instances = world.boot(1)
    uuid = instances[0].uuid
    original = instance_records.create_instance

    def create_then_user_deletes(ctxt, database, instance, **kw):
        created = original(ctxt, database, instance, **kw)
        boot_records.delete_build_request(ctxt, instance.uuid,
                                          database=world.api)
        return created
    monkeypatch.setattr(build_flow.instance_records, 'create_instance',
                        create_then_user_deletes)
    assert _run(world, spec, instances) == {}
    row = instance_records.get_instance(fx.ctxt(), world.cell1, uuid,
                                        read_deleted=True)
    assert row.deleted
    assert world.placement.allocations(uuid) == {}
    assert world.compute.builds == []


def test_unmapped_host_uses_the_scheduler_cell_or_is_buried(world):
    spec, instances = world.boot(1)
    boot_records.delete_host_mapping(fx.ctxt(), 'h1', database=world.api)
    assert _run(world, spec, instances) == {instances[0].uuid: 'h1'}
    spec, instances = world.boot(1)
    world.scheduler.hosts[0] = ('h1', world.nodes['h1'], None)
    assert _run(world, spec, instances) == {}
    row = instance_records.get_instance(fx.ctxt(), world.cell0,
                                        instances[0].uuid)
    assert 'not mapped' in row.fault['message']
    assert world.placement.allocations(instances[0].uuid) == {}


def test_server_group_hosts_reach_the_scheduler(world):
    group_uuid = 'a1b2c3d4-0000-4000-8000-000000000001'
    spec, first = world.boot(1)
    _run(world, spec, first)

    def insert(ctx):
        from common.db import api_tables
        group_id = ctx.session.execute(api_tables.instance_groups.insert(
        ).values(uuid=group_uuid, name='g', project_id='p1')
        ).inserted_primary_key[0]
        ctx.session.execute(api_tables.instance_group_policy.insert(
        ).values(group_id=group_id, policy='anti-affinity',
                 rules=json.dumps({'max_server_per_host': 2})))
        ctx.session.execute(api_tables.instance_group_member.insert(
        ).values(group_id=group_id, instance_uuid=first[0].uuid))
    world.api.writer(insert)(fx.ctxt())
    spec, second = world.boot(1, scheduler_hints={'group': [group_uuid]})
    _run(world, spec, second)
    sent = world.scheduler.calls[-1][0]['instance_group']
    assert sent['uuid'] == group_uuid
    assert sent['policy'] == group_obj.ANTI_AFFINITY
    assert sent['rules'] == {'max_server_per_host': 2}
    assert sent['hosts'] == ['h1'] and sent['members'] == [first[0].uuid]


def test_unknown_server_group_fails_the_request(world):
    spec, instances = world.boot(1, scheduler_hints={'group': ['nope']})
    _run(world, spec, instances)
    row = instance_records.get_instance(fx.ctxt(), world.cell0,
                                        instances[0].uuid)
    assert 'InstanceGroupNotFound' in row.fault['message']
    assert world.scheduler.calls == []


def test_a_failing_cast_errors_only_that_instance(world):
    spec, instances = world.boot(2)
    calls = []

    def flaky(ctxt, host, **kwargs):
        calls.append(host)
        if len(calls) == 1:
            raise messaging.MessageDeliveryFailure('broker gone')
        world.compute.builds.append(host)
    world.compute.build_and_run_instance = flaky
    cast = _run(world, spec, instances)
    assert list(cast) == [instances[1].uuid]
    row = instance_records.get_instance(fx.ctxt(), world.cell1,
                                        instances[0].uuid)
    assert row.vm_state == 'error'
    assert 'broker gone' in row.fault['message']
    assert world.placement.allocations(instances[0].uuid) == {}


def test_a_host_of_another_cell_gets_the_instance_in_that_cell(world,
                                                               tmp_path):
    from common.db import api_tables
    from common.db import cell_tables
    from common.db import compute_records
    url = 'sqlite:///%s' % (tmp_path / 'cell2.sqlite')
    fakes.World._insert(world.api, api_tables.cell_mappings, [dict(
        uuid=fx.CELL2_UUID, name='cell2', transport_url='fake://',
        database_connection=url, disabled=False)])
    cell2 = world.registry.get(url)
    cell_tables.metadata.create_all(cell2.engine())
    node = compute_records.save_compute_node(fx.ctxt(), cell2, 'c2-h1',
                                             'c2-h1', {'vcpus': 8})
    world.placement.add_provider(node['uuid'])
    boot_records.create_host_mapping(fx.ctxt(), 'c2-h1', fx.CELL2_UUID,
                                     database=world.api)
    world.scheduler.hosts = [('c2-h1', node['uuid'], fx.CELL2_UUID)]
    spec, instances = world.boot(1)
    assert _run(world, spec, instances) == {instances[0].uuid: 'c2-h1'}
    row = instance_records.get_instance(fx.ctxt(), cell2, instances[0].uuid)
    assert row.host == 'c2-h1'
    assert world.mapping(instances[0].uuid)['cell_uuid'] == fx.CELL2_UUID
    assert world.compute.builds[0]['instance']['cell_uuid'] == \
        fx.CELL2_UUID
    # The record proxy finds it in its cell through the mapping.
    got = world.manager.records.instance_get(fx.ctxt(), instances[0].uuid)
    assert got['host'] == 'c2-h1' and got['cell_uuid'] == fx.CELL2_UUID
