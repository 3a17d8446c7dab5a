# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Evacuation on the compute side (doc/behaviours.md §evacuate).

On the destination (``evacuate_instance``; the conductor has moved the
source allocation to the migration's consumer, claimed this host for the
instance's and set the migration ``pre-migrating``):

1. the move claim (NUMA cells, pinned CPUs, PCI) keyed by the migration,
   under the tracker's lock;
2. the row moves here in one write: host, node, the fitted topology, the
   migration context, task ``rebuild_spawning``, the
   ``compute_rebuild_instance`` event's start; the claim then counts by
   the row;
3. the driver spawns the guest (and powers it off for 2.95's
   ``stopped``);
4. ACTIVE (or SHUTOFF) with no task, the event's finish, the migration
   ``done``; ``instance.evacuate`` is sent.

Any failure gives everything back: the guest and the claim go, the
instance's allocation here is replaced by the source allocation the
migration held, the row goes back to its source host in ERROR with the
fault, and the migration is ``failed``: nothing leaks, nothing is left in
a task state.

On the source, when its agent starts again (:func:`destroy_evacuated`,
Nova's ``_destroy_evacuated_instances``): for each evacuation from this
host, the local guest is destroyed (the server lives elsewhere now), and
once the evacuation is ``done`` the migration's allocation on this host
is deleted and the migration ``completed``.
"""

import logging
import traceback

from common import notifications
from common.objects import instance as inst
from common.objects import migration as migration_obj
from common.placement import microversions
from services.compute import allocations
from services.compute import build
from services.compute import power
from services.compute import utils
from services.compute.virt import driver as driver_mod

LOG = logging.getLogger(__name__)

EVENT = 'compute_rebuild_instance'
FAULT_CODE = 500
# NOTE: Nova's statuses of an evacuation the source must clean up after.
SOURCE_STATUSES = allocations.EVACUATION_SOURCE_STATUSES
_VERSION = microversions.MOVE_ALLOCATIONS


def _event(phase, host, result=None, tb=None):
    event = {'phase': phase, 'event': EVENT, 'host': host}
    if phase == 'finish':
        event['result'] = result
        if tb:
            event['traceback'] = tb
    return event


def _give_back(client, ctxt, instance, migration_uuid):
    """The source allocation the migration held goes back to the
    instance, replacing its claim here, in one ``POST /allocations``.

    :returns: True when done (False when the migration held nothing: the
        instance's claim here is then deleted).
    """
    held = client.get_allocations(ctxt, migration_uuid, version=_VERSION)
    body = (held.body or {}) if held.ok else {}
    source = body.get('allocations') or {}
    if not source:
        client.delete_allocations(ctxt, instance['uuid'], version=_VERSION)
        return False
    mine = client.get_allocations(ctxt, instance['uuid'], version=_VERSION)
    owner = {'project_id': instance['project_id'],
             'user_id': instance['user_id']}
    payload = {
        instance['uuid']: dict(
            owner, consumer_type='INSTANCE',
            allocations={rp: {'resources': a['resources']}
                         for rp, a in source.items()},
            consumer_generation=(mine.body or {}).get(
                'consumer_generation') if mine.ok else None),
        migration_uuid: dict(
            owner, consumer_type='MIGRATION', allocations={},
            consumer_generation=body.get('consumer_generation')),
    }
    resp = client.post('/allocations', payload, _VERSION, ctxt)
    if not resp.ok:
        raise RuntimeError('placement refused to give the allocation of '
                           'migration %s back to %s: %d %s' % (
                               migration_uuid, instance['uuid'],
                               resp.status, resp.error_detail()))
    return True


class EvacuateTask(object):
    """One ``evacuate_instance`` cast to this (destination) host."""

    def __init__(self, agent, ctxt, host, uuid, migration_uuid, request_spec,
                 selection, node=None, target_state=None):
        self.agent = agent
        self.ctxt = ctxt
        self.host = host
        self.uuid = uuid
        self.migration_uuid = migration_uuid
        self.request_spec = request_spec or {}
        self.selection = selection or {}
        self.tracker = agent.tracker(host)
        self.nodename = (node or self.selection.get('nodename') or
                         self.tracker.default_node())
        self.target_state = target_state
        self.conductor = agent.conductor
        self.source = None
        self.spawned = False

    def run(self):
        """Claim, move the row, spawn; a failure puts everything back."""
        with self.agent.instance_locks(self.uuid):
            try:
                instance = self.conductor.instance_get(self.ctxt, self.uuid)
            except Exception as exc:
                if not utils.not_found(exc):
                    raise
                LOG.info('Instance %s was deleted before its evacuation',
                         self.uuid)
                self.agent.delete_allocation(self.ctxt, self.uuid)
                self.agent.delete_allocation(self.ctxt, self.migration_uuid)
                return
            self.source = instance
            try:
                self._evacuate(instance)
            except Exception as exc:
                self._fail(exc, traceback.format_exc())

    def _evacuate(self, instance):
        claim = self.tracker.move_claim(
            instance, self.migration_uuid, instance.get('flavor'),
            self.request_spec, self.nodename, self.selection.get('limits'),
            mappings=build._mappings(self.selection))
        numa = (claim.numa_topology.to_primitive()
                if claim.numa_topology is not None else None)
        context = migration_obj.MigrationContext(
            migration_uuid=self.migration_uuid,
            old_numa_topology=instance.get('numa_topology'),
            new_numa_topology=numa).to_primitive()
        moved = self.conductor.instance_update(
            self.ctxt, self.uuid,
            {'host': self.host, 'node': self.nodename,
             'numa_topology': numa, 'migration_context': context,
             'task_state': inst.REBUILD_SPAWNING},
            expected_task_state=[inst.REBUILDING],
            action_event=_event('start', self.host))
        self.tracker.finish_move_claim(self.migration_uuid)
        self.agent.save_record(self.ctxt, self.host, self.nodename)
        LOG.info('Evacuating instance %s from %s to %s', self.uuid,
                 instance.get('host'), self.host)
        self.spawned = True
        self.agent.driver.spawn(driver_mod.Guest(
            uuid=self.uuid, host=self.host, nodename=self.nodename,
            numa_topology=numa, pci_devices=claim.pci_devices,
            allocations=build._allocations(self.selection)))
        stopped = self.target_state == inst.STOPPED
        if stopped:
            self.agent.driver.power_off(self.host, self.uuid)
        moved = self.conductor.instance_update(
            self.ctxt, self.uuid,
            {'vm_state': inst.STOPPED if stopped else inst.ACTIVE,
             'power_state': inst.SHUTDOWN if stopped else inst.RUNNING,
             'task_state': None, 'migration_context': None,
             'launched_at': utils.utcnow_iso()},
            expected_task_state=[inst.REBUILD_SPAWNING],
            action_event=_event('finish', self.host, 'Success'))
        self.conductor.migration_update(
            self.ctxt, self.uuid, self.migration_uuid,
            {'status': migration_obj.DONE},
            expected_status=[migration_obj.PRE_MIGRATING])
        self.agent.notify_schedulers(self.ctxt, self.host, self.nodename)
        power.notifier(self.host).emit(self.ctxt, 'instance.evacuate', moved)
        LOG.info('Instance %s evacuated to %s (%s)', self.uuid, self.host,
                 moved.get('vm_state'))

    def _fail(self, exc, tb):
        """Everything back on the source, ERROR with the fault."""
        gone = utils.not_found(exc)
        LOG.warning('Evacuation of instance %s to %s failed: %s', self.uuid,
                    self.host, exc)
        if self.spawned:
            try:
                self.agent.driver.destroy(self.host, self.uuid)
            except Exception:
                LOG.exception('Could not destroy the guest of %s', self.uuid)
        self.tracker.release(self.migration_uuid)
        self.tracker.release(self.uuid)
        self.agent.save_record(self.ctxt, self.host, self.nodename)
        self.agent.notify_schedulers(self.ctxt, self.host, self.nodename)
        try:
            if gone:
                self.agent.delete_allocation(self.ctxt, self.uuid)
                self.agent.delete_allocation(self.ctxt, self.migration_uuid)
            else:
                _give_back(self.agent.report.client, self.ctxt, self.source,
                           self.migration_uuid)
        except Exception:
            LOG.exception('Could not give the source allocation back to %s '
                          '(the audit reports it)', self.uuid)
        self._migration_failed()
        if gone:
            return
        self._error(exc, tb)

    def _migration_failed(self):
        try:
            self.conductor.migration_update(
                self.ctxt, self.uuid, self.migration_uuid,
                {'status': migration_obj.FAILED})
        except Exception as exc:
            LOG.warning('Could not fail migration %s: %s',
                        self.migration_uuid, exc)

    def _error(self, exc, tb):
        source = self.source
        try:
            self.conductor.instance_fault_create(
                self.ctxt, self.uuid, FAULT_CODE,
                str(exc)[:255] or type(exc).__name__, details=tb,
                host=self.host)
            instance = self.conductor.instance_update(
                self.ctxt, self.uuid,
                {'vm_state': inst.ERROR, 'task_state': None,
                 'host': source.get('host'), 'node': source.get('node'),
                 'numa_topology': source.get('numa_topology'),
                 'migration_context': None},
                action_event=_event('finish', self.host, 'Error', tb))
        except Exception as again:
            if not utils.not_found(again):
                LOG.exception('Could not put %s in ERROR after its failed '
                              'evacuation', self.uuid)
            return
        power.notifier(self.host).emit(
            self.ctxt, 'instance.evacuate', instance,
            fault=notifications.exception_payload(exc))


def evacuate_instance(agent, ctxt, host, uuid, migration_uuid, request_spec,
                      selection, node=None, target_state=None):
    """Re-create an evacuated server on ``host`` (see the module doc)."""
    EvacuateTask(agent, ctxt, host, uuid, migration_uuid, request_spec,
                 selection, node, target_state).run()


def destroy_evacuated(agent, ctxt, host):
    """Clean up after the servers evacuated from ``host`` while it was
    down (see the module doc); the migration uuids completed.
    """
    conductor = agent.conductor
    migrations = conductor.migrations_get_by_source(
        ctxt, host, migration_obj.EVACUATION, SOURCE_STATUSES)
    completed = []
    for migration in migrations:
        uuid = migration['instance_uuid']
        try:
            instance = conductor.instance_get(ctxt, uuid)
        except Exception as exc:
            if not utils.not_found(exc):
                raise
            instance = None
        if instance is not None and instance.get('host') == host:
            # NOTE: a failed evacuation put the server back here.
            continue
        LOG.info('Destroying the guest of instance %s: it was evacuated '
                 'from %s (migration %s, %s)', uuid, host,
                 migration['uuid'], migration['status'])
        agent.driver.destroy(host, uuid)
        agent.tracker(host).release(uuid)
        if migration['status'] != migration_obj.DONE:
            continue
        agent.delete_allocation(ctxt, migration['uuid'])
        try:
            conductor.migration_update(
                ctxt, uuid, migration['uuid'],
                {'status': migration_obj.COMPLETED},
                expected_status=[migration_obj.DONE])
            completed.append(migration['uuid'])
        except Exception as exc:
            LOG.warning('Could not complete migration %s: %s',
                        migration['uuid'], exc)
    return completed


def recover(agent, ctxt, host, instances):
    """An evacuation a restart of this (destination) agent interrupted
    after the row moved here (task ``rebuild_spawning`` with a migration
    context): the server stays here in ERROR with a fault, and its
    migration is ``done``, so that the source deletes its allocation when
    it comes back. Runs before the rebuilds' own recovery, which would
    otherwise take it for an interrupted rebuild.

    :param instances: the host's instance primitives.
    """
    for instance in instances:
        context = instance.get('migration_context') or {}
        if instance.get('task_state') != inst.REBUILD_SPAWNING or not (
                context.get('migration_uuid')):
            continue
        uuid = instance['uuid']
        LOG.warning('The evacuation of %s to %s was interrupted by a '
                    'restart; setting it to ERROR', uuid, host)
        try:
            agent.conductor.migration_update(
                ctxt, uuid, context['migration_uuid'],
                {'status': migration_obj.DONE})
            agent.conductor.instance_fault_create(
                ctxt, uuid, FAULT_CODE, 'The evacuation was interrupted by '
                'a restart of the compute service', host=host)
            agent.conductor.instance_update(
                ctxt, uuid, {'vm_state': inst.ERROR, 'task_state': None,
                             'migration_context': None},
                expected_task_state=[inst.REBUILD_SPAWNING],
                action_event=_event('finish', host, 'Error'))
        except Exception as exc:
            if not (utils.not_found(exc) or
                    utils.unexpected_task_state(exc)):
                LOG.exception('Could not recover instance %s', uuid)
