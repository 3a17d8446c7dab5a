# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The two writes on a server's migrations: force-complete and abort.

* ``POST /servers/{server_id}/migrations/{migration_id}/action``
  ``{"force_complete": null}`` (2.22): the running live migration
  finishes now (the copy stops converging gradually);
* ``DELETE /servers/{server_id}/migrations/{migration_id}`` (2.24):
  the live migration is aborted and rolled back; from 2.65 also while it
  is still ``queued`` or ``preparing``.

Both are Nova's: admin policies, the lock, the server ``migrating``
(force-complete: and ACTIVE; an abort also rolls back the live migration
of a paused server) (409 ``Cannot '<method>' instance...``), the migration
one of this server's (404 for the abort, 400 for force-complete, as
Nova's differ), in a state that allows it (400 ``Migration <id> state of
instance <uuid> is <state>. Cannot <method> while the migration is in
this state.``); then the instance action (``live_migration_cancel``,
``live_migration_force_complete``) and a cast to the source host, whose
copy heeds it (services/compute/live_migration.py). 202, no body.
"""

from common.db import migration_records
from common import exception
from common.objects import instance as inst
from common.objects import migration as migration_obj
from services.api.actions import checks
from services.api import cell_hosts
from services.api import deletion
from services.api import errors
from services.api.schemas import live_migrate as schemas
from services.api import util

FORCE_COMPLETE_VERSION = (2, 22)
ABORT_VERSION = (2, 24)
ABORT_QUEUED_VERSION = (2, 65)
FORCE_COMPLETE_POLICY = 'os_compute_api:servers:migrations:force_complete'
ABORT_POLICY = 'os_compute_api:servers:migrations:delete'


def _migration(req, cell, instance, not_found):
    """The URL's migration of this server.

    :param not_found: the error class answering an unknown one.
    """
    migration_id = req.urlvars['migration_id']
    error = not_found(str(exception.MigrationNotFoundForInstance(
        migration_id=migration_id, instance_id=instance.uuid)))
    if not migration_id.isdigit():
        raise error
    try:
        return migration_records.get_by_id_and_instance(
            util.context(req), cell_hosts.database(cell), migration_id,
            instance.uuid)
    except exception.MigrationNotFound:
        raise error


def _check_status(migration, instance, allowed, method):
    if migration.status not in allowed:
        raise errors.BadRequest(str(exception.InvalidMigrationState(
            migration_id=migration.id, instance_uuid=instance.uuid,
            state=migration.status, method=method)))


def _prepare(req, rule, method, vm_states):
    """(instance, cell) of a migrating server the caller may act on."""
    instance, cell = checks.find(req, rule)
    checks.check_locked(util.context(req), instance)
    checks.check_state(instance, method, vm_states, (inst.MIGRATING,))
    if cell is None:
        raise checks.invalid_state(instance, method, 'vm_state',
                                   instance.vm_state)
    return instance, cell


def _begin(req, instance, cell, method, action):
    """Record ``action``, the server still migrating (guarded)."""
    return checks.begin(req, instance, cell, method, action,
                        {'task_state': inst.MIGRATING},
                        expected_task_state=(inst.MIGRATING,))


def force_complete(req):
    """POST .../migrations/{migration_id}/action ``force_complete``.

    :raises errors.NotFound: below 2.22, or no such server.
    :raises errors.BadRequest: a bad body, not this server's migration,
        or not ``running``.
    :raises errors.Conflict: locked, or not ACTIVE and migrating.
    """
    util.require_version(req, FORCE_COMPLETE_VERSION)
    util.extract_json(req, schemas.FORCE_COMPLETE)
    method = 'force_complete'
    instance, cell = _prepare(req, FORCE_COMPLETE_POLICY, method,
                              (inst.ACTIVE,))
    migration = _migration(req, cell, instance, errors.BadRequest)
    _check_status(migration, instance, migration_obj.LIVE_RUNNING,
                  'force complete')
    instance = _begin(req, instance, cell, method,
                      'live_migration_force_complete')
    deletion.compute_api(cell).live_migration_force_complete(
        util.context(req), instance.host, instance.uuid,
        migration_uuid=migration.uuid)
    return util.no_content(202)


def abort(req):
    """DELETE .../migrations/{migration_id}: abort a live migration.

    :raises errors.NotFound: below 2.24, no such server, or not this
        server's migration.
    :raises errors.BadRequest: not running (2.65: nor queued or
        preparing).
    :raises errors.Conflict: locked, or not migrating.
    """
    util.require_version(req, ABORT_VERSION)
    method = 'abort live migration'
    instance, cell = _prepare(req, ABORT_POLICY, method, checks.ANY)
    migration = _migration(req, cell, instance, errors.NotFound)
    allowed = (migration_obj.LIVE_ABORTABLE
               if util.at_least(req, ABORT_QUEUED_VERSION)
               else migration_obj.LIVE_RUNNING)
    _check_status(migration, instance, allowed, method)
    instance = _begin(req, instance, cell, method, 'live_migration_cancel')
    deletion.compute_api(cell).live_migration_abort(
        util.context(req), instance.host, instance.uuid,
        migration_uuid=migration.uuid)
    return util.no_content(202)
