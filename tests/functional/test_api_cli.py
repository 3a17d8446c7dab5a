# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The real ``openstack`` CLI drives Berth with noauth2 (issue 5, 2).

Every service runs as its own process (tests/functional/stack.py) on the
real RabbitMQ and MariaDB: berth-api, berth-placement-api, berth-conductor,
berth-scheduler and one berth-compute simulating three hosts. The CLI is
given a token and the endpoints directly, the way that needs no
identity entry (the README's ``OS_CLOUD=berth`` way is
test_all_in_one.py's)::

    OS_AUTH_TYPE=admin_token OS_TOKEN=admin \\
    OS_ENDPOINT=http://127.0.0.1:8774/v2.1 \\
    OS_IMAGE_ENDPOINT_OVERRIDE=http://127.0.0.1:8774/image \\
    OS_IDENTITY_API_VERSION=3 \\
    OS_IDENTITY_ENDPOINT_OVERRIDE=http://127.0.0.1:8774/identity \\
    openstack server list

The tests skip only when the ``openstack`` command is not installed.
"""

import time

from oslo_utils import netutils
import pytest

from tests.functional import osc
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack_fixture

HOST = 'OS-EXT-SRV-ATTR:host'
HOSTS = ('stack-host0', 'stack-host1', 'stack-host2')
HOST_VCPUS = 16
pytestmark = osc.skip_without_cli


@pytest.fixture(scope='module')
def cloud(database_servers, tmp_path_factory):  # noqa: F811
    """The running deployment; ``cloud.api_url`` is the compute API."""
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('cli')), hosts=len(HOSTS),
            extra_conf={
                ('fake_driver', 'vcpus'): HOST_VCPUS,
                ('compute', 'cpu_dedicated_set'): '8-15',
                ('compute', 'cpu_shared_set'): '0-7',
                ('filter_scheduler', 'enabled_filters'): ','.join((
                    'AvailabilityZoneFilter', 'ComputeFilter',
                    'ServerGroupAntiAffinityFilter',
                    'ServerGroupAffinityFilter', 'SameHostFilter',
                    'NUMATopologyFilter')),
                # NOTE: the quota test below wants the defaults back.
                ('quota', 'instances'): 10,
                ('quota', 'cores'): 20,
                ('quota', 'ram'): 50 * 1024,
            }) as deployment:
        yield deployment


class OSC(osc.Client):
    """Runs ``openstack`` against berth-api with the noauth2 settings."""

    def __init__(self, url):
        super().__init__(
            OS_AUTH_TYPE='admin_token', OS_TOKEN='admin',
            OS_ENDPOINT=url + '/v2.1',
            OS_IMAGE_ENDPOINT_OVERRIDE=url + '/image',
            OS_IDENTITY_API_VERSION='3',
            OS_IDENTITY_ENDPOINT_OVERRIDE=url + '/identity')


def _provider(cloud, host):
    return cloud.placement.request(
        'GET', '/resource_providers?name=%s' % host)[
            'resource_providers'][0]['uuid']


def _wait(osc, name, status, timeout=90):
    deadline = time.monotonic() + timeout
    while True:
        server = osc.json('server', 'show', name)
        if server['status'] == status or time.monotonic() > deadline:
            return server
        time.sleep(0.5)


def _wait_for_log(cloud, binary, text, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        with open(cloud.processes[binary].out_file) as f:
            if text in f.read():
                return
        assert time.monotonic() < deadline, (text, cloud.log_tails())
        time.sleep(0.3)


def test_flavors_images_aggregates_groups(cloud):
    osc = OSC(cloud.api_url)
    flavor = osc.json('flavor', 'create', '--vcpus', '2', '--ram', '1024',
                      '--disk', '1', 'pinned')
    assert flavor['vcpus'] == 2
    bad = osc.run('flavor', 'set', '--property', 'hw:cpu_thread_policy=avoid',
                  'pinned', expect_ok=False)
    assert bad.returncode != 0 and 'hw:cpu_thread_policy' in bad.stderr
    osc.run('flavor', 'set', '--property', 'hw:cpu_policy=dedicated',
            '--property', 'io=fast', 'pinned')
    shown = osc.json('flavor', 'show', 'pinned')
    assert shown['properties'] == {'hw:cpu_policy': 'dedicated',
                                   'io': 'fast'}
    osc.run('flavor', 'create', '--vcpus', '1', '--ram', '512', '--disk',
            '1', 'tiny')
    osc.run('flavor', 'create', '--vcpus', '1', '--ram', '65536', '--disk',
            '1', 'huge')
    image = osc.json('image', 'create', '--property',
                     'hw_cpu_policy=dedicated', 'cirros')
    assert image['properties']['hw_cpu_policy'] == 'dedicated'
    assert [i['Name'] for i in osc.json('image', 'list')] == ['cirros']
    agg = osc.json('aggregate', 'create', '--zone', 'az1', 'agg1')
    osc.run('aggregate', 'set', '--property', 'io=fast', 'agg1')
    osc.run('aggregate', 'add', 'host', 'agg1', HOSTS[0])
    shown = osc.json('aggregate', 'show', 'agg1')
    assert shown['hosts'] == [HOSTS[0]]
    assert shown['properties'] == {'io': 'fast'}
    mirrored = cloud.placement.request(
        'GET', '/resource_providers/%s/aggregates'
        % _provider(cloud, HOSTS[0]))
    assert mirrored['aggregates'] == [agg['uuid']]
    # 2.81: the conductor asks agg1's one host, whose driver caches it.
    osc.run('aggregate', 'cache', 'image', 'agg1', 'cirros')
    _wait_for_log(cloud, 'berth-conductor', 'Image pre-cache of %s on '
                  'aggregate %s done: 1 cached, 0 existing, 0 error'
                  % (image['id'], agg['id']))
    group = osc.json('server', 'group', 'create', '--policy',
                     'anti-affinity', 'spread')
    assert group['policy'] == 'anti-affinity'
    zones = {z['Zone Name'] for z in osc.json(
        'availability', 'zone', 'list', '--compute')}
    # NOTE: an admin's listing includes "internal", the zone of the
    # conductor and scheduler services, as Nova's does.
    assert zones == {'az1', 'nova', 'internal'}


def test_servers(cloud):
    osc = OSC(cloud.api_url)
    osc.run('server', 'create', '--flavor', 'tiny', '--image', 'cirros',
            '--availability-zone', 'az1', 'in-az1')
    assert _wait(osc, 'in-az1', 'ACTIVE')[HOST] == HOSTS[0]
    first = osc.json('server', 'show', 'in-az1')['id']
    osc.run('server', 'create', '--flavor', 'tiny', '--image', 'cirros',
            '--hint', 'same_host=%s' % first, 'near')
    assert _wait(osc, 'near', 'ACTIVE')[HOST] == HOSTS[0]
    osc.run('server', 'create', '--flavor', 'pinned', '--image', 'cirros',
            '--availability-zone', 'nova:%s' % HOSTS[2], 'forced')
    assert _wait(osc, 'forced', 'ACTIVE')[HOST] == HOSTS[2]
    group = osc.json('server', 'group', 'show', 'spread')['id']
    osc.run('server', 'create', '--flavor', 'tiny', '--image', 'cirros',
            '--hint', 'group=%s' % group, '--min', '2', '--max', '2',
            'pair')
    pair = [_wait(osc, 'pair-%d' % i, 'ACTIVE') for i in (1, 2)]
    assert pair[0][HOST] != pair[1][HOST]
    members = osc.json('server', 'group', 'show', 'spread')['members']
    assert sorted(members) == sorted(s['id'] for s in pair)
    over = osc.run('server', 'create', '--flavor', 'huge', '--image',
                   'cirros', 'too-big', expect_ok=False)
    assert 'Quota exceeded for ram: Requested 65536' in over.stderr
    osc.run('quota', 'set', '--ram', '-1', 'admin')
    limits = {q['Resource']: q['Limit']
              for q in osc.json('quota', 'show', '--compute', 'admin')}
    assert limits['ram'] == -1
    osc.run('server', 'create', '--flavor', 'huge', '--image', 'cirros',
            'too-big')
    failed = _wait(osc, 'too-big', 'ERROR')
    assert 'No valid host' in failed['fault']['message']
    # NOTE: no host has 64 GiB: placement itself finds no candidate, and
    # the fault says which query it asked.
    assert 'MEMORY_MB:65536' in (failed['fault']['message'] +
                                 failed['fault'].get('details', ''))
    listed = {s['Name']: s for s in osc.json('server', 'list', '--long')}
    assert listed['forced']['Host'] == HOSTS[2]
    assert listed['in-az1']['Availability Zone'] == 'az1'
    assert listed['too-big']['Status'] == 'ERROR'
    osc.run('server', 'delete', '--wait', 'near')
    # NOTE: a host forced down is a host the API does not wait for: the
    # delete is local and removes the allocation itself.
    osc.run('compute', 'service', 'set', '--down', HOSTS[2], 'berth-compute')
    forced = osc.json('server', 'show', 'forced')['id']
    assert cloud.placement.allocations(forced)
    osc.run('server', 'delete', 'forced')
    assert cloud.placement.allocations(forced) == {}
    names = {s['Name'] for s in osc.json('server', 'list')}
    assert 'forced' not in names and 'near' not in names
    osc.run('compute', 'service', 'set', '--up', HOSTS[2], 'berth-compute')


def test_services_and_hypervisors(cloud):
    osc = OSC(cloud.api_url)
    services = {s['Host']: s for s in osc.json('compute', 'service', 'list')
                if s['Binary'] == 'nova-compute'}
    assert set(services) == set(HOSTS)
    assert services[HOSTS[0]]['Zone'] == 'az1'
    osc.run('compute', 'service', 'set', '--disable', '--disable-reason',
            'maintenance', HOSTS[1], 'nova-compute')
    osc.run('compute', 'service', 'set', '--down', HOSTS[1], 'berth-compute')
    services = {s['Host']: s for s in osc.json('compute', 'service', 'list',
                                               '--long')}
    assert services[HOSTS[1]]['Status'] == 'disabled'
    assert services[HOSTS[1]]['State'] == 'down'
    assert services[HOSTS[1]]['Disabled Reason'] == 'maintenance'
    # NOTE: a boot forced onto the disabled host fails, and the fault
    # names the trait that removed it.
    osc.run('server', 'create', '--flavor', 'tiny', '--image', 'cirros',
            '--availability-zone', 'nova:%s' % HOSTS[1], 'onto-disabled')
    failed = _wait(osc, 'onto-disabled', 'ERROR')
    fault = failed['fault']['message'] + failed['fault'].get('details', '')
    assert 'No valid host' in fault
    assert ('forced host %s is disabled: its provider has the '
            'COMPUTE_STATUS_DISABLED trait' % HOSTS[1]) in fault
    osc.run('server', 'delete', '--wait', 'onto-disabled')
    osc.run('compute', 'service', 'set', '--enable', '--up', HOSTS[1],
            'berth-compute')
    hypervisors = osc.json('hypervisor', 'list')
    assert sorted(h['Hypervisor Hostname'] for h in hypervisors) == list(
        HOSTS)
    shown = osc.json('hypervisor', 'show', HOSTS[0])
    # NOTE: the client negotiates 2.95, where hypervisors have no usage
    # fields (2.88); 2.87 still shows them.
    assert 'vcpus' not in shown
    older = osc.json('--os-compute-api-version', '2.87', 'hypervisor',
                     'show', HOSTS[0])
    assert older['vcpus'] == HOST_VCPUS
    # NOTE: the compute records its [DEFAULT] my_ip, as Nova's does.
    assert shown['host_ip'] == netutils.get_my_ipv4()
    assert shown['service_host'] == HOSTS[0]
