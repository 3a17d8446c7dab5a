# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Compute nodes and services in one cell database, as functions.

Compute agents write their compute node records through the conductor
(they have no database credentials); the scheduler reads them (see
``services/scheduler/sources``), ``cell_v2 discover_hosts`` maps them,
and the API lists them as hypervisors and services. Every function takes
the request context and the cell's :class:`common.db.api.Database`.

Rows are soft-deleted (``deleted`` = the row id). Record dicts carry every
column: datetimes as ISO 8601 strings (naive UTC) and the JSON columns
(``cpu_info``, ``numa_topology``, ``pci_stats``, ``metrics``, ``stats``,
``supported_instances``) decoded into Python structures.
"""

import datetime
import functools
import json
import logging
import uuid as uuid_lib

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api as db_api
from common.db import cell_tables
from common import servicegroup

LOG = logging.getLogger(__name__)

_CN = cell_tables.compute_nodes
_SV = cell_tables.services

COMPUTE_BINARY = 'berth-compute'
JSON_COLUMNS = ('cpu_info', 'numa_topology', 'pci_stats', 'metrics',
                'stats', 'supported_instances')
# NOTE: identity and bookkeeping columns a save never takes from values:
# a node keeps its uuid for life (it is the placement provider's), and
# only discovery sets ``mapped``.
_PROTECTED = frozenset(('id', 'uuid', 'host', 'hypervisor_hostname',
                        'created_at', 'updated_at', 'deleted_at', 'deleted',
                        'mapped'))
_NODE_COLUMNS = frozenset(c.name for c in _CN.columns)
_REQUIRED_DEFAULTS = {'vcpus': 0, 'memory_mb': 0, 'local_gb': 0,
                      'vcpus_used': 0, 'memory_mb_used': 0,
                      'local_gb_used': 0}
_SERVICE_UPDATABLE = ('disabled', 'disabled_reason', 'forced_down')


def _record(row):
    """A row as a dict: ISO datetimes, decoded JSON columns."""
    result = {}
    for key, value in row._mapping.items():
        if isinstance(value, datetime.datetime):
            value = value.isoformat()
        elif key in JSON_COLUMNS and isinstance(value, str):
            try:
                value = json.loads(value) if value else None
            except ValueError:
                LOG.warning('Ignoring undecodable %s of compute node %s',
                            key, row.uuid)
                value = None
        result[key] = value
    return result


def _encode(values):
    """Compute node values as columns: JSON columns encoded, unknown
    keys refused.

    :raises ValueError: for a key that is not a compute_nodes column.
    """
    unknown = set(values) - _NODE_COLUMNS
    if unknown:
        raise ValueError('not compute_nodes columns: %s'
                         % ', '.join(sorted(unknown)))
    columns = {}
    for key, value in values.items():
        if key in JSON_COLUMNS and value is not None and \
                not isinstance(value, str):
            value = json.dumps(value, separators=(',', ':'), sort_keys=True)
        columns[key] = value
    return columns


def _live_node(host, nodename):
    return sa.and_(_CN.c.host == host, _CN.c.hypervisor_hostname == nodename,
                   _CN.c.deleted == 0)


def _service_id(ctx, host):
    return ctx.session.execute(sa.select(_SV.c.id).where(
        _SV.c.host == host, _SV.c.binary == COMPUTE_BINARY,
        _SV.c.deleted == 0)).scalar()


# --- compute nodes -----------------------------------------------------------

def _save_node(ctx, host, nodename, columns):
    """Update or create one live node in the open transaction.

    :param columns: from :func:`_encode`.
    :returns: (id, uuid).
    """
    # NOTE: plain reads first and writes by primary key only: on MariaDB
    # an UPDATE by a unique key that matches nothing locks the gap, and
    # the INSERTs of other hosts saving at the same moment then deadlock
    # with it.
    changes = {k: v for k, v in columns.items() if k not in _PROTECTED}
    now = timeutils.utcnow()
    row = ctx.session.execute(
        sa.select(_CN.c.id, _CN.c.uuid).where(
            _live_node(host, nodename))).first()
    if row is not None:
        ctx.session.execute(_CN.update().where(_CN.c.id == row.id).values(
            updated_at=now, **changes))
        return row.id, row.uuid
    node_uuid = columns.get('uuid') or str(uuid_lib.uuid4())
    old = ctx.session.execute(sa.select(_CN.c.id, _CN.c.deleted).where(
        _CN.c.uuid == node_uuid)).first()
    if old is not None and old.deleted:
        LOG.info('Compute node %s (%s, %s) was deleted; restoring it',
                 node_uuid, host, nodename)
        ctx.session.execute(_CN.update().where(_CN.c.id == old.id).values(
            host=host, hypervisor_hostname=nodename, deleted=0,
            deleted_at=None, updated_at=now, **changes))
        return old.id, node_uuid
    insert = dict(_REQUIRED_DEFAULTS)
    insert.update(changes)
    insert.setdefault('service_id', _service_id(ctx, host))
    return ctx.session.execute(_CN.insert().values(
        uuid=node_uuid, host=host, hypervisor_hostname=nodename,
        mapped=0, created_at=now, updated_at=now, deleted=0,
        **insert)).inserted_primary_key[0], node_uuid


_LIVE_NODES_OF_HOSTS = sa.select(
    _CN.c.id, _CN.c.uuid, _CN.c.host, _CN.c.hypervisor_hostname).where(
    _CN.c.host.in_(sa.bindparam('p_hosts', expanding=True)),
    _CN.c.deleted == 0)


@functools.lru_cache(maxsize=32)
def _node_update(columns):
    """The UPDATE by id of ``columns`` and updated_at, built once per
    column set: a batch's nodes share one, run as an executemany.
    """
    return _CN.update().where(_CN.c.id == sa.bindparam('p_id')).values(
        {name: sa.bindparam('p_' + name)
         for name in sorted(set(columns) | {'updated_at'})})


def _live_nodes(ctx, keys):
    """(host, nodename) -> (id, uuid) of the live nodes among ``keys``."""
    hosts = sorted({host for host, _node in keys})
    found = {}
    for chunk in db_api.chunks(hosts):
        for row in ctx.session.execute(_LIVE_NODES_OF_HOSTS,
                                       {'p_hosts': chunk}):
            found[(row.host, row.hypervisor_hostname)] = (row.id, row.uuid)
    return found


def _save_many(ctx, nodes):
    """:func:`_save_node` of each of ``nodes`` in order, with one read
    for the nodes that exist and their updates run together.
    """
    if len(nodes) == 1:
        return [_save_node(ctx, *nodes[0])]
    known = _live_nodes(ctx, [(host, node) for host, node, _c in nodes])
    now = timeutils.utcnow()
    saved = []
    pending, shape = [], None

    def flush():
        if pending:
            ctx.session.execute(_node_update(shape), list(pending))
            del pending[:]
    for host, nodename, columns in nodes:
        found = known.get((host, nodename))
        if found is None:
            flush()
            saved.append(_save_node(ctx, host, nodename, columns))
            continue
        changes = {k: v for k, v in columns.items() if k not in _PROTECTED}
        # NOTE: consecutive nodes with the same columns go in one
        # executemany; a change of shape sends what is pending first, so
        # that rows are still written in the order given.
        columns_of_node = tuple(sorted(changes))
        if columns_of_node != shape:
            flush()
            shape = columns_of_node
        params = {'p_' + k: v for k, v in changes.items()}
        params['p_id'] = found[0]
        params['p_updated_at'] = now
        pending.append(params)
        saved.append(found)
    flush()
    return saved


def _save_nodes(ctxt, database, nodes):
    """[(id, uuid)] of ``nodes`` [(host, nodename, columns)], one
    transaction.
    """
    def save(ctx):
        return _save_many(ctx, nodes)
    try:
        return db_api.write(database, save, ctxt)
    except db_exc.DBDuplicateEntry:
        # NOTE: another worker created the same node a moment ago; its row
        # is now the live one and this save becomes an update of it.
        return db_api.write(database, save, ctxt)


def save_compute_node(ctxt, database, host, nodename, values, brief=False):
    """Create or update the live compute node (host, nodename).

    A new node takes ``values['uuid']`` as its uuid when given (a node
    soft-deleted with that uuid is brought back to life, as upstream),
    else a new uuid4. An existing node keeps its uuid; ``mapped`` and the
    timestamps are never taken from ``values``.

    :param values: compute_nodes column -> value; JSON columns as Python
        structures.
    :param brief: return only the node's ``id`` and ``uuid``, without
        reading the saved row back.
    :returns: the saved record dict.
    :raises ValueError: a key that is not a compute_nodes column.
    """
    [(node_id, node_uuid)] = _save_nodes(
        ctxt, database, [(host, nodename, _encode(values))])
    if brief:
        return {'id': node_id, 'uuid': node_uuid}

    def fetch(ctx):
        return _record(ctx.session.execute(
            sa.select(_CN).where(_CN.c.id == node_id)).first())
    return database.reader(fetch)(ctxt)


def save_compute_nodes(ctxt, database, nodes):
    """:func:`save_compute_node` (brief) of several nodes, one transaction.

    Nodes are written in (host, nodename) order, so that two callers
    saving overlapping sets take their row locks in the same order.

    :param nodes: [{'host', 'nodename', 'values'}].
    :returns: [{'id', 'uuid'}] in the order of ``nodes``.
    :raises ValueError: a key that is not a compute_nodes column (nothing
        is saved).
    """
    prepared = [(n['host'], n['nodename'], _encode(n['values']))
                for n in nodes]
    order = sorted(range(len(prepared)), key=lambda i: prepared[i][:2])
    saved = _save_nodes(ctxt, database, [prepared[i] for i in order])
    result = [None] * len(prepared)
    for index, (node_id, node_uuid) in zip(order, saved):
        result[index] = {'id': node_id, 'uuid': node_uuid}
    return result


def list_compute_nodes(ctxt, database, host=None, uuids=None):
    """Live compute node records (of one host, or with given uuids)."""
    def fetch(ctx):
        query = sa.select(_CN).where(_CN.c.deleted == 0).order_by(_CN.c.id)
        if host is not None:
            query = query.where(_CN.c.host == host)
        if uuids is None:
            return [_record(r) for r in ctx.session.execute(query)]
        found = []
        for chunk in db_api.chunks(uuids):
            found.extend(_record(r) for r in ctx.session.execute(
                query.where(_CN.c.uuid.in_(chunk))))
        return found
    return database.reader(fetch)(ctxt)


def get_compute_node(ctxt, database, uuid=None, host=None, nodename=None,
                     node_id=None):
    """One live compute node record, or None.

    Looked up by ``uuid``, by ``node_id``, or by ``host`` (and
    ``nodename``; without it, the host's first node).
    """
    def fetch(ctx):
        query = sa.select(_CN).where(_CN.c.deleted == 0).order_by(_CN.c.id)
        if uuid is not None:
            query = query.where(_CN.c.uuid == uuid)
        if node_id is not None:
            query = query.where(_CN.c.id == node_id)
        if host is not None:
            query = query.where(_CN.c.host == host)
        if nodename is not None:
            query = query.where(_CN.c.hypervisor_hostname == nodename)
        row = ctx.session.execute(query.limit(1)).first()
        return None if row is None else _record(row)
    if uuid is None and host is None and node_id is None:
        raise ValueError('get_compute_node needs uuid, node_id or host')
    return database.reader(fetch)(ctxt)


def delete_compute_node(ctxt, database, host, nodename):
    """Soft-delete the live node (host, nodename); False if there was none.
    """
    def delete(ctx):
        row = ctx.session.execute(sa.select(_CN.c.id).where(
            _live_node(host, nodename))).first()
        if row is None:
            return False
        now = timeutils.utcnow()
        ctx.session.execute(_CN.update().where(_CN.c.id == row.id).values(
            deleted=row.id, deleted_at=now, updated_at=now))
        return True
    return db_api.write(database, delete, ctxt)


def list_unmapped_nodes(ctxt, database):
    """Live compute node records not yet mapped by host discovery."""
    def fetch(ctx):
        return [_record(r) for r in ctx.session.execute(
            sa.select(_CN).where(_CN.c.deleted == 0, _CN.c.mapped == 0)
            .order_by(_CN.c.id))]
    return database.reader(fetch)(ctxt)


def mark_mapped(ctxt, database, ids):
    """Set ``mapped`` on compute nodes by id; returns how many changed."""
    ids = list(ids)

    def update(ctx):
        changed = 0
        for chunk in db_api.chunks(ids):
            changed += ctx.session.execute(_CN.update().where(
                _CN.c.id.in_(chunk)).values(mapped=1)).rowcount
        return changed
    return db_api.write(database, update, ctxt) if ids else 0


# --- services ----------------------------------------------------------------

def service_record(service):
    """A :class:`common.servicegroup.ServiceRecord` of a service dict.

    So that ``servicegroup.API().service_is_up(...)`` decides up/down the
    same way for every caller.
    """
    def when(value):
        return None if value is None else timeutils.normalize_time(
            timeutils.parse_isotime(value))
    return servicegroup.ServiceRecord(
        host=service['host'], binary=service['binary'],
        topic=service['topic'], report_count=service['report_count'],
        disabled=bool(service['disabled']),
        disabled_reason=service['disabled_reason'],
        forced_down=bool(service['forced_down']),
        created_at=when(service['created_at']),
        updated_at=when(service['last_seen_up'] or service['created_at']))


def list_services(ctxt, database, binary=None, host=None, hosts=None):
    """Live service records, in host then binary order.

    :param hosts: only those of these hosts (an iterable), when given.
    """
    def fetch(ctx):
        query = sa.select(_SV).where(_SV.c.deleted == 0).order_by(
            _SV.c.host, _SV.c.binary)
        if binary is not None:
            query = query.where(_SV.c.binary == binary)
        if host is not None:
            query = query.where(_SV.c.host == host)
        if hosts is None:
            return [_record(r) for r in ctx.session.execute(query)]
        found = []
        for chunk in db_api.chunks(sorted(set(hosts))):
            found.extend(_record(r) for r in ctx.session.execute(
                query.where(_SV.c.host.in_(chunk))))
        return sorted(found, key=lambda s: (s['host'], s['binary']))
    return database.reader(fetch)(ctxt)


def get_service(ctxt, database, service_id=None, uuid=None, host=None,
                binary=None):
    """One live service record (by id, uuid, or host and binary), or None.
    """
    if service_id is None and uuid is None and host is None:
        raise ValueError('get_service needs service_id, uuid or host')
    return database.reader(lambda ctx: select_service(
        ctx, service_id=service_id, uuid=uuid, host=host, binary=binary))(
        ctxt)


def select_service(ctx, service_id=None, uuid=None, host=None, binary=None):
    """:func:`get_service` within the transaction ``ctx`` (e.g. a check
    made by the write it guards).
    """
    query = sa.select(_SV).where(_SV.c.deleted == 0)
    if service_id is not None:
        query = query.where(_SV.c.id == service_id)
    if uuid is not None:
        query = query.where(_SV.c.uuid == uuid)
    if host is not None:
        query = query.where(_SV.c.host == host)
    if binary is not None:
        query = query.where(_SV.c.binary == binary)
    row = ctx.session.execute(query.limit(1)).first()
    return None if row is None else _record(row)


def update_service(ctxt, database, service_id, values):
    """Set admin fields (disabled, disabled_reason, forced_down).

    :returns: the updated record, or None for an unknown live service.
    :raises ValueError: for another field.
    """
    unknown = set(values) - set(_SERVICE_UPDATABLE)
    if unknown:
        raise ValueError('not updatable: %s' % ', '.join(sorted(unknown)))

    def update(ctx):
        changed = ctx.session.execute(_SV.update().where(
            _SV.c.id == service_id, _SV.c.deleted == 0).values(
                updated_at=timeutils.utcnow(), **values)).rowcount
        if not changed:
            return None
        return _record(ctx.session.execute(
            sa.select(_SV).where(_SV.c.id == service_id)).first())
    return db_api.write(database, update, ctxt)


def delete_service(ctxt, database, service_id):
    """Soft-delete a service; a compute service takes its nodes along.

    :returns: the deleted record (with ``deleted_nodes``: the uuids of
        the compute nodes deleted with it), or None for an unknown live
        service.
    """
    def delete(ctx):
        row = ctx.session.execute(sa.select(_SV).where(
            _SV.c.id == service_id, _SV.c.deleted == 0)).first()
        if row is None:
            return None
        now = timeutils.utcnow()
        ctx.session.execute(_SV.update().where(_SV.c.id == row.id).values(
            deleted=row.id, deleted_at=now, updated_at=now))
        nodes = []
        if row.binary == COMPUTE_BINARY:
            for node in ctx.session.execute(sa.select(_CN.c.id, _CN.c.uuid)
                                            .where(_CN.c.host == row.host,
                                                   _CN.c.deleted == 0)):
                ctx.session.execute(_CN.update().where(
                    _CN.c.id == node.id).values(
                        deleted=node.id, deleted_at=now, updated_at=now))
                nodes.append(node.uuid)
        record = _record(row)
        record['deleted_nodes'] = nodes
        return record
    return db_api.write(database, delete, ctxt)


def report_services(ctxt, database, hosts, binary):
    """One heartbeat for many services of one binary, in one transaction.

    :returns: the hosts that have no live record of ``binary``.
    """
    hosts = list(dict.fromkeys(hosts))

    def report(ctx):
        now = timeutils.utcnow()
        found = set()
        for chunk in db_api.chunks(hosts):
            ctx.session.execute(_SV.update().where(
                _SV.c.host.in_(chunk), _SV.c.binary == binary,
                _SV.c.deleted == 0).values(
                    report_count=_SV.c.report_count + 1, last_seen_up=now))
            found.update(ctx.session.execute(sa.select(_SV.c.host).where(
                _SV.c.host.in_(chunk), _SV.c.binary == binary,
                _SV.c.deleted == 0)).scalars())
        return [h for h in hosts if h not in found]
    return db_api.write(database, report, ctxt) if hosts else []
