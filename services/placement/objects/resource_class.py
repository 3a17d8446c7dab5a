# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Resource classes: listing, and the lifecycle of custom classes.

Standard classes (os-resource-classes) are loaded at sync time with fixed
ids and cannot be changed. Custom classes (``CUSTOM_*``) get ids from
:data:`catalog.CUSTOM_RC_MIN_ID` upwards, assigned here rather than by the
database so that the two ranges never mix. A class is a dict with the keys
``id``, ``name``, ``created_at`` and ``updated_at``.
"""

import logging

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api as common_db
from services.placement.db.api import placement_db
from services.placement.db import tables
from services.placement import errors
from services.placement.objects import catalog

LOG = logging.getLogger(__name__)

_RC = tables.resource_classes
CUSTOM_PREFIX = 'CUSTOM_'
# NOTE: two writers on MariaDB/PostgreSQL may pick the same next id; the
# loser's insert fails on the primary key and simply tries again.
_CREATE_ATTEMPTS = 10


class ResourceClassNotFound(errors.NotFound):
    """No class with that name."""

    def __init__(self, name):
        super().__init__('No such resource class %s.' % name)


class ResourceClassExists(errors.Conflict):
    """Creating a class whose name is taken."""

    def __init__(self, name):
        super().__init__(
            'Conflicting resource class already exists: %s' % name,
            code=errors.DUPLICATE_NAME)


class ResourceClassInUse(errors.Conflict):
    """Deleting a class that inventories (or allocations) still refer to."""

    def __init__(self, name):
        super().__init__(
            'Error in delete resource class: Cannot delete resource class '
            '%s. Class is in use in inventory.' % name)


def is_standard(name):
    """True for a class from os-resource-classes (not ``CUSTOM_*``)."""
    return not name.startswith(CUSTOM_PREFIX)


def _columns():
    return sa.select(_RC.c.id, _RC.c.name, _RC.c.created_at, _RC.c.updated_at)


def _find(ctx, name):
    rows = ctx.session.execute(
        _columns().where(_RC.c.name == name)).mappings().all()
    # NOTE: MySQL compares strings case-insensitively; names are not.
    for row in rows:
        if row['name'] == name:
            return dict(row)
    return None


@placement_db.reader
def get_by_name(ctx, name):
    """The class named ``name`` as a dict, or None."""
    return _find(ctx, name)


def get_or_404(ctx, name):
    """The class named ``name``; :class:`ResourceClassNotFound` otherwise."""
    found = get_by_name(ctx, name)
    if found is None:
        raise ResourceClassNotFound(name)
    return found


@placement_db.reader
def get_all(ctx):
    """Every class, standard ones first (ordered by id)."""
    return [dict(row) for row in ctx.session.execute(
        _columns().order_by(_RC.c.id)).mappings()]


@placement_db.writer
def _create(ctx, name):
    if _find(ctx, name) is not None:
        raise ResourceClassExists(name)
    highest = ctx.session.execute(
        sa.select(sa.func.max(_RC.c.id))
        .where(_RC.c.id >= catalog.CUSTOM_RC_MIN_ID)).scalar()
    new_id = max(highest or 0, catalog.CUSTOM_RC_MIN_ID - 1) + 1
    now = timeutils.utcnow()
    ctx.session.execute(_RC.insert().values(
        id=new_id, name=name, created_at=now))
    return {'id': new_id, 'name': name, 'created_at': now,
            'updated_at': None}


def create(ctx, name):
    """Create the custom class ``name`` with the next free custom id.

    Runs its own writer transaction (retried when another writer took the
    same id), so do not call it inside one.

    :raises ResourceClassExists: the name is taken.
    :returns: the new class.
    """
    for attempt in range(_CREATE_ATTEMPTS):
        try:
            created = _create(ctx, name)
        except Exception as exc:
            if not common_db.is_unique_violation(exc):
                raise
            # Either somebody created the same name, or took our id.
            if get_by_name(ctx, name) is not None:
                raise ResourceClassExists(name)
            LOG.debug('Resource class id race creating %s (attempt %d)',
                      name, attempt + 1)
            continue
        catalog.RESOURCE_CLASSES.clear()
        return created
    raise errors.Conflict(
        'Could not allocate an id for resource class %s; please retry.'
        % name, code=errors.CONCURRENT_UPDATE)


@placement_db.writer
def _rename(ctx, name, new_name):
    current = _find(ctx, name)
    if current is None:
        raise ResourceClassNotFound(name)
    if is_standard(name):
        raise errors.BadRequest(
            'Cannot update standard resource class %s' % name)
    if new_name == name:
        return current
    if _find(ctx, new_name) is not None:
        raise errors.Conflict('Resource class already exists: %s' % new_name)
    now = timeutils.utcnow()
    ctx.session.execute(_RC.update().where(_RC.c.id == current['id'])
                        .values(name=new_name, updated_at=now))
    current.update(name=new_name, updated_at=now)
    return current


def rename(ctx, name, new_name):
    """Rename a custom class (PUT at microversions 1.2 - 1.6).

    The id stays, so inventories and allocations follow the new name.

    :raises ResourceClassNotFound: no class ``name``.
    :raises errors.BadRequest: ``name`` is a standard class.
    :raises errors.Conflict: ``new_name`` is taken.
    """
    try:
        renamed = _rename(ctx, name, new_name)
    except Exception as exc:
        if not common_db.is_unique_violation(exc):
            raise
        raise errors.Conflict('Resource class already exists: %s' % new_name)
    catalog.RESOURCE_CLASSES.clear()
    return renamed


@placement_db.writer
def _destroy(ctx, name):
    current = _find(ctx, name)
    if current is None:
        raise ResourceClassNotFound(name)
    if is_standard(name):
        raise errors.BadRequest(
            'Error in delete resource class: Cannot delete standard resource '
            'class %s.' % name)
    rc_id = current['id']
    # NOTE: allocations need inventory, but both are checked so that a
    # class never vanishes under any row that names it.
    for table in (tables.inventories, tables.allocations):
        used = ctx.session.execute(
            sa.select(table.c.id).where(table.c.resource_class_id == rc_id)
            .limit(1)).first()
        if used is not None:
            raise ResourceClassInUse(name)
    ctx.session.execute(_RC.delete().where(_RC.c.id == rc_id))


def destroy(ctx, name):
    """Delete the custom class ``name``.

    :raises ResourceClassNotFound: no such class.
    :raises errors.BadRequest: a standard class.
    :raises ResourceClassInUse: inventories or allocations use it.
    """
    _destroy(ctx, name)
    catalog.RESOURCE_CLASSES.clear()
