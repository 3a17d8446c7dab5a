# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server actions: shelve, shelveOffload, unshelve (doc/behaviours.md
§shelve).

* ``shelve`` (owner): from ACTIVE, SHUTOFF, PAUSED or SUSPENDED; task
  ``shelving``, action ``shelve``, a cast to the server's compute, which
  powers the guest off (SHELVED) and, with ``[DEFAULT]
  shelved_offload_time = 0``, offloads it at once.
* ``shelveOffload`` (admin): from SHELVED; task ``shelving_offloading``,
  action ``shelveOffload``, a cast to the compute, which destroys the
  guest, releases the allocation and clears the host (SHELVED_OFFLOADED).
* ``unshelve`` (owner): from SHELVED or SHELVED_OFFLOADED; task
  ``unshelving``, action ``unshelve``, a cast to the conductor (powers a
  SHELVED server on where it is; schedules an offloaded one again).
  ``availability_zone`` from 2.77 (``null`` from 2.91 unpins the server's
  zone) and ``host`` from 2.91 (admin) choose where an offloaded server
  goes, with Nova's checks and messages.

Each answers 202 with no body; the checks are Nova's (lock, vm and task
state, 409 with Nova's message).
"""

import logging

from common.db import boot_records
from common.db import instance_records
from common import exception
from common.objects import instance as inst
from services.api.actions import checks
from services.api import boot
from services.api import cell_hosts
from services.api import deletion
from services.api import errors
from services.api import policies
from services.api.records import aggregates as agg_records
from services.api.schemas import server_actions as schemas
from services.api import util

LOG = logging.getLogger(__name__)

SHELVE_RULE = 'os_compute_api:os-shelve:shelve'
OFFLOAD_RULE = 'os_compute_api:os-shelve:shelve_offload'
UNSHELVE_RULE = 'os_compute_api:os-shelve:unshelve'
UNSHELVE_HOST_RULE = 'os_compute_api:os-shelve:unshelve_to_host'

# NOTE: Nova's check_instance_state of each action.
SHELVE_VM_STATES = (inst.ACTIVE, inst.STOPPED, inst.PAUSED, inst.SUSPENDED)
OFFLOAD_VM_STATES = (inst.SHELVED,)
UNSHELVE_VM_STATES = (inst.SHELVED, inst.SHELVED_OFFLOADED)

AZ_VERSION = (2, 77)
HOST_VERSION = (2, 91)

# NOTE: Nova validates none of these bodies (unshelve's only from 2.77):
# Tempest's ``{}`` and any other value are as null.
SHELVE_SCHEMA = schemas.any_argument('shelve')
OFFLOAD_SCHEMA = schemas.any_argument('shelveOffload')
UNSHELVE_SCHEMA = schemas.any_argument('unshelve')

NOT_OFFLOADED = ('Specifying an availability zone or a host when unshelving '
                 'server "%s" with status "%s" is not supported. The server '
                 'status must be SHELVED_OFFLOADED.')
ZONE_NOT_AVAILABLE = 'The requested availability zone is not available'
HOST_NOT_FOUND = 'Compute host %s could not be found.'
HOST_NOT_IN_ZONE = 'Host "%s" is not in the availability zone "%s".'


def _cast_compute(req, instance, cell, method, task_state, rpc):
    """Begin ``method`` and cast ``rpc`` to the server's host; 202.

    A failed cast puts the task state back, so the server is not left in
    a task nobody works on.
    """
    if not instance.host:
        raise errors.Conflict('Instance %s is not ready' % instance.uuid)
    updated = checks.begin(req, instance, cell, method, method,
                           {'task_state': task_state})
    ctxt = util.context(req)
    try:
        getattr(deletion.compute_api(cell), rpc)(ctxt, updated.host,
                                                 updated.uuid)
    except Exception as exc:
        _undo(ctxt, cell, instance.uuid, task_state)
        LOG.exception('Could not cast %s of %s', method, instance.uuid)
        raise errors.ServiceUnavailable('The %s of %s could not be started: '
                                        '%s' % (method, instance.uuid, exc))
    return util.no_content(202)


def _undo(ctxt, cell, uuid, task_state):
    try:
        instance_records.update_instance(
            ctxt, cell_hosts.database(cell), uuid, {'task_state': None},
            expected_task_state=[task_state], brief=True)
    except Exception:
        LOG.exception('Could not undo the task state of %s', uuid)


def shelve(req, value):
    """``shelve``: see the module doc.

    :raises errors.Conflict: locked (non-admins), or a state Nova does
        not shelve from.
    """
    util.validate({'shelve': value}, SHELVE_SCHEMA)
    instance, cell = checks.find(req, SHELVE_RULE)
    checks.check_locked(util.context(req), instance)
    checks.check_state(instance, 'shelve', SHELVE_VM_STATES)
    return _cast_compute(req, instance, cell, 'shelve', inst.SHELVING,
                         'shelve_instance')


def shelve_offload(req, value):
    """``shelveOffload`` (admin): see the module doc.

    :raises errors.Conflict: locked, or not SHELVED with no task.
    """
    util.validate({'shelveOffload': value}, OFFLOAD_SCHEMA)
    instance, cell = checks.find(req, OFFLOAD_RULE)
    checks.check_locked(util.context(req), instance)
    checks.check_state(instance, 'shelveOffload', OFFLOAD_VM_STATES)
    return _cast_compute(req, instance, cell, 'shelveOffload',
                         inst.SHELVING_OFFLOADING, 'shelve_offload_instance')


def _schema(req):
    if util.at_least(req, HOST_VERSION):
        return schemas.UNSHELVE_V291
    if util.at_least(req, AZ_VERSION):
        return schemas.UNSHELVE_V277
    return UNSHELVE_SCHEMA


def _zones_of(ctxt, conf, host):
    """The zones of compute ``host`` (the default zone when in none)."""
    return agg_records.zones_by_host(ctxt).get(host) or [
        conf.default_availability_zone]


def _available_zones(ctxt, conf):
    """The zones with an enabled compute service (Nova's available ones).
    """
    by_host = agg_records.zones_by_host(ctxt)
    found = set()
    for _cell, service in cell_hosts.list_services(
            ctxt, binary=cell_hosts.COMPUTE_BINARY):
        if not service['disabled']:
            found.update(by_host.get(service['host']) or
                         [conf.default_availability_zone])
    return found


def _pinned_zone(ctxt, instance):
    """The zone the server's request spec pins it to, or None."""
    try:
        spec = boot_records.get_request_spec(ctxt, instance.uuid)
    except exception.RequestSpecNotFound:
        return None
    return spec.availability_zone


def _check_zone(req, zone):
    """400 for a named zone without an enabled compute service."""
    if zone is not None and zone not in _available_zones(util.context(req),
                                                         util.conf(req)):
        raise errors.BadRequest(ZONE_NOT_AVAILABLE)


def _check_host(req, instance, host, zone_given, zone):
    """The admin policy, then the host's existence, then its zone.

    :raises errors.Forbidden: without ``unshelve_to_host``.
    :raises errors.BadRequest: no compute service on ``host``.
    :raises errors.Conflict: ``host`` outside the zone (Nova's
        UnshelveHostNotInAZ is one of its conflicts).
    """
    policies.authorize(req, UNSHELVE_HOST_RULE)
    ctxt = util.context(req)
    if cell_hosts.compute_service(ctxt, host) is None:
        raise errors.BadRequest(HOST_NOT_FOUND % host)
    # NOTE: without a zone in the body the server's own pinned zone
    # still binds the host (Nova's rule); ``null`` lifts it.
    wanted = zone if zone_given else _pinned_zone(ctxt, instance)
    if wanted is not None and wanted not in _zones_of(ctxt, util.conf(req),
                                                      host):
        raise errors.Conflict(HOST_NOT_IN_ZONE % (host, wanted))


def _check_target(req, instance, data):
    """Nova's checks of an unshelve's ``availability_zone`` and ``host``,
    in Nova's order (so a member naming a host for a server only SHELVED
    learns of the state, not of the policy).

    :returns: (zone given?, the zone or None, the host or None).
    :raises errors.Conflict: a zone or host for a server not offloaded,
        or a host outside the zone.
    :raises errors.BadRequest: an unavailable zone or an unknown host.
    :raises errors.Forbidden: ``host`` without the admin policy.
    """
    data = data or {}
    zone_given = 'availability_zone' in data
    zone, host = data.get('availability_zone'), data.get('host')
    if not zone_given and host is None:
        return False, None, None
    if instance.vm_state != inst.SHELVED_OFFLOADED:
        raise errors.Conflict(NOT_OFFLOADED % (instance.uuid,
                                               instance.vm_state))
    _check_zone(req, zone)
    if host is not None:
        _check_host(req, instance, host, zone_given, zone)
    return zone_given, zone, host


def unshelve(req, value):
    """``unshelve``: see the module doc.

    :raises errors.BadRequest: a bad body, zone or host.
    :raises errors.Forbidden: a host without ``unshelve_to_host``.
    :raises errors.Conflict: locked (non-admins), not shelved, a zone
        or host for a server that is not offloaded, or a host outside
        the zone.
    :raises errors.ServiceUnavailable: the conductor could not be told
        (the task state is put back).
    """
    util.validate({'unshelve': value}, _schema(req))
    instance, cell = checks.find(req, UNSHELVE_RULE)
    ctxt = util.context(req)
    checks.check_locked(ctxt, instance)
    checks.check_state(instance, 'unshelve', UNSHELVE_VM_STATES)
    # NOTE: below 2.77 the body is not read at all (Nova's).
    zone_given, zone, host = _check_target(
        req, instance, value if util.at_least(req, AZ_VERSION) else None)
    checks.begin(req, instance, cell, 'unshelve', 'unshelve',
                 {'task_state': inst.UNSHELVING})
    try:
        boot.conductor_api().unshelve_instance(
            ctxt, instance_uuid=instance.uuid, zone_given=zone_given,
            availability_zone=zone, host=host)
    except Exception as exc:
        _undo(ctxt, cell, instance.uuid, inst.UNSHELVING)
        LOG.exception('Could not cast the unshelve of %s', instance.uuid)
        raise errors.ServiceUnavailable('The unshelve of %s could not be '
                                        'started: %s' % (instance.uuid, exc))
    return util.no_content(202)


ACTIONS = {'shelve': shelve, 'shelveOffload': shelve_offload,
           'unshelve': unshelve}
