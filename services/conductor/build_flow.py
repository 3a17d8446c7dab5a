# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``schedule_and_build_instances``: from build requests to compute casts.

    build requests (as the API's cast carries them)
      -> server group -> scheduler.select_destinations
      -> NoValidHost: every instance buried in cell0 in ERROR
      -> per instance: build request still there?
           no  -> the user deleted it: remove its allocation, done
           yes -> instance row in the chosen host's cell (host, node, AZ;
                  cell and zone as the scheduler's selection names them)
                  + 'create' action -> mapping to that cell and build
                  request deleted (one api transaction; if the request
                  vanished meanwhile, undo) -> cast build_and_run_instance
                  with the selection and its alternates

``conductor`` is the ConductorManager: it provides ``cells``
(:class:`~common.db.cell_access.CellAccess`), ``placement``,
``scheduler_api``, ``compute_clients`` and ``notify``.
"""

import dataclasses
import logging

from oslo_db import exception as db_exc

import common.conf
from common.db import boot_records
from common.db import cells
from common.db import group_setup
from common.db import instance_records
from common import exception
from common.objects import instance as instance_obj
from common.objects import request_spec as spec_obj
from services.conductor import allocations
from services.conductor import cell0

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF


def _forget_unbuilt(conductor, ctxt, uuid):
    """Drop what is left of a server deleted before it got a cell."""
    mapping = boot_records.get_instance_mapping(
        ctxt, uuid, database=conductor.cells.api)
    if mapping is not None and mapping['cell_uuid'] is None:
        # NOTE: it never existed in any cell; an orphan mapping would only
        # make the API look for it.
        boot_records.delete_instance_mapping(ctxt, uuid,
                                             database=conductor.cells.api)


def _schedule(conductor, ctxt, spec, uuids):
    """The scheduler's selections, per instance (chosen first)."""
    group_setup.setup_instance_group(ctxt, conductor.cells, spec)
    return conductor.scheduler_api.select_destinations(
        ctxt, spec, uuids, return_alternates=True)


def schedule_and_build_instances(conductor, ctxt, spec, instance_uuids,
                                 instances):
    """Schedule the servers of one boot request and start their builds.

    :param spec: the RequestSpec of the whole request.
    :param instance_uuids: its servers, in launch order.
    :param instances: the Instances their build requests hold, as the API
        sent them. A server deleted since is found when its build request
        is finished, as one deleted while the scheduler works is.
    :returns: {uuid: host} of the builds cast (tests and logs).
    """
    requests = {instance.uuid: instance for instance in instances}
    uuids = []
    for uuid in instance_uuids:
        if uuid in requests:
            uuids.append(uuid)
        else:
            LOG.info('Build request of %s is gone before scheduling; the '
                     'server was deleted (or already built)', uuid)
            _forget_unbuilt(conductor, ctxt, uuid)
    if not uuids:
        return {}
    spec.num_instances = len(uuids)
    instances = [requests[u] for u in uuids]
    try:
        selections = _schedule(conductor, ctxt, spec, uuids)
    except exception.NoValidHost as exc:
        LOG.info('No valid host for %s: %s', uuids, exc.reason)
        _bury(conductor, ctxt, instances, exc)
        return {}
    except Exception as exc:
        LOG.exception('Failed to schedule instances %s', uuids)
        # NOTE: a timeout may come after the scheduler claimed; nothing
        # may stay allocated for servers that will never build.
        _bury(conductor, ctxt, instances, exc, free_allocations=True)
        return {}
    cast = {}
    for instance, host_list in zip(instances, selections):
        try:
            if _build_one(conductor, ctxt, spec, instance, host_list):
                cast[instance.uuid] = host_list[0].service_host
        except Exception as exc:
            LOG.exception('Failed to start the build of %s', instance.uuid)
            _fail_build(conductor, ctxt, instance, exc)
    return cast


def _bury(conductor, ctxt, instances, exc, free_allocations=False):
    try:
        cell0.bury_in_cell0(conductor, ctxt, instances, exc,
                            free_allocations=free_allocations)
    except cells.CellMappingNotFound:
        # NOTE: the servers stay build requests (BUILD in the API) until
        # an operator maps cell0 and deletes or re-creates them.
        LOG.error('Cannot record the failure of %s: cell0 is not mapped '
                  '(run "berth-manage cell_v2 map_cell0")',
                  [i.uuid for i in instances])


def _instance_for(instance, selection, cell_uuid):
    """``instance`` placed where ``selection`` says.

    NOTE: the zone is the chosen host's as the scheduler's host state
    had it (zones follow the API's aggregate casts), so the api database
    is not read again after scheduling.
    """
    instance.host = selection.service_host
    instance.node = selection.nodename
    instance.availability_zone = (selection.availability_zone or
                                  CONF.default_availability_zone)
    instance.vm_state = instance_obj.BUILDING
    instance.task_state = instance_obj.SCHEDULING
    instance.cell_uuid = cell_uuid
    return instance


def _create(ctxt, database, instance, decision=None):
    try:
        created = instance_records.create_instance(
            ctxt, database, instance, action='create',
            decision=None if decision is None else (
                'build', decision, CONF.host))
    except db_exc.DBDuplicateEntry:
        # NOTE: a redelivered request: the row exists, take this placement.
        created = instance_records.update_instance(
            ctxt, database, instance.uuid,
            {'host': instance.host, 'node': instance.node,
             'availability_zone': instance.availability_zone,
             'vm_state': instance.vm_state,
             'task_state': instance.task_state})
    created.cell_uuid = instance.cell_uuid
    return created


def instance_spec(spec, uuid, selection):
    """The per-instance RequestSpec a compute gets (and sends back on a
    reschedule): this instance only, its first attempt recorded.
    """
    return dataclasses.replace(
        spec, instance_uuid=uuid, num_instances=1,
        retry=spec_obj.SchedulerRetries(
            num_attempts=1,
            hosts=[[selection.service_host, selection.nodename]]))


def _build_one(conductor, ctxt, spec, instance, host_list):
    """Create, map and cast one instance; False when it was skipped.

    NOTE: the cell is the one the scheduler found the host in (it only
    finds hosts in the cells' databases); upstream reads the host mapping
    instead and fails a host without one, but periodic discovery maps a
    new host soon after the scheduler can see it.
    """
    cell_access = conductor.cells
    uuid = instance.uuid
    selection = host_list[0]
    cell_uuid = selection.cell_uuid
    if cell_uuid is None:
        LOG.error('No host-to-cell mapping found for selected host %s. '
                  'Setup is incomplete.', selection.service_host)
        _bury(conductor, ctxt, [instance],
              exception.HostMappingNotFound(name=selection.service_host),
              free_allocations=True)
        return False
    cell = cell_access.cell(ctxt, cell_uuid)
    database = cell_access.database(cell)
    # NOTE: the "why here" record is kept with the instance's create
    # action; the compute does not need it.
    decision, selection.decision = selection.decision, None
    created = _create(ctxt, database,
                      _instance_for(instance, selection, cell_uuid), decision)
    if not boot_records.finish_build_request(ctxt, uuid, cell_uuid,
                                             database=cell_access.api):
        LOG.info('Instance %s was deleted while it was being built; '
                 'cleaning up', uuid)
        instance_records.destroy_instance(ctxt, database, uuid)
        _forget_unbuilt(conductor, ctxt, uuid)
        allocations.delete_allocations(conductor.placement, ctxt, uuid)
        return False
    cell_access.remember(uuid, cell_uuid)
    compute = conductor.compute_clients.for_cell(cell)
    compute.build_and_run_instance(
        ctxt, host=selection.service_host, instance=created.to_primitive(),
        request_spec=instance_spec(spec, uuid, selection).to_primitive(),
        selection=selection.to_primitive(),
        alternates=[alt.to_primitive() for alt in host_list[1:]],
        node=selection.nodename)
    LOG.debug('Cast build of %s to %s (%s) in cell %s', uuid,
              selection.service_host, selection.nodename, cell_uuid)
    return True


def _fail_build(conductor, ctxt, instance, exc):
    """Best effort after an unexpected failure: ERROR, fault, no claim."""
    allocations.delete_allocations(conductor.placement, ctxt, instance.uuid)
    try:
        cell_uuid, database = conductor.cells.instance_cell(
            ctxt, instance.uuid)
        if cell_uuid is None:
            cell0.bury_in_cell0(conductor, ctxt, [instance], exc)
            return
        message, details = cell0.fault_of(exc)
        instance_records.update_instance(
            ctxt, database, instance.uuid,
            {'vm_state': instance_obj.ERROR, 'task_state': None})
        instance_records.add_fault(ctxt, database, instance.uuid,
                                   cell0.FAULT_CODE, message, details)
        conductor.notify_create_error(ctxt, instance, message)
    except Exception:
        LOG.exception('Could not record the failure of %s', instance.uuid)
