# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Host states from the api database and every cell database.

Aggregates and cell mappings come from the api database; compute nodes,
their compute services and the instances on them from each enabled cell's
database. Every call runs a handful of set queries (one per table and cell,
IN lists chunked to 1000), never one query per host, so that loading a
thousand candidates costs what loading ten does.
"""

import logging
import threading
import time

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

import common.conf
from common import context as berth_context
from common.db import api_tables
from common.db import cell_tables
from common.db import cells as cells_db
from services.scheduler import host_manager
from services.scheduler import host_state as hs
from services.scheduler import sources
from services.scheduler.sources import records

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

# NOTE: the binary of the services whose records decide whether a compute
# node is up; the join is on (host, binary) as a node's host is its
# service's host.
COMPUTE_BINARY = 'berth-compute'

# NOTE: the list of cells is re-read this often. Cells are added rarely and
# by an operator (``cell_v2 create_cell``); per-request reads would be a
# wasted api database round trip.
CELL_CACHE_TTL = 60.0

_ci = cell_tables.compute_nodes.c
_sv = cell_tables.services.c
_in = cell_tables.instances.c


# --- queries (each runs inside a reader of the right database) -------------

def _compute_nodes(context, uuids):
    """Live compute nodes with ``uuids``, joined with their service."""
    join = cell_tables.compute_nodes.outerjoin(
        cell_tables.services,
        sa.and_(_sv.host == _ci.host, _sv.binary == COMPUTE_BINARY,
                _sv.deleted == 0))
    columns = [cell_tables.compute_nodes,
               _sv.id.label('service_row_id'),
               _sv.disabled.label('service_disabled'),
               _sv.disabled_reason.label('service_disabled_reason'),
               _sv.forced_down.label('service_forced_down'),
               _sv.last_seen_up.label('service_last_seen_up'),
               _sv.updated_at.label('service_updated_at'),
               _sv.created_at.label('service_created_at')]
    rows = []
    for chunk in sources.chunks(uuids):
        rows.extend(context.session.execute(
            sa.select(*columns).select_from(join).where(
                _ci.deleted == 0, _ci.uuid.in_(chunk))))
    return rows


def _instances(context, hosts):
    """Live instances on ``hosts``."""
    rows = []
    for chunk in sources.chunks(hosts):
        rows.extend(context.session.execute(
            sa.select(_in.uuid, _in.host, _in.node, _in.project_id,
                      _in.image_ref, _in.flavor, _in.vm_state,
                      _in.task_state).where(
                _in.deleted == 0, _in.host.in_(chunk)).order_by(_in.id)))
    return rows


def _nodes_and_instances(context, uuids):
    """(compute node rows, instance rows of their hosts), one snapshot."""
    nodes = _compute_nodes(context, uuids)
    hosts = sorted({row.host for row in nodes if row.host})
    return nodes, _instances(context, hosts) if hosts else []


def _versions(context, uuids):
    """uuid -> updated_at (or created_at) of live compute nodes."""
    result = {}
    for chunk in sources.chunks(uuids):
        for row in context.session.execute(
                sa.select(_ci.uuid, _ci.updated_at, _ci.created_at).where(
                    _ci.deleted == 0, _ci.uuid.in_(chunk))):
            result[row.uuid] = row.updated_at or row.created_at
    return result


def _node_uuids(context, host, node):
    query = sa.select(_ci.uuid).where(
        _ci.deleted == 0, _ci.host == host).order_by(_ci.id)
    if node is not None:
        query = query.where(_ci.hypervisor_hostname == node)
    return list(context.session.execute(query).scalars())


def _aggregates(context):
    """Every aggregate with its hosts and metadata, in id order."""
    t = api_tables
    found = {row.id: hs.Aggregate(id=row.id, uuid=row.uuid, name=row.name)
             for row in context.session.execute(
                 sa.select(t.aggregates.c.id, t.aggregates.c.uuid,
                           t.aggregates.c.name).order_by(t.aggregates.c.id))}
    for row in context.session.execute(
            sa.select(t.aggregate_hosts.c.aggregate_id,
                      t.aggregate_hosts.c.host).order_by(
                t.aggregate_hosts.c.aggregate_id, t.aggregate_hosts.c.host)):
        if row.aggregate_id in found:
            found[row.aggregate_id].hosts.append(row.host)
    for row in context.session.execute(
            sa.select(t.aggregate_metadata.c.aggregate_id,
                      t.aggregate_metadata.c.key,
                      t.aggregate_metadata.c.value)):
        if row.aggregate_id in found:
            found[row.aggregate_id].metadata[row.key] = row.value
    return list(found.values())


def _host_cell(context, host):
    """The cell mapping of ``host``, or None when it is not mapped."""
    row = context.session.execute(
        sa.select(api_tables.cell_mappings).select_from(
            api_tables.host_mappings.join(
                api_tables.cell_mappings,
                api_tables.host_mappings.c.cell_id ==
                api_tables.cell_mappings.c.id)).where(
            api_tables.host_mappings.c.host == host)).first()
    if row is None:
        return None
    return cells_db.CellMapping(
        id=row.id, uuid=row.uuid, name=row.name,
        transport_url=row.transport_url,
        database_connection=row.database_connection,
        disabled=bool(row.disabled))


class DatabaseHostSource(host_manager.HostSource):
    """The HostSource of a deployment: api database plus cell databases."""

    def __init__(self, api_database=None, cell_databases=None, conf=None,
                 clock=None):
        """
        :param api_database: the api Database; ``common.db.cells.api_db``
            configured from ``[api_database]`` when not given.
        :param cell_databases: a ``common.db.cells.CellDatabases``
            registry; the process-wide one when not given.
        :param conf: the ConfigOpts; the global CONF when not given.
        :param clock: monotonic clock for the cell list cache (tests).
        """
        self._api_database = api_database
        self._registry = cell_databases
        self._conf = conf
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._cells = None
        self._cells_at = 0.0

    @property
    def conf(self):
        """The ConfigOpts in use."""
        return self._conf or CONF

    @property
    def api(self):
        """The api Database (configured on first use)."""
        return self._api_database or cells_db.configure_api(self.conf)

    @property
    def registry(self):
        """The registry of cell Databases."""
        return self._registry or cells_db.REGISTRY

    def refresh_cells(self):
        """Forget the cached cell list (a cell was added or disabled)."""
        with self._lock:
            self._cells = None

    def cells(self, context):
        """[(cell uuid, Database)] of the cells that hold schedulable hosts.

        cell0 (it never holds hosts) and disabled cells are left out. With
        no cell mapped yet, ``[database] connection`` is the one cell, with
        a cell uuid of None.
        """
        with self._lock:
            if self._cells is not None and (
                    self._clock() - self._cells_at < CELL_CACHE_TTL):
                return self._cells
        mappings = cells_db.get_cell_mappings(context, self.api)
        found = [(m.uuid, self.registry.get(m)) for m in mappings
                 if not m.is_cell0 and not m.disabled]
        if not mappings and self.conf.database.connection:
            found = [(None, self.registry.local())]
        with self._lock:
            self._cells = found
            self._cells_at = self._clock()
        return found

    @staticmethod
    def _in_cell(cell, fn, context, *args):
        """``fn``'s result in one cell, or None when its database failed.

        NOTE: as upstream, a cell whose database fails is logged and left
        out, so one broken cell does not stop scheduling to the others.
        """
        cell_uuid, database = cell
        try:
            return cells_db.read(database, fn, context, *args)
        except (db_exc.DBError, sa.exc.DBAPIError) as exc:
            LOG.warning('Skipping cell %s: its database failed: %s',
                        cell_uuid, exc)
            return None

    def get_host_states(self, context, compute_uuids):
        """Fresh HostState objects for the given compute node uuids.

        Unknown and deleted nodes are left out. Each state carries its
        aggregates, the live instances on it and its service status.
        """
        context = context or berth_context.get_admin_context()
        wanted = list(dict.fromkeys(compute_uuids))
        if not wanted:
            return []
        now = timeutils.utcnow()
        down_time = records.service_down_time()
        states = []
        for cell in self.cells(context):
            if not wanted:
                break
            cell_states = self._states_in_cell(cell, context, wanted, now,
                                               down_time)
            found = {s.uuid for s in cell_states}
            wanted = [u for u in wanted if u not in found]
            states.extend(cell_states)
        if states:
            self._attach_aggregates(context, states)
        order = {u: i for i, u in enumerate(compute_uuids)}
        states.sort(key=lambda s: order.get(s.uuid, 0))
        return states

    def _states_in_cell(self, cell, context, uuids, now, down_time):
        """The HostStates of those of ``uuids`` that live in ``cell``,
        with their instances; none when the cell's database failed.
        """
        rows, instance_rows = self._in_cell(
            cell, _nodes_and_instances, context, uuids) or ([], [])
        if not rows:
            return []
        built = [records.to_host_state(
            row, cell[0], records.service_dict(row, now, down_time))
            for row in rows]
        states = [state for state, _count in built]
        records.attach_instances(
            states, instance_rows,
            {state.uuid: count for state, count in built})
        return states

    def _attach_aggregates(self, context, states):
        """Give each state the aggregates its host is in."""
        by_host = {}
        for aggregate in self.get_aggregates(context):
            for host in aggregate.hosts:
                by_host.setdefault(host, []).append(aggregate)
        for state in states:
            state.aggregates = list(by_host.get(state.host, []))

    def get_updated_since(self, context, compute_uuids):
        """uuid -> the node record's updated_at (created_at if never)."""
        context = context or berth_context.get_admin_context()
        wanted = list(dict.fromkeys(compute_uuids))
        result = {}
        for cell in self.cells(context):
            if not wanted:
                break
            versions = self._in_cell(cell, _versions, context, wanted) or {}
            result.update(versions)
            wanted = [u for u in wanted if u not in versions]
        return result

    def get_aggregates(self, context):
        """Every host aggregate (list of host_state.Aggregate)."""
        context = context or berth_context.get_admin_context()
        return cells_db.read(self.api, _aggregates, context)

    def compute_uuids_for_host(self, context, host, node=None):
        """Compute node uuids of a host (one node when ``node`` is given).

        A mapped host is looked up in its own cell only; an unmapped one
        (discovery not run yet) in every cell.
        """
        context = context or berth_context.get_admin_context()
        mapping = cells_db.read(self.api, _host_cell, context, host)
        if mapping is not None:
            cells = [(mapping.uuid, self.registry.get(mapping))]
        else:
            cells = self.cells(context)
        result = []
        for cell in cells:
            result.extend(
                self._in_cell(cell, _node_uuids, context, host, node) or [])
        return result
