# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``unshelve_instance``: back from the shelf (doc/behaviours.md
§shelve).

The API has recorded the ``unshelve`` action and task ``unshelving``.

    SHELVED (guest and allocation still on its host)
      -> task powering-on -> cast start_instance to its host (the power
         action's path: ACTIVE, instance.power_on.*)
    SHELVED_OFFLOADED (no host, no allocation)
      -> stored request spec, for_move('unshelve'): the 2.77/2.91 zone
         (``null`` unpins it; the new zone is saved in the spec), the
         2.91 host as requested_destination, the server group refreshed
      -> scheduler.select_destinations (claims the instance's allocation
         on the chosen host, as a boot's)
      -> the row takes host, node and the host's zone (still
         shelved_offloaded / unshelving: it counts by the compute's claim
         until it is ACTIVE)
      -> cast unshelve_instance to that compute (claim, spawn, ACTIVE:
         services/compute/shelve.py)
      NoValidHost: the server stays SHELVED_OFFLOADED with no task, the
      ``conductor_unshelve_instance`` event fails, as Nova does; any
      other failure also removes what the scheduler claimed.
"""

import dataclasses
import logging
import traceback

import common.conf
from common.db import decision_records
from common.db import instance_records
from common import exception
from common.objects import instance as instance_obj
from services.conductor import action_events
from services.conductor import allocations
from services.conductor import move_spec

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

EVENT = decision_records.KIND_EVENTS['unshelve']


@dataclasses.dataclass
class Unshelve(object):
    """One unshelve request as the API cast it.

    :ivar zone_given: the body named ``availability_zone`` (``None`` then
        unpins the server's zone).
    """

    instance_uuid: str
    zone_given: bool = False
    availability_zone: str = None
    host: str = None


def unshelve_instance(conductor, ctxt, request):
    """Unshelve one server (see the module doc).

    :param conductor: the ConductorManager.
    :param request: an :class:`Unshelve`.
    :returns: the host the server goes to, or None.
    """
    uuid = request.instance_uuid
    try:
        cell_uuid, database = conductor.cells.instance_cell(ctxt, uuid)
        instance = instance_records.get_instance(ctxt, database, uuid,
                                                 fault=False)
    except exception.InstanceNotFound:
        LOG.info('Instance %s was deleted before its unshelve', uuid)
        return None
    instance.cell_uuid = cell_uuid
    cell = conductor.cells.cell(ctxt, cell_uuid)
    compute = conductor.compute_clients.for_cell(cell)
    action_events.record(ctxt, database, uuid, EVENT, conductor.host, 'start')
    if instance.vm_state == instance_obj.SHELVED:
        return _power_on(conductor, ctxt, database, compute, instance)
    if instance.vm_state != instance_obj.SHELVED_OFFLOADED:
        LOG.warning('Instance %s is %s, not shelved; not unshelving it',
                    uuid, instance.vm_state)
        action_events.record(ctxt, database, uuid, EVENT,
                             conductor.host, 'finish', 'Error')
        return None
    try:
        return _schedule_and_cast(conductor, ctxt, database, compute,
                                  instance.to_primitive(), request)
    except exception.NoValidHost as exc:
        LOG.warning('No valid host found for unshelve instance %s: %s', uuid,
                    exc)
        _give_up(conductor, ctxt, database, uuid, exc, claimed=False)
    except Exception as exc:
        LOG.exception('Unshelve of %s failed', uuid)
        _give_up(conductor, ctxt, database, uuid, exc, claimed=True)
    return None


def _power_on(conductor, ctxt, database, compute, instance):
    """A SHELVED server still has its guest: power it on where it is."""
    uuid = instance.uuid
    try:
        instance_records.update_instance(
            ctxt, database, uuid, {'task_state': instance_obj.POWERING_ON},
            expected_task_state=[instance_obj.UNSHELVING], brief=True)
    except (exception.InstanceNotFound,
            exception.UnexpectedTaskStateError) as exc:
        LOG.info('Instance %s changed before its unshelve: %s', uuid, exc)
        action_events.record(ctxt, database, uuid, EVENT,
                             conductor.host, 'finish', 'Error')
        return None
    action_events.record(ctxt, database, uuid, EVENT,
                         conductor.host, 'finish', 'Success')
    compute.start_instance(ctxt, instance.host, uuid)
    LOG.info('Unshelving %s on its host %s (power on)', uuid, instance.host)
    return instance.host


def _schedule_and_cast(conductor, ctxt, database, compute, instance,
                       request):
    uuid = instance['uuid']
    spec = move_spec.stored_spec(conductor, ctxt, instance)
    zone = request.availability_zone if request.zone_given else False
    moved = move_spec.for_move(spec, instance, 'unshelve',
                               host=request.host, availability_zone=zone)
    move_spec.refresh_group(conductor, ctxt, moved)
    selection = conductor.scheduler_api.select_destinations(
        ctxt, moved, [uuid], return_alternates=False)[0][0]
    decision, selection.decision = selection.decision, None
    if request.zone_given:
        # NOTE: Nova keeps the zone asked at unshelve as the server's
        # request from now on (null: no zone).
        spec.availability_zone = request.availability_zone
        move_spec.save_spec(conductor, ctxt, uuid, spec)
    values = {'host': selection.service_host, 'node': selection.nodename,
              'availability_zone': (selection.availability_zone or
                                    CONF.default_availability_zone)}
    try:
        instance_records.update_instance(
            ctxt, database, uuid, values,
            expected_task_state=[instance_obj.UNSHELVING], brief=True)
    except (exception.InstanceNotFound,
            exception.UnexpectedTaskStateError) as exc:
        LOG.info('Instance %s changed while it was scheduled for its '
                 'unshelve: %s; giving its claim back', uuid, exc)
        allocations.delete_allocations(conductor.placement, ctxt, uuid)
        return None
    if decision is not None:
        decision_records.record(ctxt, database, uuid, 'unshelve', decision,
                                host=conductor.host)
    action_events.record(ctxt, database, uuid, EVENT,
                         conductor.host, 'finish', 'Success')
    compute.unshelve_instance(
        ctxt, host=selection.service_host, instance_uuid=uuid,
        request_spec=moved.to_primitive(),
        selection=selection.to_primitive(), node=selection.nodename)
    LOG.info('Cast unshelve of %s to %s (%s)', uuid, selection.service_host,
             selection.nodename)
    return selection.service_host


def _give_up(conductor, ctxt, database, uuid, exc, claimed):
    """The server stays SHELVED_OFFLOADED with no task; no claim left."""
    tb = traceback.format_exc()
    if claimed:
        allocations.delete_allocations(conductor.placement, ctxt, uuid)
    try:
        instance_records.update_instance(
            ctxt, database, uuid,
            {'task_state': None, 'host': None, 'node': None},
            expected_task_state=[instance_obj.UNSHELVING], brief=True)
        if claimed:
            instance_records.add_fault(ctxt, database, uuid, 500,
                                       str(exc)[:255], details=tb)
    except (exception.InstanceNotFound,
            exception.UnexpectedTaskStateError) as gone:
        LOG.info('Instance %s changed during its unshelve: %s', uuid, gone)
    action_events.record(ctxt, database, uuid, EVENT,
                         conductor.host, 'finish', 'Error', tb)
