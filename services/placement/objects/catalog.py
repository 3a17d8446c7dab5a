# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The resource-class and trait catalogues and their in-process caches.

Standard resource classes (os-resource-classes) and standard traits
(os-traits) are written to the database once per process; custom ones are
created through the API. Every hot path maps names to ids through the
caches here; a miss reloads from the database, so a class or trait created
by another server process is found on first use.
"""

import logging
import threading

import os_resource_classes
import os_traits
from oslo_utils import timeutils
import sqlalchemy as sa

from common import context as common_context
from services.placement.db.api import placement_db
from services.placement.db import tables

LOG = logging.getLogger(__name__)

# Custom resource class ids start here; standard ones are 1 + their index.
CUSTOM_RC_MIN_ID = 10000

_SYNC_LOCK = threading.Lock()
_synced = False


def standard_rc_id(name):
    """The fixed id of a standard resource class."""
    return os_resource_classes.STANDARDS.index(name) + 1


@placement_db.writer
def _sync(ctx):
    now = timeutils.utcnow()
    conn = ctx.session
    have = set(conn.execute(sa.select(tables.resource_classes.c.name))
               .scalars())
    missing = [{'id': standard_rc_id(name), 'name': name, 'created_at': now}
               for name in os_resource_classes.STANDARDS if name not in have]
    if missing:
        conn.execute(tables.resource_classes.insert(), missing)
    have = set(conn.execute(sa.select(tables.traits.c.name)).scalars())
    missing = [{'name': name, 'created_at': now}
               for name in os_traits.get_traits() if name not in have]
    if missing:
        conn.execute(tables.traits.insert(), missing)


def sync_standard_catalogues(force=False):
    """Make sure every standard resource class and trait is in the DB."""
    global _synced
    with _SYNC_LOCK:
        if _synced and not force:
            return
        try:
            _sync(common_context.get_admin_context())
        except Exception:
            # NOTE: another process may be inserting the same rows; its
            # success is ours, so look again before giving up.
            _sync(common_context.get_admin_context())
        _synced = True
        RESOURCE_CLASSES.clear()
        TRAITS.clear()


class _NameIdCache(object):
    """A thread-safe two-way name <-> id map over one catalogue table."""

    def __init__(self, table):
        self._table = table
        self._lock = threading.Lock()
        self._by_name = {}
        self._by_id = {}
        # NOTE: moves on whenever a name may have changed, so that what was
        # rendered with the old names (provider_cache) is rendered again.
        self.epoch = 0

    def clear(self):
        """Forget everything; the next lookup reloads."""
        with self._lock:
            self._by_name = {}
            self._by_id = {}
            self.epoch += 1

    def _reload(self, ctx):
        rows = _load(ctx, self._table)
        with self._lock:
            by_id = {id_: name for id_, name in rows}
            if by_id != self._by_id:
                self.epoch += 1
            self._by_name = {name: id_ for id_, name in rows}
            self._by_id = by_id

    def id_for(self, ctx, name):
        """The id of ``name``, or None when it does not exist."""
        found = self._by_name.get(name)
        if found is None:
            self._reload(ctx)
            found = self._by_name.get(name)
        return found

    def name_for(self, ctx, id_):
        """The name of id ``id_``, or None."""
        found = self._by_id.get(id_)
        if found is None:
            self._reload(ctx)
            found = self._by_id.get(id_)
        return found

    def in_id_order(self, ctx, names):
        """``names`` as a list sorted by their ids.

        For traits that is the order they were synced or created in. A name
        unknown even after one reload (deleted meanwhile) goes last.
        """
        by_name = self._by_name
        if any(name not in by_name for name in names):
            self._reload(ctx)
            by_name = self._by_name
        last = float('inf')
        return sorted(names, key=lambda name: (by_name.get(name, last), name))

    def all_names(self, ctx):
        """Every name, freshly loaded."""
        self._reload(ctx)
        return list(self._by_name)


@placement_db.reader
def _load(ctx, table):
    return [tuple(row) for row in ctx.session.execute(
        sa.select(table.c.id, table.c.name))]


RESOURCE_CLASSES = _NameIdCache(tables.resource_classes)
TRAITS = _NameIdCache(tables.traits)
