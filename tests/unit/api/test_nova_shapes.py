# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Bodies and headers shaped as Nova's API reference describes them:
quota sets and limits per microversion, the update view, pre-2.53
hypervisor ids and sub-resources, deleted servers' actions, request id
headers, the version list and Nova's binary names.
"""

import datetime

from common.db import cell_tables
from common.db import cells
from common.db import instance_records
from tests.unit.api.helpers import V

_NETWORK_QUOTAS = {'fixed_ips', 'floating_ips', 'security_groups',
                   'security_group_rules'}
_FILE_QUOTAS = {'injected_files', 'injected_file_content_bytes',
                'injected_file_path_bytes'}


def _quota_keys(world, version, suffix=''):
    status, body, _ = world.client.get(
        V + '/os-quota-sets/admin' + suffix, version=version)
    assert status == 200, body
    return set(body['quota_set'])


def test_quota_sets_carry_only_the_fields_of_the_microversion(world):
    for suffix in ('', '/defaults', '/detail'):
        old = _quota_keys(world, '2.1', suffix)
        assert 'networks' not in old
        assert _NETWORK_QUOTAS | _FILE_QUOTAS <= old
        mid = _quota_keys(world, '2.36', suffix)
        assert not mid & _NETWORK_QUOTAS and _FILE_QUOTAS <= mid
        new = _quota_keys(world, '2.57', suffix)
        assert not new & (_NETWORK_QUOTAS | _FILE_QUOTAS)
        assert {'instances', 'cores', 'ram', 'metadata_items', 'key_pairs',
                'server_groups', 'server_group_members'} <= new


def _absolute(world, version):
    status, body, _ = world.client.get(V + '/limits', version=version)
    assert status == 200, body
    return body['limits']['absolute']


def test_limits_per_microversion(world):
    old = _absolute(world, '2.1')
    assert old['maxImageMeta'] == old['maxServerMeta'] == 128
    assert (old['maxSecurityGroups'], old['maxSecurityGroupRules'],
            old['maxTotalFloatingIps']) == (10, 20, 10)
    assert old['totalFloatingIpsUsed'] == old['totalSecurityGroupsUsed'] == 0
    assert old['maxPersonality'] == 5
    for key in ('maxServerGroups', 'maxServerGroupMembers',
                'totalServerGroupsUsed'):
        assert key in old
    at_236 = _absolute(world, '2.36')
    assert 'maxSecurityGroups' not in at_236
    assert 'totalFloatingIpsUsed' not in at_236
    assert 'maxImageMeta' in at_236
    at_239 = _absolute(world, '2.39')
    assert 'maxImageMeta' not in at_239 and 'maxPersonality' in at_239
    assert 'maxPersonality' not in _absolute(world, '2.57')


def test_update_answers_the_smaller_view_before_2_75(world):
    world.add_host('node1')
    uuid = world.add_instance('cell1', host='node1')
    url = V + '/servers/%s' % uuid
    status, body, _ = world.client.put(url, {'server': {'name': 'x'}},
                                       version='2.70')
    assert status == 200, body
    server = body['server']
    assert server['name'] == 'x'
    for key in ('id', 'status', 'accessIPv4', 'links', 'OS-DCF:diskConfig',
                'locked', 'description', 'tags', 'flavor', 'image'):
        assert key in server, key
    for key in ('OS-EXT-STS:vm_state', 'OS-EXT-SRV-ATTR:host',
                'OS-EXT-AZ:availability_zone', 'key_name',
                'security_groups', 'OS-SRV-USG:launched_at',
                'os-extended-volumes:volumes_attached', 'config_drive',
                'host_status'):
        assert key not in server, key
    assert 'server_groups' not in server
    status, body, _ = world.client.put(url, {'server': {'name': 'y'}},
                                       version='2.71')
    assert body['server']['server_groups'] == []
    assert 'OS-EXT-STS:vm_state' not in body['server']
    status, body, _ = world.client.put(url, {'server': {'name': 'z'}},
                                       version='2.75')
    show = world.client.get(url, version='2.75')[1]['server']
    assert set(body['server']) == set(show)
    assert body['server']['server_groups'] == []


def test_hypervisors_by_integer_id_before_2_53(world):
    world.add_host('node1')
    world.add_instance('cell1', host='node1')
    status, body, _ = world.client.get(V + '/os-hypervisors',
                                       version='2.52')
    [hyp] = body['hypervisors']
    assert isinstance(hyp['id'], int)
    status, body, _ = world.client.get(
        V + '/os-hypervisors/%d' % hyp['id'], version='2.52')
    assert status == 200 and body['hypervisor']['id'] == hyp['id']
    assert world.client.get(V + '/os-hypervisors/%d/uptime' % hyp['id'],
                            version='2.52')[0] == 501
    assert world.client.get(V + '/os-hypervisors/999',
                            version='2.52')[0] == 404
    assert world.client.get(V + '/os-hypervisors/abc',
                            version='2.52')[0] == 404


def test_hypervisor_search_and_servers_before_2_53(world):
    world.add_host('node1')
    world.add_host('other')
    uuid = world.add_instance('cell1', host='node1')
    status, body, _ = world.client.get(V + '/os-hypervisors/node/search',
                                       version='2.52')
    assert status == 200
    assert [h['hypervisor_hostname'] for h in body['hypervisors']] == [
        'node1']
    assert 'servers' not in body['hypervisors'][0]
    status, body, _ = world.client.get(V + '/os-hypervisors/o/servers',
                                       version='2.52')
    by_name = {h['hypervisor_hostname']: h for h in body['hypervisors']}
    assert [s['uuid'] for s in by_name['node1']['servers']] == [uuid]
    # NOTE: before 2.75 a hypervisor without servers has no key.
    assert 'servers' not in by_name['other']
    status, body, _ = world.client.get(V + '/os-hypervisors/zzz/search',
                                       version='2.52')
    assert status == 404
    assert "No hypervisor matching 'zzz'" in body['itemNotFound']['message']
    for sub in ('search', 'servers'):
        assert world.client.get(V + '/os-hypervisors/node/%s' % sub,
                                version='2.53')[0] == 404


def test_hypervisor_pattern_query_from_2_53(world):
    world.add_host('node1')
    world.add_host('other')
    path = V + '/os-hypervisors?hypervisor_hostname_pattern='
    status, body, _ = world.client.get(path + 'node&with_servers=true',
                                       version='2.53')
    [hyp] = body['hypervisors']
    assert 'servers' not in hyp
    status, body, _ = world.client.get(path + 'node&with_servers=true',
                                       version='2.75')
    assert body['hypervisors'][0]['servers'] == []
    assert world.client.get(path + 'zzz', version='2.53')[0] == 404
    assert world.client.get(path + 'node&limit=1',
                            version='2.53')[0] == 400


def test_deleted_servers_actions_readable_from_2_21(world):
    world.add_host('node1')
    uuid = world.add_instance('cell1', host='node1')
    instance_records.destroy_instance(
        world.admin_context(), cells.get_cell_database(world.urls['cell1']),
        uuid)
    now = datetime.datetime(2026, 1, 1)
    world.insert('cell1', cell_tables.instance_actions, action='delete',
                 instance_uuid=uuid, request_id='req-1', user_id='admin',
                 project_id='admin', start_time=now, deleted=0,
                 created_at=now)
    url = V + '/servers/%s/os-instance-actions' % uuid
    assert world.client.get(url, version='2.20')[0] == 404
    status, body, _ = world.client.get(url, version='2.21')
    assert status == 200
    assert [a['action'] for a in body['instanceActions']] == ['delete']
    status, body, _ = world.client.get(url + '/req-1', version='2.21')
    assert status == 200 and body['instanceAction']['action'] == 'delete'
    assert world.client.get(V + '/servers/%s' % uuid)[0] == 404


def test_every_response_carries_both_request_id_headers(world):
    for path in (V + '/flavors', V + '/nothing-here', '/'):
        _s, _b, resp = world.client.get(path)
        ids = {resp.headers['x-openstack-request-id'],
               resp.headers['x-compute-request-id']}
        assert len(ids) == 1 and ids.pop().startswith('req-')


def test_versions_list_v20_and_v21(world):
    status, body, _ = world.client.get('/', token=None, version=None)
    assert [(v['id'], v['status']) for v in body['versions']] == [
        ('v2.0', 'SUPPORTED'), ('v2.1', 'CURRENT')]
    assert body['versions'][0]['links'][0]['href'].endswith('/v2/')
    status, body, _ = world.client.get('/v2', token=None, version=None)
    assert status == 200 and body['version']['id'] == 'v2.0'
    assert world.client.get(V, token=None)[1]['version']['id'] == 'v2.1'


def _binaries(world, query=''):
    status, body, _ = world.client.get(V + '/os-services' + query)
    assert status == 200, body
    return sorted((s['binary'], s['host']) for s in body['services'])


def test_services_under_nova_binary_names(world, override):
    world.add_host('node1')
    world.add_service('ctl', 'berth-conductor')
    world.add_service('ctl', 'berth-scheduler')
    assert _binaries(world) == [('nova-compute', 'node1'),
                                ('nova-conductor', 'ctl'),
                                ('nova-scheduler', 'ctl')]
    assert _binaries(world, '?binary=nova-compute') == [
        ('nova-compute', 'node1')]
    assert _binaries(world, '?binary=berth-compute') == [
        ('nova-compute', 'node1')]
    override('service_binary_names', 'berth', group='api')
    assert _binaries(world, '?binary=nova-scheduler') == [
        ('berth-scheduler', 'ctl')]
    # the records keep Berth's names
    assert {r['binary'] for r in world.rows('cell1', cell_tables.services)} \
        == {'berth-compute', 'berth-conductor', 'berth-scheduler'}
