# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Which database holds what: the api database, cell0 and every cell.

The conductor works on the api database (build requests, mappings) and on
whichever cell database an instance or a host lives in. This module keeps
the list of cell mappings (re-read at most every :data:`CELL_CACHE_TTL`
seconds: cells are added rarely, by an operator) and the cell of each
instance it has looked up (an instance never changes cell once mapped).
"""

import logging
import threading
import time

import common.conf
from common import context as berth_context
from common.db import boot_records
from common.db import cells
from common.db import instance_cells
from common import exception

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

CELL_CACHE_TTL = 60.0
# NOTE: instance uuid -> cell uuid entries kept; the oldest are forgotten
# first. Lookups of forgotten ones cost one api database read.
INSTANCE_CELL_CACHE_SIZE = 10000


class CellAccess(object):
    """The api database and the cell databases, as one thread-safe object.
    """

    def __init__(self, api_database=None, registry=None, clock=None):
        """
        :param api_database: the api Database; ``common.db.cells.api_db``
            configured from ``[api_database]`` when not given.
        :param registry: a ``common.db.cells.CellDatabases``; the
            process-wide one when not given.
        :param clock: monotonic clock for the cell cache (tests).
        """
        self._api_database = api_database
        self._registry = registry
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._cells = None
        self._cells_at = 0.0
        self._instance_cells = instance_cells.InstanceCells(
            INSTANCE_CELL_CACHE_SIZE)

    @property
    def api(self):
        """The api Database (configured on first use).

        :raises common.exception.DBNotConfigured: no [api_database].
        """
        return self._api_database or cells.configure_api()

    @property
    def has_api(self):
        """True when an api database is available."""
        return (self._api_database is not None or
                bool(CONF.api_database.connection))

    @property
    def registry(self):
        """The registry of cell Databases."""
        return self._registry or cells.REGISTRY

    def local(self):
        """The Database of ``[database] connection`` (this cell's).

        :raises common.exception.DBNotConfigured: when it is not set.
        """
        return self.registry.local()

    def database(self, cell):
        """The Database of a CellMapping, or of a cell uuid."""
        if isinstance(cell, cells.CellMapping):
            return self.registry.get(cell)
        return self.registry.get(self.cell(None, cell))

    # --- cell mappings -------------------------------------------------------

    def refresh(self):
        """Forget the cached cell list (a cell was added or changed)."""
        with self._lock:
            self._cells = None

    def cells(self, ctxt=None):
        """Every CellMapping, in id order (cached)."""
        with self._lock:
            if self._cells is not None and (
                    self._clock() - self._cells_at < CELL_CACHE_TTL):
                return list(self._cells)
        found = boot_records.list_cells(
            ctxt or berth_context.get_admin_context(), database=self.api)
        with self._lock:
            self._cells = found
            self._cells_at = self._clock()
        return list(found)

    def cell(self, ctxt, cell_uuid):
        """The CellMapping of ``cell_uuid``.

        :raises common.db.cells.CellMappingNotFound: there is none (after
            a fresh read, so a cell created a moment ago is found).
        """
        for mapping in self.cells(ctxt):
            if mapping.uuid == cell_uuid:
                return mapping
        self.refresh()
        for mapping in self.cells(ctxt):
            if mapping.uuid == cell_uuid:
                return mapping
        raise cells.CellMappingNotFound(uuid=cell_uuid)

    def cell0(self, ctxt=None):
        """The CellMapping of cell0.

        :raises common.db.cells.CellMappingNotFound: cell0 is not mapped
            (run ``berth-manage cell_v2 map_cell0``).
        """
        return self.cell(ctxt, cells.CELL0_UUID)

    def host_cells(self, ctxt):
        """The enabled cells that may hold hosts (all but cell0)."""
        return [m for m in self.cells(ctxt)
                if not m.is_cell0 and not m.disabled]

    # --- instances -----------------------------------------------------------

    def remember(self, instance_uuid, cell_uuid):
        """Record that ``instance_uuid`` lives in ``cell_uuid``."""
        self._instance_cells.remember(instance_uuid, cell_uuid)

    def instance_cell(self, ctxt, instance_uuid, hint=None):
        """(cell uuid or None, Database) of the cell holding an instance.

        The instance mapping decides. Without an api database, or for an
        instance not mapped to a cell yet, ``hint`` (a cell uuid the
        caller knows) or else the local cell is used.

        :raises common.exception.DBNotConfigured: no cell to look in.
        """
        cached = self._instance_cells.get(instance_uuid)
        if cached is not None:
            return cached, self.database(cached)
        cell_uuid = None
        if self.has_api:
            mapping = boot_records.get_instance_mapping(
                ctxt, instance_uuid, database=self.api)
            cell_uuid = mapping and mapping['cell_uuid']
        if cell_uuid is not None:
            self.remember(instance_uuid, cell_uuid)
            return cell_uuid, self.database(cell_uuid)
        if hint is not None:
            try:
                return hint, self.database(hint)
            except (cells.CellMappingNotFound,
                    exception.DBNotConfigured):
                LOG.debug('Cell hint %s of %s is unknown', hint,
                          instance_uuid)
        return None, self.local()
