# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Rebuild a server in place: re-check its host for a new image, cast.

The API has recorded the ``rebuild`` action, the new image and fields,
and task ``rebuilding``. Here, as in Nova's conductor:

* same image: nothing to check, the rebuild is cast to the server's
  compute;
* a new image: the scheduler is asked to validate the server's own host
  (``requested_destination`` = its host and node, the ``_nova_check_type
  = rebuild`` hint): it runs only the filters marked ``RUN_ON_REBUILD``
  (those that read the image, e.g. ImagePropertiesFilter) and claims
  nothing: the flavor, hence the allocation, does not change. When the
  host passes, the stored request spec takes the new image and the
  rebuild is cast. When it does not, the server goes to ERROR with the
  scheduler's "No valid host was found..." fault, its image is set back
  to the one it had, the ``conductor_rebuild_server`` event fails and
  ``instance.rebuild_scheduled.error`` is sent (doc/behaviours.md §rebuild).
"""

import dataclasses
import logging
import traceback

from common.db import boot_records
from common.db import instance_records
from common import exception
from common import notifications
from common.objects import image as image_obj
from common.objects import instance as instance_obj
from common.objects import request_spec as spec_obj
from services.conductor import action_events
from services.conductor import move_spec

LOG = logging.getLogger(__name__)

EVENT = 'conductor_rebuild_server'
# NOTE: Nova's scheduler hint marking a rebuild's host check.
CHECK_TYPE_HINT = '_nova_check_type'
FAULT_CODE = 500


@dataclasses.dataclass
class Rebuild(object):
    """One rebuild request as the API cast it."""

    instance_uuid: str
    image_ref: str
    orig_image_ref: str
    orig_vm_state: str
    image_meta: dict
    preserve_ephemeral: bool = False
    orig_image_meta: dict = dataclasses.field(default_factory=dict)


def check_spec(spec, instance, image_meta):
    """The request spec asking to validate ``instance``'s own host for
    ``image_meta`` (a copy of ``spec``; ``spec`` is not changed).
    """
    check = spec_obj.RequestSpec.from_primitive(spec.to_primitive())
    check.instance_uuid = instance['uuid']
    check.image = image_meta
    check.num_instances = 1
    check.ignore_hosts = []
    check.force_hosts = []
    check.force_nodes = []
    check.retry = None
    check.requested_destination = spec_obj.Destination(
        host=instance['host'], node=instance['node'],
        cell=instance.get('cell_uuid'))
    hints = dict(check.scheduler_hints or {})
    hints[CHECK_TYPE_HINT] = ['rebuild']
    check.scheduler_hints = hints
    return check


def _no_valid_host(conductor, ctxt, database, request, exc):
    """Put the server in ERROR with its old image and the fault."""
    uuid = request.instance_uuid
    tb = traceback.format_exc()
    LOG.warning('Rebuild of %s refused: its host no longer fits image %s: '
                '%s', uuid, request.image_ref, exc)
    try:
        instance_records.add_fault(ctxt, database, uuid, FAULT_CODE,
                                   str(exc), details=tb)
        instance = instance_records.update_instance(
            ctxt, database, uuid,
            {'vm_state': instance_obj.ERROR, 'task_state': None,
             'image_ref': request.orig_image_ref,
             'image_meta': request.orig_image_meta},
            expected_task_state=[instance_obj.REBUILDING])
    except (exception.InstanceNotFound,
            exception.UnexpectedTaskStateError) as gone:
        LOG.info('Instance %s changed during its rebuild check: %s', uuid,
                 gone)
        return
    action_events.record(ctxt, database, uuid, EVENT,
                         conductor.host, 'finish', 'Error', tb)
    conductor.notify(ctxt, 'instance.rebuild_scheduled.error',
                     notifications.instance_payload(
                         instance, fault=notifications.exception_payload(exc),
                         ctxt=ctxt))


def _check_host(conductor, ctxt, instance, request):
    """Validate the server's host for the new image; save the spec.

    :raises common.exception.NoValidHost: the host does not fit it.
    """
    spec = move_spec.stored_spec(conductor, ctxt, instance)
    image_meta = image_obj.ImageMeta.from_primitive(request.image_meta)
    conductor.notify(ctxt, 'instance.rebuild_scheduled.start',
                     notifications.instance_payload(instance, ctxt=ctxt))
    conductor.scheduler_api.select_destinations(
        ctxt, check_spec(spec, instance, image_meta),
        [request.instance_uuid], return_alternates=False)
    conductor.notify(ctxt, 'instance.rebuild_scheduled.end',
                     notifications.instance_payload(instance, ctxt=ctxt))
    spec.image = image_meta
    if conductor.cells.has_api:
        boot_records.save_request_spec(ctxt, request.instance_uuid, spec,
                                       database=conductor.cells.api)


def rebuild_instance(conductor, ctxt, request):
    """Check the host when the image changes, then cast the rebuild.

    :param conductor: the ConductorManager (records, scheduler, computes).
    :param request: a :class:`Rebuild`.
    """
    uuid = request.instance_uuid
    try:
        cell_uuid, database = conductor.cells.instance_cell(ctxt, uuid)
        instance = instance_records.get_instance(ctxt, database, uuid,
                                                 fault=False)
    except exception.InstanceNotFound:
        LOG.info('Instance %s was deleted before its rebuild', uuid)
        return
    instance.cell_uuid = cell_uuid
    instance = instance.to_primitive()
    action_events.record(ctxt, database, uuid, EVENT, conductor.host, 'start')
    if request.image_ref != request.orig_image_ref:
        try:
            _check_host(conductor, ctxt, instance, request)
        except exception.NoValidHost as exc:
            return _no_valid_host(conductor, ctxt, database, request, exc)
        except Exception as exc:
            LOG.exception('Rebuild check of %s failed', uuid)
            return _no_valid_host(conductor, ctxt, database, request, exc)
    action_events.record(ctxt, database, uuid, EVENT,
                         conductor.host, 'finish', 'Success')
    cell = conductor.cells.cell(ctxt, cell_uuid)
    conductor.compute_clients.for_cell(cell).rebuild_instance(
        ctxt, host=instance['host'], instance_uuid=uuid,
        image_ref=request.image_ref, orig_vm_state=request.orig_vm_state,
        preserve_ephemeral=request.preserve_ephemeral)
    LOG.info('Cast rebuild of %s on %s with image %s', uuid,
             instance['host'], request.image_ref)
