# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The api database records of the boot path, as functions.

A server exists in the api database before it has a cell: the API writes
a build request (the instance as the user sees it while it is
scheduled), its request spec and an instance mapping without a cell, in
one transaction. The conductor reads them, points the mapping at the cell
that got the instance (or cell0 when no host could take it) and deletes
the build request. Host mappings say which cell each compute host is in.

Every function takes the request context first and an optional
``database`` (the api :class:`common.db.api.Database`; by default
``common.db.cells.api_db`` configured from ``[api_database]``), so that a
service or a test may use a database of its own.

Most of these run once or twice per server built, so their statements
are built once, here, with bound parameters (``sa.bindparam``; an
expanding one for IN lists), and run on a bare Core connection
(``Database.reader_connection`` / ``writer_connection``): building a
statement and its cache key at every call, and an ORM Session per
transaction, cost the API and the conductor more CPU than the SQL.
"""

import json
import logging

import orjson
from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api as db_api
from common.db import api_tables
from common.db import cells
from common.db import instance_records
from common import exception
from common.numa import constraints
from common.objects import instance as instance_obj
from common.objects import request_spec as spec_obj

LOG = logging.getLogger(__name__)

_BR = api_tables.build_requests
_RS = api_tables.request_specs
_IM = api_tables.instance_mappings
_HM = api_tables.host_mappings
_CM = api_tables.cell_mappings


# --- statements, built once (parameters are bound at execution) -------------

# NOTE: parameter names differ from the column names of the table an
# INSERT or UPDATE writes: SQLAlchemy reserves those for the VALUES/SET.
_INSERT_BUILD_REQUESTS = _BR.insert()
_INSERT_REQUEST_SPECS = _RS.insert()
_INSERT_MAPPINGS = _IM.insert()
_BUILD_REQUEST = sa.select(_BR).where(
    _BR.c.instance_uuid == sa.bindparam('uuid'))
_BUILD_REQUESTS = sa.select(_BR).where(
    _BR.c.instance_uuid.in_(sa.bindparam('uuids', expanding=True)))
_DELETE_BUILD_REQUEST = _BR.delete().where(
    _BR.c.instance_uuid == sa.bindparam('uuid'))
_CELL_ID = sa.select(_CM.c.id).where(_CM.c.uuid == sa.bindparam('cell_uuid'))
# NOTE: the cell's id found by the UPDATE itself, one round trip less per
# build; an unknown cell updates nothing (see finish_build_request).
_MAP_TO_CELL = _IM.update().where(
    _IM.c.instance_uuid == sa.bindparam('uuid'),
    sa.exists().where(_CM.c.uuid == sa.bindparam('cell_uuid'))).values(
        cell_id=_CELL_ID.scalar_subquery(), updated_at=sa.bindparam('now'))
_REQUEST_SPECS = sa.select(_RS.c.instance_uuid, _RS.c.spec).where(
    _RS.c.instance_uuid.in_(sa.bindparam('uuids', expanding=True)))
_UPDATE_REQUEST_SPEC = _RS.update().where(
    _RS.c.instance_uuid == sa.bindparam('uuid')).values(
        spec=sa.bindparam('text'), updated_at=sa.bindparam('now'))
_MAPPINGS = sa.select(
    _IM.c.instance_uuid, _IM.c.project_id, _IM.c.user_id,
    _IM.c.queued_for_delete, _IM.c.created_at,
    _CM.c.uuid.label('cell_uuid')).select_from(
    _IM.outerjoin(_CM, _IM.c.cell_id == _CM.c.id))
_MAPPING = _MAPPINGS.where(_IM.c.instance_uuid == sa.bindparam('uuid'))
_MAPPINGS_OF = _MAPPINGS.where(
    _IM.c.instance_uuid.in_(sa.bindparam('uuids', expanding=True)))
_SET_MAPPING_CELL = _IM.update().where(
    _IM.c.instance_uuid == sa.bindparam('uuid')).values(
        cell_id=sa.bindparam('cell'), updated_at=sa.bindparam('now'))
_SET_QUEUED_FOR_DELETE = _IM.update().where(
    _IM.c.instance_uuid == sa.bindparam('uuid')).values(
        queued_for_delete=sa.bindparam('queued'),
        updated_at=sa.bindparam('now'))
_DELETE_MAPPING = _IM.delete().where(
    _IM.c.instance_uuid == sa.bindparam('uuid'))
_HOST_CELLS = sa.select(_HM.c.host, _CM.c.uuid).select_from(
    _HM.join(_CM, _HM.c.cell_id == _CM.c.id))
_HOST_CELL = _HOST_CELLS.where(_HM.c.host == sa.bindparam('name'))
_HOST_CELLS_OF = _HOST_CELLS.where(
    _HM.c.host.in_(sa.bindparam('names', expanding=True)))
_DELETE_HOST_MAPPING = _HM.delete().where(
    _HM.c.host == sa.bindparam('name'))
# NOTE: quota counting (twice per boot) sums the sizes the database keeps;
# only build requests written before those columns existed are read.
_BUILDING = _BR.c.project_id == sa.bindparam('project_id')
_BUILDING_SIZES = sa.select(
    sa.func.count(_BR.c.vcpus), sa.func.sum(_BR.c.vcpus),
    sa.func.sum(_BR.c.memory_mb), sa.func.count()).where(_BUILDING)
_BUILDING_UNSIZED = sa.select(_BR).where(_BUILDING, _BR.c.vcpus.is_(None))


def _db(database):
    return database or cells.configure_api()


def _read(database, fn, ctxt, *args):
    """``fn(ctx, *args)`` in a read transaction with an ORM Session
    (``ctx.session``), for callers' functions that need one.
    """
    return _db(database).reader(fn)(ctxt, *args)


def _read_core(database, fn, ctxt, *args):
    """``fn(ctx, *args)`` in a read transaction on ``ctx.connection``."""
    return _db(database).reader_connection(fn)(ctxt, *args)


def _write(database, fn, ctxt, *args):
    """``fn(ctx, *args)`` in a write transaction on ``ctx.connection``,
    run again after a deadlock.
    """
    write = db_api.retry_on_deadlock(_db(database).writer_connection(fn))
    return write(ctxt, *args)


def _dumps(value):
    return json.dumps(value, separators=(',', ':'), sort_keys=True)


def _cell_id(conn, cell_uuid):
    """The id of a cell mapping, for the foreign keys.

    :param conn: the transaction's Connection (or Session).
    :raises common.db.cells.CellMappingNotFound: for an unknown uuid.
    """
    found = conn.execute(_CELL_ID, {'cell_uuid': cell_uuid}).scalar()
    if found is None:
        raise cells.CellMappingNotFound(uuid=cell_uuid)
    return found


# --- build requests, request specs and instance mappings -------------------

def create_build_requests(ctxt, items, database=None):
    """Record new servers that wait for a host, all or none.

    One transaction writes, per instance, its build request, its request
    spec and its instance mapping (no cell yet).

    :param items: list of (Instance, RequestSpec).
    :raises oslo_db.exception.DBDuplicateEntry: an instance uuid is taken.
    """
    now = timeutils.utcnow()
    requests, specs, mappings = [], [], []
    for instance, spec in items:
        requests.append(dict(
            instance_uuid=instance.uuid, project_id=instance.project_id,
            instance=_dumps(instance.to_primitive()), created_at=now,
            **instance_records.flavor_sizes(instance.flavor)))
        specs.append(dict(instance_uuid=instance.uuid,
                          spec=_dumps(spec.to_primitive()), created_at=now))
        mappings.append(dict(
            instance_uuid=instance.uuid, cell_id=None,
            project_id=instance.project_id, user_id=instance.user_id,
            queued_for_delete=False, created_at=now))

    def create(ctx):
        # NOTE: one statement per table for a whole multi-create (an
        # executemany, which the drivers send as one multi-row INSERT).
        conn = ctx.connection
        conn.execute(_INSERT_BUILD_REQUESTS, requests)
        conn.execute(_INSERT_REQUEST_SPECS, specs)
        conn.execute(_INSERT_MAPPINGS, mappings)
    _write(database, create, ctxt)


def _build_request(row):
    instance = instance_obj.Instance.from_primitive(json.loads(row.instance))
    if instance.created_at is None and row.created_at is not None:
        instance.created_at = row.created_at.isoformat()
    return instance


def get_build_request(ctxt, uuid, database=None):
    """The instance a build request holds, or None when there is none."""
    def fetch(ctx):
        return ctx.connection.execute(_BUILD_REQUEST, {'uuid': uuid}).first()
    row = _read_core(database, fetch, ctxt)
    return None if row is None else _build_request(row)


def get_build_requests(ctxt, uuids, database=None):
    """instance uuid -> Instance for the build requests that still exist."""
    def fetch(ctx):
        rows = []
        for chunk in db_api.chunks(uuids):
            rows.extend(ctx.connection.execute(_BUILD_REQUESTS,
                                               {'uuids': chunk}))
        return rows
    return {row.instance_uuid: _build_request(row)
            for row in _read_core(database, fetch, ctxt)}


def list_build_requests(ctxt, project_id=None, database=None):
    """The instances of every build request (of one project), oldest first.
    """
    def fetch(ctx):
        query = sa.select(_BR).order_by(_BR.c.id)
        if project_id is not None:
            query = query.where(_BR.c.project_id == project_id)
        return list(ctx.connection.execute(query))
    return [_build_request(row)
            for row in _read_core(database, fetch, ctxt)]


def count_build_requests(ctxt, project_id, database=None):
    """(build requests, their cores, their RAM MiB) of a project.

    For quota counting, which runs twice per boot: summed by the
    database (:func:`instance_records.sum_sizes`); only a request written
    before the sizes were columns is read from its JSON.
    """
    def fetch(ctx):
        return instance_records.sum_sizes(
            ctx.connection, _BUILDING_SIZES, _BUILDING_UNSIZED,
            {'project_id': project_id}, _flavor_of_build_request)
    return _read_core(database, fetch, ctxt)


def _flavor_of_build_request(row):
    return orjson.loads(row.instance).get('flavor')


def delete_build_request(ctxt, uuid, database=None):
    """Delete a build request.

    :returns: False when it was already gone. The conductor relies on this
        to notice a user's delete that raced the build.
    """
    def delete(ctx):
        return ctx.connection.execute(_DELETE_BUILD_REQUEST,
                                      {'uuid': uuid}).rowcount > 0
    return _write(database, delete, ctxt)


def finish_build_request(ctxt, uuid, cell_uuid, database=None):
    """Map an instance to its cell and delete its build request, at once.

    :returns: False, changing nothing, when the build request was already
        gone (the user deleted the server while it was scheduled).
    """
    def finish(ctx):
        conn = ctx.connection
        deleted = conn.execute(_DELETE_BUILD_REQUEST,
                               {'uuid': uuid}).rowcount
        if not deleted:
            return False
        # NOTE: an unknown cell updates nothing and is told apart from a
        # missing mapping only then.
        mapped = conn.execute(_MAP_TO_CELL, {
            'uuid': uuid, 'cell_uuid': cell_uuid,
            'now': timeutils.utcnow()}).rowcount
        if not mapped:
            _cell_id(conn, cell_uuid)
        return True
    return _write(database, finish, ctxt)


def get_request_spec(ctxt, uuid, database=None):
    """The RequestSpec of an instance.

    :raises common.exception.RequestSpecNotFound: when there is none.
    """
    found = get_request_specs(ctxt, [uuid], database)
    if uuid not in found:
        raise exception.RequestSpecNotFound(instance_uuid=uuid)
    return found[uuid]


def get_request_specs(ctxt, uuids, database=None):
    """instance uuid -> RequestSpec for those that have one."""
    def fetch(ctx):
        rows = []
        for chunk in db_api.chunks(uuids):
            rows.extend(ctx.connection.execute(_REQUEST_SPECS,
                                               {'uuids': chunk}))
        return rows
    return {row.instance_uuid: spec_obj.RequestSpec.from_primitive(
        json.loads(row.spec)) for row in _read_core(database, fetch, ctxt)}


def save_request_spec(ctxt, uuid, spec, database=None, create=True):
    """Write (create or replace) the RequestSpec of an instance.

    :param create: False only replaces one: an instance whose spec is
        gone (deleted meanwhile) gets none.
    """
    text = _dumps(spec.to_primitive())

    def save(ctx):
        now = timeutils.utcnow()
        updated = ctx.connection.execute(_UPDATE_REQUEST_SPEC, {
            'uuid': uuid, 'text': text, 'now': now})
        if create and not updated.rowcount:
            ctx.connection.execute(_INSERT_REQUEST_SPECS, {
                'instance_uuid': uuid, 'spec': text, 'created_at': now})
    _write(database, save, ctxt)


def keep_spec_flavor(ctxt, uuid, flavor, image_meta, pci_requests,
                     database=None):
    """Give an instance's stored RequestSpec ``flavor``, with the NUMA
    request it makes with the image's properties ``image_meta`` (as the
    API computes it for a boot or a resize) and ``pci_requests``: a
    resize's flavor, or the old one back. An instance with no stored
    spec (gone, or booted before specs were kept) gets none.
    """
    try:
        spec = get_request_spec(ctxt, uuid, database)
    except exception.RequestSpecNotFound:
        return
    spec.flavor = flavor
    numa = constraints.get_constraints(flavor, dict(image_meta or {}))
    spec.numa_topology = None if numa is None else numa.to_primitive()
    spec.pci_requests = list(pci_requests or [])
    save_request_spec(ctxt, uuid, spec, database, create=False)


def _mapping(row):
    return {'instance_uuid': row.instance_uuid, 'cell_uuid': row.cell_uuid,
            'project_id': row.project_id, 'user_id': row.user_id,
            'queued_for_delete': bool(row.queued_for_delete)}


def get_instance_mapping(ctxt, uuid, database=None):
    """{instance_uuid, cell_uuid or None, project_id, user_id,
    queued_for_delete} of an instance, or None when it has no mapping.
    """
    def fetch(ctx):
        return ctx.connection.execute(_MAPPING, {'uuid': uuid}).first()
    row = _read_core(database, fetch, ctxt)
    return None if row is None else _mapping(row)


def get_instance_mappings(ctxt, uuids, database=None):
    """instance uuid -> mapping dict, for those that have one."""
    def fetch(ctx):
        rows = []
        for chunk in db_api.chunks(uuids):
            rows.extend(ctx.connection.execute(_MAPPINGS_OF,
                                               {'uuids': chunk}))
        return rows
    return {row.instance_uuid: _mapping(row)
            for row in _read_core(database, fetch, ctxt)}


def list_instance_mappings(ctxt, project_id=None, cell_uuid=None,
                           database=None):
    """Mapping dicts (of one project, of one cell), oldest first."""
    def fetch(ctx):
        query = _MAPPINGS.order_by(_IM.c.id)
        if project_id is not None:
            query = query.where(_IM.c.project_id == project_id)
        if cell_uuid is not None:
            query = query.where(_CM.c.uuid == cell_uuid)
        return list(ctx.connection.execute(query))
    return [_mapping(row) for row in _read_core(database, fetch, ctxt)]


def set_instance_mapping_cell(ctxt, uuid, cell_uuid, database=None):
    """Point an instance's mapping at a cell.

    :raises common.exception.InstanceMappingNotFound: no mapping.
    :raises common.db.cells.CellMappingNotFound: unknown cell.
    """
    set_instance_mappings_cell(ctxt, [uuid], cell_uuid, database)


def set_instance_mappings_cell(ctxt, uuids, cell_uuid, database=None):
    """Point several instances' mappings at one cell.

    :raises common.exception.InstanceMappingNotFound: names the first
        instance without a mapping (nothing is changed then).
    """
    def update(ctx):
        cell_id = _cell_id(ctx.connection, cell_uuid)
        now = timeutils.utcnow()
        for uuid in uuids:
            if not ctx.connection.execute(_SET_MAPPING_CELL, {
                    'uuid': uuid, 'cell': cell_id, 'now': now}).rowcount:
                raise exception.InstanceMappingNotFound(uuid=uuid)
    _write(database, update, ctxt)


def create_instance_mapping(ctxt, uuid, project_id, cell_uuid=None,
                            user_id=None, database=None):
    """Create an instance mapping (``cell_v2 map_instances``).

    :raises oslo_db.exception.DBDuplicateEntry: it exists already.
    """
    def create(ctx):
        cell_id = None if cell_uuid is None else _cell_id(ctx.connection,
                                                          cell_uuid)
        ctx.connection.execute(_INSERT_MAPPINGS, {
            'instance_uuid': uuid, 'cell_id': cell_id,
            'project_id': project_id, 'user_id': user_id,
            'queued_for_delete': False, 'created_at': timeutils.utcnow()})
    _write(database, create, ctxt)


def set_queued_for_delete(ctxt, uuid, queued=True, database=None):
    """Mark an instance's mapping as deleted (kept for the history).

    :returns: False when the instance has no mapping.
    """
    def update(ctx):
        return ctx.connection.execute(_SET_QUEUED_FOR_DELETE, {
            'uuid': uuid, 'queued': queued,
            'now': timeutils.utcnow()}).rowcount > 0
    return _write(database, update, ctxt)


def delete_instance_mapping(ctxt, uuid, database=None):
    """Delete an instance's mapping; False when there was none.

    NOTE: only for a server that never existed in any cell (its build
    request was deleted before it got one); others keep theirs.
    """
    def delete(ctx):
        return ctx.connection.execute(_DELETE_MAPPING,
                                      {'uuid': uuid}).rowcount > 0
    return _write(database, delete, ctxt)


# --- host mappings -----------------------------------------------------------

def get_host_mapping(ctxt, host, database=None):
    """The uuid of the cell ``host`` is mapped to, or None."""
    def fetch(ctx):
        row = ctx.connection.execute(_HOST_CELL, {'name': host}).first()
        return None if row is None else row.uuid
    return _read_core(database, fetch, ctxt)


def _host_cells(conn, hosts):
    """host -> cell uuid of the mapped ``hosts``, on ``conn``."""
    found = {}
    for chunk in db_api.chunks(hosts):
        for host, cell_uuid in conn.execute(_HOST_CELLS_OF,
                                            {'names': chunk}):
            found[host] = cell_uuid
    return found


def get_host_mappings(ctxt, hosts, database=None):
    """host -> cell uuid, for the mapped ones among ``hosts``."""
    def fetch(ctx):
        return _host_cells(ctx.connection, list(hosts))
    return _read_core(database, fetch, ctxt)


def list_host_mappings(ctxt, cell_uuid=None, database=None):
    """[(host, cell uuid)] in host order (of one cell)."""
    def fetch(ctx):
        query = _HOST_CELLS.order_by(_HM.c.host)
        if cell_uuid is not None:
            query = query.where(_CM.c.uuid == cell_uuid)
        return [(row.host, row.uuid)
                for row in ctx.connection.execute(query)]
    return _read_core(database, fetch, ctxt)


def create_host_mapping(ctxt, host, cell_uuid, database=None):
    """Map ``host`` to a cell.

    :raises common.exception.HostMappingExists: it is mapped already.
    :raises common.db.cells.CellMappingNotFound: unknown cell.
    """
    def create(ctx):
        ctx.connection.execute(_HM.insert().values(
            cell_id=_cell_id(ctx.connection, cell_uuid), host=host,
            created_at=timeutils.utcnow()))
    try:
        _write(database, create, ctxt)
    except db_exc.DBDuplicateEntry:
        raise exception.HostMappingExists(
            name=host, cell_uuid=get_host_mapping(ctxt, host, database))
    except sa.exc.IntegrityError as exc:
        if not db_api.is_unique_violation(exc):
            raise
        raise exception.HostMappingExists(
            name=host, cell_uuid=get_host_mapping(ctxt, host, database))


def delete_host_mapping(ctxt, host, database=None):
    """Remove the host mapping of ``host``; False when there was none."""
    def delete(ctx):
        return ctx.connection.execute(_DELETE_HOST_MAPPING,
                                      {'name': host}).rowcount > 0
    return _write(database, delete, ctxt)


# --- cells -------------------------------------------------------------------

def list_cells(ctxt, database=None):
    """Every cell mapping (:class:`common.db.cells.CellMapping`), by id."""
    return cells.get_cell_mappings(ctxt, _db(database))


def get_cell(ctxt, cell_uuid, database=None):
    """The CellMapping of ``cell_uuid``.

    :raises common.db.cells.CellMappingNotFound: when there is none.
    """
    return cells.get_cell_mapping(ctxt, cell_uuid, _db(database))
