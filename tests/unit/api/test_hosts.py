# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""os-services, os-hypervisors and os-availability-zone."""

import uuid

from common.db import api_tables
from common.db import cell_tables
from common.db import cells
from common.db import instance_records
from services.api import cell_hosts
from tests.unit.api.helpers import V


def _services(world, **query):
    path = V + '/os-services'
    if query:
        path += '?' + '&'.join('%s=%s' % kv for kv in query.items())
    return world.client.get(path)[1]['services']


def test_list_update_force_down(world):
    world.add_host('node1')
    world.add_host('node2', age=3600)
    world.add_service('ctl', 'berth-conductor')
    services = {s['host']: s for s in _services(world)}
    assert services['node1']['state'] == 'up'
    assert services['node2']['state'] == 'down'
    assert services['ctl']['zone'] == 'internal'
    assert services['node1']['zone'] == 'nova'
    assert [s['host'] for s in _services(world, binary='berth-compute',
                                         host='node1')] == ['node1']
    url = V + '/os-services/%s' % services['node1']['id']
    status, body, _ = world.client.put(url, {
        'status': 'disabled', 'disabled_reason': 'maintenance'})
    assert status == 200
    assert body['service']['status'] == 'disabled'
    assert body['service']['disabled_reason'] == 'maintenance'
    node_uuids = [n['uuid'] for n in world.rows(
        'cell1', cell_tables.compute_nodes, host='node1')]
    assert world.placement.traits[node_uuids[0]] == {
        'COMPUTE_STATUS_DISABLED'}
    status, body, _ = world.client.put(url, {'forced_down': True})
    assert body['service']['forced_down'] is True
    assert body['service']['state'] == 'down'
    assert world.client.put(url, {'disabled_reason': 'x'})[0] == 400
    assert world.client.put(url, {'status': 'enabled'},
                            version='2.52')[0] == 404


def test_delete_compute_service_cleans_up(world):
    node = world.add_host('node1')
    world.client.post(V + '/os-aggregates', {'aggregate': {'name': 'a'}})
    world.client.post(V + '/os-aggregates/1/action',
                      {'add_host': {'host': 'node1'}})
    [service] = _services(world)
    uuid = world.add_instance('cell1', host='node1')
    url = V + '/os-services/%s' % service['id']
    assert world.client.delete(url)[0] == 409
    world.client.delete(V + '/servers/' + uuid)
    # NOTE: the host is up, so that delete went to the compute; finish it
    # as the compute would (through the conductor).
    assert world.compute.terminated == [('node1', uuid)]
    instance_records.destroy_instance(
        world.admin_context(), cells.get_cell_database(world.urls['cell1']),
        uuid)
    assert world.client.delete(url)[0] == 204
    assert _services(world) == []
    assert world.rows('api', api_tables.host_mappings) == []
    assert world.rows('api', api_tables.aggregate_hosts) == []
    assert node not in world.placement.providers
    assert world.client.delete(url)[0] == 404


def test_hypervisors(world):
    node = world.add_host('node1')
    world.add_instance('cell1', host='node1')
    _s, body, _ = world.client.get(V + '/os-hypervisors')
    assert body['hypervisors'] == [{'id': node,
                                    'hypervisor_hostname': 'node1',
                                    'state': 'up', 'status': 'enabled'}]
    _s, body, _ = world.client.get(V + '/os-hypervisors/detail')
    [detail] = body['hypervisors']
    assert detail['vcpus'] == 16 and detail['memory_mb_used'] == 512
    assert detail['cpu_info'] == {'arch': 'x86_64'}
    assert detail['service']['host'] == 'node1'
    _s, body, _ = world.client.get(
        V + '/os-hypervisors/%s?with_servers=true' % node)
    assert len(body['hypervisor']['servers']) == 1
    assert world.client.get(V + '/os-hypervisors/%s/uptime' % node)[0] == (
        501)
    # NOTE: from 2.53 an id that is no uuid is a 400, as Nova.
    assert world.client.get(V + '/os-hypervisors/nope')[0] == 400
    assert world.client.get(V + '/os-hypervisors/%s' % uuid.uuid4())[
        0] == 404
    _s, body, _ = world.client.get(
        V + '/os-hypervisors?hypervisor_hostname_pattern=node')
    assert len(body['hypervisors']) == 1
    _s, body, _ = world.client.get(V + '/os-hypervisors/statistics')
    assert body['hypervisor_statistics']['count'] == 1
    assert world.client.get(V + '/os-hypervisors', token='u:p')[0] == 403


def _page(world, path, version='2.79'):
    status, body, _r = world.client.get(path, version=version)
    assert status == 200, body
    ids = [h['id'] for h in body['hypervisors']]
    return ids, body.get('hypervisors_links')


def test_hypervisor_pages_link_to_the_next(world, override):
    nodes = [world.add_host('node%d' % i) for i in range(5)]
    order, links = _page(world, V + '/os-hypervisors')
    assert sorted(order) == sorted(nodes) and links is None
    # NOTE: a full page links to the next, which keeps the query.
    seen = []
    path = V + '/os-hypervisors/detail?limit=2&with_servers=true'
    while path:
        ids, links = _page(world, path)
        seen += ids
        if links is None:
            break
        [link] = links
        assert link['rel'] == 'next'
        assert link['href'].startswith('http://localhost/v2.1/os-'
                                       'hypervisors/detail?limit=2&'
                                       'with_servers=true&marker=')
        assert link['href'].endswith('marker=%s' % ids[-1])
        path = link['href'][len('http://localhost'):]
    assert seen == order
    # NOTE: the last page (5 = 2 + 2 + 1) is not full: no link; a page
    # ending exactly at the end still links, as Nova's does.
    _ids, links = _page(world, V + '/os-hypervisors?limit=5')
    assert len(links) == 1
    # NOTE: [api] max_limit bounds a page from 2.33, with or without limit.
    override('max_limit', 3, group='api')
    ids, links = _page(world, V + '/os-hypervisors?limit=4')
    assert ids == order[:3]
    assert links[0]['href'].endswith('limit=4&marker=%s' % order[2])
    ids, links = _page(world, V + '/os-hypervisors')
    assert ids == order[:3] and links
    # NOTE: before 2.33 lists are not pages: no links, no max_limit.
    ids, links = _page(world, V + '/os-hypervisors', version='2.32')
    assert len(ids) == 5 and links is None
    ids, links = _page(world, V + '/os-hypervisors?limit=2', version='2.32')
    assert len(ids) == 2 and links is None


def test_hypervisor_list_reads_each_cells_services_once(world, monkeypatch):
    world.add_host('node1')
    world.add_host('node2', age=3600)
    world.add_host('node3', disabled=True)
    world.add_service('node1', 'berth-conductor')

    def one_by_one(*args, **kwargs):
        raise AssertionError('a service lookup per hypervisor')
    monkeypatch.setattr(cell_hosts, 'compute_service', one_by_one)
    _s, body, _ = world.client.get(V + '/os-hypervisors/detail')
    found = {h['hypervisor_hostname']: (h['state'], h['status'],
                                        h['service']['host'])
             for h in body['hypervisors']}
    assert found == {'node1': ('up', 'enabled', 'node1'),
                     'node2': ('down', 'enabled', 'node2'),
                     'node3': ('up', 'disabled', 'node3')}


def test_availability_zones(world):
    world.add_host('node1')
    world.add_host('node2')
    world.add_service('ctl', 'berth-scheduler')
    world.client.post(V + '/os-aggregates', {'aggregate': {
        'name': 'a', 'availability_zone': 'az1'}})
    world.client.post(V + '/os-aggregates/1/action',
                      {'add_host': {'host': 'node1'}})
    _s, body, _ = world.client.get(V + '/os-availability-zone',
                                   token='u:p')
    zones = {z['zoneName']: z for z in body['availabilityZoneInfo']}
    assert set(zones) == {'az1', 'nova'}
    assert zones['az1']['zoneState'] == {'available': True}
    _s, body, _ = world.client.get(V + '/os-availability-zone/detail')
    zones = {z['zoneName']: z for z in body['availabilityZoneInfo']}
    assert set(zones) == {'az1', 'nova', 'internal'}
    assert zones['internal']['hosts']['ctl']['berth-scheduler'][
        'available'] is True
    # NOTE: the default zone disappears once every host has a zone.
    world.client.post(V + '/os-aggregates/1/action',
                      {'add_host': {'host': 'node2'}})
    _s, body, _ = world.client.get(V + '/os-availability-zone')
    assert [z['zoneName'] for z in body['availabilityZoneInfo']] == ['az1']


def test_2_88_drops_the_usage_statistics_and_uptime(world):
    node = world.add_host('node1')
    world.add_instance('cell1', host='node1')
    usage = {'vcpus', 'memory_mb', 'local_gb', 'vcpus_used',
             'memory_mb_used', 'local_gb_used', 'free_ram_mb',
             'free_disk_gb', 'current_workload', 'running_vms',
             'disk_available_least', 'cpu_info'}
    for version, has_usage in (('2.87', True), ('2.88', False)):
        _s, body, _ = world.client.get(V + '/os-hypervisors/detail',
                                       version=version)
        [detail] = body['hypervisors']
        _s, body, _ = world.client.get(
            V + '/os-hypervisors/%s?with_servers=true' % node,
            version=version)
        shown = body['hypervisor']
        for hypervisor in (detail, shown):
            assert (usage <= set(hypervisor)) == has_usage, version
            assert has_usage or not usage & set(hypervisor)
            # NOTE: Berth's drivers report no uptime: null, as Nova's
            # answer for such a driver; the route below 2.88 is a 501.
            assert ('uptime' in hypervisor) != has_usage
            assert hypervisor.get('uptime') is None
            assert hypervisor['hypervisor_type'] == 'fake'
            assert hypervisor['service']['host'] == 'node1'
        assert len(shown['servers']) == 1
    for path, before in (('/os-hypervisors/statistics', 200),
                         ('/os-hypervisors/%s/uptime' % node, 501)):
        assert world.client.get(V + path, version='2.87')[0] == before
        status, body, _ = world.client.get(V + path, version='2.88')
        assert status == 404, body
