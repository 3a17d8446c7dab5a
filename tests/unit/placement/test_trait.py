# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Traits: catalogue, provider traits and the SQL filters built on them."""

import uuid

import pytest
import sqlalchemy as sa

from common import context
from services.placement.db.api import placement_db
from services.placement.db import tables
from services.placement import errors
from services.placement.objects import catalog
from services.placement.objects import resource_provider as rp_obj
from services.placement.objects import trait as trait_obj
from services.placement import query
from tests.unit.placement import fixtures


@pytest.fixture
def ctx():
    fixtures.setup_app()
    fixtures.wipe_database()
    return context.get_admin_context()


@placement_db.writer
def _make_provider(ctx, name):
    rp = tables.resource_providers
    new_id = ctx.session.execute(rp.insert().values(
        uuid=str(uuid.uuid4()), name=name, generation=0)
    ).inserted_primary_key[0]
    ctx.session.execute(rp.update().where(rp.c.id == new_id)
                        .values(root_provider_id=new_id))
    return new_id


def provider(ctx, name):
    """A provider dict, made directly in the database."""
    new_id = _make_provider(ctx, name)
    uuid_ = placement_db.reader(lambda c: c.session.execute(
        sa.select(tables.resource_providers.c.uuid)
        .where(tables.resource_providers.c.id == new_id)).scalar())(ctx)
    return rp_obj.get_by_uuid(ctx, uuid_)


@placement_db.reader
def _select_ids(ctx, clauses):
    rp = tables.resource_providers
    return set(ctx.session.execute(
        sa.select(rp.c.id).where(*clauses)).scalars())


def test_ensure_is_idempotent_and_refreshes_the_cache(ctx):
    trait, created = trait_obj.ensure(ctx, 'CUSTOM_X')
    assert created
    assert catalog.TRAITS.id_for(ctx, 'CUSTOM_X') == trait['id']
    again, created = trait_obj.ensure(ctx, 'CUSTOM_X')
    assert not created and again['id'] == trait['id']


def test_prefix_filter_escapes_like_wildcards(ctx):
    trait_obj.ensure(ctx, 'CUSTOM_A_B')
    trait_obj.ensure(ctx, 'CUSTOM_AXB')
    names = [t['name'] for t in trait_obj.get_all(ctx, prefix='CUSTOM_A_')]
    assert names == ['CUSTOM_A_B']


def test_set_for_provider_bumps_once_and_checks_generation(ctx):
    trait_obj.ensure(ctx, 'CUSTOM_X')
    rp = provider(ctx, 'one')
    traits = trait_obj.set_for_provider(
        ctx, rp, ['CUSTOM_X', 'HW_CPU_X86_AVX2'], expected_generation=0)
    names = sorted(t['name'] for t in traits)
    assert names == ['CUSTOM_X', 'HW_CPU_X86_AVX2']
    assert rp_obj.get_by_uuid(ctx, rp['uuid'])['generation'] == 1
    with pytest.raises(errors.Conflict) as exc:
        trait_obj.set_for_provider(ctx, rp, [], expected_generation=0)
    assert exc.value.code == errors.CONCURRENT_UPDATE


def test_unknown_traits_change_nothing(ctx):
    rp = provider(ctx, 'one')
    with pytest.raises(trait_obj.TraitsNotFound) as exc:
        trait_obj.set_for_provider(ctx, rp, ['CUSTOM_NO', 'CUSTOM_NEVER'])
    assert 'CUSTOM_NEVER, CUSTOM_NO' in exc.value.message
    assert rp_obj.get_by_uuid(ctx, rp['uuid'])['generation'] == 0


def test_destroy_in_use(ctx):
    trait_obj.ensure(ctx, 'CUSTOM_X')
    rp = provider(ctx, 'one')
    trait_obj.set_for_provider(ctx, rp, ['CUSTOM_X'])
    with pytest.raises(trait_obj.TraitInUse):
        trait_obj.destroy(ctx, 'CUSTOM_X')
    trait_obj.remove_all_for_provider(ctx, rp['id'])
    trait_obj.destroy(ctx, 'CUSTOM_X')
    assert catalog.TRAITS.id_for(ctx, 'CUSTOM_X') is None


def test_required_traits_clauses(ctx):
    for name in ('CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C'):
        trait_obj.ensure(ctx, name)
    ab, a, c, none = (provider(ctx, n) for n in ('ab', 'a', 'c', 'none'))
    trait_obj.set_for_provider(ctx, ab, ['CUSTOM_A', 'CUSTOM_B'])
    trait_obj.set_for_provider(ctx, a, ['CUSTOM_A'])
    trait_obj.set_for_provider(ctx, c, ['CUSTOM_C'])
    col = tables.resource_providers.c.id

    def match(all_of=(), any_of=(), forbidden=()):
        required = query.RequiredTraits(
            frozenset(all_of), tuple(frozenset(g) for g in any_of),
            frozenset(forbidden))
        return _select_ids(
            ctx, trait_obj.required_traits_clauses(ctx, col, required))

    assert match(all_of=['CUSTOM_A', 'CUSTOM_B']) == {ab['id']}
    assert match(all_of=['CUSTOM_A']) == {ab['id'], a['id']}
    assert match(any_of=[['CUSTOM_B', 'CUSTOM_C']]) == {ab['id'], c['id']}
    assert match(forbidden=['CUSTOM_A']) == {c['id'], none['id']}
    assert match(all_of=['CUSTOM_A'], forbidden=['CUSTOM_B']) == {a['id']}
    assert trait_obj.names_by_provider_ids(ctx, [ab['id'], none['id']]) == {
        ab['id']: {'CUSTOM_A', 'CUSTOM_B'}}
