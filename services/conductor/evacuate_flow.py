# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``evacuate_instance``: a server of a failed host re-created elsewhere
(doc/behaviours.md §evacuate).

The API has checked that the source host's compute service is down, set
task ``rebuilding``, recorded the ``evacuate`` action and a migration
``evacuation``/``accepted`` from the source host.

    event conductor_rebuild_server starts
    -> the instance's allocation (on the dead source) handed to the
       migration's consumer (move_allocations.to_migration): the source
       stays accounted until the source agent comes back and cleans up
    -> forced host (2.29..2.67): the flavor's resources claimed on that
       host's node directly, no filters (Nova's force);
       otherwise: stored spec, for_move('evacuate', host=...), source in
       ignore_hosts, group refreshed -> select_destinations (claims the
       destination for the instance's consumer)
    -> migration: dest host and node, status pre-migrating
    -> cast evacuate_instance to the destination compute (move claim,
       spawn, row moved there, ACTIVE or SHUTOFF at 2.95, migration
       done: services/compute/evacuate.py)
    failure (NoValidHost, a refused claim, placement down): the source
    allocation goes back to the instance, the migration ``error``, the
    server ERROR on its source host with the fault, the event failed.

When the source agent starts again it destroys the evacuated guests,
deletes the migration's allocation and completes the migration
(services/compute/evacuate.py, Nova's ``_destroy_evacuated_instances``).
"""

import dataclasses
import logging
import traceback

from common.db import compute_records
from common.db import decision_records
from common.db import instance_records
from common.db import migration_records
from common import exception
from common.objects import instance as instance_obj
from common.objects import migration as migration_obj
from common.objects import selection as selection_obj
from services.conductor import action_events
from services.conductor import allocation_audit
from services.conductor import allocations
from services.conductor import move_allocations
from services.conductor import move_spec

LOG = logging.getLogger(__name__)

EVENT = decision_records.KIND_EVENTS['evacuate']
FAULT_CODE = 500


@dataclasses.dataclass
class Evacuate(object):
    """One evacuation as the API cast it."""

    instance_uuid: str
    migration_uuid: str
    host: str = None
    force: bool = False
    target_state: str = None


class ForcedHostUnavailable(exception.NoValidHost):
    """A forced destination that cannot take the server."""


def _forced(conductor, ctxt, database, instance, host):
    """Claim the forced ``host``'s node for the instance, no scheduler.

    :returns: the Selection of that node.
    :raises ForcedHostUnavailable: no node, or placement refused.
    """
    nodes = compute_records.list_compute_nodes(ctxt, database, host=host)
    if not nodes:
        raise ForcedHostUnavailable(
            reason='Compute host %s has no compute node' % host)
    node = nodes[0]
    wanted = allocation_audit.expected_resources(instance)
    try:
        allocations.put_allocations(
            conductor.placement, ctxt, instance.uuid, {node['uuid']: wanted},
            instance.project_id, instance.user_id)
    except allocations.ClaimFailed as exc:
        raise ForcedHostUnavailable(
            reason='Unable to move instance %s to host %s. There is not '
                   'enough capacity on the host for the instance. (%s)'
                   % (instance.uuid, host, exc))
    return selection_obj.Selection(
        service_host=host, nodename=node['hypervisor_hostname'],
        compute_node_uuid=node['uuid'], cell_uuid=instance.cell_uuid)


def _select(conductor, ctxt, instance, request):
    """The scheduler's Selection for the evacuation (claimed)."""
    primitive = instance.to_primitive()
    spec = move_spec.stored_spec(conductor, ctxt, primitive)
    moved = move_spec.for_move(spec, primitive, 'evacuate',
                               host=request.host)
    move_spec.refresh_group(conductor, ctxt, moved)
    return conductor.scheduler_api.select_destinations(
        ctxt, moved, [instance.uuid], return_alternates=False)[0][0], moved


def evacuate_instance(conductor, ctxt, request):
    """Place an evacuated server and cast its rebuild (module doc).

    :param conductor: the ConductorManager.
    :param request: an :class:`Evacuate`.
    :returns: the destination host, or None.
    """
    uuid = request.instance_uuid
    try:
        cell_uuid, database = conductor.cells.instance_cell(ctxt, uuid)
        instance = instance_records.get_instance(ctxt, database, uuid,
                                                 fault=False)
    except exception.InstanceNotFound:
        LOG.info('Instance %s was deleted before its evacuation', uuid)
        return None
    instance.cell_uuid = cell_uuid
    action_events.record(ctxt, database, uuid, EVENT, conductor.host, 'start')
    moved_source = False
    try:
        moved_source = bool(move_allocations.to_migration(
            conductor.placement, ctxt, uuid, request.migration_uuid,
            instance.project_id, instance.user_id))
        if request.force:
            selection = _forced(conductor, ctxt, database, instance,
                                request.host)
            spec = move_spec.stored_spec(conductor, ctxt,
                                         instance.to_primitive())
        else:
            selection, spec = _select(conductor, ctxt, instance, request)
        return _cast(conductor, ctxt, database, instance, request, selection,
                     spec)
    except Exception as exc:
        if not isinstance(exc, exception.NoValidHost):
            LOG.exception('Evacuation of %s failed', uuid)
        _fail(conductor, ctxt, database, instance, request, exc,
              moved_source)
        return None


def _cast(conductor, ctxt, database, instance, request, selection, spec):
    uuid = instance.uuid
    decision, selection.decision = selection.decision, None
    migration_records.update_migration(
        ctxt, database, request.migration_uuid,
        {'dest_compute': selection.service_host,
         'dest_node': selection.nodename,
         'status': migration_obj.PRE_MIGRATING},
        expected_status=migration_obj.ACCEPTED)
    if decision is not None:
        decision_records.record(ctxt, database, uuid, 'evacuate', decision,
                                host=conductor.host)
    action_events.record(ctxt, database, uuid, EVENT,
                         conductor.host, 'finish', 'Success')
    cell = conductor.cells.cell(ctxt, instance.cell_uuid)
    conductor.compute_clients.for_cell(cell).evacuate_instance(
        ctxt, host=selection.service_host, instance_uuid=uuid,
        migration_uuid=request.migration_uuid,
        request_spec=spec.to_primitive(),
        selection=selection.to_primitive(), node=selection.nodename,
        target_state=request.target_state)
    LOG.info('Cast evacuation of %s from %s to %s (%s)', uuid,
             instance.host, selection.service_host, selection.nodename)
    return selection.service_host


def _fail(conductor, ctxt, database, instance, request, exc, moved_source):
    """Source allocation back to the instance, migration error, server
    ERROR on its source with the fault (Nova's ending).
    """
    uuid = instance.uuid
    tb = traceback.format_exc()
    if moved_source:
        try:
            move_allocations.back_to_instance(
                conductor.placement, ctxt, uuid, request.migration_uuid,
                instance.project_id, instance.user_id)
        except Exception:
            LOG.exception('Could not give the allocation of migration %s '
                          'back to %s (the audit reports it)',
                          request.migration_uuid, uuid)
    else:
        # NOTE: the instance held nothing to move: whatever it holds now
        # is this evacuation's claim.
        allocations.delete_allocations(conductor.placement, ctxt, uuid)
    try:
        migration_records.update_migration(
            ctxt, database, request.migration_uuid,
            {'status': migration_obj.ERROR})
    except exception.MigrationNotFound:
        pass
    try:
        instance_records.add_fault(ctxt, database, uuid, FAULT_CODE,
                                   str(exc)[:255], details=tb)
        instance_records.update_instance(
            ctxt, database, uuid,
            {'vm_state': instance_obj.ERROR, 'task_state': None},
            expected_task_state=[instance_obj.REBUILDING], brief=True)
    except (exception.InstanceNotFound,
            exception.UnexpectedTaskStateError) as gone:
        LOG.info('Instance %s changed during its evacuation: %s', uuid,
                 gone)
    action_events.record(ctxt, database, uuid, EVENT,
                         conductor.host, 'finish', 'Error', tb)
