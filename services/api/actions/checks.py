# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""What every server action does first: find the server, check its lock
and its state, then start the action.

The messages are Nova's, so that clients and scripts that match on them
keep working: ``Instance <uuid> is locked`` and ``Cannot 'stop' instance
<uuid> while it is in vm_state stopped`` (both 409).
"""

import dataclasses

from common.db import instance_records
from common import exception
from services.api import cell_hosts
from services.api import errors
from services.api.handlers import servers
from services.api.schemas import types
from services.api import util

ANY = None
# NOTE: Nova's 400 for a move forced without a host (live migration,
# evacuation).
NO_FORCED_HOST = "Can't force to a non-provided destination"


def find(req, rule, fault=False):
    """(instance, cell) of the URL's server if ``rule`` allows the caller.

    :param fault: read the server's latest fault too: only an action that
        answers with a view of the server shows it (an action's checks
        never read it).
    :raises errors.NotFound: no such server, or not the caller's.
    :raises errors.Forbidden: the policy denies it.
    """
    return servers.find_authorized(req, rule, fault=fault)


def check_locked(ctxt, instance):
    """409 when the server is locked and the caller is no admin (Nova).

    :raises errors.Conflict: ``Instance <uuid> is locked``.
    """
    if instance.locked and not ctxt.is_admin:
        raise errors.Conflict('Instance %s is locked' % instance.uuid)


def invalid_state(instance, method, attr, state):
    """Nova's InstanceInvalidState, as the 409 the API answers."""
    return errors.Conflict(
        "Cannot '%s' instance %s while it is in %s %s"
        % (method, instance.uuid, attr, state))


def check_state(instance, method, vm_states=ANY, task_states=(None,)):
    """409 unless the server's vm_state and task_state allow ``method``.

    :param vm_states: the vm states allowed (ANY: every one).
    :param task_states: the task states allowed (ANY: every one); by
        default only no task, as Nova's ``check_instance_state``.
    :raises errors.Conflict: with Nova's message naming the first state
        that does not fit.
    """
    if vm_states is not ANY and instance.vm_state not in vm_states:
        raise invalid_state(instance, method, 'vm_state', instance.vm_state)
    if task_states is not ANY and instance.task_state not in task_states:
        raise invalid_state(instance, method, 'task_state',
                            instance.task_state)


def forced(body, host):
    """The ``force`` of a move's body (a named host skips the
    scheduler), for the microversions that have it.

    :raises errors.BadRequest: forced without a host (Nova's message).
    """
    force = types.to_bool(body.get('force', False))
    if force and not host:
        raise errors.BadRequest(NO_FORCED_HOST)
    return force


def as_written(instance, cell, values):
    """``instance`` (as read) as a :func:`begin` of ``values`` wrote it,
    with its cell: what a caller sends the conductor, which then need not
    read it. A copy: the caller's is kept (to undo the write, say).

    NOTE: built rather than read back: the read, with its fault's query,
    cost the API more than it saved the conductor. Fields a begin does
    not write change only through task states, which its guard excludes.
    """
    return dataclasses.replace(instance, cell_uuid=cell.uuid, **values)


def begin(req, instance, cell, method, action, values,
          expected_task_state=(None,), first=None, brief=False):
    """Record instance action ``action`` and apply ``values`` in one write.

    :param method: the action's name in a conflict message (``stop``).
    :param first, brief: as ``instance_records.begin_action``.
    :returns: the updated Instance (None when ``brief``).
    :raises errors.Conflict: the server is still being scheduled (no
        cell yet) or another request changed its task state meanwhile.
    :raises errors.NotFound: it was deleted meanwhile.
    """
    if cell is None:
        raise invalid_state(instance, method, 'vm_state', instance.vm_state)
    try:
        return instance_records.begin_action(
            util.context(req), cell_hosts.database(cell), instance.uuid,
            action, values, expected_task_state, first=first, brief=brief)
    except exception.UnexpectedTaskStateError as exc:
        raise invalid_state(instance, method, 'task_state',
                            exc.kwargs.get('actual'))
    except exception.InstanceNotFound:
        raise errors.NotFound('Instance %s could not be found.'
                              % instance.uuid)
