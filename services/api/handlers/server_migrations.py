# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for GET /servers/{server_id}/migrations[/{migration_id}].

From 2.23, as Nova: a server's live migrations in progress (the ones an
operator may force to complete or abort, which
:mod:`services.api.handlers.server_migration_actions` serves on the same
paths), with their memory and disk progress. Another kind of move, or a
live migration that has not started or has ended, is not shown (404).
2.59 adds each migration's ``uuid``, 2.80 its ``user_id`` and
``project_id``.

Only the GET methods are declared here (:data:`ROUTES`); the dispatcher
merges each module's methods of a path.
"""

from common.db import migration_records
from common import exception
from common.objects import migration as migration_obj
from services.api import cell_hosts
from services.api import errors
from services.api.handlers import migrations as migrations_handler
from services.api.handlers import servers as server_handlers
from services.api import util

VERSION = (2, 23)
LIVE_IN_PROGRESS = migrations_handler.LIVE_IN_PROGRESS


def _view(req, migration):
    body = {
        'id': migration.id,
        'server_uuid': migration.instance_uuid,
        'status': migration.status,
        'source_compute': migration.source_compute,
        'source_node': migration.source_node,
        'dest_compute': migration.dest_compute,
        'dest_node': migration.dest_node,
        'dest_host': migration.dest_host,
        'memory_total_bytes': migration.memory_total,
        'memory_processed_bytes': migration.memory_processed,
        'memory_remaining_bytes': migration.memory_remaining,
        'disk_total_bytes': migration.disk_total,
        'disk_processed_bytes': migration.disk_processed,
        'disk_remaining_bytes': migration.disk_remaining,
        'created_at': util.iso_micro(migration.created_at),
        'updated_at': util.iso_micro(migration.updated_at),
    }
    if util.at_least(req, migrations_handler.PAGING_VERSION):
        body['uuid'] = migration.uuid
    if util.at_least(req, migrations_handler.USER_PROJECT_VERSION):
        body['user_id'] = migration.user_id
        body['project_id'] = migration.project_id
    return body


def _server(req, action):
    """(Instance, cell or None) of the URL's server, for ``action``.

    :raises errors.NotFound: below 2.23, or no such server.
    """
    util.require_version(req, VERSION)
    return server_handlers.find_authorized(req, action)


def list_migrations(req):
    """GET /servers/{server_id}/migrations: live migrations in progress.

    NOTE: as Nova, a live migration still ``accepted`` (not yet started)
    is not listed: nothing can be done to it yet.

    :raises errors.NotFound: no such server (or below 2.23).
    :raises errors.Forbidden: ``os_compute_api:servers:migrations:index``.
    """
    instance, cell = _server(req, 'os_compute_api:servers:migrations:index')
    found = []
    if cell is not None:
        found = migration_records.in_progress_for_instance(
            util.context(req), cell_hosts.database(cell), instance.uuid,
            [migration_obj.LIVE_MIGRATION])
    return util.json_response({'migrations': [
        _view(req, m) for m in found
        if m.status != migration_obj.ACCEPTED]})


def show_migration(req):
    """GET /servers/{server_id}/migrations/{migration_id}.

    :raises errors.NotFound: no such server; or the migration is not one
        of its live migrations in progress (Nova's three messages).
    :raises errors.Forbidden: ``os_compute_api:servers:migrations:show``.
    """
    instance, cell = _server(req, 'os_compute_api:servers:migrations:show')
    migration_id = req.urlvars['migration_id']
    args = {'id': migration_id, 'uuid': instance.uuid}
    try:
        if cell is None:
            raise exception.MigrationNotFoundForInstance(
                migration_id=migration_id, instance_id=instance.uuid)
        migration = migration_records.get_by_id_and_instance(
            util.context(req), cell_hosts.database(cell), migration_id,
            instance.uuid)
    except exception.MigrationNotFoundForInstance:
        raise errors.NotFound('In-progress live migration %(id)s is not '
                              'found for server %(uuid)s.' % args)
    if migration.migration_type != migration_obj.LIVE_MIGRATION:
        raise errors.NotFound('Migration %(id)s for server %(uuid)s is not '
                              'live-migration.' % args)
    if migration.status not in LIVE_IN_PROGRESS:
        raise errors.NotFound('Live migration %(id)s for server %(uuid)s '
                              'is not in progress.' % args)
    return util.json_response({'migration': _view(req, migration)})


ROUTES = {
    '/servers/{server_id}/migrations': {'GET': list_migrations},
    '/servers/{server_id}/migrations/{migration_id}': {
        'GET': show_migration,
    },
}
