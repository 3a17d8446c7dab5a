# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Migrations of every cell, as ``GET /os-migrations`` lists them.

Each cell database holds the moves of its servers. A list asks every
cell (but cell0, which runs no server) for at most a page of its newest
migrations after the marker's position, merges them newest first
(created_at, then id) and keeps one page: the page is exact whatever the
cells hold, each cell sending no more than the page size.

The marker is a migration's uuid, looked up in each cell in turn: its
(created_at, id) position then bounds every cell's query. A cell whose
database does not answer is left out, as the server lists do
(:mod:`services.api.down_cells`), and its migrations are missing from
the page rather than failing it.
"""

import logging

from common.db import migration_records
from common import exception
from services.api import cell_hosts
from services.api import down_cells
from services.api import errors

LOG = logging.getLogger(__name__)


def _cells(ctxt):
    return cell_hosts.all_cells(ctxt, include_cell0=False)


def _ask(cell, down, fn):
    """``fn(database)`` for a live cell; None (and ``cell`` in ``down``)
    when its database does not answer.
    """
    if down_cells.known_down(cell):
        down.append(cell)
        return None
    try:
        return fn(cell_hosts.database(cell))
    except Exception as exc:
        if not down_cells.is_down(exc):
            raise
        down_cells.mark_down(cell, exc)
        down.append(cell)
        return None


def find_marker(ctxt, marker, down):
    """The Migration ``marker`` (a uuid) from whichever cell holds it.

    :raises errors.BadRequest: no answering cell has it (Nova's message).
    """
    def lookup(database):
        try:
            return migration_records.get_migration(ctxt, database, marker)
        except exception.MigrationNotFound:
            return None
    for cell in _cells(ctxt):
        found = _ask(cell, down, lookup)
        if found is not None:
            return found
    raise errors.BadRequest('Marker %s could not be found.' % marker)


def _sort_key(migration):
    # NOTE: ISO texts of one format sort as the times they write.
    return (migration.created_at or '', migration.id or 0)


def list_migrations(ctxt, filters, marker=None, limit=None, down=None):
    """Migrations of every cell, newest first.

    :param filters: a :class:`common.db.migration_records.Filters`.
    :param marker: the uuid of the last migration of the previous page.
    :param limit: the page size; None for every migration.
    :param down: a list to which the cells that do not answer are added.
    :raises errors.BadRequest: an unknown marker.
    """
    down = [] if down is None else down
    after = find_marker(ctxt, marker, down) if marker is not None else None
    if limit == 0:
        return []
    found = []
    for cell in _cells(ctxt):
        page = _ask(cell, down, lambda database: (
            migration_records.list_migrations(
                ctxt, database, filters, limit=limit, after=after)))
        found.extend(page or ())
    found.sort(key=_sort_key, reverse=True)
    if down:
        LOG.warning('Migrations of cells %s left out: their database does '
                    'not answer', ', '.join(c.uuid for c in down))
    return found if limit is None else found[:limit]
