# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""POST/GET/DELETE /servers: the boot path up to the conductor cast,
listing across build requests and cells, and the three delete paths.
"""

import json

from common.conf import CONF
from common.db import action_records
from common.db import api_tables
from common.db import boot_records
from common.db import cell_tables
from common.db import cells
from common.db import instance_records
from common.objects import instance as instance_obj
from services.api import deletion
from services.api.handlers import servers
from services.api import quota
from tests.unit.api import helpers
from tests.unit.api.helpers import V
from tests.unit import calls

USER = {'token': 'u1:p1', 'headers': {'X-Roles': 'member,reader'}}


def _setup(world, specs=None, **image_props):
    flavor = helpers.make_flavor(world.client, specs=specs)
    image = helpers.make_image(world.client, **image_props)
    return flavor, image


def test_boot_records_build_request_and_casts(world):
    world.add_host('node1')
    flavor, image = _setup(world, specs={'hw:cpu_policy': 'dedicated'})
    status, body = helpers.boot(world.client, flavor, image,
                                hints={'same_host': [
                                    '5a1c8f2e-6c1c-4f3e-9bd6-0d2b3a3b1c11'],
                                    'query': ['>=', '$free_ram_mb', 1]},
                                metadata={'k': 'v'})
    assert status == 202, body
    uuid = body['server']['id']
    assert body['server']['links'][0]['href'].endswith('/servers/' + uuid)
    [(spec, uuids)] = world.conductor.builds
    assert uuids == [uuid]
    assert spec.num_instances == 1
    assert spec.scheduler_hints['same_host'] == [
        '5a1c8f2e-6c1c-4f3e-9bd6-0d2b3a3b1c11']
    assert json.loads(spec.scheduler_hints['query'][0]) == [
        '>=', '$free_ram_mb', 1]
    # NOTE: dedicated CPUs always imply a NUMA topology
    # (doc/behaviours.md §numa-constraints).
    assert len(spec.numa_topology['cells']) == 1
    ctx = world.admin_context()
    instance = boot_records.get_build_request(ctx, uuid)
    assert instance.display_name == 'vm'
    assert instance.metadata == {'k': 'v'}
    assert boot_records.get_request_spec(ctx, uuid).flavor.vcpus == 1
    assert boot_records.get_instance_mapping(ctx, uuid)['cell_uuid'] is None
    # NOTE: the cast carries what the build request holds (conductor RPC
    # 1.8), so that the conductor need not read it back.
    [sent] = world.conductor.build_requests
    assert sent.to_primitive() == instance.to_primitive()


def test_create_answers_admin_pass_as_nova(world, override):
    flavor, image = _setup(world)
    status, body = helpers.boot(world.client, flavor, image)
    assert status == 202, body
    generated = body['server']['adminPass']
    assert len(generated) == 12
    assert set(generated) <= set(''.join(servers.PASSWORD_GROUPS))
    _s, again = helpers.boot(world.client, flavor, image, name='vm2')
    assert again['server']['adminPass'] != generated
    # NOTE: the caller's own password is the one answered.
    _s, body = helpers.boot(world.client, flavor, image, name='vm3',
                            adminPass='s3cret!')
    assert body['server']['adminPass'] == 's3cret!'
    override('password_length', 20)
    _s, body = helpers.boot(world.client, flavor, image, name='vm4')
    assert len(body['server']['adminPass']) == 20
    override('enable_instance_password', False, group='api')
    status, body = helpers.boot(world.client, flavor, image, name='vm5',
                                adminPass='s3cret!')
    assert status == 202
    assert 'adminPass' not in body['server'], body
    # NOTE: a reservation id answer has no server, so no password.
    override('enable_instance_password', True, group='api')
    _s, body = helpers.boot(world.client, flavor, image, name='vm6',
                            return_reservation_id=True)
    assert set(body) == {'reservation_id'}


def test_generated_passwords_mix_every_group():
    for length in (0, 1, 2, 3, 12, 64):
        password = servers.generate_password(length)
        assert len(password) == length
        if length >= 3:
            for group in servers.PASSWORD_GROUPS:
                assert set(password) & set(group), (password, group)


def test_multi_create_names_reservation_and_launch_index(world):
    flavor, image = _setup(world)
    status, body = helpers.boot(world.client, flavor, image, min_count=2,
                                max_count=3, return_reservation_id=True)
    assert status == 202, body
    reservation = body['reservation_id']
    assert reservation.startswith('r-')
    [(spec, uuids)] = world.conductor.builds
    assert len(uuids) == 3 and spec.num_instances == 3
    status, body, _ = world.client.get(
        V + '/servers/detail?reservation_id=%s' % reservation)
    names = [s['name'] for s in body['servers']]
    assert names == ['vm-3', 'vm-2', 'vm-1']
    indexes = [s['OS-EXT-SRV-ATTR:launch_index'] for s in body['servers']]
    assert indexes == [2, 1, 0]


def test_quota_reduces_multi_create_to_what_fits(world):
    flavor, image = _setup(world)
    world.client.put(V + '/os-quota-sets/admin',
                     {'quota_set': {'instances': 2}})
    status, _body = helpers.boot(world.client, flavor, image, min_count=1,
                                 max_count=5)
    assert status == 202
    assert len(world.conductor.builds[0][1]) == 2
    status, body = helpers.boot(world.client, flavor, image)
    assert status == 403
    assert body['forbidden']['message'] == (
        'Quota exceeded for instances: Requested 1, but already used 2 of '
        '2 instances')


def test_cores_quota_message(world):
    flavor = helpers.make_flavor(world.client, vcpus=16)
    image = helpers.make_image(world.client)
    world.client.put(V + '/os-quota-sets/admin', {'quota_set': {'cores': 20}})
    assert helpers.boot(world.client, flavor, image)[0] == 202
    status, body = helpers.boot(world.client, flavor, image)
    assert status == 403
    assert 'cores: Requested 16, but already used 16 of 20' in (
        body['forbidden']['message'])


def test_bad_requests_are_400_naming_the_problem(world):
    flavor, image = _setup(world)
    client = world.client
    status, body, _ = client.post(V + '/servers', {'server': {
        'name': 'x', 'imageRef': image, 'networks': 'none'}})
    assert status == 400
    assert "'flavorRef' is a required property" in (
        body['badRequest']['message'])
    status, body, _ = client.post(V + '/servers', {'server': {
        'name': 'x', 'flavorRef': flavor, 'imageRef': image,
        'networks': 'none', 'min_count': 'many'}})
    assert status == 400 and 'min_count' in body['badRequest']['message']
    status, body = helpers.boot(client, 'nope', image)
    assert status == 400 and 'Flavor nope' in body['badRequest']['message']
    status, body = helpers.boot(client, flavor,
                                '11111111-2222-3333-4444-555555555555')
    assert status == 400 and 'Image' in body['badRequest']['message']
    status, body = helpers.boot(client, flavor, image,
                                availability_zone='nowhere')
    assert status == 400 and 'availability zone' in (
        body['badRequest']['message'])
    status, body = helpers.boot(client, flavor, image, hints={
        'group': '11111111-2222-3333-4444-555555555555'})
    assert status == 400
    assert world.conductor.builds == []


def test_numa_constraints_checked_at_api_time(world):
    # NOTE: doc/behaviours.md B11: an image contradicting the flavor is a
    # 400 at boot.
    flavor = helpers.make_flavor(world.client, specs={
        'hw:cpu_policy': 'shared'})
    image = helpers.make_image(world.client, hw_cpu_policy='dedicated')
    status, body = helpers.boot(world.client, flavor, image)
    assert status == 400
    assert 'hw_cpu_policy' in body['badRequest']['message']
    asymmetric = helpers.make_flavor(world.client, name='m3', vcpus=3,
                                     specs={'hw:numa_nodes': '2'})
    status, body = helpers.boot(world.client, asymmetric, image)
    assert status == 400 and 'evenly' in body['badRequest']['message']


def test_guest_feature_rules_checked_at_api_time(world):
    """Nova's flavor/image conflicts are a 400 and build nothing."""
    world.add_host('node1')
    off = helpers.make_flavor(world.client, name='noenc', specs={
        'hw:mem_encryption': 'false'})
    image = helpers.make_image(world.client, hw_mem_encryption='true',
                               hw_firmware_type='uefi')
    status, body = helpers.boot(world.client, off, image)
    assert status == 400
    assert body['badRequest']['message'].startswith(
        'Flavor noenc has hw:mem_encryption extra spec explicitly set to '
        'false, conflicting with image cirros')
    bios = helpers.make_image(world.client, name='bios',
                              hw_mem_encryption='true')
    plain = helpers.make_flavor(world.client, name='plain')
    status, body = helpers.boot(world.client, plain, bios)
    assert status == 400 and "'uefi'" in body['badRequest']['message']
    crb = helpers.make_image(world.client, name='crb', hw_tpm_version='1.2',
                             hw_tpm_model='tpm-crb')
    status, body = helpers.boot(world.client, plain, crb)
    assert status == 400
    assert body['badRequest']['message'] == (
        'TPM model CRB is only valid with TPM version 2.0.')
    shared = helpers.make_flavor(world.client, name='emu', specs={
        'hw:emulator_threads_policy': 'isolate'})
    status, body = helpers.boot(world.client, shared, image)
    assert status == 400
    assert 'requires a dedicated CPU policy' in body['badRequest']['message']
    assert world.conductor.builds == []


def test_forced_host_form_and_policy(world):
    world.add_host('node1')
    flavor, image = _setup(world)
    status, _ = helpers.boot(world.client, flavor, image,
                             availability_zone='nova:node1:node1')
    assert status == 202
    spec = world.conductor.builds[-1][0]
    assert spec.force_hosts == ['node1'] and spec.force_nodes == ['node1']
    assert spec.availability_zone == 'nova'
    status, body = helpers.boot(world.client, flavor, image,
                                availability_zone='nova:node1', **USER)
    assert status == 403


def test_requested_destination_2_74(world):
    world.add_host('node1')
    flavor, image = _setup(world)
    status, _ = helpers.boot(world.client, flavor, image, host='node1')
    assert status == 202
    assert world.conductor.builds[-1][0].requested_destination.host == (
        'node1')
    status, body = helpers.boot(world.client, flavor, image, host='ghost')
    assert status == 400
    status, body = helpers.boot(world.client, flavor, image, host='node1',
                                version='2.73')
    assert status == 400 and 'host' in body['badRequest']['message']


def test_group_hint_adds_member_and_sets_spec(world):
    flavor, image = _setup(world)
    status, body, _ = world.client.post(V + '/os-server-groups', {
        'server_group': {'name': 'g', 'policy': 'anti-affinity',
                         'rules': {'max_server_per_host': 2}}})
    group = body['server_group']['id']
    status, body = helpers.boot(world.client, flavor, image, max_count=2,
                                hints={'group': group})
    assert status == 202
    spec, uuids = world.conductor.builds[-1]
    assert spec.instance_group.policy == 'anti-affinity'
    assert spec.instance_group.rules == {'max_server_per_host': 2}
    _s, body, _ = world.client.get(V + '/os-server-groups/' + group)
    assert sorted(body['server_group']['members']) == sorted(uuids)


def test_conductor_unreachable_leaves_nothing(world):
    flavor, image = _setup(world)
    world.conductor.fail = True
    status, _body = helpers.boot(world.client, flavor, image)
    assert status == 503
    assert boot_records.list_build_requests(world.admin_context()) == []
    assert world.rows('api', api_tables.instance_mappings) == []


def _error_instance(world):
    uuid = world.add_instance('cell0', vm_state='error')
    instance_records.add_fault(
        world.admin_context(), cells.get_cell_database(world.urls['cell0']),
        uuid, 500, 'No valid host was found. ',
        details={'filters': [{'name': 'RamFilter', 'out': 2}]})
    return uuid


def test_error_server_shows_fault_details_to_admins_only(world):
    uuid = world.add_instance('cell0', vm_state='error', project_id='p1')
    instance_records.add_fault(
        world.admin_context(), cells.get_cell_database(world.urls['cell0']),
        uuid, 500, 'No valid host was found. ', details='RamFilter: 0 hosts')
    _s, body, _ = world.client.get(V + '/servers/' + uuid)
    fault = body['server']['fault']
    assert body['server']['status'] == 'ERROR'
    assert fault['message'].startswith('No valid host')
    assert fault['details'] == 'RamFilter: 0 hosts'
    _s, body, _ = world.client.get(V + '/servers/' + uuid, **USER)
    assert 'details' not in body['server']['fault']
    assert 'OS-EXT-SRV-ATTR:host' not in body['server']


def test_list_merges_build_requests_and_cells(world):
    world.add_host('node1')
    active = world.add_instance('cell1', host='node1')
    errored = _error_instance(world)
    flavor, image = _setup(world)
    _s, body = helpers.boot(world.client, flavor, image, name='new')
    building = body['server']['id']
    _s, body, _ = world.client.get(V + '/servers/detail')
    by_id = {s['id']: s for s in body['servers']}
    assert by_id[active]['status'] == 'ACTIVE'
    assert by_id[active]['OS-EXT-SRV-ATTR:host'] == 'node1'
    assert by_id[active]['hostId']
    assert by_id[errored]['status'] == 'ERROR'
    assert by_id[building]['status'] == 'BUILD'
    assert by_id[building]['flavor']['original_name'] == 'm1'
    _s, body, _ = world.client.get(V + '/servers?limit=1')
    assert len(body['servers']) == 1 and 'servers_links' in body
    _s, body, _ = world.client.get(V + '/servers', **USER)
    assert body['servers'] == []
    _s, body, _ = world.client.get(V + '/servers?all_tenants=1')
    assert len(body['servers']) == 3


def test_project_id_in_url_is_accepted(world):
    flavor, image = _setup(world)
    status, _b, _r = world.client.get(V + '/admin/flavors/' + flavor)
    assert status == 200


def test_delete_build_request(world):
    flavor, image = _setup(world)
    _s, body = helpers.boot(world.client, flavor, image)
    uuid = body['server']['id']
    status, _b, _r = world.client.delete(V + '/servers/' + uuid)
    assert status == 204
    assert boot_records.get_build_request(world.admin_context(), uuid) is None
    assert world.client.get(V + '/servers/' + uuid)[0] == 404


def test_delete_on_live_host_casts_terminate(world):
    world.add_host('node1')
    uuid = world.add_instance('cell1', host='node1')
    status, _b, _r = world.client.delete(V + '/servers/' + uuid)
    assert status == 204
    assert world.compute.terminated == [('node1', uuid)]
    rows = world.rows('cell1', cell_tables.instances, uuid=uuid)
    assert rows[0]['task_state'] == 'deleting' and rows[0]['deleted'] == 0
    actions = world.rows('cell1', cell_tables.instance_actions,
                         instance_uuid=uuid)
    assert [a['action'] for a in actions] == ['delete']
    assert uuid in world.placement.allocations


def test_delete_on_down_host_is_local_and_frees_allocations(world):
    world.add_host('node1', age=3600)
    uuid = world.add_instance('cell1', host='node1')
    status, _b, _r = world.client.delete(V + '/servers/' + uuid)
    assert status == 204
    assert world.compute.terminated == []
    rows = world.rows('cell1', cell_tables.instances, uuid=uuid)
    assert rows[0]['deleted'] != 0 and rows[0]['vm_state'] == 'deleted'
    assert uuid not in world.placement.allocations
    assert ('DELETE', '/allocations/%s' % uuid) in world.placement.calls
    assert world.client.get(V + '/servers/' + uuid)[0] == 404


def test_delete_in_cell0_is_local(world):
    uuid = _error_instance(world)
    assert world.client.delete(V + '/servers/' + uuid)[0] == 204
    assert world.compute.terminated == []
    assert world.rows('cell0', cell_tables.instances,
                      uuid=uuid)[0]['deleted'] != 0


def test_instance_actions(world):
    world.add_host('node1', age=3600)
    uuid = world.add_instance('cell1', host='node1')
    world.client.delete(V + '/servers/' + uuid)
    # NOTE: the server is gone; its actions stay readable for admins only
    # through the cell, so look before deleting in a second server.
    other = world.add_instance('cell1', host='node1')
    database = cells.get_cell_database(world.urls['cell1'])
    action_records.record_action(world.admin_context(), database, other,
                                 'create', request_id='req-1')
    action_records.action_event_finish(
        world.admin_context(), database, other, 'compute_build', 'node1')
    _s, body, _ = world.client.get(
        V + '/servers/%s/os-instance-actions' % other)
    assert [a['action'] for a in body['instanceActions']] == ['create']
    _s, body, _ = world.client.get(
        V + '/servers/%s/os-instance-actions/req-1' % other)
    [event] = body['instanceAction']['events']
    assert event['event'] == 'compute_build' and event['host'] == 'node1'


def test_delete_racing_the_conductor_follows_the_mapping(world):
    """The build request vanished (built meanwhile): delete in the cell."""
    world.add_host('node1')
    uuid = world.add_instance('cell1', host='node1')
    stale = instance_obj.Instance(uuid=uuid, project_id='admin')
    deletion.delete(world.admin_context(), CONF, stale, None)
    assert world.compute.terminated == [('node1', uuid)]


def test_quota_recheck_undoes_the_loser(world, monkeypatch):
    flavor, image = _setup(world)
    world.client.put(V + '/os-quota-sets/admin',
                     {'quota_set': {'instances': 1}})
    # NOTE: as if another boot passed its check at the same moment.
    monkeypatch.setattr(quota, 'allowed_count',
                        lambda *args, **kwargs: args[-1])
    assert helpers.boot(world.client, flavor, image)[0] == 202
    status, body = helpers.boot(world.client, flavor, image)
    assert status == 403 and 'instances' in body['forbidden']['message']
    assert len(boot_records.list_build_requests(world.admin_context())) == 1
    assert len(world.conductor.builds) == 1


def _count_limit_reads(monkeypatch):
    """The project ids of every quota limits read from now on."""
    return calls.record_calls(
        monkeypatch, quota.quota_records, 'get_limits',
        lambda ctxt, project_id, class_name: project_id)


def test_a_boot_reads_the_quota_limits_once(world, monkeypatch):
    flavor, image = _setup(world)
    world.client.put(V + '/os-quota-sets/admin',
                     {'quota_set': {'instances': 2}})
    reads = _count_limit_reads(monkeypatch)
    assert helpers.boot(world.client, flavor, image)[0] == 202
    assert reads == ['admin']
    # The limit still holds: the check and the recheck counted.
    assert helpers.boot(world.client, flavor, image)[0] == 202
    status, body = helpers.boot(world.client, flavor, image)
    assert status == 403 and 'instances' in body['forbidden']['message']


def test_a_group_boot_reads_the_quota_limits_once(world, monkeypatch):
    flavor, image = _setup(world)
    world.client.put(V + '/os-quota-sets/admin',
                     {'quota_set': {'server_group_members': 2}})
    _s, body, _ = world.client.post(V + '/os-server-groups', {
        'server_group': {'name': 'g', 'policy': 'affinity'}})
    group = body['server_group']['id']
    reads = _count_limit_reads(monkeypatch)
    assert helpers.boot(world.client, flavor, image,
                        hints={'group': group})[0] == 202
    assert reads == ['admin']
    # The group's member limit still holds.
    status, body = helpers.boot(world.client, flavor, image, max_count=2,
                                min_count=2, hints={'group': group})
    assert status == 403 and 'group' in body['forbidden']['message']


def test_flavor_then_image_then_metadata_quota_decide_the_error(world):
    flavor, image = _setup(world)
    unknown = '11111111-2222-3333-4444-555555555555'
    world.client.put(V + '/os-quota-sets/admin',
                     {'quota_set': {'metadata_items': 0}})
    status, body = helpers.boot(world.client, 'nope', unknown,
                                metadata={'a': 'b'})
    assert status == 400 and 'Flavor nope' in body['badRequest']['message']
    status, body = helpers.boot(world.client, flavor, unknown,
                                metadata={'a': 'b'})
    assert status == 400
    assert 'Image %s' % unknown in body['badRequest']['message']
    status, body = helpers.boot(world.client, flavor, image,
                                metadata={'a': 'b'})
    assert status == 403
    assert body['forbidden']['message'] == (
        'Maximum number of metadata items exceeds 0')
    assert world.conductor.builds == []


def test_list_tells_each_host_status(world):
    # NOTE: a list reads its hosts' services in one query per cell; each
    # server must still show its own host's status.
    for host, kwargs in (('up1', {}), ('off1', {'disabled': True}),
                         ('down1', {'forced_down': True}),
                         ('quiet1', {'age': 3600})):
        world.add_host(host, **kwargs)
    uuids = {host: world.add_instance('cell1', host=host)
             for host in ('up1', 'off1', 'down1', 'quiet1', 'gone1')}
    _s, body, _ = world.client.get(V + '/servers/detail')
    listed = {s['id']: s['host_status'] for s in body['servers']}
    assert listed == {uuids['up1']: 'UP', uuids['off1']: 'MAINTENANCE',
                      uuids['down1']: 'DOWN', uuids['quiet1']: 'DOWN',
                      uuids['gone1']: 'UNKNOWN'}
    for host, uuid in uuids.items():
        _s, body, _ = world.client.get(V + '/servers/%s' % uuid)
        assert body['server']['host_status'] == listed[uuid]


def test_a_listed_server_is_found_in_its_cell_directly(world, monkeypatch):
    world.add_host('node1')
    live = world.add_instance('cell1', host='node1')
    gone = world.add_instance('cell1', host='node1')
    database = cells.get_cell_database(world.urls['cell1'])
    table = cell_tables.instances
    database.writer(lambda ctx: ctx.session.execute(
        table.update().where(table.c.uuid == gone).values(
            vm_state='deleted', deleted=table.c.id)))(world.admin_context())
    reads = calls.record_calls(monkeypatch, boot_records,
                               'get_instance_mapping', lambda c, u, *a, **k: u)
    # NOTE: changes-since lists deleted servers too; only the live one is
    # remembered.
    status, body, _r = world.client.get(
        V + '/servers/detail?changes-since=2000-01-01T00:00:00Z')
    assert status == 200
    assert {s['id'] for s in body['servers']} == {live, gone}
    status, body, _r = world.client.get(V + '/servers/' + live)
    assert status == 200 and body['server']['id'] == live
    assert reads == []
    assert world.client.get(V + '/servers/' + gone)[0] == 404
    assert reads == [gone]


def test_a_server_seen_once_is_found_in_its_cell_directly(world,
                                                          monkeypatch):
    world.add_host('node1')
    uuid = world.add_instance('cell1', host='node1')
    reads = calls.record_calls(monkeypatch, boot_records,
                               'get_instance_mapping', lambda c, u, *a, **k: u)
    for _ in range(3):
        status, body, _r = world.client.get(V + '/servers/' + uuid)
        assert status == 200 and body['server']['id'] == uuid
    # the API database's mapping is read the first time only
    assert reads == [uuid]
    # a row gone from its cell (archived) is 404, and read afresh after
    database = cells.get_cell_database(world.urls['cell1'])
    database.writer(lambda ctx: ctx.session.execute(
        cell_tables.instances.delete().where(
            cell_tables.instances.c.uuid == uuid)))(world.admin_context())
    assert world.client.get(V + '/servers/' + uuid)[0] == 404
    assert world.client.get(V + '/servers/' + uuid)[0] == 404
    assert reads == [uuid, uuid]
