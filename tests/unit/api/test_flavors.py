# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Flavors, their extra specs (validated on write) and project access."""

import pytest

from services.api import extra_specs
from tests.unit.api import helpers
from tests.unit.api.helpers import V

USER = {'token': 'u1:p1', 'headers': {'X-Roles': 'member,reader'}}


def test_create_show_list_delete(world):
    client = world.client
    flavor = helpers.make_flavor(client, name='m1.small', vcpus=2,
                                 ram=2048, disk=20)
    status, body, _ = client.get(V + '/flavors/' + flavor)
    assert status == 200
    shown = body['flavor']
    assert (shown['vcpus'], shown['ram'], shown['disk']) == (2, 2048, 20)
    assert shown['extra_specs'] == {} and shown['swap'] == 0
    _s, body, _ = client.get(V + '/flavors/' + flavor, version='2.1')
    assert 'extra_specs' not in body['flavor']
    assert body['flavor']['swap'] == ''
    _s, body, _ = client.get(V + '/flavors')
    assert [f['name'] for f in body['flavors']] == ['m1.small']
    assert set(body['flavors'][0]) == {'id', 'name', 'links',
                                       'description'}
    status, body, _ = client.post(V + '/flavors', {'flavor': {
        'name': 'm1.small', 'vcpus': 1, 'ram': 1, 'disk': 1}})
    assert status == 409
    assert client.delete(V + '/flavors/' + flavor)[0] == 202
    assert client.get(V + '/flavors/' + flavor)[0] == 404


def test_create_validation_and_policy(world):
    client = world.client
    status, body, _ = client.post(V + '/flavors', {'flavor': {
        'name': 'x', 'vcpus': 0, 'ram': 1, 'disk': 1}})
    assert status == 400 and 'vcpus' in body['badRequest']['message']
    status, body, _ = client.post(V + '/flavors', {'flavor': {
        'name': 'x', 'vcpus': 1, 'ram': 1, 'disk': 1, 'bogus': 1}})
    assert status == 400 and 'bogus' in body['badRequest']['message']
    status, _b, _r = client.post(V + '/flavors', {'flavor': {
        'name': 'x', 'vcpus': 1, 'ram': 1, 'disk': 1}}, **USER)
    assert status == 403


@pytest.mark.parametrize('key,value', [
    ('hw:cpu_thread_policy', 'avoid'),
    ('hw:cpu_thread_policy', 'separate'),
    ('hw:cpu_policy', 'pinned'),
    ('hw:no_such_key', '1'),
    ('hw:numa_nodes', '0'),
    ('hw:numa_cpus.0', '0-x'),
    ('hw:mem_page_size', 'huge'),
    ('trait:NOT_A_TRAIT', 'required'),
    ('trait:HW_CPU_X86_AVX', 'maybe'),
    ('resources:NOT_A_CLASS', '1'),
    ('resources:VGPU', '-1'),
    ('quota:cpu_shares', 'lots'),
    ('group_policy', 'sometimes'),
    ('pci_passthrough:alias', 'a:b'),
    ('hw:pmem', 'a,b-c'),
    ('hw:pmem', ''),
    ('hw:emulator_threads_policy', 'own'),
    # NOTE: not a Nova key (hw:emulator_threads_policy is); accepting it
    # would validate a key nothing reads.
    ('hw:cpu_emulator_threads_policy', 'isolate'),
    ('accel:device_profile', 'gpu-profile'),
])
def test_bad_extra_specs_are_400(world, key, value):
    flavor = helpers.make_flavor(world.client)
    status, body, _ = world.client.post(
        V + '/flavors/%s/os-extra_specs' % flavor,
        {'extra_specs': {key: value}})
    assert status == 400, body
    assert key in body['badRequest']['message']
    _s, body, _ = world.client.get(V + '/flavors/%s/os-extra_specs' % flavor)
    assert body['extra_specs'] == {}


@pytest.mark.parametrize('key,value', [
    ('hw:cpu_policy', 'dedicated'),
    ('hw:cpu_thread_policy', 'require'),
    ('hw:numa_nodes', '2'),
    ('hw:numa_cpus.1', '2-3,^3'),
    ('hw:numa_mem.0', '1024'),
    ('hw:mem_page_size', '2MB'),
    ('hw:cpu_realtime', 'yes'),
    ('hw:cpu_realtime_mask', '^0-1'),
    ('trait:HW_CPU_X86_AVX', 'required'),
    ('trait1:CUSTOM_FAST', 'forbidden'),
    ('resources:VGPU', '1'),
    ('resources_gpu:CUSTOM_X', '2'),
    ('aggregate_instance_extra_specs:io', 'fast'),
    ('io', 'fast'),
    ('vendor:anything', 'goes'),
    ('pci_passthrough:alias', 'nic:2,gpu'),
    ('hw:pmem', 'SMALL, 4GB,small'),
    ('hw:emulator_threads_policy', 'isolate'),
    ('hw:mem_encryption', 'true'),
    ('hw:tpm_version', '2.0'),
    ('hw:tpm_model', 'tpm-crb'),
    ('os:secure_boot', 'required'),
])
def test_good_extra_specs(key, value):
    extra_specs.validate_one(key, value)


def test_device_profile_refused_saying_why(world):
    flavor = helpers.make_flavor(world.client)
    status, body, _ = world.client.post(
        V + '/flavors/%s/os-extra_specs' % flavor,
        {'extra_specs': {'accel:device_profile': 'gpu-profile'}})
    assert status == 400
    assert body['badRequest']['message'] == (
        'Extra spec accel:device_profile is not supported: Berth has no '
        'accelerator service (Cyborg) to bind the devices of a device '
        'profile, so the server would boot without them.')


def test_extra_spec_crud(world):
    client = world.client
    flavor = helpers.make_flavor(client, specs={'io': 'fast',
                                                'hw:cpu_policy': 'dedicated'})
    base = V + '/flavors/%s/os-extra_specs' % flavor
    _s, body, _ = client.get(base)
    assert body['extra_specs'] == {'io': 'fast', 'hw:cpu_policy': 'dedicated'}
    status, body, _ = client.put(base + '/io', {'io': 'slow'})
    assert status == 200 and body == {'io': 'slow'}
    status, _b, _r = client.put(base + '/io', {'other': 'slow'})
    assert status == 400
    status, body, _ = client.get(base + '/io')
    assert body == {'io': 'slow'}
    assert client.delete(base + '/io')[0] == 200
    assert client.get(base + '/io')[0] == 404
    assert client.delete(base + '/io')[0] == 404
    _s, body, _ = client.get(V + '/flavors/' + flavor)
    assert body['flavor']['extra_specs'] == {'hw:cpu_policy': 'dedicated'}


def test_private_flavor_access(world):
    client = world.client
    flavor = helpers.make_flavor(client, name='private', public=False)
    assert client.get(V + '/flavors/' + flavor, **USER)[0] == 404
    _s, body, _ = client.get(V + '/flavors', **USER)
    assert body['flavors'] == []
    action = V + '/flavors/%s/action' % flavor
    status, body, _ = client.post(action, {'addTenantAccess': {
        'tenant': 'p1'}})
    assert status == 200
    assert body['flavor_access'] == [{'flavor_id': flavor,
                                      'tenant_id': 'p1'}]
    assert client.post(action, {'addTenantAccess': {'tenant': 'p1'}})[0] == (
        409)
    assert client.get(V + '/flavors/' + flavor, **USER)[0] == 200
    _s, body, _ = client.get(V + '/flavors', **USER)
    assert [f['id'] for f in body['flavors']] == [flavor]
    _s, body, _ = client.get(V + '/flavors?is_public=false')
    assert [f['id'] for f in body['flavors']] == [flavor]
    _s, body, _ = client.get(V + '/flavors/%s/os-flavor-access' % flavor)
    assert body['flavor_access'][0]['tenant_id'] == 'p1'
    status, body, _ = client.post(action, {'removeTenantAccess': {
        'tenant': 'p1'}})
    assert status == 200 and body['flavor_access'] == []
    public = helpers.make_flavor(client, name='public')
    status, _b, _r = client.post(V + '/flavors/%s/action' % public, {
        'addTenantAccess': {'tenant': 'p1'}})
    assert status == 409


def test_description_2_55(world):
    client = world.client
    flavor = helpers.make_flavor(client)
    status, body, _ = client.put(V + '/flavors/' + flavor, {'flavor': {
        'description': 'small and cheap'}})
    assert status == 200 and body['flavor']['description'] == (
        'small and cheap')
    assert client.put(V + '/flavors/' + flavor, {'flavor': {
        'description': 'x'}}, version='2.54')[0] == 404


def test_each_flavor_keeps_its_own_extra_specs_and_projects(world):
    from services.api.records import flavors as flavor_records
    client = world.client
    first = helpers.make_flavor(client, name='a', public=False, specs={
        'io': 'fast', 'hw:cpu_policy': 'dedicated'})
    second = helpers.make_flavor(client, name='b', public=False,
                                 specs={'io': 'slow'})
    bare = helpers.make_flavor(client, name='c')
    for flavor, projects in ((first, ['p3', 'p1', 'p2']), (second, ['p2'])):
        for project in projects:
            assert client.post(V + '/flavors/%s/action' % flavor, {
                'addTenantAccess': {'tenant': project}})[0] == 200
    expected = {first: ({'io': 'fast', 'hw:cpu_policy': 'dedicated'},
                        ['p3', 'p1', 'p2']),
                second: ({'io': 'slow'}, ['p2']), bare: ({}, [])}
    ctxt = world.admin_context()
    for flavor, (specs, projects) in expected.items():
        found = flavor_records.get_flavor(ctxt, flavor)
        assert (found['extra_specs'], found['projects']) == (specs, projects)
    listed = flavor_records.list_flavors(ctxt, is_public=None)
    assert {f['flavorid']: (f['extra_specs'], f['projects'])
            for f in listed} == expected
    _s, body, _ = client.get(V + '/flavors/%s/os-flavor-access' % first)
    assert [a['tenant_id'] for a in body['flavor_access']] == [
        'p3', 'p1', 'p2']


@pytest.mark.parametrize('key,value,message', [
    ('hw:no_such_key', 'x', "Validation failed; extra spec 'hw:no_such_key' "
     "does not appear to be a valid extra spec."),
    ('resources:NOT_A_CLASS', '1', "Validation failed; extra spec "
     "'resources:NOT_A_CLASS' does not appear to be a valid extra spec."),
    ('hw:cpu_policy', 'spread', "Validation failed; 'spread' is not one of: "
     "shared, dedicated, mixed."),
    ('hw:cpu_thread_policy', 'avoid', "Validation failed; 'avoid' is not "
     "one of: prefer, isolate, require."),
    ('hw:numa_nodes', 'two', "Validation failed; 'two' is not a valid "
     "integer value."),
    ('hw:numa_nodes', '0', "Validation failed; '0' is less than the min "
     "value of '1'."),
    ('hw:cpu_realtime', 'maybe', "Validation failed; 'maybe' is not a valid "
     "boolean-like value."),
    ('hw:mem_page_size', '2XB', "Validation failed; '2XB' is not of the "
     "format '(large|small|any|\\d+([kKMGT]i?)?(b|bit|B)?)'."),
    ('vmware:hw_versions', '13', "Validation failed; extra spec "
     "'vmware:hw_versions' does not appear to be a valid extra spec."),
    ('powervm:shared_weight', '300', "Validation failed; '300' is greater "
     "than the max value of '255'."),
])
def test_2_86_answers_with_novas_words(world, key, value, message):
    flavor = helpers.make_flavor(world.client)
    status, body, _ = world.client.post(
        V + '/flavors/%s/os-extra_specs' % flavor,
        {'extra_specs': {key: value}}, version='2.86')
    assert (status, body['badRequest']['message']) == (400, message)
    status, body, _ = world.client.put(
        V + '/flavors/%s/os-extra_specs/%s' % (flavor, key), {key: value},
        version='2.86')
    assert (status, body['badRequest']['message']) == (400, message)


def test_below_2_86_berth_names_the_key_and_leaves_nova_namespaces(world):
    flavor = helpers.make_flavor(world.client)
    path = V + '/flavors/%s/os-extra_specs' % flavor
    status, body, _ = world.client.post(
        path, {'extra_specs': {'hw:numa_nodes': 'two'}}, version='2.85')
    assert status == 400
    assert body['badRequest']['message'] == (
        "Invalid value 'two' for extra spec hw:numa_nodes: must be an "
        "integer >= 1 and <= 2147483647.")
    # NOTE: Nova's 2.86 namespaces are free-form before, as they were.
    specs = {'vmware:hw_versions': '13', 'powervm:shared_weight': '300'}
    status, body, _ = world.client.post(path, {'extra_specs': specs},
                                        version='2.85')
    assert status == 200, body
    status, body, _ = world.client.post(path, {'extra_specs': {
        'powervm:shared_weight': '128', 'vmware:storage_policy': 'gold',
        'powervm:proc_units': '0.5'}}, version='2.86')
    assert status == 200, body
