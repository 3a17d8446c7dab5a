# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Per-project quota limits in the api database (``quotas``).

A row exists only where an administrator set a project's limit; every
other limit is the ``[quota]`` default. Usage is never stored: it is
counted when needed (see :mod:`services.api.quota`).
"""

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api_tables as t
from services.api import records

_Q = t.quotas.c
# NOTE: read by every boot; built once, its parameter bound per call.
_PROJECT_LIMITS = sa.select(_Q.resource, _Q.hard_limit).where(
    _Q.project_id == sa.bindparam('project_id'))


@records.reader_connection
def get_project_limits(ctxt, project_id):
    """resource -> hard limit, for the limits set on ``project_id``."""
    return {row.resource: row.hard_limit for row in ctxt.connection.execute(
        _PROJECT_LIMITS, {'project_id': project_id})}


def _set_limits(session, table, key_name, key, limits):
    """Create or replace the limits (resource -> limit) of the rows of
    ``table`` whose ``key_name`` column is ``key``.
    """
    now = timeutils.utcnow()
    key_column = table.c[key_name]
    existing = set(session.execute(sa.select(table.c.resource).where(
        key_column == key)).scalars())
    for resource, limit in limits.items():
        if resource in existing:
            session.execute(table.update().where(
                key_column == key, table.c.resource == resource).values(
                hard_limit=limit, updated_at=now))
        else:
            session.execute(table.insert().values(
                {key_name: key, 'resource': resource, 'hard_limit': limit,
                 'created_at': now}))


@records.writer
def set_project_limits(ctxt, project_id, limits):
    """Create or replace ``project_id``'s limits (resource -> limit)."""
    _set_limits(ctxt.session, t.quotas, 'project_id', project_id, limits)


@records.writer
def delete_project_limits(ctxt, project_id):
    """Forget ``project_id``'s limits: the defaults apply again."""
    ctxt.session.execute(t.quotas.delete().where(
        _Q.project_id == project_id))


_C = t.quota_classes.c
_CLASS_LIMITS = sa.select(_C.resource, _C.hard_limit).where(
    _C.class_name == sa.bindparam('class_name'))


@records.reader_connection
def get_class_limits(ctxt, class_name):
    """resource -> hard limit, for the limits set on quota class
    ``class_name`` (os-quota-class-sets).
    """
    return {row.resource: row.hard_limit for row in ctxt.connection.execute(
        _CLASS_LIMITS, {'class_name': class_name})}


# NOTE: every boot reads both: one round trip (class rows first, so that
# the project's override them as they are read).
_LIMITS = sa.union_all(
    sa.select(sa.literal(0).label('rank'), _C.resource, _C.hard_limit).where(
        _C.class_name == sa.bindparam('class_name')),
    sa.select(sa.literal(1).label('rank'), _Q.resource, _Q.hard_limit).where(
        _Q.project_id == sa.bindparam('project_id')))


@records.reader_connection
def get_limits(ctxt, project_id, class_name):
    """(class limits, project limits), each resource -> hard limit: the
    rows of quota class ``class_name`` and those of ``project_id``.
    """
    found = ({}, {})
    for row in ctxt.connection.execute(_LIMITS, {
            'class_name': class_name, 'project_id': project_id}):
        found[row.rank][row.resource] = row.hard_limit
    return found


@records.writer
def set_class_limits(ctxt, class_name, limits):
    """Create or replace quota class ``class_name``'s limits."""
    _set_limits(ctxt.session, t.quota_classes, 'class_name', class_name,
                limits)
