# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Servers of a cell whose database does not answer (2.69).

A cell database that refuses connections does not fail the whole API.
Listing skips the cell's instances; from 2.69 a listing also shows each
of them as a minimal record built from the api database (its instance
mapping: id, project, creation time) with status ``UNKNOWN``, and
showing one answers the mapping's fields plus the flavor, image and zone
its request spec recorded. Below 2.69 showing a server of a down cell is
a 503 (Nova, without down-cell support, fails such a request too).
"""

import logging
import threading
import time

from oslo_db import exception as db_exc
import sqlalchemy as sa

from common.db import api_tables
from common.db import boot_records
from common import exception
from services.api import errors
from services.api import records
from services.api import util

LOG = logging.getLogger(__name__)

DOWN_CELL_VERSION = (2, 69)
# NOTE: seconds a cell found down is skipped without trying it again: a
# connection attempt to a database that is down can take oslo.db's whole
# retry budget ([database] max_retries x retry_interval), which one
# request in this window pays instead of every request.
DOWN_MEMORY = 30.0
_DOWN = {}
_LOCK = threading.Lock()
_DOWN_TEXTS = ('unable to open database', "can't connect", 'could not '
               'connect', 'connection refused', 'lost connection',
               'server has gone away')


def is_down(exc):
    """True when ``exc`` says the database cannot be reached (not that a
    statement failed).
    """
    if isinstance(exc, (db_exc.DBConnectionError,
                        sa.exc.DisconnectionError)):
        return True
    if isinstance(exc, (sa.exc.OperationalError, db_exc.DBError)):
        text = str(exc).lower()
        return getattr(exc, 'connection_invalidated', False) or any(
            t in text for t in _DOWN_TEXTS)
    return False


class CellDown(errors.ServiceUnavailable):
    """A server's cell database does not answer (503 unless handled)."""

    def __init__(self, uuid, cell, mapping):
        super().__init__('Cell %s is not responding: server %s cannot be '
                         'read now.' % (cell.name or cell.uuid, uuid))
        self.uuid = uuid
        self.cell = cell
        self.mapping = mapping


def mark_down(cell, exc):
    """Remember ``cell`` as down for DOWN_MEMORY seconds, and say so."""
    LOG.warning('Cell %s (%s) is not responding: %s', cell.name, cell.uuid,
                exc)
    with _LOCK:
        _DOWN[cell.uuid] = time.monotonic()


def known_down(cell):
    """True when ``cell`` was found down less than DOWN_MEMORY ago."""
    with _LOCK:
        since = _DOWN.get(cell.uuid)
        if since is None:
            return False
        if time.monotonic() - since < DOWN_MEMORY:
            return True
        del _DOWN[cell.uuid]
        return False


def forget():
    """Forget every cell found down (tests)."""
    with _LOCK:
        _DOWN.clear()


_IM = api_tables.instance_mappings


@records.reader_connection
def _created(ctxt, uuids):
    """instance uuid -> its mapping's created_at."""
    if not uuids:
        return {}
    return {row.instance_uuid: row.created_at
            for row in ctxt.connection.execute(
                sa.select(_IM.c.instance_uuid, _IM.c.created_at).where(
                    _IM.c.instance_uuid.in_(uuids)))}


def list_records(req, cells, project_id):
    """The minimal list records of the servers in ``cells`` (2.69)."""
    ctx = util.context(req)
    mappings = [m for cell in cells
                for m in boot_records.list_instance_mappings(
                    ctx, project_id=project_id, cell_uuid=cell.uuid)
                if not m['queued_for_delete']]
    created = _created(ctx, [m['instance_uuid'] for m in mappings])
    return [{'id': m['instance_uuid'], 'status': 'UNKNOWN',
             'tenant_id': m['project_id'],
             'created': util.iso(created.get(m['instance_uuid'])),
             'links': util.links(req, 'servers', m['instance_uuid'])}
            for m in mappings]


def _spec(ctx, uuid):
    try:
        return boot_records.get_request_spec(ctx, uuid)
    except exception.RequestSpecNotFound:
        return None


def show_record(req, down):
    """The minimal show record of a server in a down cell (2.69)."""
    mapping = down.mapping
    ctx = util.context(req)
    body = {'id': down.uuid, 'status': 'UNKNOWN',
            'tenant_id': mapping['project_id'],
            'user_id': mapping['user_id'],
            'created': util.iso(_created(ctx, [down.uuid]).get(down.uuid)),
            'links': util.links(req, 'servers', down.uuid),
            'OS-EXT-STS:power_state': 0}
    spec = _spec(ctx, down.uuid)
    if spec is not None:
        body['OS-EXT-AZ:availability_zone'] = spec.availability_zone or ''
        if spec.flavor is not None:
            flavor = spec.flavor
            body['flavor'] = {
                'vcpus': flavor.vcpus, 'ram': flavor.memory_mb,
                'disk': flavor.root_gb, 'ephemeral': flavor.ephemeral_gb,
                'swap': flavor.swap, 'original_name': flavor.name}
        image_id = spec.image.id if spec.image is not None else None
        body['image'] = ({'id': image_id, 'links': [{
            'rel': 'bookmark', 'href': '%s/images/%s' % (
                req.application_url.rstrip('/'), image_id)}]}
            if image_id else '')
    return body
