# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Provider aggregates and the member_of SQL built on them."""

from unittest import mock
import uuid

import pytest
import sqlalchemy as sa

from common import context
from services.placement.db.api import placement_db
from services.placement.db import tables
from services.placement import errors
from services.placement.objects import aggregate as agg_obj
from services.placement.objects import resource_provider as rp_obj
from services.placement import query
from tests.unit.placement import fixtures
from tests.unit.placement.test_trait import provider

AGG1, AGG2, AGG3 = (str(uuid.UUID(int=i)) for i in (1, 2, 3))


@pytest.fixture
def ctx():
    fixtures.setup_app()
    fixtures.wipe_database()
    return context.get_admin_context()


@placement_db.reader
def _select_ids(ctx, clauses):
    rp = tables.resource_providers
    return set(ctx.session.execute(
        sa.select(rp.c.id).where(*clauses)).scalars())


@placement_db.reader
def _aggregate_rows(ctx):
    return ctx.session.execute(sa.select(
        sa.func.count()).select_from(tables.placement_aggregates)).scalar()


def test_set_without_bump_leaves_generation(ctx):
    rp = provider(ctx, 'one')
    agg_obj.set_for_provider(ctx, rp, [AGG1, AGG2])
    assert agg_obj.get_for_provider(ctx, rp['id'])[0] == [AGG1, AGG2]
    assert rp_obj.get_by_uuid(ctx, rp['uuid'])['generation'] == 0


def test_set_with_bump_checks_generation(ctx):
    rp = provider(ctx, 'one')
    agg_obj.set_for_provider(ctx, rp, [AGG1], expected_generation=0,
                             bump_generation=True)
    assert rp_obj.get_by_uuid(ctx, rp['uuid'])['generation'] == 1
    with pytest.raises(errors.Conflict) as exc:
        agg_obj.set_for_provider(ctx, rp, [], expected_generation=0,
                                 bump_generation=True)
    assert exc.value.code == errors.CONCURRENT_UPDATE
    assert agg_obj.get_for_provider(ctx, rp['id'])[0] == [AGG1]


def test_aggregate_rows_are_shared_and_reused(ctx):
    one, two = provider(ctx, 'one'), provider(ctx, 'two')
    agg_obj.set_for_provider(ctx, one, [AGG1, AGG2])
    agg_obj.set_for_provider(ctx, two, [AGG2])
    assert _aggregate_rows(ctx) == 2
    ids = agg_obj.ensure_aggregate_ids(ctx, [AGG1, AGG3])
    assert set(ids) == {AGG1, AGG3}
    assert _aggregate_rows(ctx) == 3


def test_member_of_clauses(ctx):
    one, two, three = (provider(ctx, n) for n in ('one', 'two', 'three'))
    agg_obj.set_for_provider(ctx, one, [AGG1, AGG2])
    agg_obj.set_for_provider(ctx, two, [AGG2])
    col = tables.resource_providers.c.id

    def match(any_of=(), forbidden=()):
        member_of = query.MemberOf(tuple(frozenset(g) for g in any_of),
                                   frozenset(forbidden))
        return _select_ids(ctx, agg_obj.member_of_clauses(col, member_of))

    assert match(any_of=[[AGG2]]) == {one['id'], two['id']}
    assert match(any_of=[[AGG2], [AGG1, AGG3]]) == {one['id']}
    assert match(forbidden=[AGG1]) == {two['id'], three['id']}
    assert match(any_of=[[AGG2]], forbidden=[AGG1]) == {two['id']}
    sharing = _select_ids(ctx, [col.in_(
        agg_obj.providers_sharing_aggregates_select([two['id']]))])
    assert sharing == {one['id'], two['id']}
    assert agg_obj.uuids_by_provider_ids(ctx, [one['id'], three['id']]) == {
        one['id']: {AGG1, AGG2}}


def test_concurrently_created_aggregate_is_read_back(ctx):
    rp = provider(ctx, 'one')
    agg_obj.ensure_aggregate_ids(ctx, [AGG1])
    real = agg_obj._existing_ids
    calls = []

    def blind_first(c, uuids):
        # The first look misses the row, as if another request had
        # inserted it just after; the insert then hits the unique key.
        calls.append(uuids)
        return {} if len(calls) == 1 else real(c, uuids)

    with mock.patch.object(agg_obj, '_existing_ids', blind_first):
        agg_obj.set_for_provider(ctx, rp, [AGG1, AGG2],
                                 expected_generation=0, bump_generation=True)
    assert agg_obj.get_for_provider(ctx, rp['id'])[0] == [AGG1, AGG2]
    assert rp_obj.get_by_uuid(ctx, rp['uuid'])['generation'] == 1
    assert _aggregate_rows(ctx) == 2
