# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Inventories: what a provider offers, and the one capacity formula.

An inventory record is a dict of :data:`FIELDS`. How much of it can be
consumed is ``(total - reserved) * allocation_ratio``; :func:`capacity`
says so in Python and :func:`capacity_sql` in SQL, and every part of
placement (inventory checks, allocations, provider and candidate queries)
uses these two so that they can never disagree. :func:`fits` and
:func:`fits_sql` add the per-request unit rules (min_unit, max_unit,
step_size).

Every write bumps the provider's generation exactly once, inside the same
transaction, and fails with a 409 if the caller's generation is stale.
"""

import logging

from oslo_utils import timeutils
import sqlalchemy as sa

from services.placement.db.api import placement_db
from services.placement.db import tables
from services.placement import errors
from services.placement.objects import catalog
from services.placement.objects import resource_provider as rp_obj

LOG = logging.getLogger(__name__)

_INV = tables.inventories
_ALLOC = tables.allocations

MAX_INT = 2147483647
FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
          'allocation_ratio')
DEFAULTS = {'reserved': 0, 'min_unit': 1, 'max_unit': MAX_INT,
            'step_size': 1, 'allocation_ratio': 1.0}


def capacity(total, reserved, allocation_ratio):
    """The amount of a resource that may be allocated in all.

    Fractions are dropped: allocations are whole units.
    """
    return int((total - reserved) * allocation_ratio)


def capacity_sql(inv=_INV):
    """The SQL expression of :func:`capacity` over an inventories table.

    :param inv: the inventories table or an alias of it.
    """
    # NOTE: left as a float on purpose; comparing an integer amount with it
    # is the same as comparing with its floor, as capacity() does.
    return (inv.c.total - inv.c.reserved) * inv.c.allocation_ratio


def fits(record, used, amount):
    """True when ``amount`` more can be allocated from ``record``.

    :param record: an inventory dict (with every field of :data:`FIELDS`).
    :param used: what is allocated from it already.
    :param amount: the requested amount.
    """
    return (record['min_unit'] <= amount <= record['max_unit'] and
            amount % record['step_size'] == 0 and
            used + amount <= capacity(record['total'], record['reserved'],
                                      record['allocation_ratio']))


def fits_sql(amount, used, inv=_INV):
    """The SQL condition of :func:`fits`.

    :param amount: the requested amount (a Python int).
    :param used: an SQL expression of the amount already used (NULL-safe
        callers pass ``sa.func.coalesce(x, 0)``).
    :param inv: the inventories table or an alias of it.
    """
    return sa.and_(inv.c.min_unit <= amount,
                   inv.c.max_unit >= amount,
                   sa.literal(amount) % inv.c.step_size == 0,
                   used + amount <= capacity_sql(inv))


def with_defaults(record):
    """A full inventory dict from a request body's record."""
    full = dict(DEFAULTS)
    full.update((k, v) for k, v in record.items() if k in FIELDS)
    full['allocation_ratio'] = float(full['allocation_ratio'])
    return full


def capacity_problem(record, reserved_may_equal_total):
    """Why ``record``'s reserved amount is impossible, or None.

    :param reserved_may_equal_total: True from microversion 1.26, where a
        fully reserved inventory (e.g. a disabled device) is allowed.
    """
    if reserved_may_equal_total:
        if record['reserved'] > record['total']:
            return 'The reserved value is greater than total.'
    elif record['reserved'] >= record['total']:
        return 'The reserved value is greater than or equal to total.'
    return None


def _row_to_record(row):
    return {name: row[name] for name in FIELDS}


@placement_db.reader
def get_all(ctx, provider_id):
    """Every inventory of a provider.

    :returns: ({resource class name: record}, newest timestamp or None)
    """
    rows = ctx.session.execute(
        sa.select(_INV).where(_INV.c.resource_provider_id == provider_id)
    ).mappings().all()
    records, newest = {}, None
    for row in rows:
        name = catalog.RESOURCE_CLASSES.name_for(ctx, row['resource_class_id'])
        records[name] = _row_to_record(row)
        stamp = row['updated_at'] or row['created_at']
        if stamp is not None and (newest is None or stamp > newest):
            newest = stamp
    return records, newest


@placement_db.reader
def get_one(ctx, provider_id, rc_id):
    """One inventory record and its timestamp, or (None, None)."""
    row = ctx.session.execute(
        sa.select(_INV).where(_INV.c.resource_provider_id == provider_id)
        .where(_INV.c.resource_class_id == rc_id)).mappings().first()
    if row is None:
        return None, None
    return _row_to_record(row), row['updated_at'] or row['created_at']


def _classes_in_use(ctx, provider_id, rc_ids):
    """The subset of ``rc_ids`` that the provider has allocations of."""
    if not rc_ids:
        return set()
    return set(ctx.session.execute(
        sa.select(_ALLOC.c.resource_class_id).distinct()
        .where(_ALLOC.c.resource_provider_id == provider_id)
        .where(_ALLOC.c.resource_class_id.in_(list(rc_ids)))).scalars())


def _in_use_error(ctx, provider, rc_ids, prefix):
    # NOTE: the classes are named in resource class id order: the standard
    # classes in os-resource-classes order (VCPU, MEMORY_MB, DISK_GB, ...),
    # then custom classes in creation order. That is the order upstream's
    # message has on its reference databases (it groups by class id) and
    # the order provider_summaries lists resources in; sorting explicitly
    # makes it the same on every backend.
    names = [catalog.RESOURCE_CLASSES.name_for(ctx, i) for i in sorted(rc_ids)]
    return errors.Conflict(
        "%s: Inventory for '%s' on resource provider '%s' in use."
        % (prefix, ', '.join(names), provider['uuid']),
        code=errors.INVENTORY_INUSE)


def _warn_if_overcommitted(ctx, provider, records_by_id):
    # NOTE: shrinking an inventory below what is already allocated is
    # allowed (the operator knows best, e.g. a failed disk), but it is
    # worth a line in the log.
    if not records_by_id:
        return
    rows = ctx.session.execute(
        sa.select(_ALLOC.c.resource_class_id, sa.func.sum(_ALLOC.c.used))
        .where(_ALLOC.c.resource_provider_id == provider['id'])
        .where(_ALLOC.c.resource_class_id.in_(list(records_by_id)))
        .group_by(_ALLOC.c.resource_class_id))
    for rc_id, used in rows:
        rec = records_by_id[rc_id]
        cap = capacity(rec['total'], rec['reserved'], rec['allocation_ratio'])
        if used > cap:
            LOG.warning('Resource provider %s now has %d of class %s '
                        'allocated, more than its capacity of %d.',
                        provider['uuid'], used,
                        catalog.RESOURCE_CLASSES.name_for(ctx, rc_id), cap)


def _insert(ctx, provider_id, rc_id, record, now):
    values = dict(record, resource_provider_id=provider_id,
                  resource_class_id=rc_id, created_at=now)
    ctx.session.execute(_INV.insert().values(**values))


def _update(ctx, provider_id, rc_id, record, now):
    ctx.session.execute(
        _INV.update().where(_INV.c.resource_provider_id == provider_id)
        .where(_INV.c.resource_class_id == rc_id)
        .values(updated_at=now, **record))


def _existing_ids(ctx, provider_id):
    return set(ctx.session.execute(
        sa.select(_INV.c.resource_class_id)
        .where(_INV.c.resource_provider_id == provider_id)).scalars())


@placement_db.writer
def add(ctx, provider, rc_id, record):
    """Create one inventory record (POST).

    :param provider: the provider dict; its generation is bumped.
    :param rc_id: the resource class id.
    :param record: a full record (see :func:`with_defaults`).
    :raises errors.Conflict: the provider already has that class.
    """
    if rc_id in _existing_ids(ctx, provider['id']):
        raise errors.Conflict(
            'Update conflict: inventory of class %s already exists for '
            'resource provider %s.'
            % (catalog.RESOURCE_CLASSES.name_for(ctx, rc_id),
               provider['uuid']))
    rp_obj.increment_generation(ctx, provider)
    _insert(ctx, provider['id'], rc_id, record, timeutils.utcnow())


@placement_db.writer
def update_one(ctx, provider, generation, rc_id, record):
    """Replace one inventory record (PUT .../inventories/{rc}).

    :param generation: the provider generation the caller saw.
    :raises rp_obj.ConcurrentUpdate: ``generation`` is stale.
    :raises errors.BadRequest: the provider has no inventory of the class.
    """
    rp_obj.increment_generation(ctx, provider, expected=generation)
    if rc_id not in _existing_ids(ctx, provider['id']):
        name = catalog.RESOURCE_CLASSES.name_for(ctx, rc_id)
        raise errors.BadRequest(
            'No inventory record with resource class for resource provider '
            '%s: No inventory of class %s found.' % (provider['uuid'], name))
    _update(ctx, provider['id'], rc_id, record, timeutils.utcnow())
    _warn_if_overcommitted(ctx, provider, {rc_id: record})


@placement_db.writer
def replace_all(ctx, provider, generation, records_by_id):
    """Make the provider's inventory exactly ``records_by_id`` (PUT).

    :param records_by_id: {resource class id: full record}.
    :raises rp_obj.ConcurrentUpdate: ``generation`` is stale.
    :raises errors.Conflict: a class to be removed has allocations.
    """
    rp_obj.increment_generation(ctx, provider, expected=generation)
    existing = _existing_ids(ctx, provider['id'])
    removed = existing - set(records_by_id)
    in_use = _classes_in_use(ctx, provider['id'], removed)
    if in_use:
        raise _in_use_error(ctx, provider, in_use, 'update conflict')
    now = timeutils.utcnow()
    if removed:
        ctx.session.execute(
            _INV.delete().where(_INV.c.resource_provider_id == provider['id'])
            .where(_INV.c.resource_class_id.in_(list(removed))))
    for rc_id, record in records_by_id.items():
        if rc_id in existing:
            _update(ctx, provider['id'], rc_id, record, now)
        else:
            _insert(ctx, provider['id'], rc_id, record, now)
    _warn_if_overcommitted(ctx, provider, records_by_id)


@placement_db.writer
def delete_one(ctx, provider, rc_id):
    """Delete one inventory record.

    :raises errors.NotFound: the provider has no inventory of the class.
    :raises errors.Conflict: it has allocations.
    """
    name = catalog.RESOURCE_CLASSES.name_for(ctx, rc_id)
    if rc_id not in _existing_ids(ctx, provider['id']):
        raise errors.NotFound(
            'No inventory of class %s found for delete' % name)
    if _classes_in_use(ctx, provider['id'], {rc_id}):
        raise _in_use_error(ctx, provider, {rc_id},
                            'Unable to delete inventory of class %s' % name)
    rp_obj.increment_generation(ctx, provider)
    ctx.session.execute(
        _INV.delete().where(_INV.c.resource_provider_id == provider['id'])
        .where(_INV.c.resource_class_id == rc_id))


@placement_db.writer
def delete_all(ctx, provider):
    """Delete every inventory record of a provider (DELETE, 1.5).

    The generation is bumped even when there was nothing to delete, as
    upstream: the request is a write.

    :raises errors.Conflict: some class has allocations.
    """
    in_use = _classes_in_use(ctx, provider['id'],
                             _existing_ids(ctx, provider['id']))
    if in_use:
        raise _in_use_error(
            ctx, provider, in_use,
            'Unable to delete inventory for resource provider %s'
            % provider['uuid'])
    rp_obj.increment_generation(ctx, provider)
    ctx.session.execute(
        _INV.delete().where(_INV.c.resource_provider_id == provider['id']))
