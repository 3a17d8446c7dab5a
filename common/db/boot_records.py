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
"""

import json
import logging

import orjson
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api as db_api
from common.db import api_tables
from common.db import cells
from common.db import instance_records
from common import exception
from common.objects import instance as instance_obj
from common.objects import request_spec as spec_obj

LOG = logging.getLogger(__name__)

_BR = api_tables.build_requests
_RS = api_tables.request_specs
_IM = api_tables.instance_mappings
_HM = api_tables.host_mappings
_CM = api_tables.cell_mappings

# NOTE: MariaDB may pick one of two colliding transactions (the API
# writing build requests while conductors finish others) as a deadlock
# victim; the whole transaction is run again.
_RETRY = oslo_db_api.wrap_db_retry(max_retries=5, retry_interval=0.05,
                                   retry_on_deadlock=True, jitter=True)
# NOTE: IN lists are chunked so that a large multi-create stays below
# every backend's bound-parameter limit.
_CHUNK = 500


def _db(database):
    return database or cells.configure_api()


def _read(database, fn, ctxt, *args):
    return _db(database).reader(fn)(ctxt, *args)


def _write(database, fn, ctxt, *args):
    return _RETRY(_db(database).writer(fn))(ctxt, *args)


def _chunks(values):
    values = list(values)
    for start in range(0, len(values), _CHUNK):
        yield values[start:start + _CHUNK]


def _dumps(value):
    return json.dumps(value, separators=(',', ':'), sort_keys=True)


def _cell_id(ctxt, cell_uuid):
    """The id of a cell mapping, for the foreign keys.

    :raises common.db.cells.CellMappingNotFound: for an unknown uuid.
    """
    found = ctxt.session.execute(
        sa.select(_CM.c.id).where(_CM.c.uuid == cell_uuid)).scalar()
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
        # NOTE: one statement per table for a whole multi-create.
        ctx.session.execute(_BR.insert(), requests)
        ctx.session.execute(_RS.insert(), specs)
        ctx.session.execute(_IM.insert(), mappings)
    _write(database, create, ctxt)


def _build_request(row):
    instance = instance_obj.Instance.from_primitive(json.loads(row.instance))
    if instance.created_at is None and row.created_at is not None:
        instance.created_at = row.created_at.isoformat()
    return instance


def get_build_request(ctxt, uuid, database=None):
    """The instance a build request holds, or None when there is none."""
    def fetch(ctx):
        return ctx.session.execute(sa.select(_BR).where(
            _BR.c.instance_uuid == uuid)).first()
    row = _read(database, fetch, ctxt)
    return None if row is None else _build_request(row)


def get_build_requests(ctxt, uuids, database=None):
    """instance uuid -> Instance for the build requests that still exist."""
    def fetch(ctx):
        rows = []
        for chunk in _chunks(uuids):
            rows.extend(ctx.session.execute(sa.select(_BR).where(
                _BR.c.instance_uuid.in_(chunk))))
        return rows
    return {row.instance_uuid: _build_request(row)
            for row in _read(database, fetch, ctxt)}


def after_scheduling(ctxt, uuids, hosts, zones_in, database=None):
    """What the conductor reads once the scheduler chose, in one
    transaction.

    :param zones_in: ``fn(ctx, hosts)`` -> host -> zone names, run in
        the same transaction (the conductor's
        :func:`services.conductor.host_zones.zones_in`).
    :returns: (uuids among ``uuids`` whose build request still exists,
        host -> cell uuid of the mapped ``hosts``, ``zones_in``'s answer).
    """
    hosts = sorted(set(h for h in hosts if h))

    def fetch(ctx):
        still = set()
        for chunk in _chunks(uuids):
            still.update(ctx.session.execute(
                sa.select(_BR.c.instance_uuid).where(
                    _BR.c.instance_uuid.in_(chunk))).scalars())
        return still, _host_cells(ctx, hosts), zones_in(ctx, hosts)
    return _read(database, fetch, ctxt)


def list_build_requests(ctxt, project_id=None, database=None):
    """The instances of every build request (of one project), oldest first.
    """
    def fetch(ctx):
        query = sa.select(_BR).order_by(_BR.c.id)
        if project_id is not None:
            query = query.where(_BR.c.project_id == project_id)
        return list(ctx.session.execute(query))
    return [_build_request(row) for row in _read(database, fetch, ctxt)]


def count_build_requests(ctxt, project_id, database=None):
    """(build requests, their cores, their RAM MiB) of a project.

    For quota counting, which runs twice per boot: summed by the
    database (:func:`instance_records.sum_sizes`); only a request written
    before the sizes were columns is read from its JSON.
    """
    def flavor_of(row):
        return orjson.loads(row.instance).get('flavor')

    def fetch(ctx):
        return instance_records.sum_sizes(
            ctx, _BR, _BR.c.project_id == project_id, flavor_of)
    return _read(database, fetch, ctxt)


def delete_build_request(ctxt, uuid, database=None):
    """Delete a build request.

    :returns: False when it was already gone. The conductor relies on this
        to notice a user's delete that raced the build.
    """
    def delete(ctx):
        return ctx.session.execute(_BR.delete().where(
            _BR.c.instance_uuid == uuid)).rowcount > 0
    return _write(database, delete, ctxt)


def finish_build_request(ctxt, uuid, cell_uuid, database=None):
    """Map an instance to its cell and delete its build request, at once.

    :returns: False, changing nothing, when the build request was already
        gone (the user deleted the server while it was scheduled).
    """
    def finish(ctx):
        deleted = ctx.session.execute(_BR.delete().where(
            _BR.c.instance_uuid == uuid)).rowcount
        if not deleted:
            return False
        # NOTE: the cell's id found by the UPDATE itself, one round trip
        # less per build; an unknown cell updates nothing and is told
        # apart from a missing mapping only then.
        mapped = ctx.session.execute(_IM.update().where(
            _IM.c.instance_uuid == uuid,
            sa.exists().where(_CM.c.uuid == cell_uuid)).values(
                cell_id=sa.select(_CM.c.id).where(
                    _CM.c.uuid == cell_uuid).scalar_subquery(),
                updated_at=timeutils.utcnow())).rowcount
        if not mapped:
            _cell_id(ctx, cell_uuid)
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
        for chunk in _chunks(uuids):
            rows.extend(ctx.session.execute(
                sa.select(_RS.c.instance_uuid, _RS.c.spec).where(
                    _RS.c.instance_uuid.in_(chunk))))
        return rows
    return {row.instance_uuid: spec_obj.RequestSpec.from_primitive(
        json.loads(row.spec)) for row in _read(database, fetch, ctxt)}


def save_request_spec(ctxt, uuid, spec, database=None):
    """Write (create or replace) the RequestSpec of an instance."""
    text = _dumps(spec.to_primitive())

    def save(ctx):
        now = timeutils.utcnow()
        updated = ctx.session.execute(_RS.update().where(
            _RS.c.instance_uuid == uuid).values(spec=text, updated_at=now))
        if not updated.rowcount:
            ctx.session.execute(_RS.insert().values(
                instance_uuid=uuid, spec=text, created_at=now))
    _write(database, save, ctxt)


def _mapping_query():
    return sa.select(_IM.c.instance_uuid, _IM.c.project_id, _IM.c.user_id,
                     _IM.c.queued_for_delete, _IM.c.created_at,
                     _CM.c.uuid.label('cell_uuid')).select_from(
        _IM.outerjoin(_CM, _IM.c.cell_id == _CM.c.id))


def _mapping(row):
    return {'instance_uuid': row.instance_uuid, 'cell_uuid': row.cell_uuid,
            'project_id': row.project_id, 'user_id': row.user_id,
            'queued_for_delete': bool(row.queued_for_delete)}


def get_instance_mapping(ctxt, uuid, database=None):
    """{instance_uuid, cell_uuid or None, project_id, user_id,
    queued_for_delete} of an instance, or None when it has no mapping.
    """
    def fetch(ctx):
        return ctx.session.execute(_mapping_query().where(
            _IM.c.instance_uuid == uuid)).first()
    row = _read(database, fetch, ctxt)
    return None if row is None else _mapping(row)


def get_instance_mappings(ctxt, uuids, database=None):
    """instance uuid -> mapping dict, for those that have one."""
    def fetch(ctx):
        rows = []
        for chunk in _chunks(uuids):
            rows.extend(ctx.session.execute(_mapping_query().where(
                _IM.c.instance_uuid.in_(chunk))))
        return rows
    return {row.instance_uuid: _mapping(row)
            for row in _read(database, fetch, ctxt)}


def list_instance_mappings(ctxt, project_id=None, cell_uuid=None,
                           database=None):
    """Mapping dicts (of one project, of one cell), oldest first."""
    def fetch(ctx):
        query = _mapping_query().order_by(_IM.c.id)
        if project_id is not None:
            query = query.where(_IM.c.project_id == project_id)
        if cell_uuid is not None:
            query = query.where(_CM.c.uuid == cell_uuid)
        return list(ctx.session.execute(query))
    return [_mapping(row) for row in _read(database, fetch, ctxt)]


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
        cell_id = _cell_id(ctx, cell_uuid)
        now = timeutils.utcnow()
        for uuid in uuids:
            if not ctx.session.execute(_IM.update().where(
                    _IM.c.instance_uuid == uuid).values(
                        cell_id=cell_id, updated_at=now)).rowcount:
                raise exception.InstanceMappingNotFound(uuid=uuid)
    _write(database, update, ctxt)


def create_instance_mapping(ctxt, uuid, project_id, cell_uuid=None,
                            user_id=None, database=None):
    """Create an instance mapping (``cell_v2 map_instances``).

    :raises oslo_db.exception.DBDuplicateEntry: it exists already.
    """
    def create(ctx):
        cell_id = None if cell_uuid is None else _cell_id(ctx, cell_uuid)
        ctx.session.execute(_IM.insert().values(
            instance_uuid=uuid, cell_id=cell_id, project_id=project_id,
            user_id=user_id, queued_for_delete=False,
            created_at=timeutils.utcnow()))
    _write(database, create, ctxt)


def set_queued_for_delete(ctxt, uuid, queued=True, database=None):
    """Mark an instance's mapping as deleted (kept for the history).

    :returns: False when the instance has no mapping.
    """
    def update(ctx):
        return ctx.session.execute(_IM.update().where(
            _IM.c.instance_uuid == uuid).values(
                queued_for_delete=queued,
                updated_at=timeutils.utcnow())).rowcount > 0
    return _write(database, update, ctxt)


def delete_instance_mapping(ctxt, uuid, database=None):
    """Delete an instance's mapping; False when there was none.

    NOTE: only for a server that never existed in any cell (its build
    request was deleted before it got one); others keep theirs.
    """
    def delete(ctx):
        return ctx.session.execute(_IM.delete().where(
            _IM.c.instance_uuid == uuid)).rowcount > 0
    return _write(database, delete, ctxt)


# --- host mappings -----------------------------------------------------------

def get_host_mapping(ctxt, host, database=None):
    """The uuid of the cell ``host`` is mapped to, or None."""
    def fetch(ctx):
        return ctx.session.execute(
            sa.select(_CM.c.uuid).select_from(
                _HM.join(_CM, _HM.c.cell_id == _CM.c.id)).where(
                _HM.c.host == host)).scalar()
    return _read(database, fetch, ctxt)


def _host_cells(ctx, hosts):
    found = {}
    for chunk in _chunks(hosts):
        for host, cell_uuid in ctx.session.execute(
                sa.select(_HM.c.host, _CM.c.uuid).select_from(
                    _HM.join(_CM, _HM.c.cell_id == _CM.c.id)).where(
                    _HM.c.host.in_(chunk))):
            found[host] = cell_uuid
    return found


def get_host_mappings(ctxt, hosts, database=None):
    """host -> cell uuid, for the mapped ones among ``hosts``."""
    return _read(database, _host_cells, ctxt, list(hosts))


def list_host_mappings(ctxt, cell_uuid=None, database=None):
    """[(host, cell uuid)] in host order (of one cell)."""
    def fetch(ctx):
        query = sa.select(_HM.c.host, _CM.c.uuid).select_from(
            _HM.join(_CM, _HM.c.cell_id == _CM.c.id)).order_by(_HM.c.host)
        if cell_uuid is not None:
            query = query.where(_CM.c.uuid == cell_uuid)
        return [(row.host, row.uuid) for row in ctx.session.execute(query)]
    return _read(database, fetch, ctxt)


def create_host_mapping(ctxt, host, cell_uuid, database=None):
    """Map ``host`` to a cell.

    :raises common.exception.HostMappingExists: it is mapped already.
    :raises common.db.cells.CellMappingNotFound: unknown cell.
    """
    def create(ctx):
        ctx.session.execute(_HM.insert().values(
            cell_id=_cell_id(ctx, cell_uuid), host=host,
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
        return ctx.session.execute(_HM.delete().where(
            _HM.c.host == host)).rowcount > 0
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
