# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The provider cache never answers with a stale provider.

Every change a client can make through the API between two candidate
requests (claims, moves, deletions, inventory, traits, aggregates, new and
deleted providers, a tree appearing) must show in the next answer, and
answers from the cache must equal answers from SQL.
"""

import json
import random
import uuid

import pytest
import webob

from common.conf import CONF
from services.placement import errors
from services.placement.objects import provider_cache
from tests.unit.placement import fixtures
from tests.unit.placement import test_allocation_candidate as tac

HEADERS = {'x-auth-token': 'admin', 'accept': 'application/json',
           'content-type': 'application/json',
           'openstack-api-version': 'placement 1.39'}
PROJECT = str(uuid.uuid4())
USER = str(uuid.uuid4())


class Placement(object):
    """The in-process placement API, answering from the cache."""

    def __init__(self):
        self.app = fixtures.setup_app()
        fixtures.wipe_database()
        self.generations = {}

    def call(self, method, path, body=None, version='1.39'):
        headers = dict(HEADERS)
        headers['openstack-api-version'] = 'placement %s' % version
        req = webob.Request.blank(path, method=method, headers=headers)
        if body is not None:
            req.body = json.dumps(body).encode()
        resp = req.get_response(self.app)
        assert resp.status_int < 300, (method, path, resp.status,
                                       resp.text)
        return resp.json if resp.body else None

    def provider(self, name, parent=None, **inventory):
        rp = str(uuid.uuid4())
        body = {'name': name, 'uuid': rp}
        if parent:
            body['parent_provider_uuid'] = parent
        self.call('POST', '/resource_providers', body)
        self.generations[rp] = 0
        if inventory:
            self.inventory(rp, **inventory)
        return rp

    def _generation(self, rp):
        return self.call('GET', '/resource_providers/%s' % rp)['generation']

    def inventory(self, rp, **inventory):
        self.call('PUT', '/resource_providers/%s/inventories' % rp, {
            'resource_provider_generation': self._generation(rp),
            'inventories': {rc: {'total': total}
                            for rc, total in inventory.items()}})

    def traits(self, rp, *names):
        self.call('PUT', '/resource_providers/%s/traits' % rp, {
            'resource_provider_generation': self._generation(rp),
            'traits': list(names)})

    def aggregates(self, rp, *aggs, version='1.39'):
        body = {'aggregates': list(aggs),
                'resource_provider_generation': self._generation(rp)}
        if version == '1.1':
            body = list(aggs)
        self.call('PUT', '/resource_providers/%s/aggregates' % rp, body,
                  version=version)

    def claim(self, consumer, allocations, generation=None):
        self.call('PUT', '/allocations/%s' % consumer, {
            'allocations': {rp: {'resources': res}
                            for rp, res in allocations.items()},
            'project_id': PROJECT, 'user_id': USER,
            'consumer_generation': generation, 'consumer_type': 'INSTANCE'})

    def candidates(self, query):
        return self.call('GET', '/allocation_candidates?' + query)

    def hosts(self, query):
        """Sorted provider uuids of the candidates of ``query``."""
        return sorted(uuid_ for areq in self.candidates(
            query)['allocation_requests'] for uuid_ in areq['allocations'])

    def used(self, rp, rc, query='resources=VCPU:1'):
        return self.candidates(query)['provider_summaries'][rp][
            'resources'][rc]['used']


@pytest.fixture
def placement():
    assert CONF.placement.provider_cache
    return Placement()


@pytest.fixture(params=['returning', 'select'])
def deleting(request, placement, monkeypatch):
    """The placement, deleting allocations both ways it can.

    NOTE: with DELETE ... RETURNING (MariaDB, PostgreSQL, SQLite), or by a
    SELECT of the holders first, as on a database without it (MySQL).
    """
    if request.param == 'select':
        dialect = fixtures.db_api.placement_db.engine().dialect
        monkeypatch.setattr(dialect, 'delete_returning', False)
    return placement


def test_claims_moves_and_deletes_show_in_the_next_answer(deleting):
    placement = deleting
    one = placement.provider('cn1', VCPU=4)
    two = placement.provider('cn2', VCPU=4)
    assert placement.hosts('resources=VCPU:4') == sorted([one, two])
    consumer = str(uuid.uuid4())
    placement.claim(consumer, {one: {'VCPU': 3}})
    assert placement.hosts('resources=VCPU:2') == [two]
    assert placement.used(one, 'VCPU') == 3
    # A move: the provider losing the allocation gets no new generation.
    placement.claim(consumer, {two: {'VCPU': 3}}, generation=1)
    assert placement.used(one, 'VCPU') == 0
    assert placement.used(two, 'VCPU') == 3
    assert placement.hosts('resources=VCPU:2') == [one]
    placement.call('DELETE', '/allocations/%s' % consumer)
    assert placement.used(two, 'VCPU') == 0
    assert placement.hosts('resources=VCPU:4') == sorted([one, two])


def test_emptying_a_consumer_frees_its_providers(deleting):
    placement = deleting
    one = placement.provider('cn1', VCPU=4)
    consumer = str(uuid.uuid4())
    placement.claim(consumer, {one: {'VCPU': 4}})
    assert placement.hosts('resources=VCPU:1') == []
    placement.call('POST', '/allocations', {consumer: {
        'allocations': {}, 'project_id': PROJECT, 'user_id': USER,
        'consumer_generation': 1, 'consumer_type': 'INSTANCE'}})
    assert placement.hosts('resources=VCPU:1') == [one]


def test_inventory_traits_and_aggregates_show_in_the_next_answer(placement):
    one = placement.provider('cn1', VCPU=4)
    assert placement.hosts('resources=VCPU:8') == []
    placement.inventory(one, VCPU=8)
    assert placement.hosts('resources=VCPU:8') == [one]
    placement.traits(one, 'HW_CPU_X86_AVX2')
    assert placement.hosts('resources=VCPU:1&required=HW_CPU_X86_AVX2') == \
        [one]
    assert placement.hosts('resources=VCPU:1&required=!HW_CPU_X86_AVX2') \
        == []
    assert placement.candidates('resources=VCPU:1')['provider_summaries'][
        one]['traits'] == ['HW_CPU_X86_AVX2']
    agg = str(uuid.uuid4())
    # NOTE: before 1.19 an aggregate change leaves the generation alone.
    placement.aggregates(one, agg, version='1.1')
    assert placement.hosts('resources=VCPU:1&member_of=%s' % agg) == [one]
    placement.aggregates(one, version='1.1')
    assert placement.hosts('resources=VCPU:1&member_of=%s' % agg) == []


def test_deleted_and_new_providers(placement):
    one = placement.provider('cn1', VCPU=4)
    assert placement.hosts('resources=VCPU:1') == [one]
    placement.call('DELETE', '/resource_providers/%s' % one)
    assert placement.hosts('resources=VCPU:1') == []
    two = placement.provider('cn2', VCPU=4)
    assert placement.hosts('resources=VCPU:1') == [two]


def test_a_tree_or_a_sharing_provider_leaves_the_flat_path(placement):
    root = placement.provider('cn1', VCPU=4)
    assert placement.hosts('resources=VCPU:1,SRIOV_NET_VF:1') == []
    child = placement.provider('pf1', parent=root, SRIOV_NET_VF=8)
    body = placement.candidates('resources=VCPU:1,SRIOV_NET_VF:1')
    assert [sorted(a['allocations']) for a in
            body['allocation_requests']] == [sorted([root, child])]
    assert body['provider_summaries'][child]['root_provider_uuid'] == root

    placement.call('DELETE', '/resource_providers/%s' % child)
    disk = placement.provider('pool', DISK_GB=100)
    agg = str(uuid.uuid4())
    placement.aggregates(root, agg)
    placement.aggregates(disk, agg)
    placement.traits(disk, 'MISC_SHARES_VIA_AGGREGATE')
    body = placement.candidates('resources=VCPU:1,DISK_GB:10')
    assert [sorted(a['allocations']) for a in
            body['allocation_requests']] == [sorted([root, disk])]


def test_an_older_copy_never_replaces_a_newer_one():
    cache = provider_cache.ProviderCache()
    newer = provider_cache.Provider((1, 'u', 3, 2, None, 1), {}, frozenset())
    older = provider_cache.Provider((1, 'u', 3, 1, None, 1), {}, frozenset())
    cache._keep([newer])
    cache._keep([older])
    assert cache._providers[1] is newer
    other = provider_cache.Provider((1, 'v', 0, 0, None, 1), {}, frozenset())
    cache._keep([other])
    assert cache._providers[1] is other


@pytest.mark.parametrize('seed', range(4))
def test_cache_and_sql_answer_alike(seed):
    """Random flat clouds and queries: both paths give the same body."""
    rng = random.Random(seed)
    world = tac.World()
    traits = ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE42', 'CUSTOM_FAST']
    for index in range(60):
        total = rng.choice([4, 8, 16])
        world.provider(
            'cn%02d' % index,
            traits=rng.sample(traits, rng.randint(0, 2)),
            aggregates=rng.sample(['a', 'b', 'c'], rng.randint(0, 2)),
            VCPU=(total, rng.randint(0, total)),
            MEMORY_MB=(4096, rng.choice([0, 1024, 4096])),
            DISK_GB=(100, rng.randint(0, 100)))
    queries = []
    for _ in range(25):
        parts = ['resources=VCPU:%d,MEMORY_MB:%d' % (
            rng.randint(1, 8), rng.choice([512, 2048, 4096]))]
        if rng.random() < 0.5:
            parts.append('required=%s%s' % (rng.choice(['', '!']),
                                            rng.choice(traits)))
        if rng.random() < 0.3:
            parts.append('required=in:%s' % ','.join(traits[:2]))
        if rng.random() < 0.4:
            parts.append('member_of=%s' % world.uuids['agg:' + rng.choice(
                'abc')])
        if rng.random() < 0.2:
            parts.append('member_of=!%s' % world.uuids['agg:a'])
        if rng.random() < 0.2:
            parts.append('root_required=!CUSTOM_FAST')
        if rng.random() < 0.3:
            parts.append('limit=%d' % rng.randint(1, 10))
        queries.append('&'.join(parts))
    for query in queries:
        for version in ('1.39', '1.29', '1.27', '1.26', '1.17', '1.12',
                        '1.10'):
            try:
                expected = world.ask(query, version=version, use_cache=False)
            except errors.BadRequest:
                # A query this version does not know.
                continue
            assert world.ask(query, version=version, use_cache=True) == \
                expected, (query, version)
