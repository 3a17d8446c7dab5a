# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Traits: the catalogue, provider traits, and SQL to filter by them.

A trait is a dict with ``id``, ``name``, ``created_at`` and ``updated_at``.
Standard traits come from os-traits at sync time; custom ones (``CUSTOM_*``)
are created through the API. Setting a provider's traits bumps its
generation in the same transaction.

The ``*_select`` and ``*_clauses`` functions build SQLAlchemy Core
statements over ``resource_provider_traits`` without running them, so that
provider listing and allocation candidates can embed them in their own
queries (see :func:`required_traits_clauses`).
"""

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api as common_db
from services.placement.db.api import placement_db
from services.placement.db import tables
from services.placement import errors
from services.placement.objects import catalog
from services.placement.objects import resource_provider as rp_obj

_T = tables.traits
_RPT = tables.resource_provider_traits
CUSTOM_PREFIX = 'CUSTOM_'

GENERATION_CONFLICT = ("Resource provider's generation already changed. "
                       "Please update the generation and try again.")


class TraitNotFound(errors.NotFound):
    """No trait with that name."""

    def __init__(self, name):
        super().__init__('No such trait %s' % name)


class TraitInUse(errors.Conflict):
    """Deleting a trait that a provider still has."""

    def __init__(self, name):
        super().__init__('The trait %s is in use by a resource provider.'
                         % name)


def _columns():
    return sa.select(_T.c.id, _T.c.name, _T.c.created_at, _T.c.updated_at)


def _exact(rows, names):
    # NOTE: MySQL compares strings case-insensitively; trait names are not.
    return [dict(row) for row in rows if row['name'] in names]


def _find(ctx, name):
    found = _exact(ctx.session.execute(
        _columns().where(_T.c.name == name)).mappings(), {name})
    return found[0] if found else None


@placement_db.reader
def get_by_name(ctx, name):
    """The trait ``name`` as a dict, or None."""
    return _find(ctx, name)


@placement_db.reader
def get_all(ctx, names=None, prefix=None, associated=None):
    """Traits, filtered, ordered by name.

    :param names: only these names (an iterable), when given.
    :param prefix: only names starting with it, when given.
    :param associated: True for traits some provider has, False for traits
        no provider has, None for both.
    """
    query = _columns()
    if names is not None:
        names = set(names)
        query = query.where(_T.c.name.in_(sorted(names)))
    if prefix is not None:
        query = query.where(_T.c.name.startswith(prefix, autoescape=True))
    if associated is not None:
        used = sa.select(_RPT.c.trait_id)
        query = query.where(_T.c.id.in_(used) if associated
                            else _T.c.id.not_in(used))
    rows = [dict(row) for row in
            ctx.session.execute(query.order_by(_T.c.name)).mappings()]
    if names is not None:
        rows = [r for r in rows if r['name'] in names]
    if prefix is not None:
        rows = [r for r in rows if r['name'].startswith(prefix)]
    return rows


@placement_db.writer
def _create(ctx, name):
    existing = _find(ctx, name)
    if existing is not None:
        return existing, False
    now = timeutils.utcnow()
    result = ctx.session.execute(_T.insert().values(name=name,
                                                    created_at=now))
    return {'id': result.inserted_primary_key[0], 'name': name,
            'created_at': now, 'updated_at': None}, True


def ensure(ctx, name):
    """Create the trait ``name`` unless it exists.

    Runs its own writer transaction; a concurrent creation of the same name
    counts as "it exists".

    :returns: (trait, created) where ``created`` is a bool.
    """
    try:
        trait, created = _create(ctx, name)
    except Exception as exc:
        if not common_db.is_unique_violation(exc):
            raise
        trait, created = get_by_name(ctx, name), False
    if created:
        catalog.TRAITS.clear()
    return trait, created


@placement_db.writer
def _destroy(ctx, name):
    trait = _find(ctx, name)
    if trait is None:
        raise TraitNotFound(name)
    used = ctx.session.execute(
        sa.select(_RPT.c.trait_id).where(_RPT.c.trait_id == trait['id'])
        .limit(1)).first()
    if used is not None:
        raise TraitInUse(name)
    ctx.session.execute(_T.delete().where(_T.c.id == trait['id']))


def destroy(ctx, name):
    """Delete the (custom) trait ``name``.

    :raises TraitNotFound: no such trait.
    :raises TraitInUse: a provider has it.
    """
    try:
        _destroy(ctx, name)
    except errors.PlacementError:
        raise
    except Exception as exc:
        # NOTE: a provider got the trait between our check and the delete;
        # the foreign key refused the delete.
        if isinstance(exc, (db_exc.DBReferenceError, sa.exc.IntegrityError)):
            raise TraitInUse(name)
        raise
    catalog.TRAITS.clear()


# Provider traits


@placement_db.reader
def get_for_provider(ctx, provider_id):
    """The traits of one provider (dicts), ordered by name."""
    query = (_columns().select_from(_T.join(_RPT, _RPT.c.trait_id == _T.c.id))
             .where(_RPT.c.resource_provider_id == provider_id)
             .order_by(_T.c.name))
    return [dict(row) for row in ctx.session.execute(query).mappings()]


@placement_db.reader
def names_by_provider_ids(ctx, provider_ids):
    """``{provider id: set of trait names}`` for the given providers.

    Providers without traits are absent from the result.
    """
    result = {}
    provider_ids = list(provider_ids)
    if not provider_ids:
        return result
    query = (sa.select(_RPT.c.resource_provider_id, _T.c.name)
             .select_from(_RPT.join(_T, _RPT.c.trait_id == _T.c.id))
             .where(_RPT.c.resource_provider_id.in_(provider_ids)))
    for rp_id, name in ctx.session.execute(query):
        result.setdefault(rp_id, set()).add(name)
    return result


class TraitsNotFound(errors.BadRequest):
    """Some of the named traits do not exist."""

    def __init__(self, names):
        super().__init__('No such trait(s): %s.' % ', '.join(sorted(names)))


def _ids_for(ctx, names):
    names = set(names)
    if not names:
        return {}
    found = _exact(ctx.session.execute(
        sa.select(_T.c.id, _T.c.name).where(_T.c.name.in_(sorted(names))))
        .mappings(), names)
    by_name = {row['name']: row['id'] for row in found}
    missing = names - set(by_name)
    if missing:
        raise TraitsNotFound(missing)
    return by_name


@placement_db.writer
def set_for_provider(ctx, provider, names, expected_generation=None):
    """Replace a provider's traits and bump its generation once.

    :param provider: the provider dict (see ``resource_provider``).
    :param names: the complete new set of trait names.
    :param expected_generation: the generation the caller saw; defaults to
        the one in ``provider``.
    :raises TraitsNotFound: some names are not traits (400).
    :raises errors.Conflict: the generation moved
        (placement.concurrent_update).
    :returns: the provider's traits after the change.
    """
    by_name = _ids_for(ctx, names)
    try:
        rp_obj.increment_generation(ctx, provider,
                                    expected=expected_generation)
    except rp_obj.ConcurrentUpdate:
        raise errors.Conflict(GENERATION_CONFLICT,
                              code=errors.CONCURRENT_UPDATE)
    have = {row['trait_id'] for row in ctx.session.execute(
        sa.select(_RPT.c.trait_id)
        .where(_RPT.c.resource_provider_id == provider['id'])).mappings()}
    want = set(by_name.values())
    if have - want:
        ctx.session.execute(
            _RPT.delete().where(_RPT.c.resource_provider_id == provider['id'])
            .where(_RPT.c.trait_id.in_(sorted(have - want))))
    if want - have:
        now = timeutils.utcnow()
        ctx.session.execute(_RPT.insert(), [
            {'trait_id': trait_id, 'resource_provider_id': provider['id'],
             'created_at': now} for trait_id in sorted(want - have)])
    return get_for_provider(ctx, provider['id'])


@placement_db.writer
def remove_all_for_provider(ctx, provider_id):
    """Drop every trait association of a provider (no generation bump).

    For use by provider deletion, inside its transaction.
    """
    ctx.session.execute(
        _RPT.delete().where(_RPT.c.resource_provider_id == provider_id))


# SQL building blocks (statements are returned, not executed).


def providers_with_all_traits_select(trait_ids):
    """SELECT of provider ids having every trait in ``trait_ids``.

    :param trait_ids: a non-empty collection of trait ids.
    """
    trait_ids = sorted(set(trait_ids))
    return (sa.select(_RPT.c.resource_provider_id)
            .where(_RPT.c.trait_id.in_(trait_ids))
            .group_by(_RPT.c.resource_provider_id)
            .having(sa.func.count(sa.distinct(_RPT.c.trait_id))
                    == len(trait_ids)))


def providers_with_any_traits_select(trait_ids):
    """SELECT of provider ids having at least one trait in ``trait_ids``."""
    return (sa.select(_RPT.c.resource_provider_id)
            .where(_RPT.c.trait_id.in_(sorted(set(trait_ids))))
            .distinct())


def trait_ids(ctx, names):
    """Map names to ids through the catalogue cache; unknown names raise.

    :raises TraitsNotFound: naming the unknown ones.
    """
    ids, missing = {}, []
    for name in names:
        found = catalog.TRAITS.id_for(ctx, name)
        if found is None:
            missing.append(name)
        else:
            ids[name] = found
    if missing:
        raise TraitsNotFound(missing)
    return ids


def required_traits_clauses(ctx, provider_id_column, required):
    """WHERE conditions applying a ``query.RequiredTraits`` to a column.

    Each provider must have all of ``required.all_of``, at least one of
    each set in ``required.any_of`` and none of ``required.forbidden``.
    The conditions test the provider itself; callers that match traits on
    a whole tree pass the root id column instead and adapt.

    :param provider_id_column: e.g. ``resource_providers.c.id``.
    :param required: a ``services.placement.query.RequiredTraits``.
    :returns: a list of SQL expressions to AND into a WHERE.
    """
    clauses = []
    if required.all_of:
        ids = trait_ids(ctx, required.all_of).values()
        clauses.append(provider_id_column.in_(
            providers_with_all_traits_select(ids)))
    for group in required.any_of:
        ids = trait_ids(ctx, group).values()
        clauses.append(provider_id_column.in_(
            providers_with_any_traits_select(ids)))
    if required.forbidden:
        ids = trait_ids(ctx, required.forbidden).values()
        clauses.append(provider_id_column.not_in(
            providers_with_any_traits_select(ids)))
    return clauses
