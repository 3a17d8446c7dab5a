# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Allocation candidates end to end below HTTP, on rows written directly.

Each test writes providers, inventories, traits, aggregates and
allocations with SQLAlchemy Core into the test database and reads the
answer of :func:`allocation_candidate.get_candidates`.
"""

import uuid

from oslo_utils import timeutils
import pytest
import sqlalchemy as sa
import webob

from common import context
from services.placement.db.api import placement_db
from services.placement.db import tables
from services.placement import microversion
from services.placement.objects import allocation_candidate as ac
from services.placement.objects import catalog
from services.placement import request_groups
from tests.unit.placement import fixtures


class World(object):
    """Writes placement rows; names map to uuids for the assertions."""

    def __init__(self, use_cache=False):
        """
        :param use_cache: answer flat requests from the provider cache, as
            the service does by default.
        """
        fixtures._conf()
        fixtures.wipe_database()
        self.use_cache = use_cache
        self.engine = placement_db.engine()
        self.ids = {}
        self.uuids = {}
        self.now = timeutils.utcnow()
        with self.engine.begin() as conn:
            conn.execute(tables.projects.insert().values(external_id='p'))
            conn.execute(tables.users.insert().values(external_id='u'))

    def provider(self, name, parent=None, traits=(), aggregates=(),
                 **inventory):
        with self.engine.begin() as conn:
            u = str(uuid.uuid4())
            pid = conn.execute(tables.resource_providers.insert().values(
                uuid=u, name=name, generation=0,
                created_at=self.now)).inserted_primary_key[0]
            root = self.root_of(parent) if parent else pid
            conn.execute(tables.resource_providers.update()
                         .where(tables.resource_providers.c.id == pid)
                         .values(root_provider_id=root,
                                 parent_provider_id=self.ids.get(parent)))
            for rc, spec in inventory.items():
                total, used = spec if isinstance(spec, tuple) else (spec, 0)
                rc_id = self._rc(conn, rc)
                conn.execute(tables.inventories.insert().values(
                    resource_provider_id=pid, resource_class_id=rc_id,
                    total=total, reserved=0, min_unit=1, max_unit=total,
                    step_size=1, allocation_ratio=1.0))
                if used:
                    conn.execute(tables.allocations.insert().values(
                        resource_provider_id=pid, resource_class_id=rc_id,
                        consumer_id=str(uuid.uuid4()), used=used))
            for trait in traits:
                conn.execute(tables.resource_provider_traits.insert().values(
                    resource_provider_id=pid,
                    trait_id=self._trait(conn, trait)))
            for agg in aggregates:
                conn.execute(
                    tables.resource_provider_aggregates.insert().values(
                        resource_provider_id=pid,
                        aggregate_id=self.aggregate(conn, agg)))
        self.ids[name] = pid
        self.uuids[name] = u
        return u

    def root_of(self, name):
        with self.engine.connect() as conn:
            return conn.execute(
                sa.select(tables.resource_providers.c.root_provider_id)
                .where(tables.resource_providers.c.id == self.ids[name])
            ).scalar()

    def _rc(self, conn, name):
        ctx = context.get_admin_context()
        found = catalog.RESOURCE_CLASSES.id_for(ctx, name)
        if found is None:
            found = catalog.CUSTOM_RC_MIN_ID + len(self.uuids) + 1
            conn.execute(tables.resource_classes.insert().values(
                id=found, name=name))
            catalog.RESOURCE_CLASSES.clear()
        return found

    def _trait(self, conn, name):
        row = conn.execute(sa.select(tables.traits.c.id).where(
            tables.traits.c.name == name)).first()
        if row:
            return row[0]
        catalog.TRAITS.clear()
        return conn.execute(tables.traits.insert().values(
            name=name)).inserted_primary_key[0]

    def aggregate(self, conn, name):
        key = 'agg:' + name
        if key not in self.ids:
            self.uuids[key] = str(uuid.uuid4())
            self.ids[key] = conn.execute(
                tables.placement_aggregates.insert().values(
                    uuid=self.uuids[key])).inserted_primary_key[0]
        return self.ids[key]

    def names(self, uuids):
        back = {u: n for n, u in self.uuids.items()}
        return sorted(back[u] for u in uuids)

    def ask(self, query, version='1.39', **kwargs):
        version = microversion.Version(*map(int, version.split('.')))
        ctx = context.get_admin_context()
        req = webob.Request.blank('/allocation_candidates?' + query)
        creq = request_groups.parse(ctx, req, version)
        kwargs.setdefault('use_cache', self.use_cache)
        return ac.get_candidates(ctx, creq, version, **kwargs)

    def sets(self, body):
        """Each allocation request as a sorted tuple of provider names."""
        return sorted(tuple(self.names(areq['allocations']))
                      for areq in body['allocation_requests'])


@pytest.fixture(params=[False, True], ids=['sql', 'cache'])
def world(request):
    return World(use_cache=request.param)


def test_flat_cloud_filters_in_sql(world):
    world.provider('cn1', traits=['HW_CPU_X86_AVX2'], aggregates=['a'],
                   VCPU=8, MEMORY_MB=1024)
    world.provider('cn2', aggregates=['b'], VCPU=8, MEMORY_MB=1024)
    world.provider('full', VCPU=(8, 8), MEMORY_MB=1024)
    body = world.ask('resources=VCPU:1,MEMORY_MB:512')
    assert world.sets(body) == [('cn1',), ('cn2',)]
    summary = body['provider_summaries'][world.uuids['cn1']]
    assert summary['resources']['VCPU'] == {'capacity': 8, 'used': 0}
    assert summary['traits'] == ['HW_CPU_X86_AVX2']
    assert summary['root_provider_uuid'] == world.uuids['cn1']
    assert world.sets(world.ask(
        'resources=VCPU:1&required=HW_CPU_X86_AVX2')) == [('cn1',)]
    assert world.sets(world.ask(
        'resources=VCPU:1&required=!HW_CPU_X86_AVX2')) == [('cn2',)]
    agg_b = world.uuids['agg:b']
    assert world.sets(world.ask(
        'resources=VCPU:1&member_of=%s' % agg_b)) == [('cn2',)]
    assert world.sets(world.ask(
        'resources=VCPU:1&member_of=!%s' % agg_b)) == [('cn1',)]
    # A limit keeps the stable order: lowest provider id first.
    assert world.sets(world.ask('resources=VCPU:1&limit=1')) == [('cn1',)]


def test_shapes_by_microversion(world):
    world.provider('cn1', VCPU=8, MEMORY_MB=1024)
    old = world.ask('resources=VCPU:1', version='1.10')
    areq = old['allocation_requests'][0]
    assert areq['allocations'] == [
        {'resource_provider': {'uuid': world.uuids['cn1']},
         'resources': {'VCPU': 1}}]
    summary = old['provider_summaries'][world.uuids['cn1']]
    assert summary == {'resources': {'VCPU': {'capacity': 8, 'used': 0}}}
    new = world.ask('resources=VCPU:1', version='1.34')
    areq = new['allocation_requests'][0]
    assert areq == {
        'allocations': {world.uuids['cn1']: {'resources': {'VCPU': 1}}},
        'mappings': {'': [world.uuids['cn1']]}}
    assert set(new['provider_summaries'][world.uuids['cn1']]
               ['resources']) == {'VCPU', 'MEMORY_MB'}


def test_tree_and_sharing_provider(world):
    world.provider('cn', aggregates=['a'], MEMORY_MB=1024)
    world.provider('numa0', parent='cn', VCPU=4)
    world.provider('numa1', parent='cn', VCPU=4)
    world.provider('ss', aggregates=['a'],
                   traits=['MISC_SHARES_VIA_AGGREGATE'], DISK_GB=100)
    world.provider('lonely', traits=['MISC_SHARES_VIA_AGGREGATE'],
                   DISK_GB=100)
    body = world.ask('resources=VCPU:1,MEMORY_MB:512,DISK_GB:10')
    assert world.sets(body) == [('cn', 'numa0', 'ss'), ('cn', 'numa1', 'ss')]
    # From 1.29 the whole tree of every used provider is summarised.
    assert world.names(body['provider_summaries']) == [
        'cn', 'numa0', 'numa1', 'ss']
    # Before 1.29 two providers of one tree never combine.
    assert world.sets(world.ask('resources=VCPU:1,MEMORY_MB:512',
                                version='1.28')) == []
    # in_tree keeps the unsuffixed group inside the tree: no sharing disk.
    assert world.sets(world.ask(
        'resources=VCPU:1,DISK_GB:10&in_tree=%s' % world.uuids['cn'])) == []


def test_granular_isolate_and_same_subtree(world):
    world.provider('cn')
    world.provider('numa0', parent='cn', traits=['HW_NUMA_ROOT'], VCPU=4)
    world.provider('numa1', parent='cn', traits=['HW_NUMA_ROOT'], VCPU=4)
    world.provider('fpga0', parent='numa0', FPGA=1)
    world.provider('fpga1', parent='numa1', FPGA=1)
    body = world.ask('resources_C=VCPU:1&resources_A=FPGA:1'
                     '&group_policy=none&same_subtree=_C,_A')
    assert world.sets(body) == [('fpga0', 'numa0'), ('fpga1', 'numa1')]
    for areq in body['allocation_requests']:
        assert set(areq['mappings']) == {'_A', '_C'}
    body = world.ask('required_N=HW_NUMA_ROOT&resources_A=FPGA:1'
                     '&group_policy=isolate&same_subtree=_N,_A')
    assert world.sets(body) == [('fpga0',), ('fpga1',)]


def test_eight_by_eight_worst_case(world):
    world.provider('root')
    for i in range(8):
        world.provider('c%d' % i, parent='root', CUSTOM_X=1)
    groups = '&'.join('resources%d=CUSTOM_X:1' % i for i in range(1, 9))
    query = groups + '&group_policy=isolate'
    # Without mappings the 8! orders are one allocation: one candidate.
    body = world.ask(query, version='1.33')
    assert world.sets(body) == [tuple('c%d' % i for i in range(8))]
    # With mappings each order is a candidate; a limit stops early.
    body = world.ask(query + '&limit=3', version='1.36')
    assert len(body['allocation_requests']) == 3
    assert len({tuple(sorted((k, tuple(v)) for k, v in a['mappings'].items()))
                for a in body['allocation_requests']}) == 3
    # Nine groups on eight providers: nothing, found without enumerating.
    nine = query + '&resources9=CUSTOM_X:1'
    assert world.ask(nine, version='1.33')['allocation_requests'] == []


def test_max_allocation_candidates_caps_the_answer(world):
    for i in range(5):
        world.provider('cn%d' % i, VCPU=4)
    body = world.ask('resources=VCPU:1', max_candidates=2)
    assert world.sets(body) == [('cn0',), ('cn1',)]
    body = world.ask('resources=VCPU:1&limit=3', randomize=True)
    assert len(body['allocation_requests']) == 3
    assert len(body['provider_summaries']) == 3
