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

import contextlib

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


class ConsumerExists(ConsumerGenerationConflict):
    """A consumer written as new is there already (its INSERT failed).

    Left alone it answers as a lost first-claim race does; a caller that
    can read the consumer again outside the failed transaction names its
    real generation instead (see objects.allocation).
    """

    def __init__(self, uuid):
        """
        :param uuid: the consumer that exists.
        """
        super().__init__(1, None)
        self.uuid = uuid


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
# NOTE: and one for a single consumer, which spares SQLAlchemy the
# expansion of the IN list at every execution.
_BY_UUID = _select().where(_C.c.uuid == sa.bindparam('uuid'))


@placement_db.reader
def get_by_uuids(ctx, uuids):
    """The existing consumers among ``uuids``, as {uuid: consumer dict}."""
    return fetch(ctx.session.connection(), uuids)


def fetch(conn, uuids):
    """:func:`get_by_uuids` on the connection of an open transaction.

    The claim path calls this and the other ``conn`` functions below from
    inside its one writer transaction: a nested enginefacade scope per
    step cost more than the statements themselves.
    """
    uuids = set(uuids)
    if not uuids:
        return {}
    if len(uuids) == 1:
        rows = conn.execute(_BY_UUID, {'uuid': uuids.pop()}).mappings()
    else:
        rows = conn.execute(_BY_UUIDS, {'uuids': sorted(uuids)}).mappings()
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
    return owner_ids(ctx.session.connection(), projects, users,
                     consumer_types)


def owner_ids(conn, projects=(), users=(), consumer_types=()):
    """:func:`ensure_owners` on the connection of an open transaction."""
    wanted = {'project': sorted(set(projects)), 'user': sorted(set(users)),
              'consumer_type': sorted(set(consumer_types))}
    found = {kind: {} for kind in wanted}
    if not any(wanted.values()):
        return found
    for kind, id_, name in conn.execute(_OWNERS_QUERY, wanted):
        found[kind][name] = id_
    for kind, table, column in _OWNER_TABLES:
        for name in wanted[kind]:
            if name not in found[kind]:
                found[kind][name] = _insert_name(conn, table, column, name)
    return found


def _insert_name(conn, table, column, name):
    # NOTE: no savepoint and no second look on a duplicate: on MariaDB the
    # row committed by the racing request is not visible in this
    # transaction's snapshot anyway. The DBDuplicateEntry ends the
    # transaction and the caller reruns it (see objects.allocation).
    result = conn.execute(
        table.insert(), {column.name: name, 'created_at': timeutils.utcnow()})
    return result.inserted_primary_key[0]


_INSERT = _C.insert()


def create(conn, uuid, project_pk, user_pk, type_pk=None):
    """Insert a consumer and return its dict (in an open transaction).

    The row starts at generation 1: it is created by the write of its
    first allocations, which counts as its first change.

    :raises ConsumerExists: the consumer exists (another request created
        it meanwhile, or the caller did not look).
    """
    now = timeutils.utcnow()
    with _first_claim_race(uuid):
        result = conn.execute(_INSERT, dict(
            uuid=uuid, project_id=project_pk, user_id=user_pk,
            consumer_type_id=type_pk, generation=1, created_at=now))
    return {'id': result.inserted_primary_key[0], 'uuid': uuid,
            'generation': 1, 'project_pk': project_pk, 'user_pk': user_pk,
            'type_pk': type_pk, 'created_at': now, 'updated_at': None}


@contextlib.contextmanager
def _first_claim_race(uuid):
    try:
        yield
    except db_exc.DBDuplicateEntry:
        # NOTE: two first claims for one consumer raced; the loser must
        # re-read, exactly as after a generation mismatch. No savepoint:
        # the whole transaction is abandoned anyway.
        raise ConsumerExists(uuid)


def _create_by_names(with_type):
    """INSERT INTO consumers ... SELECT the owners' ids by their names.

    Inserts nothing when the project, the user or the type is missing.
    """
    columns = [sa.bindparam('c_uuid', type_=_C.c.uuid.type),
               _P.c.id, _U.c.id,
               _T.c.id if with_type else sa.null(),
               sa.bindparam('c_generation', type_=sa.Integer),
               sa.bindparam('c_now', type_=sa.DateTime)]
    # NOTE: a cross join of at most one row of each table, spelled as
    # joins ON true so that SQLAlchemy does not warn of a cartesian product.
    owners = _P.join(_U, sa.true())
    if with_type:
        owners = owners.join(_T, sa.true())
    select = (sa.select(*columns).select_from(owners)
              .where(_P.c.external_id == sa.bindparam('c_project'))
              .where(_U.c.external_id == sa.bindparam('c_user')))
    if with_type:
        select = select.where(_T.c.name == sa.bindparam('c_type'))
    return _C.insert().from_select(
        ['uuid', 'project_id', 'user_id', 'consumer_type_id', 'generation',
         'created_at'], select)


_CREATE_BY_NAMES = {True: _create_by_names(True),
                    False: _create_by_names(False)}


def create_by_names(conn, uuid, project, user, consumer_type=None):
    """Insert a consumer whose owners are named by their external ids.

    The common first claim: its project, user and type exist already, and
    one statement both finds their ids and writes the consumer.

    :param consumer_type: a type name, or None for no type.
    :returns: True when the consumer was inserted; False when one of the
        owners does not exist yet (nothing was written: look them up or
        create them with :func:`owner_ids`, then :func:`create`).
    :raises ConsumerExists: the consumer exists already.
    """
    params = {'c_uuid': uuid, 'c_project': project, 'c_user': user,
              'c_generation': 1, 'c_now': timeutils.utcnow()}
    if consumer_type is not None:
        params['c_type'] = consumer_type
    with _first_claim_race(uuid):
        result = conn.execute(
            _CREATE_BY_NAMES[consumer_type is not None], params)
    return result.rowcount == 1


# NOTE: one UPDATE per set of changed columns, built on first use (two
# threads may both build one; either will do): a re-claim runs one, and
# composing it cost more than running it.
_INCREMENTS = {}


def _increment_statement(columns):
    statement = _INCREMENTS.get(columns)
    if statement is None:
        values = {column: sa.bindparam('c_' + column) for column in columns}
        statement = (_C.update()
                     .where(_C.c.id == sa.bindparam('c_id'))
                     .where(_C.c.generation == sa.bindparam('c_expected'))
                     .values(generation=sa.bindparam('c_generation'),
                             updated_at=sa.bindparam('c_now'), **values))
        _INCREMENTS[columns] = statement
    return statement


def increment_generation(conn, consumer, **changes):
    """Bump the consumer's generation, applying ``changes`` to its row.

    Runs on the connection of the caller's open write transaction.

    The update only happens if the row is still at the generation in
    ``consumer``, so that two writers who read the same state cannot both
    succeed.

    :param changes: column values to set as well (project_id, user_id,
        consumer_type_id; internal ids).
    :raises errors.Conflict: the consumer changed meanwhile (409).
    """
    expected = consumer['generation']
    params = {'c_' + column: value for column, value in changes.items()}
    params.update(c_id=consumer['id'], c_expected=expected,
                  c_generation=expected + 1, c_now=timeutils.utcnow())
    result = conn.execute(
        _increment_statement(frozenset(changes)), params)
    if result.rowcount != 1:
        raise errors.Conflict(
            'Another thread concurrently updated the data. Please retry '
            'your update', code=errors.CONCURRENT_UPDATE)
    consumer['generation'] = expected + 1
    return expected + 1


def _delete_unused(single):
    if single:
        named = _C.c.uuid == sa.bindparam('uuid')
    else:
        named = _C.c.uuid.in_(sa.bindparam('uuids', expanding=True))
    return _C.delete().where(named).where(~sa.exists().where(
        tables.allocations.c.consumer_id == _C.c.uuid))


# NOTE: built once, and a variant for the single consumer of a DELETE
# /allocations, which spares SQLAlchemy the expansion of an IN list.
_DELETE_UNUSED = {True: _delete_unused(True), False: _delete_unused(False)}


def delete_if_unused(conn, consumer_uuids):
    """Delete those of ``consumer_uuids`` that hold no allocations.

    Runs on the connection of the caller's open write transaction.
    """
    uuids = sorted(set(consumer_uuids))
    if len(uuids) == 1:
        conn.execute(_DELETE_UNUSED[True], {'uuid': uuids[0]})
    elif uuids:
        conn.execute(_DELETE_UNUSED[False], {'uuids': uuids})
