# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The flat candidate path: usage read once, for the test and the summary.

The capacity test moved from SQL to Python for the flat path, and the
provider summaries reuse the usage read with the candidates; these tests
pin the boundaries (equal to capacity, fractional allocation ratios) and
the summaries by microversion.
"""

import pytest
import sqlalchemy as sa

from services.placement.db import tables
from services.placement.objects import candidate_query as cq
from services.placement.objects import provider_cache
from tests.unit.placement import test_allocation_candidate as tac


@pytest.fixture(params=[False, True], ids=['sql', 'cache'])
def world(request):
    return tac.World(use_cache=request.param)


def _set_inventory(world, name, rc_name, **values):
    with world.engine.begin() as conn:
        rc_id = world._rc(conn, rc_name)
        conn.execute(tables.inventories.update().where(
            tables.inventories.c.resource_provider_id == world.ids[name])
            .where(tables.inventories.c.resource_class_id == rc_id)
            .values(**values))
    # NOTE: written behind placement's back, as the cache documents.
    provider_cache.CACHE.clear()


def test_capacity_boundary_and_fractional_ratio(world):
    world.provider('exact', VCPU=(8, 6))
    world.provider('over', VCPU=(8, 7))
    world.provider('ratio', VCPU=3)
    # (3 - 0) * 1.5 = 4.5: four more fit, five do not.
    _set_inventory(world, 'ratio', 'VCPU', allocation_ratio=1.5, max_unit=8)
    assert world.sets(world.ask('resources=VCPU:2')) == [
        ('exact',), ('ratio',)]
    assert world.sets(world.ask('resources=VCPU:4')) == [('ratio',)]
    assert world.sets(world.ask('resources=VCPU:5')) == []
    body = world.ask('resources=VCPU:1')
    assert body['provider_summaries'][world.uuids['ratio']][
        'resources'] == {'VCPU': {'capacity': 4, 'used': 0}}


def test_unit_rules_still_apply(world):
    world.provider('steps', VCPU=8)
    _set_inventory(world, 'steps', 'VCPU', step_size=2, min_unit=2,
                   max_unit=4)
    assert world.sets(world.ask('resources=VCPU:2')) == [('steps',)]
    assert world.sets(world.ask('resources=VCPU:3')) == []
    assert world.sets(world.ask('resources=VCPU:1')) == []
    assert world.sets(world.ask('resources=VCPU:6')) == []


def test_summaries_show_every_class_from_1_27(world):
    world.provider('cn1', VCPU=(8, 2), MEMORY_MB=(1024, 256),
                   DISK_GB=(100, 10))
    new = world.ask('resources=VCPU:1')
    assert new['provider_summaries'][world.uuids['cn1']]['resources'] == {
        'VCPU': {'capacity': 8, 'used': 2},
        'MEMORY_MB': {'capacity': 1024, 'used': 256},
        'DISK_GB': {'capacity': 100, 'used': 10}}
    old = world.ask('resources=VCPU:1,DISK_GB:5', version='1.26')
    assert old['provider_summaries'][world.uuids['cn1']]['resources'] == {
        'VCPU': {'capacity': 8, 'used': 2},
        'DISK_GB': {'capacity': 100, 'used': 10}}


def test_a_limit_walks_past_full_providers_in_id_order(world):
    for index in range(40):
        used = 8 if index % 3 == 0 else index % 3
        world.provider('cn%02d' % index, VCPU=(8, used), MEMORY_MB=512)
    body = world.ask('resources=VCPU:4&limit=7')
    assert world.sets(body) == [(n,) for n in (
        'cn01', 'cn02', 'cn04', 'cn05', 'cn07', 'cn08', 'cn10')]
    assert [areq['mappings'][''] for areq in body['allocation_requests']] \
        == [[world.uuids[n]] for n in (
            'cn01', 'cn02', 'cn04', 'cn05', 'cn07', 'cn08', 'cn10')]
    summaries = body['provider_summaries']
    assert world.names(summaries) == [
        'cn01', 'cn02', 'cn04', 'cn05', 'cn07', 'cn08', 'cn10']
    assert summaries[world.uuids['cn05']]['resources']['VCPU'] == {
        'capacity': 8, 'used': 2}
    everything = world.ask('resources=VCPU:4')
    assert len(everything['allocation_requests']) == 26


@pytest.mark.parametrize('pick', [
    lambda ids: ids,
    lambda ids: ids[2:-1],
    lambda ids: ids[::2],
    lambda ids: ids[::5],
    lambda ids: ids[:1],
    lambda ids: [],
])
def test_id_batches_return_only_the_asked_ids(world, pick):
    for index in range(20):
        world.provider('cn%02d' % index, traits=['CUSTOM_T%d' % index],
                       VCPU=1)
    ids = sorted(world.ids[n] for n in world.ids if n.startswith('cn'))
    wanted = pick(ids)
    with world.engine.connect() as conn:
        found = cq.trait_names(conn, wanted)
        assert sorted(found) == sorted(wanted)
        stmt = sa.select(tables.resource_providers.c.id)
        rows = [row for batch in cq.id_batches(
            conn, stmt, tables.resource_providers.c.id, wanted)
            for row in batch]
    assert sorted(row[0] for row in rows) == sorted(wanted)
