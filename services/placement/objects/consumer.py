# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Consumers and the projects, users and consumer types they refer to.

A consumer is whatever holds allocations (an instance, a migration). It has
a generation, bumped on every change to its allocations, which clients send
back (1.28+) to prove they saw the latest state. Consumers exist exactly as
long as they hold allocations: the first allocation creates the row, losing
the last one deletes it. Projects, users and consumer types are created on
first mention and never removed.

A consumer travels as a dict: ``id``, ``uuid``, ``generation``,
``project_id`` and ``user_id`` (external ids), ``consumer_type`` (a name or
None), plus the internal ``project_pk``, ``user_pk`` and ``type_pk``.
"""

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from services.placement.db.api import placement_db
from services.placement.db import tables
from services.placement import errors

_C = tables.consumers
_P = tables.projects
_U = tables.users
_T = tables.consumer_types

# What GET reports for a consumer written before consumer types existed.
UNKNOWN_TYPE = 'unknown'


class ConsumerGenerationConflict(errors.Conflict):
    """The consumer is not at the generation the client said it saw."""

    def __init__(self, expected, got):
        """
        :param expected: the generation the server has (None: no consumer).
        :param got: the generation the client sent.
        """
        super().__init__(
            'consumer generation conflict - expected %s but got %s'
            % (_show(expected), _show(got)), code=errors.CONCURRENT_UPDATE)


def _show(generation):
    return 'null' if generation is None else generation


def check_generation(consumer, given):
    """Raise 409 unless ``given`` is the consumer's current generation.

    :param consumer: the consumer dict, or None when it does not exist
        (then only a null generation is right).
    :param given: the ``consumer_generation`` of the request.
    :raises ConsumerGenerationConflict: on any mismatch.
    """
    actual = consumer['generation'] if consumer is not None else None
    if actual != given:
        raise ConsumerGenerationConflict(actual, given)


def _select():
    return (sa.select(_C.c.id, _C.c.uuid, _C.c.generation,
                      _C.c.project_id.label('project_pk'),
                      _C.c.user_id.label('user_pk'),
                      _C.c.consumer_type_id.label('type_pk'),
                      _C.c.created_at, _C.c.updated_at,
                      _P.c.external_id.label('project_id'),
                      _U.c.external_id.label('user_id'),
                      _T.c.name.label('consumer_type'))
            .select_from(_C.outerjoin(_P, _C.c.project_id == _P.c.id)
                         .outerjoin(_U, _C.c.user_id == _U.c.id)
                         .outerjoin(_T, _C.c.consumer_type_id == _T.c.id)))


# NOTE: statements on the claim path are built once; composing them costs
# more Python time than SQLite needs to run them.
_BY_UUIDS = _select().where(
    _C.c.uuid.in_(sa.bindparam('uuids', expanding=True)))


@placement_db.reader
def get_by_uuids(ctx, uuids):
    """The existing consumers among ``uuids``, as {uuid: consumer dict}."""
    if not uuids:
        return {}
    rows = ctx.session.connection().execute(
        _BY_UUIDS, {'uuids': sorted(set(uuids))}).mappings()
    return {row['uuid']: dict(row) for row in rows}


def get_by_uuid(ctx, uuid):
    """The consumer with ``uuid`` as a dict, or None."""
    return get_by_uuids(ctx, [uuid]).get(uuid)


_OWNER_TABLES = (('project', _P, _P.c.external_id),
                 ('user', _U, _U.c.external_id),
                 ('consumer_type', _T, _T.c.name))


_OWNERS_QUERY = sa.union_all(*[
    sa.select(sa.literal(kind).label('kind'), table.c.id,
              column.label('name'))
    .where(column.in_(sa.bindparam(kind, expanding=True)))
    for kind, table, column in _OWNER_TABLES])


@placement_db.writer
def ensure_owners(ctx, projects=(), users=(), consumer_types=()):
    """Internal ids of projects, users and consumer types, by name.

    Looks all of them up in one query and inserts the missing ones.

    :raises oslo_db.exception.DBDuplicateEntry: another request inserted
        the same name meanwhile; rerun the transaction.

    :returns: {'project': {external id: id}, 'user': {...},
        'consumer_type': {name: id}}.
    """
    wanted = {'project': sorted(set(projects)), 'user': sorted(set(users)),
              'consumer_type': sorted(set(consumer_types))}
    found = {kind: {} for kind in wanted}
    if not any(wanted.values()):
        return found
    for kind, id_, name in ctx.session.connection().execute(
            _OWNERS_QUERY, wanted):
        found[kind][name] = id_
    for kind, table, column in _OWNER_TABLES:
        for name in wanted[kind]:
            if name not in found[kind]:
                found[kind][name] = _insert_name(ctx, table, column, name)
    return found


def _insert_name(ctx, table, column, name):
    # NOTE: no savepoint and no second look on a duplicate: on MariaDB the
    # row committed by the racing request is not visible in this
    # transaction's snapshot anyway. The DBDuplicateEntry ends the
    # transaction and the caller reruns it (see objects.allocation).
    result = ctx.session.connection().execute(
        table.insert(), {column.name: name, 'created_at': timeutils.utcnow()})
    return result.inserted_primary_key[0]


@placement_db.writer
def create(ctx, uuid, project_pk, user_pk, type_pk=None):
    """Insert a consumer and return its dict.

    The row starts at generation 1: it is created by the write of its
    first allocations, which counts as its first change.

    :raises errors.Conflict: another request created it meanwhile.
    """
    now = timeutils.utcnow()
    try:
        result = ctx.session.connection().execute(_C.insert(), dict(
            uuid=uuid, project_id=project_pk, user_id=user_pk,
            consumer_type_id=type_pk, generation=1, created_at=now))
    except db_exc.DBDuplicateEntry:
        # NOTE: two first claims for one consumer raced; the loser must
        # re-read, exactly as after a generation mismatch. No savepoint:
        # the whole transaction is abandoned anyway.
        raise ConsumerGenerationConflict(1, None)
    return {'id': result.inserted_primary_key[0], 'uuid': uuid,
            'generation': 1, 'project_pk': project_pk, 'user_pk': user_pk,
            'type_pk': type_pk, 'created_at': now, 'updated_at': None}


@placement_db.writer
def increment_generation(ctx, consumer, **changes):
    """Bump the consumer's generation, applying ``changes`` to its row.

    The update only happens if the row is still at the generation in
    ``consumer``, so that two writers who read the same state cannot both
    succeed.

    :param changes: column values to set as well (project_id, user_id,
        consumer_type_id; internal ids).
    :raises errors.Conflict: the consumer changed meanwhile (409).
    """
    expected = consumer['generation']
    values = dict(changes, generation=expected + 1,
                  updated_at=timeutils.utcnow())
    result = ctx.session.connection().execute(
        _C.update().where(_C.c.id == consumer['id'])
        .where(_C.c.generation == expected).values(**values))
    if result.rowcount != 1:
        raise errors.Conflict(
            'Another thread concurrently updated the data. Please retry '
            'your update', code=errors.CONCURRENT_UPDATE)
    consumer['generation'] = expected + 1
    return expected + 1


@placement_db.writer
def delete_if_unused(ctx, consumer_uuids):
    """Delete those of ``consumer_uuids`` that hold no allocations."""
    if not consumer_uuids:
        return
    alloc = tables.allocations
    ctx.session.connection().execute(
        _C.delete().where(_C.c.uuid.in_(sorted(set(consumer_uuids))))
        .where(~sa.exists().where(alloc.c.consumer_id == _C.c.uuid)))
