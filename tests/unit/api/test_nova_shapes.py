# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Bodies and headers shaped as Nova's API reference describes them:
quota sets and limits per microversion, the update view, pre-2.53
hypervisor ids and sub-resources, deleted servers' actions, request id
headers, the version list, Nova's binary names, access addresses,
network uuids and the changes-since/changes-before filters.
"""

import datetime

from common.db import cell_tables
from common.db import cells
from common.db import instance_records
from tests.unit.api import helpers
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


def _boot_setup(world):
    world.add_host('node1')
    return (helpers.make_flavor(world.client),
            helpers.make_image(world.client))


def test_access_ips_validated_stored_and_shown(world):
    flavor, image = _boot_setup(world)
    status, body = helpers.boot(world.client, flavor, image,
                                accessIPv4='192.0.2.7',
                                accessIPv6='2001:db8::7')
    assert status == 202, body
    show = world.client.get(V + '/servers/%s' % body['server']['id'])[1]
    assert (show['server']['accessIPv4'], show['server']['accessIPv6']) == (
        '192.0.2.7', '2001:db8::7')
    for field, value in (('accessIPv4', '1.2.3.4.5'),
                         ('accessIPv4', '2001:db8::1'),
                         ('accessIPv6', 'not-an-ip')):
        status, body = helpers.boot(world.client, flavor, image,
                                    **{field: value})
        assert status == 400, body
        assert field in body['badRequest']['message']
    uuid = world.add_instance('cell1', host='node1')
    url = V + '/servers/%s' % uuid
    status, body, _ = world.client.put(url, {'server': {
        'accessIPv4': '198.51.100.1', 'accessIPv6': '2001:db8::1'}})
    assert status == 200, body
    assert body['server']['accessIPv4'] == '198.51.100.1'
    show = world.client.get(url)[1]['server']
    assert (show['accessIPv4'], show['accessIPv6'], show['name']) == (
        '198.51.100.1', '2001:db8::1', body['server']['name'])
    status, body, _ = world.client.put(url, {'server': {
        'accessIPv6': '1.2.3.4'}})
    assert status == 400
    assert world.client.get(url)[1]['server']['accessIPv6'] == '2001:db8::1'


def test_malformed_network_uuid_is_400(world):
    flavor, image = _boot_setup(world)
    body = {'server': {'name': 'vm', 'flavorRef': flavor, 'imageRef': image,
                       'networks': [{'uuid': 'not-a-uuid'}]}}
    status, data, _ = world.client.post(V + '/servers', body)
    assert status == 400
    assert data['badRequest']['message'] == (
        'Bad networks format: network uuid is not in proper format '
        '(not-a-uuid)')
    body['server']['networks'] = [{'port': 'nope'}]
    assert world.client.post(V + '/servers', body)[0] == 400
    body['server']['networks'] = [
        {'uuid': '6e6f7a1e-62b0-4c43-9a1f-6a1a3c9e0c11'}]
    assert world.client.post(V + '/servers', body)[0] == 202


def _set_updated(world, uuid, when):
    engine = cells.get_cell_database(world.urls['cell1']).engine()
    table = cell_tables.instances
    with engine.begin() as conn:
        conn.execute(table.update().where(table.c.uuid == uuid).values(
            updated_at=when))


def _listed(world, query, version='2.79'):
    status, body, _ = world.client.get(V + '/servers/detail?' + query,
                                       version=version)
    assert status == 200, body
    return {s['id']: s['status'] for s in body['servers']}


def test_changes_since_and_before(world):
    world.add_host('node1')
    old = world.add_instance('cell1', host='node1')
    new = world.add_instance('cell1', host='node1')
    gone = world.add_instance('cell1', host='node1')
    instance_records.destroy_instance(
        world.admin_context(), cells.get_cell_database(world.urls['cell1']),
        gone)
    _set_updated(world, old, datetime.datetime(2026, 1, 1))
    _set_updated(world, new, datetime.datetime(2026, 6, 1))
    _set_updated(world, gone, datetime.datetime(2026, 6, 2))
    assert _listed(world, 'changes-since=2026-03-01T00:00:00Z') == {
        new: 'ACTIVE', gone: 'DELETED'}
    assert set(_listed(world, 'changes-before=2026-03-01T00:00:00Z')) == {
        old}
    assert set(_listed(world, 'changes-since=2026-01-01T00:00:00&'
                              'changes-before=2026-06-01T12:00:00')) == {
        old, new}
    # changes-before is 2.66's: ignored before.
    assert set(_listed(world, 'changes-before=2026-03-01T00:00:00Z',
                       version='2.65')) == {old, new}
    for query in ('changes-since=yesterday', 'changes-before=2026-99-01'):
        status, body, _ = world.client.get(V + '/servers?' + query)
        assert status == 400, query
        assert 'date-time' in body['badRequest']['message']
    status, body, _ = world.client.get(
        V + '/servers?changes-since=2026-06-01T00:00:00Z&'
        'changes-before=2026-01-01T00:00:00Z')
    assert status == 400
    assert 'changes-since must be less than or equal to changes-before' in \
        body['badRequest']['message']
