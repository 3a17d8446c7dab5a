# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Bury servers that could not be scheduled in cell0, in ERROR.

A server the scheduler found no host for never gets a cell of its own; it
is written to cell0 with ``vm_state`` error, a fault whose message says
why (``No valid host was found. ...``) and whose details carry the
scheduler's explanation, and a ``create`` action with a failed
``conductor_schedule_and_build_instances`` event. Its mapping then points
at cell0 and its build request is deleted, so the API shows it like any
other server, in ERROR.
"""

import logging
import traceback

from oslo_db import exception as db_exc

from common.db import action_records
from common.db import boot_records
from common.db import cells
from common.db import instance_records
from common import exception
from common.objects import instance as instance_obj
from services.conductor import allocations

LOG = logging.getLogger(__name__)

EVENT = 'conductor_schedule_and_build_instances'
FAULT_CODE = 500


def fault_of(exc):
    """(message, details) of the fault recording a scheduling failure.

    NoValidHost carries the scheduler's explanation, which becomes the
    details (JSON); anything else gets its traceback there.
    """
    if isinstance(exc, exception.NoValidHost):
        return str(exc), exc.explanation or {'summary': exc.reason}
    details = ''.join(traceback.format_exception(type(exc), exc,
                                                 exc.__traceback__))
    name = type(exc).__name__
    return ('%s: %s' % (name, exc) if str(exc) else name), details


def _buried(instance):
    instance.vm_state = instance_obj.ERROR
    instance.task_state = None
    instance.host = None
    instance.node = None
    instance.cell_uuid = cells.CELL0_UUID
    return instance


def _create(ctxt, database, instance):
    try:
        instance_records.create_instance(ctxt, database, instance,
                                         action='create')
        return
    except db_exc.DBDuplicateEntry:
        # NOTE: a redelivered request, or a second failure path for the
        # same server: the row is there, make sure it says ERROR.
        instance_records.update_instance(
            ctxt, database, instance.uuid,
            {'vm_state': instance_obj.ERROR, 'task_state': None,
             'host': None, 'node': None})
    action_records.record_action(ctxt, database, instance.uuid, 'create')


def _buried_by_another(ctxt, cell_access, uuid, cell0_uuid):
    """True when another path finished the build request into cell0 (a
    conductor's stale-build bound and a failed scheduling, say).

    NOTE: the cell0 row is then that burial's too; deleting it would
    leave a server mapped to no live row.
    """
    mapping = boot_records.get_instance_mapping(ctxt, uuid,
                                                database=cell_access.api)
    return mapping is not None and mapping['cell_uuid'] == cell0_uuid


def bury_in_cell0(conductor, ctxt, instances, exc, free_allocations=False):
    """Write each instance into cell0 in ERROR with the failure as fault.

    :param conductor: the ConductorManager (cells, placement, notify).
    :param instances: the Instances (from their build requests).
    :param exc: the failure: NoValidHost with its explanation, or any
        other exception.
    :param free_allocations: also remove the instances' allocations in
        placement (the scheduler may have claimed before the failure).
    :returns: the uuids buried (those whose build request was still
        there).
    """
    message, details = fault_of(exc)
    cell_access = conductor.cells
    cell0 = cell_access.cell0(ctxt)
    database = cell_access.database(cell0)
    buried = []
    for instance in instances:
        uuid = instance.uuid
        LOG.warning('Setting instance %s to ERROR state: %s', uuid, message)
        _create(ctxt, database, _buried(instance))
        action_records.action_event_start(ctxt, database, uuid, EVENT)
        # NOTE: a NoValidHost has no traceback to read the event's
        # details from: its message is them.
        traceback_text = details if isinstance(details, str) else None
        action_records.action_event_finish(
            ctxt, database, uuid, EVENT, result='Error',
            traceback=traceback_text,
            details=None if traceback_text else message)
        instance_records.add_fault(ctxt, database, uuid, FAULT_CODE,
                                   message, details)
        if free_allocations:
            allocations.delete_allocations(conductor.placement, ctxt, uuid)
        if not boot_records.finish_build_request(
                ctxt, uuid, cell0.uuid, database=cell_access.api):
            if _buried_by_another(ctxt, cell_access, uuid, cell0.uuid):
                continue
            # NOTE: the user deleted the server while it was scheduled;
            # keep no live row of it.
            LOG.info('Instance %s was deleted while being scheduled', uuid)
            instance_records.destroy_instance(ctxt, database, uuid)
            continue
        cell_access.remember(uuid, cell0.uuid)
        conductor.notify_create_error(
            ctxt, instance, message,
            explanation=details if isinstance(details, dict) else None,
            exception_name='NoValidHost')
        buried.append(uuid)
    return buried
