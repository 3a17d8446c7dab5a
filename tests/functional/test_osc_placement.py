# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The real ``openstack`` CLI with osc-placement drives Berth's placement.

Operators manage placement with ``openstack resource provider ...`` and
friends; these tests run that client, unmodified, against a live
``berth-placement-api`` (a subprocess on a free port, on
``BERTH_TEST_DB_URL`` or a temporary SQLite file) and check what it
prints. Authentication is noauth2 through keystoneauth's ``admin_token``
plugin, which sends ``X-Auth-Token: admin`` to the given endpoint::

    OS_AUTH_TYPE=admin_token OS_TOKEN=admin \\
    OS_ENDPOINT=http://127.0.0.1:8778 OS_PLACEMENT_API_VERSION=1.39 \\
    openstack resource provider list

The tests skip only when the ``openstack`` command (python-openstackclient
with osc-placement) is not installed.
"""

import json
import os
import subprocess
import uuid

import pytest

from tests.functional import placement_server

MICROVERSION = '1.39'
CLI_TIMEOUT = 120

OPENSTACK = placement_server.bin_path('openstack')
pytestmark = pytest.mark.skipif(
    OPENSTACK is None,
    reason='the openstack CLI is not installed (pip install '
           'python-openstackclient osc-placement)')


@pytest.fixture(scope='module')
def server():
    """One live placement server for the whole module."""
    with placement_server.running_server() as live:
        yield live


class OSC(object):
    """Runs ``openstack`` against one server, with noauth2 settings."""

    def __init__(self, server):
        self.server = server
        # NOTE: a clean environment, so that a developer's OS_CLOUD or
        # OS_AUTH_URL cannot send the client elsewhere.
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith('OS_')}
        self.env.update(OS_AUTH_TYPE='admin_token', OS_TOKEN='admin',
                        OS_ENDPOINT=server.url,
                        OS_PLACEMENT_API_VERSION=MICROVERSION)

    def run(self, *args, expect_ok=True):
        """Run ``openstack *args``; return the CompletedProcess."""
        proc = subprocess.run([OPENSTACK] + list(args), env=self.env,
                              capture_output=True, text=True,
                              timeout=CLI_TIMEOUT)
        if expect_ok and proc.returncode != 0:
            pytest.fail('openstack %s failed (%d):\n%s\n%s\n--- server log:\n'
                        '%s' % (' '.join(args), proc.returncode, proc.stdout,
                                proc.stderr, self.server.log_tail()))
        return proc

    def json(self, *args):
        """Run ``openstack *args -f json`` and decode what it prints."""
        return json.loads(self.run(*(args + ('-f', 'json'))).stdout)


@pytest.fixture
def osc(server):
    return OSC(server)


def _name(prefix):
    """A unique name, so the tests also work on a shared database."""
    return '%s-%s' % (prefix, uuid.uuid4().hex[:8])


def _custom(prefix):
    return 'CUSTOM_%s_%s' % (prefix, uuid.uuid4().hex[:8].upper())


def _create_provider(osc, prefix='osc'):
    return osc.json('resource', 'provider', 'create', _name(prefix))


def test_resource_provider_lifecycle(osc):
    rp = _create_provider(osc)
    assert rp['generation'] == 0
    assert rp['root_provider_uuid'] == rp['uuid']
    assert rp['parent_provider_uuid'] is None

    listed = osc.json('resource', 'provider', 'list')
    assert rp['uuid'] in [p['uuid'] for p in listed]

    shown = osc.json('resource', 'provider', 'show', rp['uuid'])
    assert shown['name'] == rp['name']

    new_name = _name('renamed')
    updated = osc.json('resource', 'provider', 'set', rp['uuid'],
                       '--name', new_name)
    assert updated['name'] == new_name
    assert osc.json('resource', 'provider', 'show',
                    rp['uuid'])['name'] == new_name

    osc.run('resource', 'provider', 'delete', rp['uuid'])
    gone = osc.run('resource', 'provider', 'show', rp['uuid'],
                   expect_ok=False)
    assert gone.returncode != 0
    assert 'No resource provider with uuid' in gone.stderr


def test_inventory_and_usage(osc):
    rp = _create_provider(osc)
    inventories = osc.json(
        'resource', 'provider', 'inventory', 'set', rp['uuid'],
        '--resource', 'VCPU=8', '--resource', 'VCPU:allocation_ratio=2.0',
        '--resource', 'MEMORY_MB=4096', '--resource', 'MEMORY_MB:reserved=512')
    by_class = {i['resource_class']: i for i in inventories}
    assert by_class['VCPU']['total'] == 8
    assert by_class['VCPU']['allocation_ratio'] == 2.0
    assert by_class['MEMORY_MB']['reserved'] == 512

    # NOTE: "class set" changes one existing inventory (PUT of one class).
    vcpu = osc.json('resource', 'provider', 'inventory', 'class', 'set',
                    rp['uuid'], 'VCPU', '--total', '16', '--max_unit', '8')
    assert vcpu['total'] == 16
    assert vcpu['max_unit'] == 8

    listed = osc.json('resource', 'provider', 'inventory', 'list',
                      rp['uuid'])
    by_class = {i['resource_class']: i for i in listed}
    assert sorted(by_class) == ['MEMORY_MB', 'VCPU']
    assert by_class['VCPU']['total'] == 16
    # Changing one class left the others alone.
    assert by_class['MEMORY_MB']['reserved'] == 512

    usages = osc.json('resource', 'provider', 'usage', 'show', rp['uuid'])
    assert {u['resource_class']: u['usage'] for u in usages} == {
        'MEMORY_MB': 0, 'VCPU': 0}


def test_custom_resource_class(osc):
    rc = _custom('OSC_RC')
    osc.run('resource', 'class', 'create', rc)
    assert rc in [c['name'] for c in osc.json('resource', 'class', 'list')]
    assert osc.json('resource', 'class', 'show', rc)['name'] == rc
    rp = _create_provider(osc)
    inventories = osc.json('resource', 'provider', 'inventory', 'set',
                           rp['uuid'], '--resource', '%s=3' % rc)
    assert inventories[0]['resource_class'] == rc
    in_use = osc.run('resource', 'class', 'delete', rc, expect_ok=False)
    assert in_use.returncode != 0
    assert 'in use' in in_use.stderr


def test_traits(osc):
    trait = _custom('OSC_TRAIT')
    osc.run('trait', 'create', trait)
    names = [t['name'] for t in osc.json('trait', 'list')]
    assert trait in names
    assert 'HW_CPU_X86_AVX2' in names

    rp = _create_provider(osc)
    traits = osc.json('resource', 'provider', 'trait', 'set', rp['uuid'],
                      '--trait', trait, '--trait', 'HW_CPU_X86_AVX2')
    assert sorted(t['name'] for t in traits) == sorted(
        [trait, 'HW_CPU_X86_AVX2'])
    listed = osc.json('resource', 'provider', 'trait', 'list', rp['uuid'])
    assert sorted(t['name'] for t in listed) == sorted(
        [trait, 'HW_CPU_X86_AVX2'])
    # Setting traits moved the provider's generation once.
    assert osc.json('resource', 'provider', 'show',
                    rp['uuid'])['generation'] == 1

    associated = osc.json('trait', 'list', '--associated')
    assert trait in [t['name'] for t in associated]


def test_aggregates(osc):
    rp = _create_provider(osc)
    agg1, agg2 = str(uuid.uuid4()), str(uuid.uuid4())
    aggregates = osc.json('resource', 'provider', 'aggregate', 'set',
                          rp['uuid'], '--aggregate', agg1,
                          '--aggregate', agg2, '--generation', '0')
    assert sorted(a['uuid'] for a in aggregates) == sorted([agg1, agg2])
    listed = osc.json('resource', 'provider', 'aggregate', 'list',
                      rp['uuid'])
    assert sorted(a['uuid'] for a in listed) == sorted([agg1, agg2])

    stale = osc.run('resource', 'provider', 'aggregate', 'set', rp['uuid'],
                    '--aggregate', agg1, '--generation', '0',
                    expect_ok=False)
    assert stale.returncode != 0
    assert 'generation' in stale.stderr

    members = osc.json('resource', 'provider', 'list', '--member-of', agg2)
    assert [p['uuid'] for p in members] == [rp['uuid']]


def test_allocations_and_candidates(osc):
    rp = _create_provider(osc, 'compute')
    osc.json('resource', 'provider', 'inventory', 'set', rp['uuid'],
             '--resource', 'VCPU=4', '--resource', 'MEMORY_MB=2048')
    consumer = str(uuid.uuid4())
    project, user = str(uuid.uuid4()), str(uuid.uuid4())

    allocations = osc.json(
        'resource', 'provider', 'allocation', 'set', consumer,
        '--allocation', 'rp=%s,VCPU=1,MEMORY_MB=512' % rp['uuid'],
        '--project-id', project, '--user-id', user,
        '--consumer-type', 'INSTANCE')
    assert len(allocations) == 1
    assert allocations[0]['resource_provider'] == rp['uuid']
    assert allocations[0]['resources'] == {'VCPU': 1, 'MEMORY_MB': 512}
    assert allocations[0]['project_id'] == project
    assert allocations[0]['consumer_type'] == 'INSTANCE'

    shown = osc.json('resource', 'provider', 'allocation', 'show', consumer)
    assert shown[0]['resources'] == {'VCPU': 1, 'MEMORY_MB': 512}
    usages = osc.json('resource', 'provider', 'usage', 'show', rp['uuid'])
    assert {u['resource_class']: u['usage'] for u in usages} == {
        'VCPU': 1, 'MEMORY_MB': 512}

    # 3 of the remaining 3 VCPU fit: the provider is a candidate.
    candidates = osc.json('allocation', 'candidate', 'list',
                          '--resource', 'VCPU=3')
    mine = [c for c in candidates if c['resource provider'] == rp['uuid']]
    assert len(mine) == 1
    assert mine[0]['allocation'] == 'VCPU=3'
    # 4 do not.
    candidates = osc.json('allocation', 'candidate', 'list',
                          '--resource', 'VCPU=4')
    assert rp['uuid'] not in [c['resource provider'] for c in candidates]

    osc.run('resource', 'provider', 'allocation', 'unset', consumer,
            '--provider', rp['uuid'])
    shown = osc.json('resource', 'provider', 'allocation', 'show', consumer)
    assert shown == []
