# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Usages: sums of allocations, per provider or per project.

Each function is one or two aggregate SQL statements, whatever the
number of providers or consumers: usages are read by schedulers and
quota checks, often.
"""

import sqlalchemy as sa

from services.placement.db.api import placement_db
from services.placement.db import tables
from services.placement.objects import catalog

_INV = tables.inventories
_ALLOC = tables.allocations
_CONSUMERS = tables.consumers
_PROJECTS = tables.projects
_USERS = tables.users
_TYPES = tables.consumer_types

# The consumer-type groups of GET /usages (1.38) that are not type names.
ALL_TYPES = 'all'
UNKNOWN_TYPE = 'unknown'


def used_sql(provider_id_column, rc_id):
    """The scalar SQL sum of allocations of ``rc_id`` on a provider.

    Correlated with ``provider_id_column`` (e.g. ``inventories.c.
    resource_provider_id``); NULL when nothing is allocated, so wrap it in
    ``coalesce(..., 0)``.
    """
    # NOTE: correlated rather than a grouped derived table: every backend
    # answers it from the (provider, class, used) index without summing
    # every allocation of the class first.
    return (sa.select(sa.func.sum(_ALLOC.c.used))
            .where(_ALLOC.c.resource_provider_id == provider_id_column)
            .where(_ALLOC.c.resource_class_id == rc_id)
            .scalar_subquery())


@placement_db.reader
def for_provider(ctx, provider_id):
    """{resource class name: used} for every class the provider has.

    Classes with inventory but no allocations report 0; allocations of a
    class without inventory (possible after an inventory was deleted by a
    reshape) are reported too.
    """
    used = (sa.select(_ALLOC.c.resource_class_id,
                      sa.func.sum(_ALLOC.c.used).label('used'))
            .where(_ALLOC.c.resource_provider_id == provider_id)
            .group_by(_ALLOC.c.resource_class_id).subquery())
    rows = ctx.session.execute(
        sa.select(_INV.c.resource_class_id, used.c.used)
        .select_from(_INV.outerjoin(
            used, used.c.resource_class_id == _INV.c.resource_class_id))
        .where(_INV.c.resource_provider_id == provider_id))
    result = {}
    for rc_id, amount in rows:
        result[catalog.RESOURCE_CLASSES.name_for(ctx, rc_id)] = int(
            amount or 0)
    return result


def _project_filter(query, project_id, user_id):
    query = query.where(_PROJECTS.c.external_id == project_id)
    if user_id is not None:
        query = query.where(_USERS.c.external_id == user_id)
    return query


def _consumer_join():
    return (_ALLOC.join(_CONSUMERS,
                        _CONSUMERS.c.uuid == _ALLOC.c.consumer_id)
            .join(_PROJECTS, _PROJECTS.c.id == _CONSUMERS.c.project_id)
            .join(_USERS, _USERS.c.id == _CONSUMERS.c.user_id)
            .outerjoin(_TYPES,
                       _TYPES.c.id == _CONSUMERS.c.consumer_type_id))


@placement_db.reader
def for_project(ctx, project_id, user_id=None):
    """{resource class name: used} over a project's (and user's) consumers.

    :param project_id: the external project id.
    :param user_id: the external user id, to narrow to one user.
    """
    query = _project_filter(
        sa.select(_ALLOC.c.resource_class_id, sa.func.sum(_ALLOC.c.used))
        .select_from(_consumer_join())
        .group_by(_ALLOC.c.resource_class_id), project_id, user_id)
    return {catalog.RESOURCE_CLASSES.name_for(ctx, rc_id): int(amount)
            for rc_id, amount in ctx.session.execute(query)}


@placement_db.reader
def for_project_by_type(ctx, project_id, user_id=None, consumer_type=None):
    """Project usages grouped by consumer type (microversion 1.38).

    :param consumer_type: a type name, ``all`` (one group of everything)
        or ``unknown`` (consumers without a type); None groups by type.
    :returns: {group: {'consumer_count': n, resource class name: used}}.
    """
    def _narrow(query):
        query = _project_filter(query.select_from(_consumer_join()),
                                project_id, user_id)
        if consumer_type == UNKNOWN_TYPE:
            query = query.where(_CONSUMERS.c.consumer_type_id.is_(None))
        elif consumer_type not in (None, ALL_TYPES):
            query = query.where(_TYPES.c.name == consumer_type)
        return query

    # NOTE: group by the raw type name (NULL for untyped consumers) and
    # name the groups in Python: grouping by a constant or an expression
    # with bound parameters is not portable. ``all`` is one group.
    grouped = consumer_type != ALL_TYPES
    keys = [_TYPES.c.name] if grouped else []
    # NOTE: two statements: sums per (group, class) and distinct consumers
    # per group; one statement would count a consumer once per class.
    sums = _narrow(sa.select(*keys, _ALLOC.c.resource_class_id,
                             sa.func.sum(_ALLOC.c.used))
                   ).group_by(*keys, _ALLOC.c.resource_class_id)
    counts = _narrow(sa.select(
        *keys, sa.func.count(sa.distinct(_CONSUMERS.c.id))))
    if grouped:
        counts = counts.group_by(*keys)

    def _group(row):
        if not grouped:
            return ALL_TYPES, row
        return row[0] or UNKNOWN_TYPE, row[1:]

    result = {}
    for row in ctx.session.execute(counts):
        name, (count,) = _group(tuple(row))
        if count:
            result[name] = {'consumer_count': int(count)}
    for row in ctx.session.execute(sums):
        name, (rc_id, amount) = _group(tuple(row))
        rc_name = catalog.RESOURCE_CLASSES.name_for(ctx, rc_id)
        result.setdefault(name, {'consumer_count': 0})[rc_name] = int(amount)
    return result
