# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Archiving soft-deleted cell rows to shadow tables, and purging those.

A cell database keeps its deleted services, compute nodes and instances
(``deleted != 0``). :class:`Archiver` moves them, oldest (lowest id) first,
to ``shadow_<table>`` in batches: each batch is one transaction doing
``INSERT INTO shadow_t SELECT ... WHERE id IN (...)`` then ``DELETE``, so
an interrupted run leaves every row either moved or not, and running again
carries on. A deleted instance takes along the rows that belong to it:
its faults, its actions and their events. Those rows were not deleted
themselves, so their shadow copy gets the instance's ``deleted_at``, which
``purge --before`` goes by. The api database rows of an archived instance
(instance mapping, request spec, group membership) are deleted first, as
nova-manage does (see doc/operations.md).
"""

import dataclasses
import logging

import sqlalchemy as sa

from common import context as berth_context
from common.db import api as db_api
from common.db import api_tables
from common.db import cell_tables

LOG = logging.getLogger(__name__)

_IN = cell_tables.instances
_FA = cell_tables.instance_faults
_AC = cell_tables.instance_actions
_EV = cell_tables.instance_actions_events
_MI = cell_tables.migrations
SHADOW = cell_tables.shadow_tables

# NOTE: the api database rows named by instance uuid that nova-manage
# removes with the archived instances, with the names its table shows.
API_TABLES = (api_tables.instance_mappings, api_tables.request_specs,
              api_tables.instance_group_member)

# NOTE: rows a purge deletes per statement (an id range), so that a purge
# of millions of rows holds no lock for long.
PURGE_RANGE = 10000


def _ctxt():
    return berth_context.get_admin_context()


@dataclasses.dataclass
class Batch(object):
    """What one batch moved: table name -> rows, and the instance uuids."""

    counts: dict = dataclasses.field(default_factory=dict)
    instance_uuids: list = dataclasses.field(default_factory=list)


def _deleted(table, before):
    condition = table.c.deleted != 0
    if before is not None:
        condition = sa.and_(condition, table.c.deleted_at < before)
    return condition


def _ids(conn, column, where):
    return conn.execute(sa.select(column).where(where)).scalars().all()


def _ids_in(conn, column, key, values):
    """``column`` of the rows whose ``key`` is one of ``values``."""
    found = []
    for chunk in db_api.chunks(values):
        found.extend(_ids(conn, column, key.in_(chunk)))
    return found


def _move(conn, table, ids, parent_deleted_at=None):
    """Copy rows ``ids`` of ``table`` to its shadow, then delete them.

    :param parent_deleted_at: a scalar subquery giving ``deleted_at`` to
        rows that have none (the rows of a deleted instance).
    :returns: the number of rows moved.
    """
    shadow = SHADOW[table.name]
    names = [c.name for c in table.columns]
    columns = [sa.func.coalesce(c, parent_deleted_at).label(c.name)
               if c.name == 'deleted_at' and parent_deleted_at is not None
               else c for c in table.columns]
    moved = 0
    for chunk in db_api.chunks(ids):
        conn.execute(shadow.insert().from_select(
            names, sa.select(*columns).where(table.c.id.in_(chunk))))
        moved += conn.execute(
            table.delete().where(table.c.id.in_(chunk))).rowcount
    return moved


def _still_deleted(conn, ids):
    """(ids, uuids) of the instances ``ids`` that are still there."""
    found = []
    for chunk in db_api.chunks(ids):
        found.extend(conn.execute(sa.select(_IN.c.id, _IN.c.uuid).where(
            _IN.c.id.in_(chunk), _IN.c.deleted != 0)).all())
    return [row.id for row in found], [row.uuid for row in found]


def _instance_deleted_at(uuid_column):
    return sa.select(_IN.c.deleted_at).where(
        _IN.c.uuid == uuid_column).scalar_subquery()


def _event_instance_deleted_at():
    return sa.select(_IN.c.deleted_at).where(
        _IN.c.uuid == _AC.c.instance_uuid,
        _AC.c.id == _EV.c.action_id).scalar_subquery()


class Archiver(object):
    """Moves one cell database's deleted rows to its shadow tables."""

    def __init__(self, database, max_rows=1000, before=None,
                 api_database=None):
        """
        :param database: the cell's :class:`common.db.api.Database`.
        :param max_rows: rows per table and batch (an instance's faults,
            actions and events come along beyond it, as in nova-manage).
        :param before: a naive UTC datetime; only rows deleted before it.
        :param api_database: where the archived instances' mappings and
            request specs are deleted; None leaves the api database alone.
        """
        self.database = database
        self.max_rows = max_rows
        self.before = before
        self.api_database = api_database

    def _oldest(self, table):
        def fetch(ctx):
            query = sa.select(table.c.id, *(
                [table.c.uuid] if table is _IN else [])).where(
                _deleted(table, self.before)).order_by(
                table.c.id).limit(self.max_rows)
            return ctx.connection.execute(query).all()
        return self.database.reader_connection(fetch)(_ctxt())

    def _delete_api_rows(self, uuids):
        counts = {}
        if self.api_database is None or not uuids:
            return counts

        def delete(ctx):
            for table in API_TABLES:
                counts['API_DB.' + table.name] = sum(
                    ctx.connection.execute(table.delete().where(
                        table.c.instance_uuid.in_(chunk))).rowcount
                    for chunk in db_api.chunks(uuids))
        self.api_database.writer_connection(delete)(_ctxt())
        return counts

    def instance_batch(self):
        """Archive up to ``max_rows`` deleted instances with their rows.

        :returns: a :class:`Batch`; empty when nothing was left.
        """
        rows = self._oldest(_IN)
        if not rows:
            return Batch()
        ids = [row.id for row in rows]
        uuids = [row.uuid for row in rows]
        # NOTE: api rows first: should the cell transaction then fail, the
        # instances are still there for the next run to archive.
        api_counts = self._delete_api_rows(uuids)

        def move(ctx):
            conn = ctx.connection
            # NOTE: again under the transaction, deleted ones only: the
            # rows read above may have been archived by a concurrent run.
            gone_ids, gone = _still_deleted(conn, ids)
            actions = _ids_in(conn, _AC.c.id, _AC.c.instance_uuid, gone)
            counts = {}
            counts[_EV.name] = _move(
                conn, _EV, _ids_in(conn, _EV.c.id, _EV.c.action_id, actions),
                _event_instance_deleted_at())
            counts[_AC.name] = _move(conn, _AC, actions,
                                     _instance_deleted_at(_AC.c.instance_uuid))
            counts[_FA.name] = _move(
                conn, _FA, _ids_in(conn, _FA.c.id, _FA.c.instance_uuid, gone),
                _instance_deleted_at(_FA.c.instance_uuid))
            # NOTE: an instance's moves are its history: they go with it.
            counts[_MI.name] = _move(
                conn, _MI, _ids_in(conn, _MI.c.id, _MI.c.instance_uuid, gone),
                _instance_deleted_at(_MI.c.instance_uuid))
            counts[_IN.name] = _move(conn, _IN, gone_ids)
            # NOTE: tags have no shadow table (Nova keeps none either):
            # destroying an instance removed them; any left are dropped.
            for chunk in db_api.chunks(gone):
                conn.execute(cell_tables.tags.delete().where(
                    cell_tables.tags.c.resource_id.in_(chunk)))
            return counts
        counts = self.database.writer_connection(move)(_ctxt())
        counts.update(api_counts)
        return Batch(counts=counts, instance_uuids=uuids)

    def table_batch(self, table):
        """Archive up to ``max_rows`` deleted rows of services or nodes."""
        ids = [row.id for row in self._oldest(table)]
        if not ids:
            return Batch()

        def move(ctx):
            return {table.name: _move(ctx.connection, table, ids)}
        return Batch(counts=self.database.writer_connection(move)(_ctxt()))

    def run_once(self):
        """One batch of each kind: instances, compute nodes, services.

        :returns: table name -> rows archived (api ones ``API_DB.<t>``).
        """
        totals = {}
        for batch in (self.instance_batch(),
                      self.table_batch(cell_tables.compute_nodes),
                      self.table_batch(cell_tables.services)):
            for name, count in batch.counts.items():
                totals[name] = totals.get(name, 0) + count
        return totals


def _purge_condition(shadow, before):
    if before is None:
        return sa.true()
    return sa.func.coalesce(shadow.c.deleted_at, shadow.c.updated_at,
                            shadow.c.created_at) < before


def purge_table(database, shadow, before=None):
    """Delete the rows of one shadow table deleted before ``before``.

    :param before: a naive UTC datetime; None deletes every row.
    :returns: the number of rows deleted.
    """
    condition = _purge_condition(shadow, before)

    def bounds(ctx):
        return ctx.connection.execute(sa.select(
            sa.func.min(shadow.c.id), sa.func.max(shadow.c.id)).where(
            condition)).one()
    low, high = database.reader_connection(bounds)(_ctxt())
    if low is None:
        return 0
    deleted = 0
    for start in range(low, high + 1, PURGE_RANGE):
        def delete(ctx, start=start):
            return ctx.connection.execute(shadow.delete().where(
                shadow.c.id >= start, shadow.c.id < start + PURGE_RANGE,
                condition)).rowcount
        deleted += database.writer_connection(delete)(_ctxt())
    return deleted


def purge(database, before=None):
    """Purge every shadow table of a cell database.

    :returns: shadow table name -> rows deleted, for those with any.
    """
    counts = {}
    for shadow in SHADOW.values():
        count = purge_table(database, shadow, before)
        if count:
            counts[shadow.name] = count
    return counts
