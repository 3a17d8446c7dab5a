# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /servers/{server_id}/metadata: a server's user metadata.

As Nova: GET lists, POST merges, PUT replaces all, and one key is read,
set or deleted under ``/metadata/{key}``. Writes are refused (409) while
the server is locked (for non-admins) or in a state other than active,
paused, suspended or stopped with no task; the project's
``metadata_items`` quota bounds the item count (403). The metadata is the
instance row's ``metadata`` column.
"""

from common.db import instance_records
from common import exception
from services.api.actions import checks
from services.api import cell_hosts
from services.api import errors
from services.api import quota
from services.api.schemas import server_metadata as schema
from services.api import util

_RULE = 'os_compute_api:server-metadata:%s'
# NOTE: Nova's vm states for metadata writes (no task in progress).
WRITABLE_STATES = ('active', 'paused', 'suspended', 'stopped')


def _not_found():
    return errors.NotFound('Metadata item was not found')


def list_metadata(req):
    """GET /servers/{server_id}/metadata."""
    instance, _cell = checks.find(req, _RULE % 'index')
    return util.json_response({'metadata': dict(instance.metadata or {})})


def show_metadata_item(req):
    """GET /servers/{server_id}/metadata/{key}."""
    instance, _cell = checks.find(req, _RULE % 'show')
    key = req.urlvars['key']
    metadata = instance.metadata or {}
    if key not in metadata:
        raise _not_found()
    return util.json_response({'meta': {key: metadata[key]}})


def _write(req, instance, cell, method, metadata):
    """Store ``metadata`` as the server's after the lock, state and quota
    checks; the stored metadata.
    """
    ctx = util.context(req)
    checks.check_locked(ctx, instance)
    checks.check_state(instance, method, WRITABLE_STATES)
    limit = quota.limits(ctx, util.conf(req),
                         instance.project_id)['metadata_items']
    # NOTE: a deletion is never refused for the quota (an administrator
    # may have lowered it below what the server has).
    if method != 'delete metadata' and 0 <= limit < len(metadata):
        raise errors.Forbidden('Maximum number of metadata items exceeds %d'
                               % limit)
    try:
        updated = instance_records.update_instance(
            ctx, cell_hosts.database(cell), instance.uuid,
            {'metadata': metadata}, expected_task_state=[None])
    except exception.UnexpectedTaskStateError as exc:
        raise checks.invalid_state(instance, method, 'task_state',
                                   exc.kwargs.get('actual'))
    except exception.InstanceNotFound:
        raise errors.NotFound('Instance %s could not be found.'
                              % instance.uuid)
    return dict(updated.metadata or {})


def create_metadata(req):
    """POST /servers/{server_id}/metadata: merge the body's items."""
    instance, cell = checks.find(req, _RULE % 'create')
    items = util.extract_json(req, schema.METADATA)['metadata']
    metadata = dict(instance.metadata or {})
    metadata.update(items)
    stored = _write(req, instance, cell, 'update metadata', metadata)
    return util.json_response({'metadata': stored})


def update_metadata(req):
    """PUT /servers/{server_id}/metadata: replace every item."""
    instance, cell = checks.find(req, _RULE % 'update_all')
    items = util.extract_json(req, schema.METADATA)['metadata']
    stored = _write(req, instance, cell, 'update metadata', dict(items))
    return util.json_response({'metadata': stored})


def update_metadata_item(req):
    """PUT /servers/{server_id}/metadata/{key}: body ``{"meta": {key:
    value}}`` naming the URL's key.
    """
    instance, cell = checks.find(req, _RULE % 'update')
    item = util.extract_json(req, schema.META_ITEM)['meta']
    key = req.urlvars['key']
    if key not in item:
        raise errors.BadRequest('Request body and URI mismatch')
    metadata = dict(instance.metadata or {})
    metadata[key] = item[key]
    _write(req, instance, cell, 'update metadata', metadata)
    return util.json_response({'meta': {key: item[key]}})


def delete_metadata_item(req):
    """DELETE /servers/{server_id}/metadata/{key}: 204."""
    instance, cell = checks.find(req, _RULE % 'delete')
    key = req.urlvars['key']
    metadata = dict(instance.metadata or {})
    if key not in metadata:
        raise _not_found()
    del metadata[key]
    _write(req, instance, cell, 'delete metadata', metadata)
    return util.no_content(204)
