# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Cell rows for the archive tests, written in bulk (unit and functional).

Instance ``id`` n has fault n, action n and events 2n and 2n+1, and, in
the api database, an instance mapping and a request spec.
"""

import datetime
import uuid as uuid_lib

import sqlalchemy as sa

from common.db import api_tables
from common.db import cell_tables

OLD = datetime.datetime(2020, 1, 1)
RECENT = datetime.datetime(2026, 1, 1)
_BULK = 5000


def _bulk(engine, table, rows):
    with engine.begin() as conn:
        for start in range(0, len(rows), _BULK):
            conn.execute(table.insert(), rows[start:start + _BULK])


def add_instances(cell_engine, first_id, count, deleted_at=None,
                  api_engine=None, cell_id=None):
    """``count`` instances from ``first_id``; deleted when ``deleted_at``.

    :returns: their uuids.
    """
    ids = range(first_id, first_id + count)
    uuids = [str(uuid_lib.uuid4()) for _ in ids]
    created = datetime.datetime(2019, 6, 1)
    _bulk(cell_engine, cell_tables.instances, [
        dict(id=i, uuid=u, host='h1', node='h1', project_id='p1',
             vm_state='deleted' if deleted_at else 'active',
             created_at=created, deleted_at=deleted_at,
             deleted=i if deleted_at else 0)
        for i, u in zip(ids, uuids)])
    _bulk(cell_engine, cell_tables.instance_faults, [
        dict(id=i, instance_uuid=u, code=500, message='boom',
             created_at=created, deleted=0) for i, u in zip(ids, uuids)])
    _bulk(cell_engine, cell_tables.instance_actions, [
        dict(id=i, instance_uuid=u, action='create', request_id='req-%d' % i,
             created_at=created, deleted=0) for i, u in zip(ids, uuids)])
    _bulk(cell_engine, cell_tables.instance_actions_events, [
        dict(id=2 * i + n, action_id=i, event='ev%d' % n,
             created_at=created, deleted=0) for i in ids for n in (0, 1)])
    if api_engine is not None:
        _bulk(api_engine, api_tables.instance_mappings, [
            dict(instance_uuid=u, cell_id=cell_id, project_id='p1',
                 queued_for_delete=bool(deleted_at)) for u in uuids])
        _bulk(api_engine, api_tables.request_specs, [
            dict(instance_uuid=u, spec='{}') for u in uuids])
    return uuids


def add_services(cell_engine, first_id, count, deleted_at=None):
    """``count`` nova-compute services with one compute node each."""
    ids = range(first_id, first_id + count)
    _bulk(cell_engine, cell_tables.services, [
        dict(id=i, uuid=str(uuid_lib.uuid4()), host='host%d' % i,
             binary='berth-compute', topic='compute', report_count=0,
             disabled=False, forced_down=False, version=1,
             deleted_at=deleted_at, deleted=i if deleted_at else 0)
        for i in ids])
    _bulk(cell_engine, cell_tables.compute_nodes, [
        dict(id=i, uuid=str(uuid_lib.uuid4()), service_id=i,
             host='host%d' % i, hypervisor_hostname='host%d' % i, vcpus=8,
             memory_mb=1024, local_gb=10, vcpus_used=0, memory_mb_used=0,
             local_gb_used=0, mapped=1, deleted_at=deleted_at,
             deleted=i if deleted_at else 0) for i in ids])


def count(engine, table, where=None):
    """Rows of ``table`` (matching ``where``)."""
    query = sa.select(sa.func.count()).select_from(table)
    if where is not None:
        query = query.where(where)
    with engine.connect() as conn:
        return conn.execute(query).scalar()
