# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server action ``os-migrateLive``: move a running server (admin).

``{"os-migrateLive": {"host": null | "<host>", "block_migration": ...}}``
(bodies per microversion: services/api/schemas/live_migrate.py). As
Nova's API: the policy, the lock, the state (ACTIVE or PAUSED with no
task, else 409 ``Cannot 'os-migrateLive' instance <uuid> while it is in
vm_state <state>``), a named host must be a compute host of the server's
cell (400 ``Compute host <host> could not be found.``); Berth also
refuses at once, with Nova's messages, a host that is the server's own
(400 ``Unable to migrate instance (<uuid>) to current host (<host>).``)
or whose service is down (400 ``Compute service of <host> is
unavailable at this time.``), which Nova finds out later in the
conductor. Then in one write the ``live-migration`` action and task
``migrating``, and the conductor's ``live_migrate_instance``
(services/conductor/live_migrate_flow.py): a cast from 2.34, which
answers 202 at once (failures show as the server's fault and the
action's events); below 2.34 a call, whose failure (no valid host, a
failed pre-check) is the 400 answered, as in Nova.

``force`` (2.30 to 2.67): true sends the server to the named host
without the scheduler's filters (its resources are still claimed in
placement and on the host); below 2.30 a named host is always forced,
as Nova did; without a host it is a 400.
"""

import logging

import oslo_messaging as messaging

from common.db import compute_records
from common.db import instance_records
from common import exception
from common.objects import instance as inst
from services.api.actions import checks
from services.api import boot
from services.api import cell_hosts
from services.api import errors
from services.api.schemas import live_migrate as schemas
from services.api.schemas import types
from services.api import util

LOG = logging.getLogger(__name__)

POLICY = 'os_compute_api:os-migrate-server:migrate_live'
METHOD = 'os-migrateLive'
ACTION = 'live-migration'
VM_STATES = (inst.ACTIVE, inst.PAUSED)
AUTO_VERSION = (2, 25)
FORCE_VERSION = (2, 30)
ASYNC_VERSION = (2, 34)
# NOTE: what the conductor's synchronous answer (below 2.34) may raise
# that Nova's API turns into a 400.
BAD_REQUEST = (exception.NoValidHost, exception.MigrationPreCheckError,
               exception.UnableToMigrateToSelf,
               exception.ComputeServiceUnavailable,
               exception.ComputeHostNotFound)


def _schema(req):
    for version, schema in schemas.MIGRATE_LIVE:
        if util.at_least(req, version):
            return schema
    return schemas.MIGRATE_LIVE[-1][1]


def _arguments(req, body):
    """(host, block_migration (None: auto), force) of a valid body.

    :raises errors.BadRequest: ``force`` without a host (Nova's message).
    """
    host = body['host']
    block = body['block_migration']
    block = None if block == 'auto' else types.to_bool(block)
    if not util.at_least(req, FORCE_VERSION):
        # NOTE: before 2.30 a named host bypassed the scheduler.
        return host, block, bool(host)
    return host, block, checks.forced(body, host)


def _check_target(ctxt, instance, cell, host):
    """400 unless ``host`` is another up compute host of the server's
    cell (a host of another cell is not found, as in Nova).
    """
    database = cell_hosts.database(cell)
    if not compute_records.list_compute_nodes(ctxt, database, host=host):
        raise errors.BadRequest(
            str(exception.ComputeHostNotFound(host=host)))
    if host == instance.host:
        raise errors.BadRequest(str(exception.UnableToMigrateToSelf(
            instance_id=instance.uuid, host=host)))
    service = cell_hosts.compute_service(ctxt, host, cell=cell)
    if service is None or not cell_hosts.is_up(service):
        raise errors.BadRequest(
            str(exception.ComputeServiceUnavailable(host=host)))


def _undo(ctxt, cell, instance):
    """Clear the task when the conductor never heard of the request."""
    try:
        instance_records.update_instance(
            ctxt, cell_hosts.database(cell), instance.uuid,
            {'task_state': None}, expected_task_state=[inst.MIGRATING],
            brief=True)
    except Exception:
        LOG.exception('Could not undo the live migration of %s',
                      instance.uuid)


def _send(req, ctxt, cell, instance, host, block, force):
    """Cast (2.34+) or call the conductor; the failures as Nova answers
    them.
    """
    sync = not util.at_least(req, ASYNC_VERSION)
    try:
        boot.conductor_api().live_migrate_instance(
            ctxt, instance.uuid, host=host, block_migration=block,
            force=force, sync=sync, instance=instance)
    except BAD_REQUEST as exc:
        raise errors.BadRequest(str(exc))
    except exception.MigrationError as exc:
        raise errors.APIError(str(exc), status=500)
    except messaging.MessagingTimeout as exc:
        # NOTE: the conductor may still be at work: it ends the task.
        raise errors.APIError('The live migration of %s was not checked '
                              'in time: %s' % (instance.uuid, exc),
                              status=500)
    except Exception as exc:
        if not sync:
            _undo(ctxt, cell, instance)
        LOG.exception('Could not start the live migration of %s',
                      instance.uuid)
        raise errors.ServiceUnavailable(
            'The live migration of %s could not be started: %s'
            % (instance.uuid, exc))


def migrate_live(req, value):
    """``os-migrateLive``: 202 with no body (see the module doc).

    :raises errors.BadRequest: a bad body or target host, or (below
        2.34) no destination passed the checks.
    :raises errors.Conflict: locked, or not ACTIVE/PAUSED with no task.
    """
    util.validate({METHOD: value}, _schema(req))
    instance, cell = checks.find(req, POLICY)
    host, block, force = _arguments(req, value)
    ctxt = util.context(req)
    checks.check_locked(ctxt, instance)
    checks.check_state(instance, METHOD, VM_STATES)
    if cell is None or not instance.host:
        raise checks.invalid_state(instance, METHOD, 'vm_state',
                                   instance.vm_state)
    if host:
        _check_target(ctxt, instance, cell, host)
    values = {'task_state': inst.MIGRATING}
    checks.begin(req, instance, cell, METHOD, ACTION, values, brief=True)
    _send(req, ctxt, cell, checks.as_written(instance, cell, values), host,
          block, force)
    return util.no_content(202)


ACTIONS = {METHOD: migrate_live}
