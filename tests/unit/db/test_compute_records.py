# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Compute nodes and services in a cell database."""

import pytest

from common.db import compute_records as records
from common import servicegroup
from common import servicegroup_db
from tests.unit.db import records_fixtures as fx

NUMA = {'cells': [{'id': 0, 'cpuset': [0, 1], 'pinned_cpus': []}]}


@pytest.fixture
def cell(tmp_path):
    database = fx.cell_database(tmp_path)
    yield database
    database.dispose()


def _save(cell, host='h1', node='h1', **values):
    base = dict(vcpus=4, memory_mb=4096, local_gb=40)
    base.update(values)
    return records.save_compute_node(fx.ctxt(), cell, host, node, base)


def test_save_creates_then_updates_in_place(cell):
    created = _save(cell, uuid='11111111-1111-1111-1111-111111111111',
                    numa_topology=NUMA, stats={'num_instances': 0})
    assert created['uuid'] == '11111111-1111-1111-1111-111111111111'
    assert created['numa_topology'] == NUMA and created['mapped'] == 0
    assert isinstance(created['created_at'], str)
    updated = _save(cell, uuid='ignored-on-update', vcpus_used=2,
                    stats={'num_instances': 1})
    assert updated['id'] == created['id']
    assert updated['uuid'] == created['uuid']
    assert updated['vcpus_used'] == 2 and updated['stats'] == {
        'num_instances': 1}
    with pytest.raises(ValueError):
        _save(cell, no_such_column=1)


def test_several_nodes_saved_at_once(cell):
    ctxt = fx.ctxt()
    known = _save(cell, host='h2', node='n2')
    saved = records.save_compute_nodes(ctxt, cell, [
        {'host': 'h3', 'nodename': 'n3', 'values': dict(
            vcpus=2, memory_mb=2048, local_gb=20)},
        {'host': 'h2', 'nodename': 'n2', 'values': {'vcpus_used': 3}},
        {'host': 'h1', 'nodename': 'n1', 'values': dict(
            vcpus=1, memory_mb=1024, local_gb=10,
            stats={'num_instances': 1})}])
    # NOTE: answers in the order asked, though written in host order.
    assert saved[1] == {'id': known['id'], 'uuid': known['uuid']}
    by_host = {n['host']: n for n in records.list_compute_nodes(ctxt, cell)}
    assert [saved[0]['uuid'], saved[2]['uuid']] == [
        by_host['h3']['uuid'], by_host['h1']['uuid']]
    assert by_host['h2']['vcpus_used'] == 3
    assert by_host['h1']['stats'] == {'num_instances': 1}
    # A bad node saves none of the batch.
    with pytest.raises(ValueError):
        records.save_compute_nodes(ctxt, cell, [
            {'host': 'h2', 'nodename': 'n2', 'values': {'vcpus_used': 9}},
            {'host': 'h1', 'nodename': 'n1', 'values': {'bogus': 1}}])
    assert records.list_compute_nodes(ctxt, cell, host='h2')[0][
        'vcpus_used'] == 3


def test_a_batch_of_known_nodes_updates_each_with_its_own_values(cell):
    ctxt = fx.ctxt()
    nodes = {(h, n): _save(cell, host=h, node=n)
             for h, n in (('h1', 'a'), ('h1', 'b'), ('h2', 'c'))}
    saved = records.save_compute_nodes(ctxt, cell, [
        {'host': 'h1', 'nodename': 'a', 'values': {'vcpus_used': 1}},
        {'host': 'h1', 'nodename': 'b', 'values': {'vcpus_used': 2}},
        {'host': 'h2', 'nodename': 'c', 'values': {
            'vcpus_used': 3, 'stats': {'num_instances': 3}}},
        {'host': 'h2', 'nodename': 'new', 'values': dict(
            vcpus=8, memory_mb=8192, local_gb=80, vcpus_used=4)}])
    assert saved[:3] == [{'id': nodes[k]['id'], 'uuid': nodes[k]['uuid']}
                         for k in (('h1', 'a'), ('h1', 'b'), ('h2', 'c'))]
    found = {(n['host'], n['hypervisor_hostname']): n
             for n in records.list_compute_nodes(ctxt, cell)}
    assert [found[k]['vcpus_used'] for k in (
        ('h1', 'a'), ('h1', 'b'), ('h2', 'c'), ('h2', 'new'))] == [
        1, 2, 3, 4]
    assert found[('h2', 'c')]['stats'] == {'num_instances': 3}
    assert found[('h1', 'a')]['stats'] is None
    assert found[('h2', 'new')]['uuid'] == saved[3]['uuid']
    assert found[('h1', 'b')]['updated_at'] > nodes[('h1', 'b')][
        'updated_at']


def test_lookups_and_soft_delete(cell):
    first = _save(cell, 'h1', 'n1')
    _save(cell, 'h1', 'n2')
    _save(cell, 'h2', 'h2')
    ctxt = fx.ctxt()
    assert len(records.list_compute_nodes(ctxt, cell)) == 3
    assert [n['hypervisor_hostname'] for n in records.list_compute_nodes(
        ctxt, cell, host='h1')] == ['n1', 'n2']
    assert records.get_compute_node(ctxt, cell, uuid=first['uuid'])[
        'hypervisor_hostname'] == 'n1'
    assert records.get_compute_node(ctxt, cell, host='h1',
                                    nodename='n2') is not None
    assert records.list_compute_nodes(ctxt, cell, uuids=[first['uuid']])[
        0]['id'] == first['id']
    assert records.delete_compute_node(ctxt, cell, 'h1', 'n1')
    assert not records.delete_compute_node(ctxt, cell, 'h1', 'n1')
    assert records.get_compute_node(ctxt, cell, uuid=first['uuid']) is None
    # Recreated with the same uuid: the deleted row comes back.
    back = _save(cell, 'h1', 'n1', uuid=first['uuid'])
    assert back['id'] == first['id'] and back['deleted'] == 0
    # Recreated without one: a new node with a new uuid.
    records.delete_compute_node(ctxt, cell, 'h2', 'h2')
    fresh = _save(cell, 'h2', 'h2')
    assert fresh['uuid'] != first['uuid'] and fresh['deleted'] == 0


def test_discovery_flags(cell):
    first = _save(cell, 'h1', 'h1')
    _save(cell, 'h2', 'h2')
    ctxt = fx.ctxt()
    assert len(records.list_unmapped_nodes(ctxt, cell)) == 2
    assert records.mark_mapped(ctxt, cell, [first['id']]) == 1
    assert [n['host'] for n in records.list_unmapped_nodes(ctxt, cell)] == [
        'h2']
    assert records.mark_mapped(ctxt, cell, []) == 0


def test_services_listing_admin_changes_and_delete(cell):
    driver = servicegroup_db.DatabaseDriver(cell)
    driver.join('h1', records.COMPUTE_BINARY, 'compute')
    driver.join('h2', records.COMPUTE_BINARY, 'compute')
    driver.join('ctl', 'berth-conductor', 'conductor')
    node = _save(cell, 'h1', 'h1')
    assert node['service_id'] is not None
    ctxt = fx.ctxt()
    computes = records.list_services(ctxt, cell,
                                     binary=records.COMPUTE_BINARY)
    assert [s['host'] for s in computes] == ['h1', 'h2']
    assert [(s['host'], s['binary']) for s in records.list_services(
        ctxt, cell, hosts={'ctl', 'h2', 'ghost'})] == [
            ('ctl', 'berth-conductor'), ('h2', records.COMPUTE_BINARY)]
    assert records.list_services(ctxt, cell, hosts=()) == []
    service = records.get_service(ctxt, cell, host='h1',
                                  binary=records.COMPUTE_BINARY)
    assert records.get_service(ctxt, cell, uuid=service['uuid'])['id'] == \
        service['id']
    disabled = records.update_service(ctxt, cell, service['id'],
                                      {'disabled': True,
                                       'disabled_reason': 'maint'})
    assert disabled['disabled'] and disabled['disabled_reason'] == 'maint'
    with pytest.raises(ValueError):
        records.update_service(ctxt, cell, service['id'], {'host': 'x'})
    api = servicegroup.API(driver)
    assert records.report_services(
        ctxt, cell, ['h1', 'h2', 'ghost'], records.COMPUTE_BINARY) == [
        'ghost']
    up = records.service_record(records.get_service(
        ctxt, cell, service_id=service['id']))
    assert up.report_count == 1 and api.service_is_up(up)
    deleted = records.delete_service(ctxt, cell, service['id'])
    assert deleted['deleted_nodes'] == [node['uuid']]
    assert records.get_compute_node(ctxt, cell, uuid=node['uuid']) is None
    assert records.delete_service(ctxt, cell, service['id']) is None
    assert records.update_service(ctxt, cell, service['id'],
                                  {'disabled': False}) is None
