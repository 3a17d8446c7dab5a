# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``build_instances``: move a failed build to its next alternate.

A compute whose spawn failed has reverted its claim, removed its
placement allocation and sent the instance back with the alternates the
scheduler chose with it (same cell). Without asking the scheduler again,
as upstream does with host lists:

* the attempt is counted; past ``[scheduler] max_attempts`` the instance
  goes to ERROR;
* the alternates' allocation requests are claimed in placement in order
  until one succeeds (another build may have taken one meanwhile);
* the instance row moves to that host and ``build_and_run_instance`` is
  cast there with the alternates left;
* with none left, the instance goes to ERROR with the fault "Exceeded
  maximum number of retries..." and holds no allocation.
"""

import logging

import common.conf
from common.db import action_records
from common.db import boot_records
from common.db import instance_records
from common import exception
from common.objects import instance as instance_obj
from common.objects import request_spec as spec_obj
from services.conductor import allocations

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

EVENT = 'conductor_build_instances'
FAULT_CODE = 500


def _count_attempt(spec, failed_host, failed_node):
    retry = spec.retry or spec_obj.SchedulerRetries(num_attempts=1)
    retry.num_attempts += 1
    if failed_host and [failed_host, failed_node] not in retry.hosts:
        retry.hosts.append([failed_host, failed_node])
    spec.retry = retry
    return retry.num_attempts


def _claim_next(conductor, ctxt, instance, alternates):
    """(claimed Selection, the alternates after it) or (None, [])."""
    for index, selection in enumerate(alternates):
        alloc_request = allocations.allocation_request(selection)
        if alloc_request is None:
            LOG.debug('Alternate %s of %s has no allocation request',
                      selection.service_host, instance.uuid)
            continue
        if allocations.claim(conductor.placement, ctxt, instance.uuid,
                             alloc_request, instance.project_id,
                             instance.user_id):
            return selection, alternates[index + 1:]
        LOG.info('Alternate host %s for %s could not be claimed',
                 selection.service_host, instance.uuid)
    return None, []


def build_instances(conductor, ctxt, instance, spec, alternates,
                    failed_host, failed_node, reason):
    """Reschedule ``instance`` onto the first alternate that can take it.

    :param instance: the Instance.
    :param spec: its RequestSpec (``retry`` counts the attempts).
    :param alternates: list of Selection, in preference order.
    :returns: the host the build was cast to, or None (ERROR).
    """
    cell_access = conductor.cells
    cell_uuid, database = cell_access.instance_cell(
        ctxt, instance.uuid, hint=instance.cell_uuid or (
            alternates[0].cell_uuid if alternates else None))
    attempts = _count_attempt(spec, failed_host, failed_node)
    LOG.info('Build of %s failed on %s (%s): %s; attempt %d of %d',
             instance.uuid, failed_host, failed_node, reason, attempts,
             CONF.scheduler.max_attempts)
    chosen, remaining = None, []
    if attempts <= CONF.scheduler.max_attempts:
        chosen, remaining = _claim_next(conductor, ctxt, instance,
                                        alternates or [])
    if chosen is None:
        _give_up(conductor, ctxt, database, instance, failed_host,
                 failed_node, reason)
        return None
    try:
        updated = instance_records.update_instance(
            ctxt, database, instance.uuid,
            {'host': chosen.service_host, 'node': chosen.nodename,
             'vm_state': instance_obj.BUILDING,
             'task_state': instance_obj.SCHEDULING})
    except exception.InstanceNotFound:
        # NOTE: deleted while it was being rescheduled: give the claim back.
        LOG.info('Instance %s was deleted during its reschedule',
                 instance.uuid)
        allocations.delete_allocations(conductor.placement, ctxt,
                                       instance.uuid)
        return None
    updated.cell_uuid = cell_uuid
    if cell_access.has_api:
        boot_records.save_request_spec(ctxt, instance.uuid, spec,
                                       database=cell_access.api)
    cell = cell_access.cell(ctxt, cell_uuid) if cell_uuid else None
    conductor.compute_clients.for_cell(cell).build_and_run_instance(
        ctxt, host=chosen.service_host, instance=updated.to_primitive(),
        request_spec=spec.to_primitive(), selection=chosen.to_primitive(),
        alternates=[alt.to_primitive() for alt in remaining],
        node=chosen.nodename)
    LOG.info('Rescheduled %s to %s (%s)', instance.uuid,
             chosen.service_host, chosen.nodename)
    return chosen.service_host


def _give_up(conductor, ctxt, database, instance, failed_host, failed_node,
             reason):
    """ERROR with the retries fault; nothing left allocated."""
    exc = exception.MaxRetriesExceeded(
        reason='Exceeded maximum number of retries. Exhausted all hosts '
               'available for retrying build failures for instance %s.'
               % instance.uuid)
    LOG.error('%s Last failure on %s (%s): %s', exc, failed_host,
              failed_node, reason)
    allocations.delete_allocations(conductor.placement, ctxt, instance.uuid)
    details = 'Last failure on host %s (node %s): %s' % (
        failed_host, failed_node, reason)
    try:
        instance_records.update_instance(
            ctxt, database, instance.uuid,
            {'vm_state': instance_obj.ERROR, 'task_state': None,
             'host': None, 'node': None})
    except exception.InstanceNotFound:
        LOG.info('Instance %s was deleted during its reschedule',
                 instance.uuid)
        return
    instance_records.add_fault(ctxt, database, instance.uuid, FAULT_CODE,
                               str(exc), details, host=failed_host)
    action_records.action_event_start(ctxt, database, instance.uuid, EVENT)
    action_records.action_event_finish(ctxt, database, instance.uuid,
                                       EVENT, result='Error',
                                       traceback=details)
    conductor.notify_create_error(ctxt, instance, str(exc),
                                  exception_name=type(exc).__name__)
