# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Rebuild an instance in place: the guest re-created from its image.

The API has recorded the new image and fields with task ``rebuilding``;
the conductor has checked the host for a new image. Here, as in Nova's
compute: task ``rebuild_spawning`` (with the ``compute_rebuild_instance``
event's start), the driver's rebuild (by default destroy and spawn with
the claim the instance already holds: same flavor, same allocation),
then vm_state ``active`` (``stopped`` for a server that was stopped, as
Nova keeps it), task None, ``launched_at`` now, the event's finish.
``instance.rebuild.start``/``.end`` surround it.

A failure puts the instance in ERROR with a fault, the event failed and
``instance.rebuild.error``: never stuck in a task state. A rebuild a
restart of the agent interrupted ends the same way (:func:`recover`), as
Nova's ``init_host`` does.
"""

import logging
import traceback

from common.objects import instance as instance_obj
from services.compute import notifier as notifier_mod
from services.compute import utils
from services.compute.virt import driver as driver_mod

LOG = logging.getLogger(__name__)

EVENT = 'compute_rebuild_instance'
FAULT_CODE = 500
STOPPED = 'stopped'


def _guest(agent, host, instance):
    """The instance's Guest as the driver runs it (or as recorded)."""
    guest = agent.driver.list_guests(host).get(instance['uuid'])
    if guest is not None:
        return guest
    return driver_mod.Guest(uuid=instance['uuid'], host=host,
                            nodename=instance.get('node') or host,
                            numa_topology=instance.get('numa_topology'))


def _finished_values(orig_vm_state):
    if orig_vm_state == STOPPED:
        return {'vm_state': STOPPED, 'power_state': instance_obj.SHUTDOWN,
                'task_state': None, 'launched_at': utils.utcnow_iso()}
    return {'vm_state': instance_obj.ACTIVE,
            'power_state': instance_obj.RUNNING, 'task_state': None,
            'launched_at': utils.utcnow_iso()}


class RebuildTask(object):
    """One ``rebuild_instance`` cast, run to its end."""

    def __init__(self, agent, ctxt, host, instance_uuid, image_ref,
                 orig_vm_state, preserve_ephemeral=False):
        self.agent = agent
        self.ctxt = ctxt
        self.host = host
        self.uuid = instance_uuid
        self.image_ref = image_ref
        self.orig_vm_state = orig_vm_state
        self.preserve_ephemeral = preserve_ephemeral
        self.conductor = agent.conductor
        self.notifier = notifier_mod.for_host(host)
        self.instance = None

    def _current(self):
        try:
            self.instance = self.conductor.instance_get(self.ctxt, self.uuid)
        except Exception as exc:
            if not utils.not_found(exc):
                LOG.warning('Could not read instance %s: %s', self.uuid,
                            exc)
        return self.instance

    def run(self):
        """Rebuild; every failure ends in ERROR with a fault."""
        with self.agent.instance_locks(self.uuid):
            if self._current() is None:
                LOG.info('Instance %s was deleted before its rebuild',
                         self.uuid)
                return
            try:
                with self.notifier.around(self.ctxt, 'rebuild',
                                          lambda: self.instance):
                    self._rebuild()
            except Exception as exc:
                if utils.not_found(exc) or utils.unexpected_task_state(exc):
                    LOG.info('Instance %s was deleted during its rebuild',
                             self.uuid)
                    return
                self._fail(exc)

    def _rebuild(self):
        self.instance = self.conductor.instance_update(
            self.ctxt, self.uuid,
            {'task_state': instance_obj.REBUILD_SPAWNING},
            expected_task_state=[instance_obj.REBUILDING],
            action_event={'phase': 'start', 'event': EVENT,
                          'host': self.host})
        LOG.info('Rebuilding instance %s on %s from image %s', self.uuid,
                 self.host, self.image_ref)
        self.agent.driver.rebuild(
            _guest(self.agent, self.host, self.instance),
            self.instance.get('image_meta') or {},
            preserve_ephemeral=self.preserve_ephemeral,
            power_on=self.orig_vm_state != STOPPED)
        self.instance = self.conductor.instance_update(
            self.ctxt, self.uuid, _finished_values(self.orig_vm_state),
            expected_task_state=[instance_obj.REBUILD_SPAWNING],
            action_event={'phase': 'finish', 'event': EVENT,
                          'host': self.host, 'result': 'Success'})
        LOG.info('Instance %s rebuilt on %s', self.uuid, self.host)

    def _fail(self, exc):
        LOG.warning('Rebuild of instance %s failed on %s: %s', self.uuid,
                    self.host, exc)
        details = traceback.format_exc()
        try:
            self.conductor.instance_fault_create(
                self.ctxt, self.uuid, FAULT_CODE, str(exc)[:255],
                details=details, host=self.host)
            self.conductor.instance_update(
                self.ctxt, self.uuid,
                {'vm_state': instance_obj.ERROR, 'task_state': None},
                action_event={'phase': 'finish', 'event': EVENT,
                              'host': self.host, 'result': 'Error',
                              'traceback': details})
        except Exception as again:
            if utils.not_found(again):
                return
            LOG.exception('Could not put instance %s in ERROR after its '
                          'failed rebuild', self.uuid)


def rebuild_instance(agent, ctxt, host, instance_uuid, image_ref,
                     orig_vm_state, preserve_ephemeral=False):
    """Rebuild one instance of ``host`` (see the module doc)."""
    RebuildTask(agent, ctxt, host, instance_uuid, image_ref, orig_vm_state,
                preserve_ephemeral).run()


def recover(agent, ctxt, host, instances):
    """ERROR, with a fault, for the instances of ``host`` whose rebuild a
    restart interrupted (task rebuilding or rebuild_spawning).

    :param instances: the host's instance primitives.
    """
    for instance in instances:
        if instance.get('task_state') not in (instance_obj.REBUILDING,
                                              instance_obj.REBUILD_SPAWNING):
            continue
        uuid = instance['uuid']
        LOG.warning('Instance %s was being rebuilt when %s stopped; setting '
                    'it to ERROR', uuid, host)
        try:
            agent.conductor.instance_fault_create(
                ctxt, uuid, FAULT_CODE, 'The rebuild was interrupted by a '
                'restart of the compute service', host=host)
            agent.conductor.instance_update(
                ctxt, uuid, {'vm_state': instance_obj.ERROR,
                             'task_state': None},
                expected_task_state=[instance_obj.REBUILDING,
                                     instance_obj.REBUILD_SPAWNING])
        except Exception as exc:
            if not (utils.not_found(exc) or
                    utils.unexpected_task_state(exc)):
                LOG.exception('Could not recover instance %s', uuid)
