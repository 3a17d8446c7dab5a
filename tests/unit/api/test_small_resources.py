# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The small and legacy resources: quota classes, ips, server password,
topology, the network proxies, the usage audit log, os-hosts, the
/images proxy and /extensions.
"""

import json
import types

import pytest

from common.db import action_records
from common.db import api_tables
from common.db import cell_tables
from common.db import cells
from common.db import instance_records
from services.api import cell_hosts
from services.api import down_cells
from services.api.handlers import network_proxies
from tests.unit.api import helpers
from tests.unit.api.helpers import V

MEMBER = {'token': 'alice:projA'}


@pytest.fixture(autouse=True)
def _no_down_cells():
    """Every test starts and ends with no cell remembered as down."""
    down_cells.forget()
    yield
    down_cells.forget()


def _cell_db(world):
    return cell_hosts.database(
        [c for c in cell_hosts.all_cells(world.admin_context())
         if c.name == 'cell1'][0])


# os-quota-class-sets

def test_quota_class_default_shapes_by_version(world):
    url = V + '/os-quota-class-sets/default'
    status, body, _r = world.client.get(url, version='2.1')
    assert status == 200
    qcs = body['quota_class_set']
    assert qcs['id'] == 'default'
    assert qcs['floating_ips'] == 10 and qcs['injected_files'] == 5
    assert 'server_groups' not in qcs
    qcs = world.client.get(url, version='2.50')[1]['quota_class_set']
    assert 'floating_ips' not in qcs and qcs['injected_files'] == 5
    assert 'server_groups' in qcs
    qcs = world.client.get(url, version='2.57')[1]['quota_class_set']
    assert 'injected_files' not in qcs
    assert set(qcs) == {'id', 'instances', 'cores', 'ram',
                        'metadata_items', 'key_pairs', 'server_groups',
                        'server_group_members'}


def test_quota_class_default_overrides_every_projects_default(world):
    status, body, _r = world.client.put(
        V + '/os-quota-class-sets/default',
        {'quota_class_set': {'instances': 1, 'cores': '7'}})
    assert status == 200, body
    assert 'id' not in body['quota_class_set']
    assert body['quota_class_set']['instances'] == 1
    assert body['quota_class_set']['cores'] == 7
    defaults = world.client.get(V + '/os-quota-sets/projA/defaults')[1]
    assert defaults['quota_set']['instances'] == 1
    shown = world.client.get(V + '/os-quota-sets/projA')[1]['quota_set']
    assert shown['cores'] == 7
    limits = world.client.get(V + '/limits', **MEMBER)[1]
    assert limits['limits']['absolute']['maxTotalInstances'] == 1
    # A project's own limit still wins over the class.
    world.client.put(V + '/os-quota-sets/projB',
                     {'quota_set': {'instances': 3}})
    assert world.client.get(V + '/os-quota-sets/projB')[1][
        'quota_set']['instances'] == 3
    # Enforced at boot.
    world.add_host('node0')
    flavor = helpers.make_flavor(world.client)
    image = helpers.make_image(world.client, visibility='public')
    assert helpers.boot(world.client, flavor, image,
                        token='alice:projA')[0] == 202
    status, body = helpers.boot(world.client, flavor, image,
                                token='alice:projA')
    assert status == 403 and 'instances' in body['forbidden']['message']


def test_quota_class_bad_input_changes_nothing(world):
    url = V + '/os-quota-class-sets/default'
    for version, body in (
            ('2.79', {'quota_class_set': {'floating_ips': 3}}),
            ('2.57', {'quota_class_set': {'injected_files': 3}}),
            ('2.1', {'quota_class_set': {'server_groups': 3}}),
            ('2.79', {'quota_class_set': {'cores': -2}}),
            ('2.79', {'quota_class_set': {'cores': 'many'}}),
            ('2.79', {'cores': 3})):
        status, data, _r = world.client.put(url, body, version=version)
        assert status == 400, (version, body, data)
    # Older bodies may name the retired resources: accepted, not stored.
    status, data, _r = world.client.put(
        url, {'quota_class_set': {'floating_ips': 3, 'ram': 1024}},
        version='2.1')
    assert status == 200
    assert data['quota_class_set']['floating_ips'] == 10
    assert data['quota_class_set']['ram'] == 1024
    assert world.client.put(url, {'quota_class_set': {'cores': 1}},
                            **MEMBER)[0] == 403
    assert world.client.get(url, **MEMBER)[0] == 403


# ips, password, topology

def test_ips_are_empty_and_every_label_unknown(world):
    uuid = world.add_instance('cell1', host='node0', project_id='projA')
    status, body, _r = world.client.get(V + '/servers/%s/ips' % uuid,
                                        **MEMBER)
    assert (status, body) == (200, {'addresses': {}})
    status, body, _r = world.client.get(
        V + '/servers/%s/ips/private' % uuid, **MEMBER)
    assert status == 404
    assert body['itemNotFound']['message'] == (
        'Instance is not a member of specified network')
    assert world.client.get(V + '/servers/%s/ips' % uuid,
                            token='bob:projB')[0] == 404


def test_server_password_show_and_clear(world):
    uuid = world.add_instance('cell1', host='node0', project_id='projA')
    url = V + '/servers/%s/os-server-password' % uuid
    assert world.client.get(url, **MEMBER)[1] == {'password': ''}
    secret = 'x' * 300 + 'y'
    meta = {'password_0': secret[:255], 'password_1': secret[255:],
            'other': 'kept'}
    instance_records.update_instance(world.admin_context(), _cell_db(world),
                                     uuid, {'system_metadata': meta})
    assert world.client.get(url, **MEMBER)[1] == {'password': secret}
    assert world.client.delete(url, token='rita:projA',
                               headers={'X-Roles': 'reader'})[0] == 403
    assert world.client.delete(url, **MEMBER)[0] == 204
    assert world.client.get(url, **MEMBER)[1] == {'password': ''}
    instance = instance_records.get_instance(world.admin_context(),
                                             _cell_db(world), uuid)
    assert instance.system_metadata['other'] == 'kept'


def test_topology(world):
    plain = world.add_instance('cell1', host='node0', project_id='projA')
    url = V + '/servers/%s/topology'
    assert world.client.get(url % plain, **MEMBER)[1] == {
        'nodes': [], 'pagesize_kb': None}
    assert world.client.get(url % plain, version='2.77')[0] == 404
    topology = {'cells': [
        {'id': 1, 'cpuset': [], 'pcpuset': [0, 1], 'memory': 1024,
         'pagesize': 4, 'cpu_pinning': {'0': 10, '1': 11}}]}
    pinned = world.add_instance('cell1', host='node0', project_id='projA',
                                numa_topology=json.dumps(topology))
    body = world.client.get(url % pinned, **MEMBER)[1]
    assert body == {'nodes': [{'memory_mb': 1024, 'siblings': [],
                               'vcpu_set': [0, 1]}], 'pagesize_kb': 4}
    node = world.client.get(url % pinned)[1]['nodes'][0]
    assert node['host_node'] == 1
    assert node['cpu_pinning'] == {'0': 10, '1': 11}


# network proxies

def test_network_proxies_below_2_36(world):
    for path, key in (('/os-networks', 'networks'),
                      ('/os-tenant-networks', 'networks'),
                      ('/os-floating-ips', 'floating_ips')):
        status, body, _r = world.client.get(V + path, version='2.35',
                                            **MEMBER)
        assert (status, body) == (200, {key: []}), path
        assert world.client.get(V + path, version='2.36')[0] == 404
    groups = world.client.get(V + '/os-security-groups', version='2.1',
                              **MEMBER)[1]['security_groups']
    assert groups == [network_proxies.default_group('projA')]
    assert groups[0]['name'] == 'default' and groups[0]['rules'] == []
    status, body, _r = world.client.post(
        V + '/os-security-groups',
        {'security_group': {'name': 'web', 'description': ''}},
        version='2.1', **MEMBER)
    assert status == 400
    assert 'no network service' in body['badRequest']['message']
    assert world.client.post(V + '/os-security-groups', {},
                             version='2.36')[0] == 404
    uuid = world.add_instance('cell1', host='node0', project_id='projA')
    body = world.client.get(V + '/servers/%s/os-security-groups' % uuid,
                            version='2.1', **MEMBER)[1]
    assert [g['name'] for g in body['security_groups']] == ['default']


# usage audit log

def test_usage_audit_log(world):
    world.add_host('node1')
    world.add_host('node2')
    status, body, _r = world.client.get(
        V + '/os-instance_usage_audit_log/2026-03-15%2010:00:00')
    assert status == 200
    log = body['instance_usage_audit_log']
    assert log['period_beginning'] == '2026-02-01 00:00:00'
    assert log['period_ending'] == '2026-03-01 00:00:00'
    assert log['hosts_not_run'] == ['node1', 'node2']
    assert log['num_hosts'] == 2 and log['num_hosts_done'] == 0
    assert log['overall_status'] == '0 of 2 hosts done. 0 errors.'
    log = world.client.get(
        V + '/os-instance_usage_audit_log/2026-01-05%2010:00:00.123')[1][
        'instance_usage_audit_log']
    assert log['period_beginning'] == '2025-12-01 00:00:00'
    listed = world.client.get(V + '/os-instance_usage_audit_log')[1]
    assert listed['instance_usage_audit_logs']['num_hosts_not_run'] == 2
    status, body, _r = world.client.get(
        V + '/os-instance_usage_audit_log/yesterday')
    assert status == 400
    assert body['badRequest']['message'] == (
        'Invalid timestamp for date yesterday')


# os-hosts

def test_os_hosts(world):
    world.add_host('node1')
    world.add_service('ctl', 'berth-conductor')
    world.add_instance('cell1', host='node1', project_id='projA')
    hosts = world.client.get(V + '/os-hosts', version='2.42')[1]['hosts']
    assert {(h['host_name'], h['service'], h['zone']) for h in hosts} == {
        ('node1', 'compute', 'nova'), ('ctl', 'conductor', 'internal')}
    only = world.client.get(V + '/os-hosts?zone=internal',
                            version='2.42')[1]['hosts']
    assert [h['host_name'] for h in only] == ['ctl']
    assert world.client.get(V + '/os-hosts', version='2.43')[0] == 404
    resources = world.client.get(V + '/os-hosts/node1', version='2.1')[1][
        'host']
    by_project = {r['resource']['project']: r['resource']
                  for r in resources}
    assert by_project['(total)']['cpu'] == 16
    assert by_project['(used_max)']['memory_mb'] == 512
    assert by_project['projA']['cpu'] == 1
    assert world.client.get(V + '/os-hosts/nowhere',
                            version='2.1')[0] == 404
    status, body, _r = world.client.put(V + '/os-hosts/node1',
                                        {'status': 'disable'},
                                        version='2.1')
    assert (status, body) == (200, {'host': 'node1', 'status': 'disabled'})
    [service] = world.rows('cell1', cell_tables.services, host='node1')
    assert service['disabled']
    status, body, _r = world.client.put(
        V + '/os-hosts/node1', {'maintenance_mode': 'enable'},
        version='2.1')
    assert status == 501
    assert world.client.put(V + '/os-hosts/node1', {'status': 'maybe'},
                            version='2.1')[0] == 400
    assert world.client.put(V + '/os-hosts/node1', {},
                            version='2.1')[0] == 400
    status, body, _r = world.client.get(V + '/os-hosts/node1/reboot',
                                        version='2.1')
    assert status == 501
    assert 'power management' in body['notImplemented']['message']
    assert world.client.get(V + '/os-hosts/nowhere/reboot',
                            version='2.1')[0] == 404


# /images proxy

def test_images_proxy(world):
    image = helpers.make_image(world.client, name='cirros',
                               visibility='public', os_distro='cirros')
    images = world.client.get(V + '/images', version='2.35')[1]['images']
    assert [i['id'] for i in images] == [image]
    assert world.client.get(V + '/images', version='2.36')[0] == 404
    detail = world.client.get(V + '/images/%s' % image,
                              version='2.1')[1]['image']
    assert detail['status'] == 'ACTIVE' and detail['progress'] == 100
    assert detail['metadata'] == {'os_distro': 'cirros'}
    assert detail['minRam'] == 0
    assert world.client.get(V + '/images/detail?status=SAVING',
                            version='2.1')[1] == {'images': []}
    meta = world.client.get(V + '/images/%s/metadata/os_distro' % image,
                            version='2.1')[1]
    assert meta == {'meta': {'os_distro': 'cirros'}}
    assert world.client.get(V + '/images/%s/metadata/nope' % image,
                            version='2.1')[0] == 404
    assert world.client.delete(V + '/images/%s' % image,
                               version='2.1')[0] == 204
    assert world.client.get(V + '/images/%s' % image,
                            version='2.1')[0] == 404


# /extensions

def test_extensions(world):
    body = world.client.get(V + '/extensions', **MEMBER)[1]
    aliases = [e['alias'] for e in body['extensions']]
    assert 'os-quota-class-sets' in aliases and 'servers' in aliases
    assert 'os-floating-ips' not in aliases
    one = world.client.get(V + '/extensions/os-hosts')[1]['extension']
    assert one['name'] == 'Hosts' and one['links'] == []
    assert world.client.get(V + '/extensions/os-floating-ips')[0] == 404


# os-server-external-events

def _events(world, *events, version='2.79', **kw):
    return world.client.post(V + '/os-server-external-events',
                             {'events': list(events)}, version=version, **kw)


def test_external_events_codes(world):
    on_host = world.add_instance('cell1', host='node0', project_id='projA')
    unplaced = world.add_instance('cell0', project_id='projA')
    missing = '8c1b7a52-0f59-4a2c-9a4d-2f8b3f1f0d77'
    status, body, _r = _events(
        world, {'name': 'network-vif-plugged', 'server_uuid': on_host,
                'tag': 'port-1'},
        {'name': 'network-changed', 'server_uuid': unplaced},
        {'name': 'network-changed', 'server_uuid': missing})
    assert status == 207
    codes = [(e['code'], e['status']) for e in body['events']]
    assert codes == [(200, 'completed'), (422, 'failed'), (404, 'failed')]
    assert body['events'][0]['tag'] == 'port-1'
    status, body, _r = _events(
        world, {'name': 'network-changed', 'server_uuid': on_host,
                'status': 'in-progress'})
    assert status == 200
    assert body['events'][0]['status'] == 'in-progress'
    status, body, _r = _events(
        world, {'name': 'network-changed', 'server_uuid': missing},
        {'name': 'network-changed', 'server_uuid': unplaced})
    assert status == 404
    assert world.client.post(V + '/os-server-external-events', {
        'events': [{'name': 'network-changed',
                    'server_uuid': on_host}]}, **MEMBER)[0] == 403


def test_external_event_names_by_version(world):
    uuid = world.add_instance('cell1', host='node0', project_id='projA')
    for name, first, before in (('volume-extended', '2.51', '2.50'),
                                ('power-update', '2.76', '2.75'),
                                ('accelerator-request-bound', '2.82',
                                 '2.81'),
                                ('volume-reimaged', '2.93', '2.92')):
        event = {'name': name, 'server_uuid': uuid, 'tag': 'POWER_ON'}
        assert _events(world, event, version=before)[0] == 400
        assert _events(world, event, version=first)[0] == 200
    for bad in ({'name': 'reboot', 'server_uuid': uuid},
                {'name': 'network-changed', 'server_uuid': 'nope'},
                {'name': 'network-changed'},
                {'name': 'network-changed', 'server_uuid': uuid,
                 'status': 'done'},
                {'name': 'network-changed', 'server_uuid': uuid,
                 'extra': 1}):
        assert _events(world, bad)[0] == 400, bad
    assert world.client.post(V + '/os-server-external-events',
                             {'events': []})[0] == 400


def test_power_update_event(world):
    uuid = world.add_instance('cell1', host='node0', project_id='projA',
                              power_state=1)
    busy = world.add_instance('cell1', host='node0', project_id='projA',
                              task_state='rebooting')

    def state(server):
        instance = instance_records.get_instance(world.admin_context(),
                                                 _cell_db(world), server)
        return instance.vm_state, instance.power_state

    status, body, _r = _events(world, {'name': 'power-update',
                                       'server_uuid': uuid,
                                       'tag': 'POWER_OFF'})
    assert status == 200, body
    assert state(uuid) == ('stopped', 4)
    actions = action_records.list_actions(world.admin_context(),
                                          _cell_db(world), uuid)
    assert [a['action'] for a in actions] == ['power_update']
    # Already off: nothing changes.
    assert _events(world, {'name': 'power-update', 'server_uuid': uuid,
                           'tag': 'POWER_OFF'})[0] == 200
    assert len(action_records.list_actions(
        world.admin_context(), _cell_db(world), uuid)) == 1
    _events(world, {'name': 'power-update', 'server_uuid': uuid,
                    'tag': 'POWER_ON'})
    assert state(uuid) == ('active', 1)
    _events(world, {'name': 'power-update', 'server_uuid': busy,
                    'tag': 'POWER_OFF'})
    assert state(busy)[0] == 'active'
    # A bad tag refuses the whole request.
    status, body, _r = _events(
        world, {'name': 'power-update', 'server_uuid': uuid,
                'tag': 'POWER_OFF'},
        {'name': 'power-update', 'server_uuid': uuid, 'tag': 'OFF'})
    assert status == 400
    assert state(uuid) == ('active', 1)


# diagnostics

def test_diagnostics(world, monkeypatch):
    from services.compute.virt import diagnostics
    guest = types.SimpleNamespace(allocations={'rp': {
        'VCPU': 2, 'MEMORY_MB': 256, 'DISK_GB': 1}})
    answers = {}

    def get_diagnostics(ctxt, host, instance_uuid):
        answers['asked'] = (host, instance_uuid)
        return answers.get('answer') or {
            'diagnostics': diagnostics.from_guest(guest, 'fake', 'fake')}

    monkeypatch.setattr(world.compute, 'get_diagnostics', get_diagnostics,
                        raising=False)
    uuid = world.add_instance('cell1', host='node0', project_id='projA',
                              power_state=1)
    url = V + '/servers/%s/diagnostics' % uuid
    status, body, _r = world.client.get(url, version='2.48')
    assert status == 200, body
    assert answers['asked'] == ('node0', uuid)
    assert body['num_cpus'] == 2 and body['driver'] == 'fake'
    assert body['memory_details']['maximum'] == 256
    body = world.client.get(url, version='2.47')[1]
    assert body['memory'] == 256 * 1024 and 'cpu1_time' in body
    assert 'vda_read' in body and 'num_cpus' not in body
    assert world.client.get(url, **MEMBER)[0] == 403
    answers['answer'] = {'error': 'not-implemented'}
    assert world.client.get(url)[0] == 501
    off = world.add_instance('cell1', host='node0', project_id='projA',
                             power_state=4)
    status, body, _r = world.client.get(V + '/servers/%s/diagnostics'
                                        % off)
    assert status == 409
    assert 'power state shutdown' in body['conflictingRequest']['message']
    unplaced = world.add_instance('cell0', project_id='projA',
                                  power_state=1)
    assert world.client.get(V + '/servers/%s/diagnostics'
                            % unplaced)[0] == 409


# 2.69: a cell whose database does not answer

def _point_cell1(world, url):
    with world.api_db.engine().begin() as conn:
        conn.execute(api_tables.cell_mappings.update().where(
            api_tables.cell_mappings.c.name == 'cell1').values(
                database_connection=url))
    cell_hosts.forget_cells()


def test_down_cell_partial_results(world, tmp_path):
    up = world.add_instance('cell0', project_id='projA')
    gone = world.add_instance('cell1', host='node0', project_id='projA')
    # NOTE: a directory: SQLite cannot open it.
    _point_cell1(world, 'sqlite:///%s' % tmp_path)
    # Below 2.69 the down cell's servers are left out.
    ids = [s['id'] for s in world.client.get(
        V + '/servers', version='2.68', **MEMBER)[1]['servers']]
    assert ids == [up]
    servers = world.client.get(V + '/servers/detail', version='2.69',
                               **MEMBER)[1]['servers']
    assert [s['id'] for s in servers] == [up, gone]
    assert servers[1]['status'] == 'UNKNOWN'
    assert servers[1]['tenant_id'] == 'projA'
    assert set(servers[1]) == {'id', 'status', 'tenant_id', 'created',
                               'links'}
    status, body, _r = world.client.get(V + '/servers/%s' % gone,
                                        version='2.69', **MEMBER)
    assert status == 200, body
    assert body['server']['status'] == 'UNKNOWN'
    assert 'user_id' in body['server']
    assert world.client.get(V + '/servers/%s' % gone,
                            version='2.68')[0] == 503
    assert world.client.get(V + '/servers/%s' % gone, version='2.69',
                            token='bob:projB')[0] == 404
    # Other routes get a clean 503.
    assert world.client.get(V + '/servers/%s/ips' % gone)[0] == 503
    _point_cell1(world, world.urls['cell1'])
    # A cell found down is skipped for a while without being tried...
    assert world.client.get(V + '/servers/%s' % gone)[1]['server'][
        'status'] == 'UNKNOWN'
    down_cells.forget()
    # ... and then tried again.
    assert world.client.get(V + '/servers/%s' % gone)[1]['server'][
        'status'] == 'ACTIVE'
    # NOTE: the unopenable database cannot even be disposed of.
    cells.REGISTRY._by_url.pop('sqlite:///%s' % tmp_path, None)


def test_unknown_status_filter_is_a_400_from_2_38(world):
    world.add_instance('cell1', host='node0', project_id='projA')
    status, body, _r = world.client.get(V + '/servers?status=FLYING',
                                        version='2.38')
    assert status == 400
    assert body['badRequest']['message'] == 'Invalid status value'
    assert world.client.get(V + '/servers?status=FLYING',
                            version='2.37')[1] == {'servers': []}
    assert len(world.client.get(V + '/servers/detail?status=active',
                                version='2.38', **MEMBER)[1][
        'servers']) == 1


def test_images_proxy_metadata_writes(world):
    image = helpers.make_image(world.client, name='cirros',
                               visibility='public', os_distro='cirros')
    url = V + '/images/%s/metadata' % image
    status, body, _r = world.client.post(
        url, {'metadata': {'os_version': '6'}}, version='2.1')
    assert (status, body) == (200, {'metadata': {'os_distro': 'cirros',
                                                 'os_version': '6'}})
    status, body, _r = world.client.put(
        url, {'metadata': {'hw_cpu_policy': 'dedicated'}}, version='2.1')
    assert body == {'metadata': {'hw_cpu_policy': 'dedicated'}}
    status, body, _r = world.client.put(
        url + '/hw_cpu_policy', {'meta': {'hw_cpu_policy': 'shared'}},
        version='2.1')
    assert (status, body) == (200, {'meta': {'hw_cpu_policy': 'shared'}})
    shown = world.client.get('/image/v2/images/%s' % image)[1]
    assert shown['hw_cpu_policy'] == 'shared' and 'os_distro' not in shown
    for body in ({'meta': {'other': 'x'}}, {'meta': {}},
                 {'meta': {'hw_cpu_policy': 'a', 'b': 'c'}}):
        assert world.client.put(url + '/hw_cpu_policy', body,
                                version='2.1')[0] == 400, body
    for body in ({'metadata': {'name': 'renamed'}},
                 {'metadata': {'k': 1}}, {'meta': {}}):
        assert world.client.post(url, body, version='2.1')[0] == 400, body
    world.client.put(V + '/os-quota-sets/admin',
                     {'quota_set': {'metadata_items': 1}})
    status, body, _r = world.client.post(url, {'metadata': {'a': 'b'}},
                                         version='2.1')
    assert status == 403
    assert world.client.delete(url + '/hw_cpu_policy',
                               version='2.1')[0] == 204
    assert world.client.delete(url + '/hw_cpu_policy',
                               version='2.1')[0] == 404
    assert world.client.get(url, version='2.1')[1] == {'metadata': {}}
    assert world.client.post(url, {'metadata': {'a': 'b'}},
                             version='2.36')[0] == 404


# 2.58 / 2.66: instance action paging and time filters

def test_instance_action_paging(world):
    import datetime
    uuid = world.add_instance('cell1', host='node0', project_id='projA')
    for i in range(3):
        when = datetime.datetime(2026, 1, 1 + i)
        world.insert('cell1', cell_tables.instance_actions,
                     action='a%d' % i, instance_uuid=uuid,
                     request_id='req-%d' % i, user_id='u',
                     project_id='projA', start_time=when, deleted=0,
                     created_at=when, updated_at=when)
    url = V + '/servers/%s/os-instance-actions' % uuid
    body = world.client.get(url + '?limit=2')[1]
    assert [a['request_id'] for a in body['instanceActions']] == [
        'req-2', 'req-1']
    assert 'marker=req-1' in body['links'][0]['href']
    body = world.client.get(url + '?limit=2&marker=req-1')[1]
    assert [a['request_id'] for a in body['instanceActions']] == ['req-0']
    assert 'links' not in body
    assert world.client.get(url + '?marker=nope')[0] == 400
    body = world.client.get(url + '?changes-since=2026-01-02T00:00:00Z')[1]
    assert [a['request_id'] for a in body['instanceActions']] == [
        'req-2', 'req-1']
    body = world.client.get(
        url + '?changes-since=2026-01-01T00:00:00Z'
        '&changes-before=2026-01-02T00:00:00Z')[1]
    assert [a['request_id'] for a in body['instanceActions']] == [
        'req-1', 'req-0']
    assert world.client.get(url + '?changes-since=2026-01-03T00:00:00Z'
                            '&changes-before=2026-01-01T00:00:00Z')[0] == 400
    assert world.client.get(url + '?changes-since=yesterday')[0] == 400
    assert world.client.get(url + '?limit=-1')[0] == 400
    # Below 2.58 the parameters are ignored.
    body = world.client.get(url + '?limit=1&marker=nope', version='2.57')[1]
    assert len(body['instanceActions']) == 3


def test_unknown_query_parameter_is_a_400_from_2_75(world):
    status, body, _r = world.client.get(V + '/servers?colour=blue',
                                        version='2.75')
    assert status == 400 and 'colour' in body['badRequest']['message']
    assert world.client.get(V + '/servers/detail?colour=blue',
                            version='2.74')[0] == 200
    assert world.client.get(V + '/servers?limit=1&sort_key=name',
                            version='2.75')[0] == 200
