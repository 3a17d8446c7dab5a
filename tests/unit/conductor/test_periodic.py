# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Host discovery, the allocation audit, and how the manager runs them."""

import time

import pytest

from common import cell_rpc
from common.db import boot_records
from common.db import compute_records
from common.db import discovery
from common.db import instance_records
from common import exception
from common.objects import instance as instance_obj
from services.conductor import allocation_audit
from services.conductor import build_flow
from services.conductor import manager
from tests.unit.conductor import fakes
from tests.unit.db import records_fixtures as fx


@pytest.fixture
def world(tmp_path):
    world = fakes.World(tmp_path, hosts=('h1', 'h2'))
    yield world
    world.close()


# --- discovery ---------------------------------------------------------------

def test_discovery_maps_new_hosts_with_upstream_messages(world):
    new = compute_records.save_compute_node(
        fx.ctxt(), world.cell1, 'h3', 'h3', {'vcpus': 4})
    lines = []
    found = discovery.discover_hosts(fx.ctxt(), world.manager.cells,
                                     status=lines.append)
    assert found == ['h3']
    # h1 and h2 were created unmapped by the fixture but already have
    # their host mappings.
    assert lines[:3] == [
        'Found 2 cell mappings.',
        'Skipping cell0 since it does not contain hosts.',
        "Getting computes from cell 'cell1': %s" % fakes.CELL1_UUID]
    assert "Checking host mapping for compute host 'h1': %s" % (
        world.nodes['h1']) in lines
    assert lines[-2:] == [
        "Creating host mapping for compute host 'h3': %s" % new['uuid'],
        'Found 1 unmapped computes in cell: %s' % fakes.CELL1_UUID]
    assert boot_records.get_host_mapping(
        fx.ctxt(), 'h3', database=world.api) == fakes.CELL1_UUID
    again = []
    assert discovery.discover_hosts(fx.ctxt(), world.manager.cells,
                                    status=again.append) == []
    assert again[-1] == 'Found 0 unmapped computes in cell: %s' % (
        fakes.CELL1_UUID)


def test_discovery_by_service_finds_removed_mappings(world):
    from common import servicegroup_db
    driver = servicegroup_db.DatabaseDriver(world.cell1)
    driver.join('h1', compute_records.COMPUTE_BINARY, 'compute')
    discovery.discover_hosts(fx.ctxt(), world.manager.cells)
    boot_records.delete_host_mapping(fx.ctxt(), 'h1', database=world.api)
    # Seeds B5: nodes are marked mapped, so node discovery finds nothing.
    assert discovery.discover_hosts(fx.ctxt(), world.manager.cells) == []
    assert discovery.discover_hosts(fx.ctxt(), world.manager.cells,
                                    by_service=True) == ['h1']


def test_discovery_refuses_a_host_mapped_to_another_cell(world):
    compute_records.save_compute_node(fx.ctxt(), world.cell1, 'h9', 'h9',
                                      {})
    from common.db import cells
    boot_records.create_host_mapping(fx.ctxt(), 'h9', cells.CELL0_UUID,
                                     database=world.api)
    with pytest.raises(exception.HostMappingExists):
        discovery.discover_hosts(fx.ctxt(), world.manager.cells,
                                 cell_uuid=fakes.CELL1_UUID)


# --- periodic tasks ----------------------------------------------------------

def _tasks(mgr):
    return [name for name, _task in mgr._periodic_tasks]


def test_discovery_and_audit_follow_the_configuration(world, override):
    override('discover_hosts_in_cells_interval', 1, group='scheduler')
    override('allocation_audit_interval', -1, group='audit')
    mgr = manager.ConductorManager(
        scheduler_api=world.scheduler, placement=world.placement,
        compute_clients=cell_rpc.CellClients(lambda: world.compute),
        api_database=world.api, cell_databases=world.registry)
    assert _tasks(mgr) == ['end_unplaced_builds',
                           'end_stuck_moves', 'end_unstarted_live_migrations']
    mgr.post_start_hook()
    try:
        compute_records.save_compute_node(fx.ctxt(), world.cell1, 'h7',
                                          'h7', {})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and boot_records.get_host_mapping(
                fx.ctxt(), 'h7', database=world.api) is None:
            time.sleep(0.1)
        assert boot_records.get_host_mapping(
            fx.ctxt(), 'h7', database=world.api) == fakes.CELL1_UUID
    finally:
        mgr.cleanup_host()
    assert not mgr._discovery.is_alive()


def test_default_configuration_runs_the_audit_and_the_build_bound(world):
    assert _tasks(world.manager) == ['end_unplaced_builds',
                                     'end_stuck_moves',
                                     'end_unstarted_live_migrations',
                                     'audit_allocations']
    assert world.manager._periodic_spacing['audit_allocations'] == 3600
    assert world.manager._periodic_spacing['end_unplaced_builds'] == 60
    # Only this instance: the class and other managers are untouched.
    assert _tasks(manager.ConductorManager) == []
    world.manager.post_start_hook()
    assert world.manager._discovery is None


# --- the allocation audit ----------------------------------------------------

def _build(world, count=1):
    spec, instances = world.boot(count)
    build_flow.schedule_and_build_instances(
        world.manager, fx.ctxt(), spec, [i.uuid for i in instances],
        instances)
    for instance in instances:
        instance_records.update_instance(
            fx.ctxt(), world.cell1, instance.uuid,
            {'vm_state': instance_obj.ACTIVE, 'task_state': None})
    return instances


def test_audit_finds_orphaned_missing_and_mismatched(world):
    ok, missing, mismatched, gone = _build(world, 4)
    instance_records.destroy_instance(fx.ctxt(), world.cell1, gone.uuid)
    world.placement.delete('/allocations/%s' % missing.uuid, '1.36')
    node = world.nodes['h1']
    world.placement.consumers[mismatched.uuid]['allocations'] = {
        node: {'VCPU': 8, 'MEMORY_MB': 512, 'DISK_GB': 1}}
    lines = []
    report = allocation_audit.audit(fx.ctxt(), world.manager.cells,
                                    world.placement, grace=0,
                                    status=lines.append)
    assert [(f.kind, f.consumer) for f in report.findings] == sorted([
        ('orphaned', gone.uuid)]) + sorted(
        [('missing', missing.uuid), ('mismatched', mismatched.uuid)],
        key=lambda k: k[1])
    assert report.instances == 3 and report.providers == 2
    assert len(lines) == 3 and 'Orphaned allocation' in lines[0]
    assert '3 instances: 1 orphaned, 1 missing, 1 mismatched' in \
        report.summary()
    # Nothing was changed without repair.
    assert world.placement.allocations(gone.uuid)
    report = allocation_audit.audit(fx.ctxt(), world.manager.cells,
                                    world.placement, grace=0, repair=True,
                                    status=lines.append)
    assert all(f.repaired for f in report.findings)
    assert world.placement.allocations(gone.uuid) == {}
    expected = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
    row = instance_records.get_instance(fx.ctxt(), world.cell1,
                                        missing.uuid)
    assert world.placement.allocations(missing.uuid) == {
        world.nodes[row.host]: expected}
    assert list(world.placement.allocations(mismatched.uuid).values()) == [
        expected]
    assert allocation_audit.audit(fx.ctxt(), world.manager.cells,
                                  world.placement, grace=0).findings == []


def test_audit_leaves_moving_and_recent_instances_alone(world):
    busy, recent = _build(world, 2)
    for instance in (busy, recent):
        world.placement.delete('/allocations/%s' % instance.uuid, '1.36')
    instance_records.update_instance(fx.ctxt(), world.cell1, busy.uuid,
                                     {'task_state': 'deleting'})
    report = allocation_audit.audit(fx.ctxt(), world.manager.cells,
                                    world.placement, grace=0)
    assert [f.consumer for f in report.findings] == [recent.uuid]
    assert allocation_audit.audit(fx.ctxt(), world.manager.cells,
                                  world.placement, grace=3600).findings == []


def test_build_requests_own_their_allocations(world):
    spec, instances = world.boot(1)
    world.placement.put('/allocations/%s' % instances[0].uuid, {
        'allocations': {world.nodes['h1']: {'resources': {'VCPU': 1}}},
        'consumer_generation': None}, '1.36')
    assert allocation_audit.audit(fx.ctxt(), world.manager.cells,
                                  world.placement, grace=0).findings == []


def test_expected_resources_follow_the_scheduler_rules():
    dedicated = fx.instance(flavor=fx.flavor(
        vcpus=4, memory_mb=2048, root_gb=10,
        extra_specs={'hw:cpu_policy': 'dedicated',
                     'resources:CUSTOM_GPU': '1'}))
    assert allocation_audit.expected_resources(dedicated) == {
        'PCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 10, 'CUSTOM_GPU': 1}
    assert allocation_audit.resources_match(
        {'a': {'PCPU': 4, 'MEMORY_MB': 2048},
         'b': {'DISK_GB': 10, 'CUSTOM_GPU': 1, 'CUSTOM_NIC': 1}},
        allocation_audit.expected_resources(dedicated))
    assert not allocation_audit.resources_match(
        {'a': {'VCPU': 4, 'PCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 10,
               'CUSTOM_GPU': 1}},
        allocation_audit.expected_resources(dedicated))
