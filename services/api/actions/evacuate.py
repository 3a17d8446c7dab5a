# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server action: evacuate (admin; doc/behaviours.md §evacuate).

``{"evacuate": {"host": ..., "adminPass": ...}}`` re-creates a server of
a failed host on another one. As Nova's API:

* the body at the request's microversion: ``onSharedStorage`` required
  below 2.14, ``force`` from 2.29 to 2.67 (a forced host skips the
  scheduler; forcing without a host is a 400 ``Can't force to a
  non-provided destination``), ``host`` optional (the scheduler chooses);
* a named host must be a compute service (404 ``Compute host <h> not
  found.``) and not the server's own (400 ``The target host can't be the
  same one.``);
* the server ACTIVE, SHUTOFF or ERROR (409 otherwise), in any task: a
  host that died mid-operation leaves its servers in one; but not while
  it is being rebuilt or evacuated already (409; Nova accepts that too,
  and a second evacuation on top of one under way would leave a guest
  and its claim behind);
* the source host's compute service down or forced down, else 400
  ``Compute service of <host> is still in use.`` (Nova's
  ComputeServiceInUse, a bad request there too);
* then in the server's cell: the ``evacuate`` action and task
  ``rebuilding``, and a migration ``evacuation``/``accepted`` from the
  source host; the conductor (``evacuate_instance``) does the rest.

The answer is 200: ``{"adminPass": ...}`` below 2.14 (when ``[api]
enable_instance_password``), no body from 2.14. A SHUTOFF server ends
SHUTOFF, any other ACTIVE; from 2.95 every one ends SHUTOFF (the code is
ready; the API serves 2.95 once the versions before it are in).
"""

import logging

from common.db import instance_records
from common.db import migration_records
from common.objects import instance as inst
from common.objects import migration as migration_obj
from services.api.actions import checks
from services.api import boot
from services.api import cell_hosts
from services.api import errors
from services.api.handlers import servers
from services.api.schemas import server_actions as schemas
from services.api import util

LOG = logging.getLogger(__name__)

POLICY = 'os_compute_api:os-evacuate'
VM_STATES = (inst.ACTIVE, inst.STOPPED, inst.ERROR)
# NOTE: the tasks of an evacuation (or rebuild) under way.
REBUILD_TASK_STATES = (inst.REBUILDING, inst.REBUILD_BLOCK_DEVICE_MAPPING,
                       inst.REBUILD_SPAWNING)

NO_SHARED_STORAGE_VERSION = (2, 14)
FORCE_VERSION = (2, 29)
NO_FORCE_VERSION = (2, 68)
STOPPED_VERSION = (2, 95)

HOST_NOT_FOUND = 'Compute host %s not found.'
SAME_HOST = "The target host can't be the same one."
IN_USE = 'Compute service of %s is still in use.'
PASSWORD_ON_SHARED = "admin password can't be changed on existing disk"


def _schema(req):
    if util.at_least(req, NO_FORCE_VERSION):
        return schemas.EVACUATE_V268
    if util.at_least(req, FORCE_VERSION):
        return schemas.EVACUATE_V229
    if util.at_least(req, NO_SHARED_STORAGE_VERSION):
        return schemas.EVACUATE_V214
    return schemas.EVACUATE_V21


def _check_target(ctxt, instance, host):
    """404 for a host without a compute service, 400 for the server's
    own host.
    """
    if host is None:
        return
    if cell_hosts.compute_service(ctxt, host) is None:
        raise errors.NotFound(HOST_NOT_FOUND % host)
    if host == instance.host:
        raise errors.BadRequest(SAME_HOST)


def _check_source_down(ctxt, instance, cell):
    """400 while the server's host's compute service is up (not forced
    down and heartbeating).
    """
    if not instance.host:
        raise errors.Conflict('Instance %s is not ready' % instance.uuid)
    service = cell_hosts.compute_service(ctxt, instance.host, cell)
    if service is None:
        # NOTE: a deleted service is no service in use (Nova's
        # service_is_up is never reached for one).
        return
    if not service['forced_down'] and cell_hosts.is_up(service):
        raise errors.BadRequest(IN_USE % instance.host)


def _migration(instance, host):
    return migration_obj.Migration(
        instance_uuid=instance.uuid,
        migration_type=migration_obj.EVACUATION,
        status=migration_obj.ACCEPTED,
        source_compute=instance.host, source_node=instance.node,
        dest_compute=host, old_flavor=instance.flavor,
        new_flavor=instance.flavor, project_id=instance.project_id,
        user_id=instance.user_id)


def _undo(ctxt, database, uuid, task_state, migration):
    """Put the server back (in ``task_state``, the one it was evacuated
    from) when the evacuation could not be handed over.
    """
    try:
        instance_records.update_instance(
            ctxt, database, uuid, {'task_state': task_state},
            expected_task_state=[inst.REBUILDING], brief=True)
        if migration is not None:
            migration_records.update_migration(
                ctxt, database, migration.uuid,
                {'status': migration_obj.ERROR},
                expected_status=migration_obj.ACCEPTED)
    except Exception:
        LOG.exception('Could not undo the evacuation of %s', uuid)


def _password(req, data):
    """The adminPass to answer, or None (from 2.14 none is answered)."""
    conf = util.conf(req)
    if util.at_least(req, NO_SHARED_STORAGE_VERSION) or (
            not conf.api.enable_instance_password):
        return None
    return data.get('adminPass') or servers.generate_password(
        conf.password_length)


def _force(req, data, host):
    """Whether the named host is forced (2.29 to 2.67).

    :raises errors.BadRequest: forced without a host (Nova's message).
    """
    return util.at_least(req, FORCE_VERSION) and checks.forced(data, host)


def evacuate(req, value):
    """``evacuate``: see the module doc.

    :raises errors.BadRequest: a bad body, force without a host, the
        server's own host, or a source host still up.
    :raises errors.NotFound: no such host.
    :raises errors.Conflict: a state Nova does not evacuate from.
    :raises errors.ServiceUnavailable: the conductor could not be told
        (the server and its migration are put back).
    """
    util.validate({'evacuate': value}, _schema(req))
    data = value
    instance, cell = checks.find(req, POLICY)
    ctxt = util.context(req)
    host = data.get('host')
    force = _force(req, data, host)
    if data.get('onSharedStorage') in (True, 'True', 'true', 'TRUE', '1',
                                       'on', 'On', 'ON', 'yes', 'Yes',
                                       'YES') and data.get('adminPass'):
        raise errors.BadRequest(PASSWORD_ON_SHARED)
    _check_target(ctxt, instance, host)
    checks.check_locked(ctxt, instance)
    if instance.task_state in REBUILD_TASK_STATES:
        raise checks.invalid_state(instance, 'evacuate', 'task_state',
                                   instance.task_state)
    checks.check_state(instance, 'evacuate', VM_STATES,
                       task_states=checks.ANY)
    _check_source_down(ctxt, instance, cell)
    # NOTE: a stopped server comes back stopped, as Nova's rebuild keeps
    # its original state; from 2.95 every evacuated server does.
    target_state = (inst.STOPPED if util.at_least(req, STOPPED_VERSION) or
                    instance.vm_state == inst.STOPPED else None)
    # NOTE: guarded on the task state read, so that a request that
    # changed it meanwhile (another evacuation, say) still makes a 409.
    checks.begin(req, instance, cell, 'evacuate', 'evacuate',
                 {'task_state': inst.REBUILDING},
                 expected_task_state=[instance.task_state])
    database = cell_hosts.database(cell)
    migration = None
    try:
        migration = migration_records.create_migration(
            ctxt, database, _migration(instance, host))
        boot.conductor_api().evacuate_instance(
            ctxt, instance_uuid=instance.uuid,
            migration_uuid=migration.uuid, host=host, force=force,
            target_state=target_state)
    except Exception as exc:
        _undo(ctxt, database, instance.uuid, instance.task_state,
              migration)
        LOG.exception('Could not start the evacuation of %s',
                      instance.uuid)
        raise errors.ServiceUnavailable('The evacuation of %s could not be '
                                        'started: %s' % (instance.uuid, exc))
    password = _password(req, data)
    if password is None:
        return util.no_content(200)
    return util.json_response({'adminPass': password}, status=200)


ACTIONS = {'evacuate': evacuate}
