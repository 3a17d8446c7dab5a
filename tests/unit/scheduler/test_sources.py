# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The host sources: rows in the api and cell databases become HostStates.

The database source runs on SQLite files seeded through the tables; what
is checked is what the filters will see: free resources, service up or
down (heartbeat age, forced_down, disabled, missing), aggregates, the live
instances, and that deleted rows and disabled cells stay invisible.
"""

import datetime
import json

from oslo_utils import timeutils
import pytest
import sqlalchemy as sa

from common import context as berth_context
from common.db import api_tables
from common.db import cell_tables
from common.db import cells
from services.scheduler import host_manager
from services.scheduler import sources
from services.scheduler.sources import database
from services.scheduler.sources import memory
from services.scheduler.sources import records
from tests.unit.scheduler import fakes

CELL1 = '4473067d-4c91-459f-93ae-79cb1e1203c7'
CELL2 = '432015b0-14e9-4e81-96eb-2ec36d79773b'
CELL3 = '03e1129c-0000-4000-8000-000000000003'


class World(object):
    """An api database and three cell databases on SQLite files."""

    def __init__(self, tmp_path):
        self.urls = {name: 'sqlite:///%s' % (tmp_path / ('%s.sqlite' % name))
                     for name in ('api', 'cell0', 'cell1', 'cell2', 'cell3')}
        self.engines = {name: sa.create_engine(url)
                        for name, url in self.urls.items()}
        api_tables.metadata.create_all(self.engines['api'])
        for name in ('cell0', 'cell1', 'cell2', 'cell3'):
            cell_tables.metadata.create_all(self.engines[name])
        self.api = cells.database_for_url('api test', self.urls['api'])
        self.registry = cells.CellDatabases(api_database=self.api)
        self.now = timeutils.utcnow()
        self.ids = {}

    def insert(self, db, table, **values):
        with self.engines[db].begin() as conn:
            return conn.execute(table.insert().values(**values)
                                ).inserted_primary_key[0]

    def map_cells(self, disabled_cell3=True):
        for uuid, name, disabled in ((cells.CELL0_UUID, 'cell0', False),
                                     (CELL1, 'cell1', False),
                                     (CELL2, 'cell2', False),
                                     (CELL3, 'cell3', disabled_cell3)):
            self.ids[name] = self.insert(
                'api', api_tables.cell_mappings, uuid=uuid, name=name,
                transport_url='none:///' if name == 'cell0' else 'rabbit://',
                database_connection=self.urls[name], disabled=disabled)

    def service(self, cell, host, age=5, **values):
        values.setdefault('binary', database.COMPUTE_BINARY)
        values.setdefault('topic', 'compute')
        heartbeat = self.now - datetime.timedelta(seconds=age)
        values.setdefault('last_seen_up', heartbeat)
        return self.insert(cell, cell_tables.services, host=host,
                           created_at=heartbeat, updated_at=heartbeat,
                           **values)

    def node(self, cell, host, uuid=None, node=None, **values):
        row = dict(uuid=uuid or 'cn-%s' % host, host=host,
                   hypervisor_hostname=node or host, vcpus=16,
                   memory_mb=32768, local_gb=1024, vcpus_used=2,
                   memory_mb_used=4096, local_gb_used=100,
                   free_ram_mb=28672, free_disk_gb=924,
                   hypervisor_type='QEMU', hypervisor_version=8002000,
                   cpu_allocation_ratio=4.0, ram_allocation_ratio=1.0,
                   disk_allocation_ratio=1.0,
                   created_at=self.now - datetime.timedelta(hours=1),
                   updated_at=self.now)
        row.update(values)
        self.insert(cell, cell_tables.compute_nodes, **row)
        return row['uuid']

    def instance(self, cell, uuid, host, node=None, **values):
        values.setdefault('flavor', json.dumps({'flavorid': 'm1.small'}))
        return self.insert(cell, cell_tables.instances, uuid=uuid, host=host,
                           node=node or host, project_id='p1',
                           image_ref='image-1', vm_state='active', **values)

    def aggregate(self, name, hosts, metadata):
        agg_id = self.insert('api', api_tables.aggregates,
                             uuid='agg-%s' % name, name=name)
        for host in hosts:
            self.insert('api', api_tables.aggregate_hosts,
                        aggregate_id=agg_id, host=host)
        for key, value in metadata.items():
            self.insert('api', api_tables.aggregate_metadata,
                        aggregate_id=agg_id, key=key, value=value)
        return agg_id

    def source(self, **kwargs):
        return database.DatabaseHostSource(
            api_database=self.api, cell_databases=self.registry, **kwargs)

    def close(self):
        self.registry.reset()
        self.api.dispose()
        for engine in self.engines.values():
            engine.dispose()


@pytest.fixture
def world(tmp_path):
    """The databases, with cells mapped (cell3 disabled)."""
    w = World(tmp_path)
    w.map_cells()
    yield w
    w.close()


@pytest.fixture
def ctx():
    return berth_context.get_admin_context()


def _by_host(states):
    return {s.nodename: s for s in states}


def test_host_state_fields(world, ctx):
    """A node with its service, instances and aggregates, as filters see."""
    world.service('cell1', 'h1')
    world.node('cell1', 'h1', host_ip='192.0.2.1',
               numa_topology=json.dumps({'cells': [{'id': 0}]}),
               pci_stats=json.dumps({'pools': [{'vendor_id': '8086',
                                                'count': 2}]}),
               metrics=json.dumps([{'name': 'cpu.percent', 'value': 0.5,
                                    'timestamp': 't', 'source': 's'}]),
               stats=json.dumps({'io_workload': 3}),
               supported_instances=json.dumps([['x86_64', 'kvm', 'hvm']]),
               cpu_info=json.dumps({'arch': 'x86_64'}))
    world.instance('cell1', 'i1', 'h1')
    world.instance('cell1', 'i2', 'h1', task_state='spawning')
    world.instance('cell1', 'gone', 'h1', deleted=99)
    world.aggregate('az1', ['h1', 'h2'], {'availability_zone': 'az1'})
    world.aggregate('ssd', ['h1'], {'ssd': 'true'})
    world.aggregate('other', ['h9'], {'x': 'y'})

    [state] = world.source().get_host_states(ctx, ['cn-h1'])

    assert (state.host, state.nodename, state.uuid, state.cell_uuid) == (
        'h1', 'h1', 'cn-h1', CELL1)
    assert state.total_usable_ram_mb == 32768
    assert state.free_ram_mb == 28672
    assert state.free_disk_mb == 924 * 1024
    assert state.disk_mb_used == 100 * 1024
    assert (state.vcpus_total, state.vcpus_used) == (16, 2)
    assert state.cpu_allocation_ratio == 4.0
    assert state.ram_allocation_ratio == 1.0
    assert state.host_ip == '192.0.2.1'
    assert state.numa_topology == {'cells': [{'id': 0}]}
    assert state.pci_stats == [{'vendor_id': '8086', 'count': 2}]
    assert state.metrics == {'cpu.percent': {'value': 0.5, 'timestamp': 't',
                                             'source': 's'}}
    assert state.supported_instances == [['x86_64', 'kvm', 'hvm']]
    assert state.cpu_info == {'arch': 'x86_64'}
    assert state.num_io_ops == 3
    assert sorted(state.instances) == ['i1', 'i2']
    assert state.num_instances == 2
    assert state.instances['i2'].task_state == 'spawning'
    assert state.instances['i1'].flavor_id == 'm1.small'
    assert state.instances['i1'].image_id == 'image-1'
    assert sorted(a.name for a in state.aggregates) == ['az1', 'ssd']
    assert state.aggregate_metadata('availability_zone') == {
        'availability_zone': {'az1'}}
    assert state.service == {'disabled': False, 'disabled_reason': None,
                             'forced_down': False, 'up': True}
    assert state.updated == world.now


@pytest.mark.parametrize('service, expected', [
    (dict(age=5), dict(up=True, disabled=False, forced_down=False)),
    (dict(age=3600), dict(up=False, disabled=False, forced_down=False)),
    (dict(age=5, forced_down=True),
     dict(up=False, disabled=False, forced_down=True)),
    (dict(age=5, disabled=True, disabled_reason='maintenance'),
     dict(up=True, disabled=True, forced_down=False,
          disabled_reason='maintenance')),
    # NOTE: a service that never reported a heartbeat falls back to its
    # record's updated_at (here 5 s old).
    (dict(age=5, last_seen_up=None), dict(up=True)),
    # NOTE: the service of another binary on the same host says nothing
    # about the compute node.
    (dict(binary='berth-scheduler', topic='scheduler'), None),
    (dict(deleted=1), None),
])
def test_service_status(world, ctx, service, expected):
    """up/down, forced_down and disabled come from the compute service."""
    world.service('cell1', 'h1', **service)
    world.node('cell1', 'h1')
    [state] = world.source().get_host_states(ctx, ['cn-h1'])
    if expected is None:
        assert state.service == {}
    else:
        for key, value in expected.items():
            assert state.service[key] == value, key


def test_service_down_time_option(world, ctx, override):
    """[DEFAULT] service_down_time decides how old a heartbeat may be."""
    world.service('cell1', 'h1', age=120)
    world.node('cell1', 'h1')
    source = world.source()
    assert source.get_host_states(ctx, ['cn-h1'])[0].service['up'] is False
    override('service_down_time', 300)
    assert source.get_host_states(ctx, ['cn-h1'])[0].service['up'] is True


def test_cells_deleted_rows_and_order(world, ctx):
    """Nodes from every enabled cell, in the order asked; others left out."""
    for cell, host in (('cell1', 'h1'), ('cell2', 'h2'), ('cell3', 'h3')):
        world.service(cell, host)
        world.node(cell, host)
    world.node('cell1', 'old', deleted=7)
    world.node('cell0', 'impossible')

    states = world.source().get_host_states(
        ctx, ['cn-h2', 'cn-missing', 'cn-h1', 'cn-h3', 'cn-old', 'cn-h1',
              'cn-impossible'])

    assert [(s.uuid, s.cell_uuid) for s in states] == [
        ('cn-h2', CELL2), ('cn-h1', CELL1)]
    assert world.source().get_host_states(ctx, []) == []


def test_instances_on_a_multi_node_host(world, ctx):
    """On a host with several nodes each instance counts on its node."""
    world.service('cell1', 'h1')
    world.node('cell1', 'h1', uuid='n1', node='node1')
    world.node('cell1', 'h1', uuid='n2', node='node2',
               stats=json.dumps({'num_instances': 5}))
    world.instance('cell1', 'a', 'h1', node='node1')
    world.instance('cell1', 'b', 'h1', node='node2')
    world.instance('cell1', 'c', 'h1', node='node2')

    states = _by_host(world.source().get_host_states(ctx, ['n1', 'n2']))

    assert sorted(states['node1'].instances) == ['a']
    assert states['node1'].num_instances == 1
    assert sorted(states['node2'].instances) == ['b', 'c']
    # NOTE: the resource tracker's count includes builds in progress.
    assert states['node2'].num_instances == 5


def test_undecodable_json_is_ignored(world, ctx):
    """A broken JSON column is logged, not fatal."""
    world.service('cell1', 'h1')
    world.node('cell1', 'h1', numa_topology='{broken', metrics='[',
               free_ram_mb=None, free_disk_gb=None)
    [state] = world.source().get_host_states(ctx, ['cn-h1'])
    assert state.numa_topology is None
    assert state.metrics == {}
    # NOTE: without free figures the used ones give them.
    assert state.free_ram_mb == 32768 - 4096
    assert state.free_disk_mb == (1024 - 100) * 1024


def test_updated_since(world, ctx):
    """updated_at (created_at if never updated); deleted nodes absent."""
    created = world.now - datetime.timedelta(hours=2)
    world.node('cell1', 'h1')
    world.node('cell2', 'h2', updated_at=None, created_at=created)
    world.node('cell1', 'h3', deleted=3)
    assert world.source().get_updated_since(
        ctx, ['cn-h1', 'cn-h2', 'cn-h3', 'cn-x']) == {
            'cn-h1': world.now, 'cn-h2': created}


def test_aggregates(world, ctx):
    """Every aggregate with its hosts and metadata."""
    world.aggregate('az1', ['h2', 'h1'],
                    {'availability_zone': 'az1', 'ssd': 'true'})
    world.aggregate('empty', [], {})
    found = {a.name: a for a in world.source().get_aggregates(ctx)}
    assert found['az1'].hosts == ['h1', 'h2']
    assert found['az1'].metadata == {'availability_zone': 'az1',
                                     'ssd': 'true'}
    assert found['az1'].uuid == 'agg-az1'
    assert found['empty'].hosts == [] and found['empty'].metadata == {}


def test_compute_uuids_for_host(world, ctx):
    """A mapped host is found in its cell, an unmapped one in any cell."""
    world.node('cell1', 'h1', uuid='n1', node='node1')
    world.node('cell1', 'h1', uuid='n2', node='node2')
    world.node('cell1', 'h1', uuid='n3', node='node3', deleted=9)
    world.node('cell3', 'h3')
    world.insert('api', api_tables.host_mappings, cell_id=world.ids['cell3'],
                 host='h3')
    source = world.source()
    assert source.compute_uuids_for_host(ctx, 'h1') == ['n1', 'n2']
    assert source.compute_uuids_for_host(ctx, 'h1', 'node2') == ['n2']
    assert source.compute_uuids_for_host(ctx, 'nowhere') == []
    # NOTE: a forced host is looked up even in a disabled cell; the
    # filters then say why it cannot be used.
    assert source.compute_uuids_for_host(None, 'h3') == ['cn-h3']


def test_nothing_mapped_uses_database_connection(tmp_path, ctx, override):
    """Before any cell is mapped, [database] connection is the cell."""
    w = World(tmp_path)
    try:
        override('connection', w.urls['cell1'], group='database')
        w.service('cell1', 'h1')
        w.node('cell1', 'h1')
        [state] = w.source().get_host_states(ctx, ['cn-h1'])
        assert state.cell_uuid is None and state.service['up']
    finally:
        w.close()


def test_broken_cell_is_skipped(world, ctx, tmp_path):
    """A cell whose database fails is left out; the others still answer."""
    world.service('cell1', 'h1')
    world.node('cell1', 'h1')
    world.insert('api', api_tables.cell_mappings, uuid='broken',
                 name='broken', transport_url='rabbit://',
                 database_connection='sqlite:///%s' % (tmp_path / 'x.db'))
    states = world.source().get_host_states(ctx, ['cn-h1', 'cn-h9'])
    assert [s.uuid for s in states] == ['cn-h1']


def test_cell_list_is_cached(world, ctx):
    """The cell list is re-read only after CELL_CACHE_TTL or a refresh."""
    clock = [0.0]
    source = world.source(clock=lambda: clock[0])
    assert [c for c, _db in source.cells(ctx)] == [CELL1, CELL2]
    world.insert('api', api_tables.cell_mappings, uuid='new', name='new',
                 transport_url='rabbit://',
                 database_connection=world.urls['cell3'])
    assert len(source.cells(ctx)) == 2
    clock[0] += database.CELL_CACHE_TTL + 1
    assert len(source.cells(ctx)) == 3
    source.refresh_cells()
    assert len(source.cells(ctx)) == 3


def _count_statements(world):
    counter = {'n': 0}

    def count(_conn, _cursor, statement, *_args):
        # NOTE: only queries; Berth's SQLite BEGINs go through here too.
        if statement.lstrip().upper().startswith('SELECT'):
            counter['n'] += 1

    engines = [world.api.engine()] + [
        world.registry.get(world.urls[name]).engine()
        for name in ('cell1', 'cell2')]
    for engine in engines:
        sa.event.listen(engine, 'before_cursor_execute', count)
    return counter


def test_queries_do_not_grow_with_hosts(world, ctx):
    """A handful of queries per call, whatever the number of hosts."""
    uuids = []
    for i in range(60):
        host = 'h%d' % i
        cell = 'cell1' if i % 2 else 'cell2'
        world.service(cell, host)
        uuids.append(world.node(cell, host))
        world.instance(cell, 'i%d' % i, host)
    world.aggregate('az1', ['h1', 'h2'], {'availability_zone': 'az1'})
    source = world.source()
    source.cells(ctx)
    counter = _count_statements(world)

    states = source.get_host_states(ctx, uuids[:4])
    few = counter['n']
    counter['n'] = 0
    states = source.get_host_states(ctx, uuids)
    assert len(states) == 60 and few == counter['n']
    # NOTE: per cell one node and one instance query; three for the
    # aggregates.
    assert few <= 2 * 2 + 3


def test_chunks():
    """IN lists are cut at 1000."""
    assert [len(c) for c in sources.chunks(range(2500))] == [1000, 1000, 500]
    assert list(sources.chunks([])) == []


def test_service_is_up_tolerates_clock_skew():
    """A heartbeat slightly in the future is up, not down."""
    now = timeutils.utcnow()
    future = now + datetime.timedelta(seconds=10)
    assert records.service_is_up(future, False, now, 60)
    assert not records.service_is_up(future, True, now, 60)
    assert not records.service_is_up(None, False, now, 60)


def _manager_with_h1(world):
    """(HostManager on the database source with a 10 s max age, its
    clock) and host h1 (node cn-h1) in cell1.
    """
    world.service('cell1', 'h1')
    world.node('cell1', 'h1')
    clock = [0.0]
    manager = host_manager.HostManager(world.source(), max_age=10,
                                       clock=lambda: clock[0])
    return manager, clock


def test_host_manager_reloads_a_changed_record(world, ctx):
    """With the database source, a newer updated_at reloads the state."""
    manager, clock = _manager_with_h1(world)
    [state] = fakes.request_host_states(manager, ['cn-h1'], context=ctx)
    assert state.free_ram_mb == 28672
    with world.engines['cell1'].begin() as conn:
        conn.execute(cell_tables.compute_nodes.update().values(
            free_ram_mb=1024,
            updated_at=world.now + datetime.timedelta(seconds=1)))
    [state] = fakes.request_host_states(manager, ['cn-h1'], context=ctx)
    assert state.free_ram_mb == 28672
    clock[0] += 11
    [state] = fakes.request_host_states(manager, ['cn-h1'], context=ctx)
    assert state.free_ram_mb == 1024


# --- MemoryHostSource --------------------------------------------------------

def test_memory_source_hands_out_copies():
    """Consuming a returned state leaves the record alone until update."""
    agg = fakes.aggregate(metadata={'availability_zone': 'az1'})
    source = memory.MemoryHostSource([
        fakes.host('h1', aggregates=[agg]), fakes.host('h2')])
    [state] = source.get_host_states(None, ['uuid-h1'])
    state.free_ram_mb = 0
    state.service['up'] = False
    [again] = source.get_host_states(None, ['uuid-h1'])
    assert again.free_ram_mb == 32768 and again.service['up'] is True
    assert again.aggregates[0] is agg
    assert again.lock is not state.lock
    assert source.get_aggregates(None) == [agg]


def test_memory_source_interface():
    """Order, unknown uuids, versions, hosts and removal."""
    source = memory.MemoryHostSource([
        fakes.host('h1'), fakes.host('h2'),
        fakes.host('h3', node='n3', uuid='u3')])
    states = source.get_host_states(None, ['uuid-h2', 'nope', 'uuid-h1'])
    assert [s.host for s in states] == ['h2', 'h1']
    versions = source.get_updated_since(None, ['uuid-h1', 'nope'])
    assert list(versions) == ['uuid-h1'] and versions['uuid-h1']
    assert source.compute_uuids_for_host(None, 'h3') == ['u3']
    assert source.compute_uuids_for_host(None, 'h3', 'other') == []
    source.remove('u3')
    assert source.compute_uuids_for_host(None, 'h3') == []


def test_memory_source_update_reloads_through_host_manager():
    """update() moves ``updated``, so the cache reloads the record."""
    source = memory.MemoryHostSource([fakes.host('h1')])
    clock = [0.0]
    manager = host_manager.HostManager(source, max_age=10,
                                       clock=lambda: clock[0])
    fakes.request_host_states(manager, ['uuid-h1'])
    source.update(fakes.host('h1', free_ram_mb=100))
    clock[0] += 11
    [state] = fakes.request_host_states(manager, ['uuid-h1'])
    assert state.free_ram_mb == 100


def test_an_aggregate_change_reaches_cached_host_states(world, ctx):
    """A host put into a zone after its state was cached is in the zone
    once the API's update_aggregates cast arrives, though its own record
    never changed.
    """
    manager, clock = _manager_with_h1(world)
    [state] = fakes.request_host_states(manager, ['cn-h1'], context=ctx)
    assert state.aggregate_metadata('availability_zone') == {}
    world.aggregate('az1', ['h1'], {'availability_zone': 'az1'})
    manager.invalidate_aggregates()
    [state] = fakes.request_host_states(manager, ['cn-h1'], context=ctx)
    assert state.aggregate_metadata('availability_zone') == {
        'availability_zone': {'az1'}}
    # NOTE: and without the cast, within max_age at the latest.
    world.aggregate('az2', ['h1'], {'availability_zone': 'az2'})
    clock[0] += 11
    [state] = fakes.request_host_states(manager, ['cn-h1'], context=ctx)
    assert state.aggregate_metadata('availability_zone') == {
        'availability_zone': {'az1', 'az2'}}
