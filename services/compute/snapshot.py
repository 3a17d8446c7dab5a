# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Snapshot an instance into the image the API created for it.

The API has created the image ``queued`` and set task ``image_snapshot``.
Here, as Nova's compute: task ``image_pending_upload`` (the
``compute_snapshot_instance`` event starts), the driver's snapshot, task
``image_uploading``, the image made ``active`` with the data's size and
checksum (by the conductor: compute agents reach no database), task
None and the event's finish. ``instance.snapshot.start``/``.end``
surround it; the vm_state never changes.

A failure deletes the image (no half-written image is left), records a
fault, finishes the event with Error, sends ``instance.snapshot.error``
and clears the task state. A snapshot a restart of the agent interrupted
has its task cleared (:func:`recover`), as Nova's ``init_host`` does; its
image is deleted.
"""

import logging
import traceback

from common.objects import instance as instance_obj
from services.compute import notifier as notifier_mod
from services.compute import utils

LOG = logging.getLogger(__name__)

EVENT = 'compute_snapshot_instance'
FAULT_CODE = 500
_SNAPSHOT_STATES = [instance_obj.IMAGE_SNAPSHOT,
                    instance_obj.IMAGE_PENDING_UPLOAD,
                    instance_obj.IMAGE_UPLOADING]


class SnapshotTask(object):
    """One ``snapshot_instance`` cast, run to its end."""

    def __init__(self, agent, ctxt, host, instance_uuid, image_id):
        self.agent = agent
        self.ctxt = ctxt
        self.host = host
        self.uuid = instance_uuid
        self.image_id = image_id
        self.conductor = agent.conductor
        self.notifier = notifier_mod.for_host(host)
        self.instance = None

    def _update(self, task_state, expected, event=None):
        self.instance = self.conductor.instance_update(
            self.ctxt, self.uuid, {'task_state': task_state},
            expected_task_state=expected, action_event=event)

    def run(self):
        """Snapshot; a failure deletes the image and clears the task."""
        with self.agent.instance_locks(self.uuid):
            try:
                self.instance = self.conductor.instance_get(self.ctxt,
                                                            self.uuid)
            except Exception as exc:
                if not utils.not_found(exc):
                    raise
                LOG.info('Instance %s was deleted before its snapshot',
                         self.uuid)
                self._drop_image()
                return
            try:
                with self.notifier.around(self.ctxt, 'snapshot',
                                          lambda: self.instance):
                    self._snapshot()
            except Exception as exc:
                self._fail(exc)

    def _snapshot(self):
        self._update(instance_obj.IMAGE_PENDING_UPLOAD,
                     [instance_obj.IMAGE_SNAPSHOT],
                     {'phase': 'start', 'event': EVENT, 'host': self.host})
        result = self.agent.driver.snapshot(self.host, self.uuid,
                                            self.image_id)
        self._update(instance_obj.IMAGE_UPLOADING,
                     [instance_obj.IMAGE_PENDING_UPLOAD])
        if not self.conductor.image_snapshot_done(
                self.ctxt, self.image_id,
                {'status': 'active', 'size': result.size,
                 'checksum': result.checksum}):
            LOG.info('Image %s of instance %s was deleted during the '
                     'snapshot', self.image_id, self.uuid)
        self._update(None, [instance_obj.IMAGE_UPLOADING],
                     {'phase': 'finish', 'event': EVENT, 'host': self.host,
                      'result': 'Success'})
        LOG.info('Snapshot of instance %s on %s is image %s', self.uuid,
                 self.host, self.image_id)

    def _drop_image(self):
        try:
            self.conductor.image_snapshot_done(self.ctxt, self.image_id,
                                               None)
        except Exception:
            LOG.exception('Could not delete image %s of a failed snapshot',
                          self.image_id)

    def _fail(self, exc):
        gone = utils.not_found(exc)
        LOG.warning('Snapshot of instance %s into image %s failed: %s',
                    self.uuid, self.image_id, exc)
        details = traceback.format_exc()
        self._drop_image()
        if gone:
            return
        try:
            self.conductor.instance_fault_create(
                self.ctxt, self.uuid, FAULT_CODE, str(exc)[:255],
                details=details, host=self.host)
            # NOTE: the vm_state stays; only the task is cleared, from
            # whichever snapshot step failed.
            self.conductor.instance_update(
                self.ctxt, self.uuid, {'task_state': None},
                expected_task_state=_SNAPSHOT_STATES,
                action_event={'phase': 'finish', 'event': EVENT,
                              'host': self.host, 'result': 'Error',
                              'traceback': details})
        except Exception as again:
            if utils.not_found(again) or utils.unexpected_task_state(again):
                return
            LOG.exception('Could not clear the task of instance %s after '
                          'its failed snapshot', self.uuid)


def snapshot_instance(agent, ctxt, host, instance_uuid, image_id):
    """Snapshot one instance of ``host`` (see the module doc)."""
    SnapshotTask(agent, ctxt, host, instance_uuid, image_id).run()


def recover(agent, ctxt, host, instances):
    """Clear the task of the instances of ``host`` whose snapshot a
    restart interrupted, and delete their queued images (found by their
    ``instance_uuid`` property: the image id is not on the instance).

    :param instances: the host's instance primitives.
    """
    for instance in instances:
        if instance.get('task_state') not in _SNAPSHOT_STATES:
            continue
        uuid = instance['uuid']
        LOG.warning('Instance %s was being snapshotted when %s stopped; '
                    'clearing its task state', uuid, host)
        try:
            agent.conductor.image_snapshot_abandoned(ctxt, uuid)
            agent.conductor.instance_update(
                ctxt, uuid, {'task_state': None},
                expected_task_state=_SNAPSHOT_STATES)
        except Exception as exc:
            if not (utils.not_found(exc) or
                    utils.unexpected_task_state(exc)):
                LOG.exception('Could not recover instance %s', uuid)
