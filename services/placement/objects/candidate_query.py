# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The SQL behind allocation candidates: capacity, trees, traits, summaries.

Every function reads plain tuples through SQLAlchemy Core; nothing builds
per-row objects. Capacity is upstream's single formula::

    capacity = (total - reserved) * allocation_ratio
    fits     = used + amount <= capacity
               and min_unit <= amount <= max_unit and amount % step_size == 0

Usage is summed per provider in an aggregated subquery per resource class,
so a cloud of thousands of providers costs one pass per requested class.
"""

import operator

import sqlalchemy as sa

from services.placement.db import tables
from services.placement.objects import inventory

_RP = tables.resource_providers
_INV = tables.inventories
_ALLOC = tables.allocations
_RPT = tables.resource_provider_traits
_TRAITS = tables.traits
_RPA = tables.resource_provider_aggregates
_AGG = tables.placement_aggregates

# NOTE: keep IN lists well below every backend's bind-parameter limit.
_CHUNK = 500

SHARES_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'

_FIRST = operator.itemgetter(0)
_FIRST_TWO = operator.itemgetter(0, 1)


def chunks(ids, size=_CHUNK):
    """``ids`` as sorted lists of at most ``size`` items."""
    ids = sorted(ids)
    for start in range(0, len(ids), size):
        yield ids[start:start + size]


def id_batches(conn, stmt, column, ids):
    """Run ``stmt`` for the rows whose ``column`` is one of ``ids``.

    ``column`` must be the statement's first column. Yields lists of rows.

    NOTE: when the ids fill most of their id range (the candidates of a
    flat cloud come in id order), one BETWEEN range scan replaces the IN
    lists, which SQLAlchemy expands into one bound parameter per id on
    every execution; the few rows outside ``ids`` are dropped here.
    """
    if not isinstance(ids, (set, frozenset)):
        ids = set(ids)
    if not ids:
        return
    low, high = min(ids), max(ids)
    span = high - low + 1
    if len(ids) * 2 >= span:
        rows = conn.execute(stmt.where(column.between(low, high))).all()
        if len(ids) < span:
            rows = [row for row in rows if row[0] in ids]
        yield rows
        return
    for part in chunks(ids):
        yield conn.execute(stmt.where(column.in_(part))).all()


def _correlated_usage(rp_col, rc_id):
    """The scalar usage of class ``rc_id`` on the provider in ``rp_col``.

    NOTE: correlated, so that every backend answers it from the covering
    (provider, class, used) index instead of summing every allocation of
    the class first; at thousands of providers this is several times
    faster on SQLite than joining an aggregated derived table.
    """
    return (sa.select(sa.func.sum(_ALLOC.c.used))
            .where(_ALLOC.c.resource_provider_id == rp_col)
            .where(_ALLOC.c.resource_class_id == rc_id)
            .scalar_subquery())


# The usage of each inventories row: the sum of the allocations of its
# provider and class (NULL when there are none).
INVENTORY_USED = (sa.select(sa.func.sum(_ALLOC.c.used))
                  .where(_ALLOC.c.resource_provider_id ==
                         _INV.c.resource_provider_id)
                  .where(_ALLOC.c.resource_class_id ==
                         _INV.c.resource_class_id)
                  .scalar_subquery())


def _fits(inv, used, amount):
    """The capacity/unit conditions for requesting ``amount`` of ``inv``.

    ``used`` may be NULL (no allocations); the formula itself is
    :func:`inventory.fits_sql`, the one every placement path shares.
    """
    return inventory.fits_sql(amount, sa.func.coalesce(used, 0), inv)


def has_nested_providers(conn):
    """True when any provider has a parent."""
    return conn.execute(
        sa.select(_RP.c.id).where(_RP.c.parent_provider_id.isnot(None))
        .limit(1)).first() is not None


def sharing_providers(conn, shares_trait_id, rc_ids=None):
    """Ids of providers with MISC_SHARES_VIA_AGGREGATE.

    :param rc_ids: when given, only sharing providers with inventory of one
        of these classes (the only ones that can matter to a request).
    """
    if shares_trait_id is None:
        return set()
    found = set(conn.execute(
        sa.select(_RPT.c.resource_provider_id).where(
            _RPT.c.trait_id == shares_trait_id)).scalars())
    # NOTE: usually there are none; only then is the class check worth a
    # second statement.
    if found and rc_ids is not None:
        having = set()
        for part in chunks(found):
            having.update(conn.execute(
                sa.select(_INV.c.resource_provider_id)
                .where(_INV.c.resource_provider_id.in_(part))
                .where(_INV.c.resource_class_id.in_(sorted(rc_ids))))
                .scalars())
        found = having
    return found


def capacity_rows(conn, rc_id, amount):
    """Providers with room for ``amount`` of class ``rc_id``.

    :returns: list of (provider id, root id, capacity, used, max_unit).
    """
    used = _correlated_usage(_INV.c.resource_provider_id, rc_id)
    stmt = (sa.select(_INV.c.resource_provider_id, _RP.c.root_provider_id,
                      _INV.c.total, _INV.c.reserved,
                      _INV.c.allocation_ratio, used, _INV.c.max_unit)
            .select_from(
                _INV.join(_RP, _RP.c.id == _INV.c.resource_provider_id))
            .where(_INV.c.resource_class_id == rc_id)
            .where(_fits(_INV, used, amount)))
    return [(rp_id, root_id, (total - reserved) * ratio, used or 0, max_unit)
            for rp_id, root_id, total, reserved, ratio, used, max_unit
            in conn.execute(stmt).all()]


def _trait_filters(id_col, all_of, any_of, forbidden):
    """WHERE clauses for trait ids on the provider in ``id_col``."""
    clauses = []
    if all_of:
        clauses.append(id_col.in_(
            sa.select(_RPT.c.resource_provider_id)
            .where(_RPT.c.trait_id.in_(sorted(all_of)))
            .group_by(_RPT.c.resource_provider_id)
            .having(sa.func.count(_RPT.c.trait_id) == len(all_of))))
    for names in any_of:
        clauses.append(id_col.in_(
            sa.select(_RPT.c.resource_provider_id)
            .where(_RPT.c.trait_id.in_(sorted(names)))))
    if forbidden:
        clauses.append(id_col.notin_(
            sa.select(_RPT.c.resource_provider_id)
            .where(_RPT.c.trait_id.in_(sorted(forbidden)))))
    return clauses


def _aggregate_filters(id_col, any_of, forbidden):
    """WHERE clauses for aggregate ids on the provider in ``id_col``."""
    clauses = []
    for agg_ids in any_of:
        clauses.append(id_col.in_(
            sa.select(_RPA.c.resource_provider_id)
            .where(_RPA.c.aggregate_id.in_(sorted(agg_ids)))))
    if forbidden:
        clauses.append(id_col.notin_(
            sa.select(_RPA.c.resource_provider_id)
            .where(_RPA.c.aggregate_id.in_(sorted(forbidden)))))
    return clauses


def _static_fits(inv, amount):
    """The conditions of :func:`_fits` that do not depend on usage.

    NOTE: with no usage, the capacity condition still removes providers
    too small for the amount; usage is compared in :func:`_with_room`.
    """
    return inventory.fits_sql(amount, 0, inv)


def flat_candidates(conn, resources, traits=((), (), ()),
                    aggregates=((), ()), root_traits=((), (), ()),
                    in_tree_root=None, bound=None):
    """Providers that alone satisfy every class of ``resources``.

    The fast path for a cloud without nested or sharing providers: each
    such provider is one candidate, so one statement finds them all, with
    the inventory and usage of the requested classes that the provider
    summaries show.

    :param resources: dict of class id -> amount.
    :param traits: (all_of ids, tuple of any_of id sets, forbidden ids).
    :param aggregates: (tuple of any_of aggregate id sets, forbidden ids).
    :param root_traits: like ``traits``, for root_required.
    :param in_tree_root: the root id a provider must have, or None.
    :param bound: stop once this many are found (None: find all).
    :returns: (rows, inventories): rows is a list of (id, uuid) ordered by
        id; inventories is {id: [(class id, capacity, used)]} of the
        requested classes of those providers, in class id order.
    """
    columns = [_RP.c.id, _RP.c.uuid]
    source = _RP
    conditions = []
    for rc_id, amount in sorted(resources.items()):
        inv = _INV.alias('inv%d' % rc_id)
        source = source.join(inv, sa.and_(
            inv.c.resource_provider_id == _RP.c.id,
            inv.c.resource_class_id == rc_id))
        # NOTE: the usage is selected rather than compared in SQL, where
        # SQLite would compute it twice; the row count, not the usage,
        # is what a thousand candidates cost.
        columns += [inv.c.total, inv.c.reserved, inv.c.allocation_ratio,
                    _correlated_usage(_RP.c.id, rc_id)]
        conditions.append(_static_fits(inv, amount))
    conditions.extend(_trait_filters(_RP.c.id, *traits))
    conditions.extend(_trait_filters(_RP.c.id, *root_traits))
    conditions.extend(_aggregate_filters(_RP.c.id, *aggregates))
    if in_tree_root is not None:
        conditions.append(_RP.c.root_provider_id == in_tree_root)
    stmt = sa.select(*columns).select_from(source).where(*conditions)
    wanted = sorted(resources.items())
    if bound is None:
        # NOTE: sorted here rather than by ORDER BY: SQLite would sort
        # through a temporary B-tree after evaluating every provider.
        return _with_room(conn.execute(stmt).all(), wanted)
    # NOTE: with a bound, walk the providers in id ranges that grow, so
    # the usage subqueries run for about ``bound`` providers instead of
    # all of them; the order stays by id.
    low, high = conn.execute(sa.select(sa.func.min(_RP.c.id),
                                       sa.func.max(_RP.c.id))).first()
    found, usage = [], {}
    width = max(bound + bound // 4, 64)
    while low is not None and low <= high and len(found) < bound:
        top = low + width - 1
        rows, part = _with_room(
            conn.execute(stmt.where(_RP.c.id.between(low, top))).all(),
            wanted)
        found.extend(rows)
        usage.update(part)
        low, width = top + 1, width * 2
    found = found[:bound]
    return found, {pid: usage[pid] for pid, _uuid in found}


def _with_room(rows, wanted):
    """The rows of :func:`flat_candidates` with room for the request.

    :param wanted: sorted (class id, amount) pairs, the order of the
        inventory columns of each row.
    :returns: ([(id, uuid)] in id order, {id: [(class id, capacity,
        used)]}).
    """
    rows.sort(key=_FIRST)
    capacity = inventory.capacity
    kept, usage = [], {}
    for row in rows:
        entries = []
        for index, (rc_id, amount) in enumerate(wanted):
            total, reserved, ratio, used = row[2 + 4 * index:6 + 4 * index]
            room = capacity(total, reserved, ratio)
            used = int(used or 0)
            # NOTE: fits_sql's test, used + amount <= capacity: an integer
            # sum is below the float product exactly when it is below its
            # floor, the integer capacity.
            if used + amount > room:
                break
            entries.append((rc_id, room, used))
        else:
            kept.append((row[0], row[1]))
            usage[row[0]] = entries
    return kept, usage


def providers(conn, ids=None, root_ids=None):
    """{id: (uuid, parent id, root id)} by provider ids or by root ids."""
    result = {}
    cols = (_RP.c.id, _RP.c.uuid, _RP.c.parent_provider_id,
            _RP.c.root_provider_id)
    for column, wanted in ((_RP.c.id, ids), (_RP.c.root_provider_id,
                                             root_ids)):
        if not wanted:
            continue
        for part in chunks(wanted):
            for id_, uuid, parent, root in conn.execute(
                    sa.select(*cols).where(column.in_(part))).all():
                result[id_] = (uuid, parent, root)
    return result


def provider_by_uuid(conn, uuid):
    """(id, root id) of the provider with ``uuid``, or None."""
    row = conn.execute(
        sa.select(_RP.c.id, _RP.c.root_provider_id)
        .where(_RP.c.uuid == uuid)).first()
    return tuple(row) if row else None


def trait_names(conn, ids):
    """{provider id: set of trait names} for ``ids`` (no entry: none)."""
    result = {}
    stmt = (sa.select(_RPT.c.resource_provider_id, _TRAITS.c.name)
            .select_from(_RPT.join(_TRAITS, _TRAITS.c.id == _RPT.c.trait_id)))
    for rows in id_batches(conn, stmt, _RPT.c.resource_provider_id, ids):
        for rp_id, name in rows:
            if rp_id in result:
                result[rp_id].add(name)
            else:
                result[rp_id] = {name}
    return result


def aggregate_uuids(conn, ids):
    """{provider id: set of aggregate uuids} for ``ids``."""
    result = {}
    for part in chunks(ids):
        for rp_id, uuid in conn.execute(
                sa.select(_RPA.c.resource_provider_id, _AGG.c.uuid)
                .select_from(_RPA.join(_AGG,
                                       _AGG.c.id == _RPA.c.aggregate_id))
                .where(_RPA.c.resource_provider_id.in_(part))).all():
            result.setdefault(rp_id, set()).add(uuid)
    return result


def aggregate_ids(conn, uuids):
    """{aggregate uuid: id} for the known ones among ``uuids``."""
    if not uuids:
        return {}
    return {uuid: id_ for id_, uuid in conn.execute(
        sa.select(_AGG.c.id, _AGG.c.uuid)
        .where(_AGG.c.uuid.in_(sorted(uuids))))}


def sharing_anchors(conn, sharing_ids):
    """{sharing provider id: set of root ids of trees it serves}.

    A sharing provider serves every tree with a provider in one of its
    aggregates, and its own tree.
    """
    result = {}
    other = _RPA.alias('other')
    member = _RP.alias('member')
    for part in chunks(sharing_ids):
        stmt = (sa.select(_RPA.c.resource_provider_id,
                          member.c.root_provider_id)
                .select_from(
                    _RPA.join(other,
                              other.c.aggregate_id == _RPA.c.aggregate_id)
                    .join(member,
                          member.c.id == other.c.resource_provider_id))
                .where(_RPA.c.resource_provider_id.in_(part))
                .distinct())
        for rp_id, root_id in conn.execute(stmt).all():
            result.setdefault(rp_id, set()).add(root_id)
    return result


def inventories(conn, ids, rc_ids=None, other_than=None):
    """Inventory and usage of providers ``ids`` for the summaries.

    :param rc_ids: only these classes when given (before 1.27).
    :param other_than: leave out these classes when given.
    :returns: {provider id: [(rc id, capacity, used)]} in class id order.
    """
    result = {}
    stmt = sa.select(_INV.c.resource_provider_id, _INV.c.resource_class_id,
                     _INV.c.total, _INV.c.reserved, _INV.c.allocation_ratio,
                     INVENTORY_USED)
    if rc_ids is not None:
        stmt = stmt.where(_INV.c.resource_class_id.in_(sorted(rc_ids)))
    if other_than:
        stmt = stmt.where(
            _INV.c.resource_class_id.notin_(sorted(other_than)))
    capacity = inventory.capacity
    for rows in id_batches(conn, stmt, _INV.c.resource_provider_id, ids):
        rows.sort(key=_FIRST_TWO)
        for rp_id, rc_id, total, reserved, ratio, used in rows:
            entry = (rc_id, capacity(total, reserved, ratio), int(used or 0))
            if rp_id in result:
                result[rp_id].append(entry)
            else:
                result[rp_id] = [entry]
    return result
