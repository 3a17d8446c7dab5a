# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Provider aggregates: membership, and SQL to filter providers by it.

Placement knows aggregates only as uuids: a row in
``placement_aggregates`` is created the first time a provider joins one and
``resource_provider_aggregates`` links providers to those rows.

The ``*_select`` and ``*_clauses`` functions build SQLAlchemy Core
statements without running them, for provider listing (``member_of``) and
allocation candidates (``member_of``, sharing providers).
"""

import logging

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api as common_db
from services.placement.db.api import placement_db
from services.placement.db import tables
from services.placement import errors
from services.placement.objects import resource_provider as rp_obj

LOG = logging.getLogger(__name__)

_AGG = tables.placement_aggregates
_RPA = tables.resource_provider_aggregates

GENERATION_CONFLICT = ("Resource provider's generation already changed. "
                       "Please update the generation and try again.")


@placement_db.reader
def get_for_provider(ctx, provider_id):
    """The aggregates of one provider.

    :returns: (list of aggregate uuids ordered by uuid, the newest
        membership timestamp or None).
    """
    rows = ctx.session.execute(
        sa.select(_AGG.c.uuid, _RPA.c.created_at, _RPA.c.updated_at)
        .select_from(_RPA.join(_AGG, _RPA.c.aggregate_id == _AGG.c.id))
        .where(_RPA.c.resource_provider_id == provider_id)
        .order_by(_AGG.c.uuid)).all()
    stamps = [row.updated_at or row.created_at for row in rows]
    stamps = [s for s in stamps if s is not None]
    return [row.uuid for row in rows], (max(stamps) if stamps else None)


@placement_db.reader
def uuids_by_provider_ids(ctx, provider_ids):
    """``{provider id: set of aggregate uuids}`` for the given providers.

    Providers in no aggregate are absent from the result.
    """
    result = {}
    provider_ids = list(provider_ids)
    if not provider_ids:
        return result
    query = (sa.select(_RPA.c.resource_provider_id, _AGG.c.uuid)
             .select_from(_RPA.join(_AGG, _RPA.c.aggregate_id == _AGG.c.id))
             .where(_RPA.c.resource_provider_id.in_(provider_ids)))
    for rp_id, agg_uuid in ctx.session.execute(query):
        result.setdefault(rp_id, set()).add(agg_uuid)
    return result


def _existing_ids(ctx, uuids):
    rows = ctx.session.execute(
        sa.select(_AGG.c.uuid, _AGG.c.id)
        .where(_AGG.c.uuid.in_(sorted(uuids)))).all()
    return {row.uuid: row.id for row in rows if row.uuid in uuids}


@placement_db.writer
def ensure_aggregate_ids(ctx, uuids):
    """``{uuid: id}`` of aggregates, creating the rows that are missing.

    Joins the caller's writer transaction. Each insert runs in a SAVEPOINT:
    when a concurrent request created the same aggregate first, the unique
    violation is rolled back alone (PostgreSQL would otherwise abort the
    whole transaction) and the row is read back.
    """
    uuids = set(uuids)
    if not uuids:
        return {}
    ids = _existing_ids(ctx, uuids)
    now = timeutils.utcnow()
    for agg_uuid in sorted(uuids - set(ids)):
        try:
            with ctx.session.begin_nested():
                ctx.session.execute(_AGG.insert().values(
                    uuid=agg_uuid, created_at=now))
        except Exception as exc:
            if not common_db.is_unique_violation(exc):
                raise
            LOG.debug('Aggregate %s created concurrently', agg_uuid)
    ids.update(_existing_ids(ctx, uuids - set(ids)))
    return ids


@placement_db.writer
def set_for_provider(ctx, provider, uuids, expected_generation=None,
                     bump_generation=False):
    """Replace a provider's aggregates.

    :param provider: the provider dict (see ``resource_provider``).
    :param uuids: the complete new list of aggregate uuids.
    :param expected_generation: with ``bump_generation``, the generation
        the caller saw (defaults to the provider's).
    :param bump_generation: check and bump the generation (microversion
        1.19+); earlier microversions change membership without it.
    :raises errors.Conflict: the generation moved
        (placement.concurrent_update).
    """
    if bump_generation:
        try:
            rp_obj.increment_generation(ctx, provider,
                                        expected=expected_generation)
        except rp_obj.ConcurrentUpdate:
            raise errors.Conflict(GENERATION_CONFLICT,
                                  code=errors.CONCURRENT_UPDATE)
    want = ensure_aggregate_ids(ctx, uuids)
    want_ids = set(want.values())
    have_ids = set(ctx.session.execute(
        sa.select(_RPA.c.aggregate_id)
        .where(_RPA.c.resource_provider_id == provider['id'])).scalars())
    if have_ids - want_ids:
        ctx.session.execute(
            _RPA.delete().where(_RPA.c.resource_provider_id == provider['id'])
            .where(_RPA.c.aggregate_id.in_(sorted(have_ids - want_ids))))
    if want_ids - have_ids:
        now = timeutils.utcnow()
        ctx.session.execute(_RPA.insert(), [
            {'resource_provider_id': provider['id'], 'aggregate_id': agg_id,
             'created_at': now} for agg_id in sorted(want_ids - have_ids)])


@placement_db.writer
def remove_all_for_provider(ctx, provider_id):
    """Drop every aggregate membership of a provider (no generation bump).

    For use by provider deletion, inside its transaction.
    """
    ctx.session.execute(
        _RPA.delete().where(_RPA.c.resource_provider_id == provider_id))


# SQL building blocks (statements are returned, not executed).


def providers_in_any_aggregate_select(uuids):
    """SELECT of provider ids in at least one aggregate of ``uuids``."""
    return (sa.select(_RPA.c.resource_provider_id)
            .select_from(_RPA.join(_AGG, _RPA.c.aggregate_id == _AGG.c.id))
            .where(_AGG.c.uuid.in_(sorted(set(uuids))))
            .distinct())


def providers_sharing_aggregates_select(provider_ids):
    """SELECT of provider ids sharing an aggregate with any given provider.

    The given providers themselves are included when they are in any
    aggregate. Allocation candidates use it to find sharing providers
    (``MISC_SHARES_VIA_AGGREGATE``) associated with a compute node.

    :param provider_ids: ids, or a SELECT of ids.
    """
    mine = _RPA.alias('mine')
    theirs = _RPA.alias('theirs')
    return (sa.select(theirs.c.resource_provider_id)
            .select_from(mine.join(
                theirs, mine.c.aggregate_id == theirs.c.aggregate_id))
            .where(mine.c.resource_provider_id.in_(provider_ids))
            .distinct())


def member_of_clauses(provider_id_column, member_of):
    """WHERE conditions applying a ``query.MemberOf`` to a column.

    A provider must be in at least one aggregate of every set in
    ``member_of.any_of`` and in none of ``member_of.forbidden``.

    :param provider_id_column: e.g. ``resource_providers.c.id`` (or a root
        id column, to match on trees).
    :param member_of: a ``services.placement.query.MemberOf``.
    :returns: a list of SQL expressions to AND into a WHERE.
    """
    clauses = [provider_id_column.in_(providers_in_any_aggregate_select(uuids))
               for uuids in member_of.any_of]
    if member_of.forbidden:
        clauses.append(provider_id_column.not_in(
            providers_in_any_aggregate_select(member_of.forbidden)))
    return clauses
