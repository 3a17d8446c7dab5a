# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Allocations: reading them and replacing a set of consumers' at once.

A claim is the hot path of a scheduler, so :func:`replace_all` keeps it to
one transaction and a fixed handful of statements whatever the number of
providers: one read of the consumers, one of the providers joined with
their inventories and current usage, one insert of a new consumer (which
also looks up its known project, user and type), one bulk insert of the
allocations, and one conditional generation bump per provider. A
scheduler's first claim, which says its consumer is new (a null consumer
generation), skips the read of the consumers: the consumer's insert fails
if it exists after all.
Correctness under concurrency comes from those bumps: two writers who read
the same usage of a provider cannot both move its generation on, so the
loser answers 409 and the client retries.
"""

import collections
import logging

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from common.conf import CONF
from services.placement.db.api import placement_db
from services.placement.db import tables
from services.placement import errors
from services.placement.objects import catalog
from services.placement.objects import consumer as consumer_obj
from services.placement.objects import inventory as inventory_obj
from services.placement.objects import provider_locks
from services.placement.objects import resource_provider as rp_obj

LOG = logging.getLogger(__name__)

_A = tables.allocations
_RP = tables.resource_providers
_INV = tables.inventories

# A consumer request whose generation is not checked (microversion < 1.28).
UNCHECKED = object()


class ConsumerRequest(object):
    """What one consumer's allocations should become.

    :param uuid: the consumer uuid (canonical form).
    :param allocations: {provider uuid: {resource class name: amount}}; an
        empty dict removes every allocation of the consumer.
    :param project_id: external project id; None keeps the consumer's
        (or, for a new one, uses the "incomplete consumer" project).
    :param user_id: the same for the user.
    :param generation: the generation the client saw, or UNCHECKED.
    :param consumer_type: a type name, or None to leave it as it is.
    """

    def __init__(self, uuid, allocations, project_id=None, user_id=None,
                 generation=UNCHECKED, consumer_type=None):
        self.uuid = uuid
        self.allocations = allocations
        self.project_id = project_id
        self.user_id = user_id
        self.generation = generation
        self.consumer_type = consumer_type


def _rc_name(ctx, rc_id):
    return catalog.RESOURCE_CLASSES.name_for(ctx, rc_id)


@placement_db.reader
def get_for_consumer(ctx, consumer_uuid):
    """A consumer's allocations and the consumer itself.

    :returns: (consumer dict or None, list of dicts with resource_provider
        (uuid), generation (the provider's), resource_class, used,
        created_at, updated_at).
    """
    rows = ctx.session.execute(
        sa.select(_RP.c.uuid, _RP.c.generation, _A.c.resource_class_id,
                  _A.c.used, _A.c.created_at, _A.c.updated_at)
        .select_from(_A.join(_RP, _A.c.resource_provider_id == _RP.c.id))
        .where(_A.c.consumer_id == consumer_uuid)).all()
    consumer = consumer_obj.get_by_uuid(ctx, consumer_uuid) if rows else None
    return consumer, [
        {'resource_provider': row.uuid, 'generation': row.generation,
         'resource_class': _rc_name(ctx, row.resource_class_id),
         'used': row.used, 'created_at': row.created_at,
         'updated_at': row.updated_at}
        for row in rows]


@placement_db.reader
def get_for_provider(ctx, provider_id):
    """Every allocation against a provider.

    :returns: dicts with consumer_id, resource_class, used, created_at and
        updated_at.
    """
    rows = ctx.session.execute(
        sa.select(_A.c.consumer_id, _A.c.resource_class_id, _A.c.used,
                  _A.c.created_at, _A.c.updated_at)
        .where(_A.c.resource_provider_id == provider_id)
        .order_by(_A.c.id)).all()
    return [{'consumer_id': row.consumer_id,
             'resource_class': _rc_name(ctx, row.resource_class_id),
             'used': row.used, 'created_at': row.created_at,
             'updated_at': row.updated_at} for row in rows]


def resolve_classes(ctx, requests):
    """{class name: id} for every class named in ``requests``.

    Done before the write transaction opens: the catalogue cache rarely
    needs the database.

    :raises errors.BadRequest: a class does not exist.
    """
    ids = {}
    for req in requests:
        for resources in req.allocations.values():
            for name in resources:
                if name in ids:
                    continue
                ids[name] = catalog.RESOURCE_CLASSES.id_for(ctx, name)
                if ids[name] is None:
                    raise errors.BadRequest(
                        'Unable to allocate inventory for consumer %s: No '
                        'such resource class %s.' % (req.uuid, name))
    return ids


def _providers_query(single, replacing):
    """The query of :func:`_load_providers`.

    :param single: take one provider uuid as ``uuid`` rather than the
        expanding list ``uuids``.
    :param replacing: take the expanding list ``replaced`` (consumers whose
        allocations are not to be counted).
    """
    def named(column):
        if single:
            return column == sa.bindparam('uuid')
        return column.in_(sa.bindparam('uuids', expanding=True))

    rp2 = _RP.alias('rp2')
    usage = (sa.select(_A.c.resource_provider_id, _A.c.resource_class_id,
                       sa.func.sum(_A.c.used).label('usage'))
             .select_from(_A.join(rp2, _A.c.resource_provider_id == rp2.c.id))
             .where(named(rp2.c.uuid)))
    if replacing:
        usage = usage.where(_A.c.consumer_id.not_in(
            sa.bindparam('replaced', expanding=True)))
    usage = usage.group_by(_A.c.resource_provider_id,
                           _A.c.resource_class_id).subquery()
    # NOTE: a single provider's uuid is not selected back: the caller has
    # it, and with PyMySQL every column of a result costs the parsing of
    # its description.
    columns = [_RP.c.id, _RP.c.generation] if single else [
        _RP.c.id, _RP.c.uuid, _RP.c.generation]
    return (sa.select(*columns,
                      _INV.c.resource_class_id, _INV.c.total,
                      _INV.c.reserved, _INV.c.min_unit, _INV.c.max_unit,
                      _INV.c.step_size, _INV.c.allocation_ratio,
                      sa.func.coalesce(usage.c.usage, 0).label('usage'))
            .select_from(
                _RP.outerjoin(_INV, _INV.c.resource_provider_id == _RP.c.id)
                .outerjoin(usage, sa.and_(
                    _INV.c.resource_provider_id ==
                    usage.c.resource_provider_id,
                    _INV.c.resource_class_id == usage.c.resource_class_id)))
            .where(named(_RP.c.uuid)))


# NOTE: built once: composing a statement costs more Python time than
# SQLite takes to run it, and claims are the hot path. The variants spare
# the common claim (one provider, a new consumer) the expansion of "IN"
# lists, which SQLAlchemy redoes at every execution.
_PROVIDERS_QUERIES = {(single, replacing): _providers_query(single, replacing)
                      for single in (True, False)
                      for replacing in (True, False)}


def _load_providers(conn, uuids, replaced):
    """The providers named in a claim, with inventories and usage.

    One query: the providers left-joined with their inventories and with
    the sum of their allocations per class, not counting the allocations of
    the consumers being replaced (they are about to go).

    :param uuids: the provider uuids.
    :param replaced: uuids of consumers whose allocations are replaced.
    :returns: ({uuid: provider dict (id, uuid, generation)},
        {(provider id, class id): inventory row with ``usage``}).
    :raises errors.BadRequest: a provider does not exist.
    """
    if not uuids:
        return {}, {}
    uuids = sorted(uuids)
    providers, inventory = {}, {}
    single = len(uuids) == 1
    params = {'uuid': uuids[0]} if single else {'uuids': uuids}
    if replaced:
        params['replaced'] = sorted(replaced)
    rows = conn.execute(_PROVIDERS_QUERIES[(single, bool(replaced))], params)
    for row in rows:
        uuid = uuids[0] if single else row.uuid
        providers[uuid] = {'id': row.id, 'uuid': uuid,
                           'generation': row.generation}
        if row.resource_class_id is not None:
            inventory[(row.id, row.resource_class_id)] = row
    for uuid in uuids:
        if uuid not in providers:
            raise errors.BadRequest(
                "Allocation for resource provider '%s' that does not exist."
                % uuid)
    return providers, inventory


def _unable(message):
    return errors.Conflict('Unable to allocate inventory: %s' % message)


def _check_capacity(wanted, providers, inventory, class_ids):
    """Check every new allocation against its provider's inventory.

    :param wanted: list of (provider uuid, class name, amount), one entry
        per allocation to be written.
    :raises errors.Conflict: a class is not in the inventory, an amount
        breaks min_unit/max_unit/step_size, or the total would exceed the
        capacity.
    """
    totals = collections.Counter()
    for rp_uuid, rc_name, amount in wanted:
        key = (providers[rp_uuid]['id'], class_ids[rc_name])
        inv = inventory.get(key)
        if inv is None:
            raise _unable("Inventory for '%s' on resource provider '%s' "
                          "invalid." % (rc_name, rp_uuid))
        if (amount < inv.min_unit or amount > inv.max_unit or
                amount % inv.step_size):
            raise _unable(
                "Unable to create allocation for '%s' on resource provider "
                "'%s'. The requested amount would violate inventory "
                "constraints." % (rc_name, rp_uuid))
        totals[(rp_uuid, rc_name)] += amount
    for (rp_uuid, rc_name), amount in sorted(totals.items()):
        inv = inventory[(providers[rp_uuid]['id'], class_ids[rc_name])]
        capacity = inventory_obj.capacity(inv.total, inv.reserved,
                                          inv.allocation_ratio)
        if inv.usage + amount > capacity:
            raise _unable(
                "Unable to create allocation for '%s' on resource provider "
                "'%s'. The requested amount would exceed the capacity."
                % (rc_name, rp_uuid))


def _owner(req, current):
    """(project, user) external ids to record for a consumer request.

    None where the consumer keeps what it has. Writes older than 1.8 name
    no owner: a new consumer then gets the configured "incomplete" ids.
    """
    project, user = req.project_id, req.user_id
    if current is None:
        project = project or CONF.placement.incomplete_consumer_project_id
        user = user or CONF.placement.incomplete_consumer_user_id
    else:
        if project == current['project_id']:
            project = None
        if user == current['user_id']:
            user = None
    return project, user


def _planned_write(conn, req, consumers):
    """What remains to write for one consumer request, or None.

    A new consumer whose project, user and type exist is written here by
    one statement (None is returned); otherwise the (req, current consumer
    or None, project, user, type) to write once owners are looked up, the
    last three None where nothing changes.
    """
    current = consumers.get(req.uuid)
    project, user = _owner(req, current)
    ctype = req.consumer_type
    if current is not None and ctype == current['consumer_type']:
        ctype = None
    if current is None and consumer_obj.create_by_names(
            conn, req.uuid, project, user, ctype):
        return None
    return req, current, project, user, ctype


def _owner_ids(conn, writes):
    """The owner ids of :func:`_planned_write` results, looked up at once."""
    return consumer_obj.owner_ids(
        conn, [w[2] for w in writes if w[2]], [w[3] for w in writes if w[3]],
        [w[4] for w in writes if w[4]])


def _write_consumers(conn, requests, consumers):
    """Create, or bump and update, every consumer that keeps allocations.

    A new consumer whose project, user and type exist already (the common
    first claim) is written by one statement that looks their ids up as
    well. Otherwise owners and types are looked up (or created) in one go
    first; for the common re-claim by the same owner there is nothing to
    look up.
    """
    writes = [_planned_write(conn, req, consumers)
              for req in requests if req.allocations]
    writes = [write for write in writes if write is not None]
    if not writes:
        return
    owners = _owner_ids(conn, writes)
    for req, current, project, user, ctype in writes:
        pks = (owners['project'].get(project), owners['user'].get(user),
               owners['consumer_type'].get(ctype))
        if current is None:
            consumer_obj.create(conn, req.uuid, *pks)
            continue
        # NOTE: only what changed is written; a re-claim by the same owner
        # just bumps the generation.
        changes = {column: pk for column, pk in zip(
            ('project_id', 'user_id', 'consumer_type_id'), pks)
            if pk is not None}
        consumer_obj.increment_generation(conn, current, **changes)


def _allocation_rows(requests, providers, class_ids, now):
    return [{'resource_provider_id': providers[rp_uuid]['id'],
             'consumer_id': r.uuid, 'resource_class_id': class_ids[rc_name],
             'used': amount, 'created_at': now}
            for r in requests
            for rp_uuid, resources in sorted(r.allocations.items())
            for rc_name, amount in sorted(resources.items())]


def _allocations_of(single):
    if single:
        return _A.c.consumer_id == sa.bindparam('consumer')
    return _A.c.consumer_id.in_(sa.bindparam('consumers', expanding=True))


# NOTE: statements built once, each with a variant for one consumer (a
# claim, a DELETE /allocations) that spares SQLAlchemy the expansion of
# an IN list at every execution.
_DELETE = {single: _A.delete().where(_allocations_of(single))
           for single in (True, False)}
# NOTE: where the database can say which rows a DELETE removed (MariaDB,
# PostgreSQL, SQLite), one statement both removes the allocations and
# names their providers.
_DELETE_RETURNING = {single: _DELETE[single].returning(
    _A.c.resource_provider_id) for single in (True, False)}
_HOLDERS = {single: sa.select(_A.c.resource_provider_id).distinct()
            .where(_allocations_of(single)) for single in (True, False)}


def _move_usage_serial(single):
    if single:
        named = _RP.c.id == sa.bindparam('b_id')
    else:
        named = _RP.c.id.in_(sa.bindparam('b_ids', expanding=True))
    return (_RP.update().where(named)
            .values(usage_serial=_RP.c.usage_serial + 1))


# NOTE: deleting allocations leaves generations alone (as upstream), so
# the provider cache learns of it from this serial.
_MOVE_USAGE_SERIAL = {single: _move_usage_serial(single)
                      for single in (True, False)}


def _delete_allocations(conn, consumer_uuids):
    """Delete every allocation of ``consumer_uuids``.

    :returns: (number of allocations deleted, set of the ids of the
        providers that held them).
    """
    uuids = sorted(consumer_uuids)
    single = len(uuids) == 1
    params = {'consumer': uuids[0]} if single else {'consumers': uuids}
    if conn.dialect.delete_returning:
        ids = conn.execute(_DELETE_RETURNING[single], params).scalars().all()
        return len(ids), set(ids)
    # NOTE: MySQL proper has no DELETE ... RETURNING.
    holders = set(conn.execute(_HOLDERS[single], params).scalars())
    return conn.execute(_DELETE[single], params).rowcount, holders


def _move_usage_serials(conn, provider_ids):
    """Note that allocations were deleted from ``provider_ids``."""
    ids = sorted(provider_ids)
    if len(ids) == 1:
        conn.execute(_MOVE_USAGE_SERIAL[True], {'b_id': ids[0]})
    elif ids:
        conn.execute(_MOVE_USAGE_SERIAL[False], {'b_ids': ids})


def _all_new(requests):
    """True when every request claims for a consumer said not to exist.

    Such a claim (a scheduler's, at 1.28 and later, with a null consumer
    generation) needs no read of its consumers: their INSERT fails if one
    exists after all.
    """
    return all(r.generation is None and r.allocations for r in requests)


def _load_and_check(conn, requests, class_ids, existing):
    """The providers of a claim, once their capacity is known to suffice.

    :returns: ({uuid: provider dict}, see :func:`_load_providers`).
    :raises errors.BadRequest: a provider does not exist.
    :raises errors.Conflict: an allocation does not fit.
    """
    providers, inventory = _load_providers(
        conn, {rp for r in requests for rp in r.allocations}, existing)
    wanted = [(rp_uuid, rc_name, amount)
              for r in requests
              for rp_uuid, resources in sorted(r.allocations.items())
              for rc_name, amount in sorted(resources.items())]
    _check_capacity(wanted, providers, inventory, class_ids)
    return providers


# NOTE: built once; replace_all_in_transaction runs it with every row of a
# claim (an executemany).
_INSERT = _A.insert()


@placement_db.writer_connection
def replace_all_in_transaction(ctx, requests, class_ids, all_new=False):
    """Replace the allocations of several consumers in the caller's
    transaction (see :func:`replace_all`); the reshaper joins here.

    Every step runs on the one connection of this writer scope rather than
    in nested scopes of its own, and that scope makes no ORM Session (the
    steps are all Core statements): on a claim, setting those up and
    tearing them down cost more than the SQL. Inside the reshaper's writer
    it runs on that writer's connection and transaction.

    :param requests: a list of :class:`ConsumerRequest`.
    :param class_ids: {class name: id} from :func:`resolve_classes`.
    :param all_new: every request has a null generation and allocations
        (:func:`_all_new`): the consumers are not read first.
    :returns: the set of provider uuids whose generation was bumped.
    :raises consumer_obj.ConsumerExists: with ``all_new``, a consumer
        exists after all.
    """
    conn = ctx.connection
    if all_new:
        consumers = {}
        try:
            providers = _load_and_check(conn, requests, class_ids, ())
        except errors.PlacementError:
            # NOTE: the consumer's generation is checked first: a client
            # that was wrong about it is told so, whatever else is wrong.
            _check_generations(conn, requests)
            raise
    else:
        consumers = _check_generations(conn, requests)
        providers = _load_and_check(conn, requests, class_ids,
                                    list(consumers))
    losing = set()
    # NOTE: only consumers that exist can hold allocations, so a first
    # claim deletes nothing (and, on MySQL, takes no gap locks).
    if consumers:
        _count, losing = _delete_allocations(conn, list(consumers))
    _write_consumers(conn, requests, consumers)
    rows = _allocation_rows(requests, providers, class_ids,
                            timeutils.utcnow())
    if rows:
        conn.execute(_INSERT, rows)
    # NOTE: bump in id order so that two claims over the same providers
    # lock them in the same order and cannot deadlock each other.
    touched = sorted(providers.values(), key=lambda p: p['id'])
    for provider in touched:
        rp_obj.bump_generation(conn, provider)
    # NOTE: after the generation bumps, in id order as they are: a provider
    # that only lost allocations tells the provider cache by its serial.
    _move_usage_serials(conn, losing - {p['id'] for p in touched})
    emptied = [r.uuid for r in requests
               if not r.allocations and r.uuid in consumers]
    consumer_obj.delete_if_unused(conn, emptied)
    return {p['uuid'] for p in touched}


def _check_generations(conn, requests):
    """Read the requests' consumers and check the generations given.

    :returns: {uuid: consumer dict} of those that exist.
    :raises consumer_obj.ConsumerGenerationConflict: a request's generation
        is not its consumer's.
    """
    consumers = consumer_obj.fetch(conn, [r.uuid for r in requests])
    for req in requests:
        if req.generation is not UNCHECKED:
            consumer_obj.check_generation(consumers.get(req.uuid),
                                          req.generation)
    return consumers


def _is_duplicate(exc):
    return isinstance(exc, db_exc.DBDuplicateEntry)


# NOTE: rerun a whole write transaction that lost a race: a deadlock
# (MariaDB, PostgreSQL) or a duplicate project, user or consumer type
# created by a concurrent request. The rerun sees the winner's work and
# either succeeds or answers 409 like any other stale read.
retry_transaction = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_on_deadlock=True, exception_checker=_is_duplicate,
    retry_interval=0.05, inc_retry_interval=True, max_retry_interval=0.5)


@retry_transaction
def replace_all(ctx, requests):
    """Atomically replace the allocations of every consumer in ``requests``.

    All or nothing: the consumers' old allocations go, the new ones are
    checked against capacity (counting every consumer of the request), the
    consumers are created, bumped or (when emptied) deleted, and every
    provider receiving allocations gets a new generation. A deadlock
    (MariaDB, PostgreSQL) reruns the whole transaction.

    :param requests: a list of :class:`ConsumerRequest`.
    :raises errors.BadRequest: unknown resource class or provider.
    :raises errors.Conflict: capacity, inventory, or a consumer or provider
        generation that moved on.
    """
    class_ids = resolve_classes(ctx, requests)
    all_new = _all_new(requests)
    retries = CONF.placement.allocation_conflict_retry_count
    lost_race = False
    while True:
        try:
            if not lost_race:
                return replace_all_in_transaction(ctx, requests, class_ids,
                                                  all_new)
            with provider_locks.held(
                    uuid for r in requests for uuid in r.allocations):
                return replace_all_in_transaction(ctx, requests, class_ids,
                                                  all_new)
        except consumer_obj.ConsumerExists as exc:
            # NOTE: outside the failed transaction (PostgreSQL ends it at
            # the failed INSERT), say which generation the consumer is at.
            current = consumer_obj.get_by_uuid(ctx, exc.uuid)
            if current is None:
                raise
            raise consumer_obj.ConsumerGenerationConflict(
                current['generation'], None)
        except rp_obj.ConcurrentUpdate:
            if retries <= 0:
                raise
            retries -= 1
            # NOTE: the retries queue on the providers' locks (see
            # provider_locks): they no longer race one another.
            lost_race = True
            LOG.debug('Provider changed under an allocation write; retrying '
                      '(%d retries left)', retries)


@placement_db.writer_connection
def _delete_for_consumer(ctx, consumer_uuid):
    conn = ctx.connection
    count, losing = _delete_allocations(conn, [consumer_uuid])
    _move_usage_serials(conn, losing)
    consumer_obj.delete_if_unused(conn, [consumer_uuid])
    return count


@retry_transaction
def delete_for_consumer(ctx, consumer_uuid):
    """Remove every allocation of a consumer, and the consumer.

    As upstream, the providers' generations do not change: freeing
    resources cannot invalidate anybody's view of the capacity.

    :raises errors.NotFound: the consumer holds no allocations.
    """
    if not _delete_for_consumer(ctx, consumer_uuid):
        raise errors.NotFound(
            "No allocations for consumer '%s'" % consumer_uuid)
