# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Headroom is exact: it says N, and N+1 boots make N ACTIVE and 1 ERROR.

Every service is its own process on MariaDB and RabbitMQ
(tests/functional/stack.py); two fake hosts of 8 CPUs in 2 NUMA cells
(4 shared, 4 dedicated) and 4 GiB, of which 512 MiB per cell are 2 MiB
huge pages. ``berth-manage capacity headroom`` runs the pipeline
offline; the API's ``/os-berth-capacity/headroom`` asks the scheduler;
both must agree with the boots. test_capacity_all_in_one.py asks the
same of ``berth-all-in-one``.
"""

import json
import subprocess
import sys

import pytest

from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack_fixture

HOSTS = 2
FILTERS = ('AvailabilityZoneFilter', 'ComputeFilter',
           'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
           'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter',
           'NUMATopologyFilter')
#: 256 pages of 2 MiB (512 MiB) on each NUMA cell.
HUGEPAGES = '2048:256'


@pytest.fixture(scope='module')
def stack(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('stack-capacity')),
            seed=_seed, hosts=HOSTS, extra_conf={
                ('filter_scheduler', 'enabled_filters'): ','.join(FILTERS),
                ('fake_driver', 'vcpus'): 8,
                ('fake_driver', 'memory_mb'): 4096,
                ('fake_driver', 'numa_cells'): 2,
                ('compute', 'cpu_dedicated_set'): '4-7',
                ('compute', 'cpu_shared_set'): '0-3',
                ('fake_driver', 'hugepages'): HUGEPAGES,
            }) as deployment:
        yield deployment


def _seed(deployment):
    api = deployment.compute
    deployment.flavors = {
        'plain': api.create_flavor('plain', vcpus=1, ram=1280, disk=1),
        # NOTE: 2 pinned CPUs of one NUMA cell (which has 2 dedicated):
        # the NUMA fit, not placement's 4 PCPUs, decides.
        'pinned': api.create_flavor(
            'pinned', vcpus=1, ram=256, disk=1, extra_specs={
                'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '1'}),
        # NOTE: 384 MiB of 2 MiB pages and a shared CPU: one per host,
        # in cell 0 (all the shared CPUs, 512 MiB of pages), though
        # placement's MEMORY_MB would take ten per host.
        'hugepages': api.create_flavor(
            'hugepages', vcpus=1, ram=384, disk=1, extra_specs={
                'hw:mem_page_size': '2048'}),
    }
    deployment.image = api.create_image('cirros')


def _headroom(stack, flavor):
    answer = json.loads(stack.manage('capacity', 'headroom', '--flavor',
                                     flavor, '--json'))
    api = stack.compute.request(
        'GET', '/os-berth-capacity/headroom?flavor=%s' % flavor)
    assert api['headroom']['total'] == answer['total'], (api, answer)
    return answer


def _boot(stack, flavor, count, hints=None, servers=None):
    """Boot ``count`` servers one by one; their statuses."""
    api = stack.compute
    statuses = []
    for index in range(count):
        server = api.create_server('%s-%d' % (flavor, index),
                                   stack.flavors[flavor], stack.image,
                                   hints=hints)
        servers.append(server['id'])
        statuses.append(api.wait_for_server(server['id'])['status'])
    return statuses


def _boot_one_by_one(stack, flavor, count, hints=None):
    servers = []
    try:
        return _boot(stack, flavor, count, hints, servers)
    finally:
        for server_id in servers:
            stack.compute.delete_server(server_id)


def _manage(stack, *args):
    """(exit code, stdout) of berth-manage (a non-zero code is an answer).
    """
    result = subprocess.run(
        [sys.executable, '-m', 'services.manage.main', '--config-file',
         stack.conf_file] + list(args), capture_output=True, text=True,
        timeout=120)
    return result.returncode, result.stdout


@pytest.mark.parametrize('flavor', ['pinned', 'hugepages', 'plain'])
def test_headroom_then_n_plus_one_boots(stack, flavor):
    answer = _headroom(stack, flavor)
    total = answer['total']
    assert total > 0, answer
    if flavor == 'hugepages':
        # NOTE: the pages decide (see the flavor).
        assert total == HOSTS, answer
    assert sum(answer['per_host'].values()) == total
    statuses = _boot_one_by_one(stack, flavor, total + 1)
    assert statuses == ['ACTIVE'] * total + ['ERROR'], (answer, statuses)


def test_explain_and_what_if_offline(stack):
    out = stack.manage('scheduler', 'explain', '--flavor', 'plain',
                       '--image', 'cirros')
    assert 'Would select:' in out
    out = stack.manage('capacity', 'what-if', '--lose', 'stack-host0')
    assert out.splitlines()[-1] == 'Result: every server can be re-placed.'


def test_anti_affinity_max_server_per_host(stack):
    group = stack.compute.create_server_group(
        'spread', 'anti-affinity', rules={'max_server_per_host': 2})
    hint = 'group=%s' % group
    answer = json.loads(stack.manage('capacity', 'headroom', '--flavor',
                                     'plain', '--hint', hint, '--json'))
    assert answer['total'] == 2 * HOSTS, answer
    statuses = _boot_one_by_one(stack, 'plain', answer['total'] + 1,
                                hints={'group': group})
    assert statuses == ['ACTIVE'] * answer['total'] + ['ERROR']


def test_what_if_follows_groups_and_stored_specs(stack):
    api = stack.compute
    group = api.create_server_group('pair', 'anti-affinity')
    servers = []
    try:
        assert _boot(stack, 'pinned', 2, {'group': group}, servers) == \
            ['ACTIVE', 'ACTIVE']
        lost = sorted(api.get_server(s)['OS-EXT-SRV-ATTR:host']
                      for s in servers)[0]
        code, out = _manage(stack, 'capacity', 'what-if', '--lose', lost)
        # NOTE: the other host holds the group's other member.
        assert code == 1, out
        assert 'ServerGroupAntiAffinityFilter' in out
        assert out.splitlines()[-1] == \
            'Result: 1 of 1 server(s) cannot be re-placed.'
    finally:
        for server_id in servers:
            api.delete_server(server_id)
    code, out = _manage(stack, 'capacity', 'what-if', '--lose', lost,
                        '--json')
    assert code == 0 and json.loads(out)['complete'], out
    code, out = _manage(stack, 'capacity', 'what-if', '--lose', 'nohost')
    assert (code, out) == (127, 'Compute host nohost could not be '
                                'found.\n')
