# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The conductor on the real RabbitMQ, MariaDB (or PostgreSQL) and placement.

One deployment serves the module: api, cell0, cell1 and placement
databases made and synced with ``berth-manage`` (``api_db sync``,
``cell_v2 map_cell0``, ``cell_v2 create_cell``, ``db sync``,
``discover_hosts``), a ``berth-placement-api`` process, a RabbitMQ
virtual host of its own, and in this process, each on its own RPC
server: the ConductorManager, a real SchedulerManager on the databases and
placement, and fake computes that record the builds cast to them.

Servers are booted the way the API does it: build requests written to the
api database, then ``schedule_and_build_instances`` cast to the conductor.
"""

import json
import os
import subprocess
import sys
import threading
import time
import uuid

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
import oslo_messaging as messaging
import pytest

from common.conf import CONF
from common import context
from common.db import action_records
from common.db import boot_records
from common.db import cells
from common.db import compute_records
from common.db import instance_records
from common import exception
from common.objects import flavor as flavor_obj
from common.objects import instance as instance_obj
from common.objects import request_spec as spec_obj
from common.placement import client as placement_client
from common import rpc
from common import servicegroup_db
from services.conductor import manager as conductor_manager
from services.conductor import rpcapi as conductor_rpcapi
from services.scheduler.client import placement as scheduler_placement
from services.scheduler import manager as scheduler_manager
from services.scheduler.sources import database as db_source
# NOTE: the session's database servers (dropped at the end), reused.
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import placement_server
from tests.functional import rabbit
from tests.functional import scheduler_env
from tests.functional import skips
from tests.functional import stack_fixture

HOSTS = ('cond-h1', 'cond-h2', 'cond-h3')
WAIT = 60


class ComputeEndpoint(object):
    """A compute host that records the builds cast to it."""

    target = messaging.Target(version='1.0')

    def __init__(self, host, builds):
        self.host = host
        self.builds = builds

    def build_and_run_instance(self, ctxt, instance, request_spec,
                               selection, alternates, host, node=None):
        assert host == self.host, host
        self.builds.append({'host': self.host, 'node': node,
                            'instance': instance,
                            'request_spec': request_spec,
                            'selection': selection,
                            'alternates': alternates})


class Deployment(object):
    """Databases, placement, vhost; conductor, scheduler and computes."""

    def __init__(self, server, workdir):
        self.server = server
        self.workdir = workdir
        self.urls = {}
        self.vhost = None
        self.placement_server = None
        self.placement = None
        self.rpc_servers = []
        self.builds = []
        self.nodes = {}
        self.registry = None
        self.api = None
        self.conf_file = os.path.join(workdir, 'berth.conf')

    # --- set-up -----------------------------------------------------------

    def setup(self):
        for name in ('api', 'cell0', 'cell1', 'placement'):
            self.urls[name] = self.server.create()
        self.vhost = scheduler_env.RabbitVhost(rabbit.RABBIT_URL)
        self.vhost.create()
        with open(self.conf_file, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = %s\n'
                    '[api_database]\nconnection = %s\n'
                    '[database]\nconnection = %s\n' % (
                        self.vhost.url, self.urls['api'],
                        self.urls['cell1']))
        self.manage('api_db', 'sync')
        self.manage('cell_v2', 'map_cell0', '--database_connection',
                    self.urls['cell0'])
        self.manage('cell_v2', 'create_cell', '--name', 'cell1',
                    '--transport-url', self.vhost.url,
                    '--database_connection', self.urls['cell1'])
        self.manage('db', 'sync')
        self.placement_server = placement_server.PlacementServer(
            self.urls['placement'], self.workdir)
        self.placement_server.start()
        self.placement = scheduler_env.Placement(self.placement_server.url)
        self.registry = cells.CellDatabases(CONF)
        self.api = cells.database_for_url('api (functional)',
                                          self.urls['api'], CONF)
        self.cell0 = self.registry.get(self.urls['cell0'])
        self.cell1 = self.registry.get(self.urls['cell1'])
        self._seed_hosts()
        out = self.manage('cell_v2', 'discover_hosts', '--verbose')
        assert 'Found %d unmapped computes in cell' % len(HOSTS) in out
        self._start_services()

    def manage(self, *args):
        result = subprocess.run(
            [sys.executable, '-m', 'services.manage.main', '--config-file',
             self.conf_file] + list(args), capture_output=True, text=True,
            timeout=300)
        assert result.returncode == 0, (args, result.stdout,
                                        result.stderr[-3000:])
        return result.stdout

    def _seed_hosts(self):
        """What a compute agent leaves: node row, provider, heartbeat."""
        services = servicegroup_db.DatabaseDriver(self.cell1)
        for host in HOSTS:
            node = compute_records.save_compute_node(
                context.get_admin_context(), self.cell1, host, host,
                dict(vcpus=4, memory_mb=8192, local_gb=100, vcpus_used=0,
                     memory_mb_used=0, local_gb_used=0, free_ram_mb=8192,
                     free_disk_gb=100, hypervisor_type='fake',
                     hypervisor_version=1, cpu_info={}, stats={},
                     supported_instances=[['x86_64', 'kvm', 'hvm']],
                     cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0,
                     disk_allocation_ratio=1.0))
            self.nodes[host] = node['uuid']
            self.placement.create_provider(scheduler_env.Host(
                name=host, uuid=node['uuid'], vcpus=4, memory_mb=8192,
                disk_gb=100))
            services.join(host, db_source.COMPUTE_BINARY, 'compute')
            services.report(host, db_source.COMPUTE_BINARY)

    def _placement_client(self):
        url = self.placement_server.url
        session = ks_session.Session(auth=token_endpoint.Token(url, 'admin'))
        return placement_client.PlacementClient(
            CONF, adapter=ks_adapter.Adapter(session, endpoint_override=url))

    def _start_services(self):
        rpc.register_opts(CONF)
        for name, value, group in self._overrides():
            CONF.set_override(name, value, group=group)
        rpc.init(CONF)
        scheduler = scheduler_manager.SchedulerManager(
            host='func-scheduler',
            source=db_source.DatabaseHostSource(
                api_database=self.api, cell_databases=self.registry),
            placement=scheduler_placement.SchedulerPlacementClient(
                self._placement_client()))
        self.conductor = conductor_manager.ConductorManager(
            host='func-conductor', placement=self._placement_client(),
            api_database=self.api, cell_databases=self.registry)
        self._serve('scheduler', 'func-scheduler', [scheduler])
        self._serve('conductor', 'func-conductor',
                    [self.conductor] + self.conductor.additional_endpoints)
        self._serve(conductor_rpcapi.RECORDS_TOPIC, 'func-conductor',
                    self.conductor.additional_endpoints)
        for host in HOSTS:
            self._serve('compute', host, [ComputeEndpoint(host,
                                                          self.builds)])
        self.client = conductor_rpcapi.ConductorAPI()

    def _overrides(self):
        return [('transport_url', self.vhost.url, None),
                ('rpc_response_timeout', 30, None),
                ('connection', self.urls['cell1'], 'database'),
                ('enabled_filters', ['ComputeFilter',
                                     'AvailabilityZoneFilter',
                                     'ServerGroupAntiAffinityFilter'],
                 'filter_scheduler')]

    def _serve(self, topic, host, endpoints):
        server = rpc.get_server(messaging.Target(topic=topic, server=host),
                                endpoints)
        server.start()
        self.rpc_servers.append(server)

    # --- tear-down --------------------------------------------------------

    def stop(self):
        for server in self.rpc_servers:
            server.stop()
        for server in self.rpc_servers:
            server.wait()
        if rpc.initialized():
            rpc.cleanup()
        for name, _value, group in self._overrides() if self.vhost else ():
            CONF.clear_override(name, group=group)
        if self.registry is not None:
            self.registry.reset()
        if self.api is not None:
            self.api.dispose()
        if self.placement is not None:
            self.placement.close()
        if self.placement_server is not None:
            self.placement_server.stop()
        if self.vhost is not None:
            self.vhost.delete()

    # --- booting ------------------------------------------------------------

    def boot(self, count=1, vcpus=1, hints=None):
        """Write build requests as the API does and cast the build."""
        ctxt = context.RequestContext(user_id='func-user',
                                      project_id='func-project')
        flavor = flavor_obj.Flavor(name='f%d' % vcpus, flavorid='f%d' % vcpus,
                                   vcpus=vcpus, memory_mb=512, root_gb=1)
        items = []
        for index in range(count):
            instance = instance_obj.Instance(
                uuid=str(uuid.uuid4()), display_name='vm-%d' % index,
                project_id='func-project', user_id='func-user',
                image_ref='img', flavor=flavor,
                task_state=instance_obj.SCHEDULING, launch_index=index)
            items.append((instance, spec_obj.RequestSpec(
                instance_uuid=instance.uuid, project_id='func-project',
                user_id='func-user', flavor=flavor, num_instances=count,
                scheduler_hints=dict(hints or {}))))
        boot_records.create_build_requests(ctxt, items, database=self.api)
        uuids = [instance.uuid for instance, _spec in items]
        self.client.schedule_and_build_instances(
            ctxt, items[0][1], uuids,
            build_requests=[instance for instance, _spec in items])
        return uuids

    def wait_for(self, predicate, what):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            found = predicate()
            if found:
                return found
            time.sleep(0.1)
        pytest.fail('%s did not happen within %ds' % (what, WAIT))

    def builds_of(self, uuids):
        return [b for b in list(self.builds)
                if b['instance']['uuid'] in uuids]

    def mapping(self, uuid):
        return boot_records.get_instance_mapping(
            context.get_admin_context(), uuid, database=self.api)


@pytest.fixture(scope='module')
def deployment(database_servers, tmp_path_factory):  # noqa: F811
    kind = scheduler_env.db_kind()
    rabbit.check()
    found = Deployment(stack_fixture.database_server(database_servers, kind),
                       str(tmp_path_factory.mktemp('conductor')))
    try:
        with rabbit.broker_lock():
            found.setup()
    except scheduler_env.EnvironmentUnavailable as exc:
        found.stop()
        skips.unavailable(str(exc))
    except BaseException:
        found.stop()
        raise
    yield found
    with rabbit.broker_lock():
        found.stop()


@pytest.fixture
def env(deployment):
    with rabbit.broker_lock():
        yield deployment


def test_a_boot_lands_in_cell1_with_its_allocation(env):
    uuids = env.boot(2)
    builds = env.wait_for(lambda: len(env.builds_of(uuids)) == 2 and
                          env.builds_of(uuids), 'two build casts')
    ctxt = context.get_admin_context()
    for build in builds:
        uuid = build['instance']['uuid']
        row = instance_records.get_instance(ctxt, env.cell1, uuid)
        assert row.host == build['host'] == build['selection'][
            'service_host']
        assert (row.vm_state, row.task_state) == ('building', 'scheduling')
        assert row.availability_zone == 'nova'
        assert env.mapping(uuid)['cell_uuid'] not in (None,
                                                      cells.CELL0_UUID)
        assert boot_records.get_build_request(ctxt, uuid,
                                              database=env.api) is None
        claimed = json.loads(build['selection']['allocation_request'])
        assert env.placement.allocations(uuid) == {
            rp: a['resources'] for rp, a in claimed['allocations'].items()}
        assert list(claimed['allocations']) == [env.nodes[row.host]]
        assert build['alternates'] and all(
            a['service_host'] != row.host for a in build['alternates'])
        actions = action_records.list_actions(ctxt, env.cell1, uuid)
        assert [a['action'] for a in actions] == ['create']


def test_no_valid_host_buries_the_instance_in_cell0(env):
    uuid, = env.boot(1, vcpus=64)
    mapping = env.wait_for(
        lambda: (env.mapping(uuid) or {}).get('cell_uuid') and
        env.mapping(uuid), 'the cell0 mapping')
    assert mapping['cell_uuid'] == cells.CELL0_UUID
    row = instance_records.get_instance(context.get_admin_context(),
                                        env.cell0, uuid)
    assert row.vm_state == 'error' and row.host is None
    assert row.fault['code'] == 500
    assert row.fault['message'].startswith('No valid host was found.')
    details = json.loads(row.fault['details'])
    assert 'VCPU:64' in details['placement_query']
    assert details['candidates'] == 0 and details['summary']
    assert env.placement.allocations(uuid) == {}
    assert env.builds_of([uuid]) == []


def test_a_failed_build_moves_to_an_alternate(env):
    uuid, = env.boot(1)
    build, = env.wait_for(lambda: env.builds_of([uuid]), 'the build cast')
    # What the compute does when its spawn fails: its claim goes, the
    # instance goes back to the conductor with the alternates.
    env.placement.delete_allocations(uuid)
    failed = env.client.instance_update(
        context.get_admin_context(), uuid,
        {'task_state': 'scheduling', 'host': None, 'node': None})
    env.client.build_instances(
        context.get_admin_context(), failed, build['request_spec'],
        build['alternates'], build['host'], build['node'], 'spawn failed')
    second = env.wait_for(
        lambda: len(env.builds_of([uuid])) == 2 and env.builds_of([uuid])[1],
        'the rescheduled build')
    assert second['host'] == build['alternates'][0]['service_host']
    assert second['request_spec']['retry']['num_attempts'] == 2
    assert list(env.placement.allocations(uuid)) == [
        env.nodes[second['host']]]
    row = instance_records.get_instance(context.get_admin_context(),
                                        env.cell1, uuid)
    assert row.host == second['host']


def test_record_calls_of_the_compute_agents(env):
    ctxt = context.get_admin_context()
    joined = env.client.service_join(ctxt, 'func-new-host',
                                     db_source.COMPUTE_BINARY, 'compute')
    assert joined['report_count'] == 0
    env.client.service_report_many(ctxt, ['func-new-host', HOSTS[0]],
                                   db_source.COMPUTE_BINARY)
    assert env.client.service_get(ctxt, 'func-new-host',
                                  db_source.COMPUTE_BINARY)[
        'report_count'] == 1
    node = env.client.compute_node_save(ctxt, 'func-new-host',
                                        'func-new-host', {
                                            'vcpus': 2, 'memory_mb': 1024,
                                            'local_gb': 10,
                                            'numa_topology': {'cells': []}})
    assert node['numa_topology'] == {'cells': []} and node['mapped'] == 0
    with pytest.raises(exception.InstanceNotFound):
        env.client.instance_get(ctxt, str(uuid.uuid4()))
    concurrent = []

    def heartbeat():
        concurrent.append(env.client.service_report(
            ctxt, 'func-new-host', db_source.COMPUTE_BINARY))
    threads = [threading.Thread(target=heartbeat) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r['report_count'] for r in concurrent) == [2, 3, 4, 5, 6]


def test_many_hosts_save_their_nodes_at_once(env):
    """A simulated cloud's computes all report at start: no deadlock."""
    ctxt = context.get_admin_context()
    hosts = ['func-burst-%02d' % i for i in range(24)]
    errors = []

    def save(host):
        try:
            for used in (0, 1):
                env.client.compute_node_save(ctxt, host, host, {
                    'vcpus': 8, 'memory_mb': 8192, 'local_gb': 80,
                    'vcpus_used': used, 'stats': {'num_instances': used}})
            env.client.service_join(ctxt, host, db_source.COMPUTE_BINARY,
                                    'compute')
        except Exception as exc:
            errors.append(exc)
    threads = [threading.Thread(target=save, args=(h,)) for h in hosts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    env.client.service_report_many(ctxt, hosts, db_source.COMPUTE_BINARY)
    saved = [env.client.compute_nodes_get_by_host(ctxt, h) for h in hosts]
    assert [len(nodes) for nodes in saved] == [1] * len(hosts)
    assert {nodes[0]['vcpus_used'] for nodes in saved} == {1}
