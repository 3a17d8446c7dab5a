# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The conductor's bound for builds that never reached a compute."""

import datetime
import json

from oslo_utils import timeutils
import pytest

from common.db import api_tables
from common.db import boot_records
from common.db import cell_tables
from common.db import cells
from common.db import instance_records
from common import exception
from common.objects import instance as instance_obj
from services.conductor import build_flow
from services.conductor import cell0
from services.conductor import manager
from services.conductor import unplaced_builds
from tests.unit.conductor import fakes
from tests.unit.db import records_fixtures as fx

BOUND = 600


@pytest.fixture
def world(tmp_path):
    world = fakes.World(tmp_path)
    yield world
    world.close()


def _ago(seconds):
    return timeutils.utcnow() - datetime.timedelta(seconds=seconds)


def _age_build_request(world, uuid, seconds):
    table = api_tables.build_requests

    def update(ctx):
        ctx.session.execute(table.update().where(
            table.c.instance_uuid == uuid).values(created_at=_ago(seconds)))
    world.api.writer(update)(fx.ctxt())


def _age_instance(database, uuid, seconds):
    table = cell_tables.instances

    def update(ctx):
        ctx.session.execute(table.update().where(
            table.c.uuid == uuid).values(updated_at=_ago(seconds),
                                         created_at=_ago(seconds)))
    database.writer(update)(fx.ctxt())


def _claim(world, uuid, host='h1'):
    """What the scheduler claimed before its conductor died."""
    world.placement.put('/allocations/%s' % uuid, {
        'allocations': {world.nodes[host]: {'resources': {'VCPU': 1}}},
        'project_id': 'p1', 'user_id': 'u1', 'consumer_generation': None},
        '1.36')


def _cell0_row(world, uuid):
    return instance_records.get_instance(fx.ctxt(), world.cell0, uuid)


def test_stale_build_requests_are_buried_in_cell0(world):
    _spec, (old, young) = world.boot(2)
    _age_build_request(world, old.uuid, BOUND + 5)
    _claim(world, old.uuid)

    buried, errored = unplaced_builds.run(world.manager, fx.ctxt(), BOUND)
    assert (buried, errored) == ([old.uuid], [])
    row = _cell0_row(world, old.uuid)
    assert (row.vm_state, row.task_state, row.host) == ('error', None, None)
    assert 'not scheduled within 600 seconds' in row.fault['message']
    assert world.mapping(old.uuid)['cell_uuid'] == cells.CELL0_UUID
    assert boot_records.get_build_request(
        fx.ctxt(), old.uuid, database=world.api) is None
    assert world.placement.allocations(old.uuid) == {}
    assert ('ERROR', 'instance.create.error') == world.notifier.sent[-1][:2]
    # NOTE: the young one is still waiting for its conductor.
    assert boot_records.get_build_request(
        fx.ctxt(), young.uuid, database=world.api) is not None
    assert unplaced_builds.run(world.manager, fx.ctxt(), BOUND) == ([], [])


def test_a_row_created_by_a_dead_conductor_is_deleted(world):
    _spec, (instance,) = world.boot(1)
    _claim(world, instance.uuid)
    # NOTE: the dead conductor created the row in cell1, then died
    # before it finished the build request.
    stray = fx.instance(uuid_=instance.uuid, host='h1', node='h1',
                        vm_state='building')
    instance_records.create_instance(fx.ctxt(), world.cell1, stray,
                                     action='create')
    _age_build_request(world, instance.uuid, BOUND + 5)

    assert unplaced_builds.bury_stale_build_requests(
        world.manager, fx.ctxt(), BOUND) == [instance.uuid]
    with pytest.raises(exception.InstanceNotFound):
        instance_records.get_instance(fx.ctxt(), world.cell1, instance.uuid)
    assert _cell0_row(world, instance.uuid).vm_state == 'error'
    assert world.placement.allocations(instance.uuid) == {}


def test_the_original_conductor_coming_late_changes_nothing(world):
    spec, (instance,) = world.boot(1)
    _age_build_request(world, instance.uuid, BOUND + 5)
    unplaced_builds.run(world.manager, fx.ctxt(), BOUND)
    # NOTE: its cast was only queued behind a backlog (the build
    # requests as the API sent them).
    assert build_flow.schedule_and_build_instances(
        world.manager, fx.ctxt(), spec, [instance.uuid], [instance]) == {}
    assert world.compute.builds == []
    assert _cell0_row(world, instance.uuid).vm_state == 'error'
    assert world.placement.allocations(instance.uuid) == {}
    with pytest.raises(exception.InstanceNotFound):
        instance_records.get_instance(fx.ctxt(), world.cell1, instance.uuid)


def test_a_second_burial_keeps_the_first_ones_row(world):
    _spec, (instance,) = world.boot(1)
    requests = boot_records.get_build_requests(
        fx.ctxt(), [instance.uuid], database=world.api)
    assert cell0.bury_in_cell0(world.manager, fx.ctxt(),
                               [requests[instance.uuid]],
                               fakes.no_valid_host()) == [instance.uuid]
    # NOTE: a second path burying the same server (the bound and the
    # scheduling failure) finds the build request finished into cell0.
    assert cell0.bury_in_cell0(
        world.manager, fx.ctxt(), [requests[instance.uuid]],
        unplaced_builds.BuildNeverScheduled('late')) == []
    assert _cell0_row(world, instance.uuid).vm_state == 'error'


def test_a_deleted_server_is_not_kept_by_a_burial(world):
    _spec, (instance,) = world.boot(1)
    requests = boot_records.get_build_requests(
        fx.ctxt(), [instance.uuid], database=world.api)
    boot_records.delete_build_request(fx.ctxt(), instance.uuid,
                                      database=world.api)
    boot_records.delete_instance_mapping(fx.ctxt(), instance.uuid,
                                         database=world.api)
    assert cell0.bury_in_cell0(world.manager, fx.ctxt(),
                               [requests[instance.uuid]],
                               fakes.no_valid_host()) == []
    with pytest.raises(exception.InstanceNotFound):
        _cell0_row(world, instance.uuid)


def _unplaced(world, age, **fields):
    values = dict(host=None, node=None, vm_state='building')
    values.update(fields)
    instance = fx.instance(**values)
    instance_records.create_instance(fx.ctxt(), world.cell1, instance)
    _age_instance(world.cell1, instance.uuid, age)
    return instance.uuid


def test_lost_reschedules_go_to_error(world):
    lost = _unplaced(world, BOUND + 5)
    _claim(world, lost)
    recent = _unplaced(world, 5)
    placed = _unplaced(world, BOUND + 5, host='h1', node='h1')
    deleting = _unplaced(world, BOUND + 5, task_state='deleting')

    assert unplaced_builds.run(world.manager, fx.ctxt(), BOUND) == (
        [], [lost])
    row = instance_records.get_instance(fx.ctxt(), world.cell1, lost)
    assert (row.vm_state, row.task_state) == ('error', None)
    assert 'not rescheduled within 600 seconds' in row.fault['message']
    assert world.placement.allocations(lost) == {}
    for uuid in (recent, placed, deleting):
        row = instance_records.get_instance(fx.ctxt(), world.cell1, uuid)
        assert row.vm_state == instance_obj.BUILDING


def test_the_manager_runs_the_bound(world, override):
    override('build_request_timeout', 30, group='conductor')
    mgr = manager.ConductorManager(
        scheduler_api=world.scheduler, placement=world.placement,
        compute_clients=world.manager.compute_clients,
        api_database=world.api, cell_databases=world.registry)
    assert mgr._periodic_spacing['end_unplaced_builds'] == 30
    _spec, (instance,) = world.boot(1)
    _age_build_request(world, instance.uuid, 31)
    mgr._end_unplaced_builds(fx.ctxt())
    assert _cell0_row(world, instance.uuid).vm_state == 'error'


def test_the_bound_can_be_disabled(world, override):
    override('build_request_timeout', 0, group='conductor')
    mgr = manager.ConductorManager(
        scheduler_api=world.scheduler, placement=world.placement,
        compute_clients=world.manager.compute_clients,
        api_database=world.api, cell_databases=world.registry)
    assert 'end_unplaced_builds' not in mgr._periodic_spacing
    assert unplaced_builds.spacing(0) is None
    assert unplaced_builds.spacing(3600) == 60


def test_fault_details_are_json_safe(world):
    _spec, (instance,) = world.boot(1)
    _age_build_request(world, instance.uuid, BOUND + 5)
    unplaced_builds.run(world.manager, fx.ctxt(), BOUND)
    json.dumps(_cell0_row(world, instance.uuid).fault)
