# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Live migration on the compute agents: both ends of Nova's protocol.

The conductor (services/conductor/live_migrate_flow.py) has handed the
source allocation to the migration consumer and claimed the destination
in placement. Then, as in Nova::

    conductor --call--> dest   check_can_live_migrate_destination
                               (driver check; move claim: NUMA cells and
                               pinned CPUs fitted again on this host)
    conductor --call--> source check_can_live_migrate_source
    conductor --cast--> source live_migration
        1. the agent's queue (at most ``[DEFAULT]
           max_concurrent_live_migrations`` from each host at once;
           migration ``queued`` while it waits), then preparing
        2. --call--> dest pre_live_migration (the claim still held?)
        3. migration running; the driver copies, writing the progress
           (memory_*, disk_*); an abort or force-complete reaches it
           through its Control
        4. --call--> dest post_live_migration_at_destination: the row
           moves (host, node, the NUMA topology claimed there), task
           None, the claim becomes the instance's own
        5. source guest removed, migration completed, the migration
           consumer's allocation (the source's) deleted

A failure or an abort before step 4 rolls back: the destination drops
its claim (``rollback_live_migration_at_destination``), the source
allocation goes back to the instance, the server stays on its source
with task None, the migration ends ``error`` (with a fault) or
``cancelled``. After the conductor's cast the source compute owns the
move's placement writes, as Nova's does.
"""

import logging
import threading
import time
import traceback

from common import exception
from common.objects import instance as instance_obj
from common.objects import migration as migration_obj
from common.placement import move_allocations
from services.compute import claims
from services.compute import notifier as notifier_mod
from services.compute import utils
from services.compute.virt import driver as driver_mod
from services.compute.virt import migration as virt_migration

LOG = logging.getLogger(__name__)

EVENT = 'compute_live_migration'
DEST_CHECK_EVENT = 'compute_check_can_live_migrate_destination'
ABORT_EVENT = 'compute_live_migration_abort'
FORCE_EVENT = 'compute_live_migration_force_complete'
FAULT_CODE = 500
# NOTE: seconds between two records of a copy's progress (Nova's
# libvirt driver also records it every few seconds, not at every
# report); the last report goes with the migration's final status.
PROGRESS_INTERVAL = 5.0
_MIB = 1024 * 1024
_GIB = 1024 * _MIB

# NOTE: migration uuid -> Control of the copies this process runs, so
# that an abort or force-complete arriving on another RPC thread reaches
# the thread copying.
_CONTROLS = {}
_CONTROLS_LOCK = threading.Lock()
_CLIENT = []


def _compute_api(agent):
    """The compute RPC client the source uses to reach the destination
    (the agent's own ``compute_api`` in tests).
    """
    found = getattr(agent, 'compute_api', None)
    if found is not None:
        return found
    with _CONTROLS_LOCK:
        if not _CLIENT:
            from services.compute import rpcapi
            _CLIENT.append(rpcapi.ComputeAPI())
        return _CLIENT[0]


def control_of(migration_uuid):
    """The Control of a copy running here, or None."""
    with _CONTROLS_LOCK:
        return _CONTROLS.get(migration_uuid)


def _sizes(flavor):
    """(memory bytes, disk bytes) a guest of ``flavor`` copies."""
    flavor = flavor or {}
    disk = (flavor.get('root_gb') or 0) + (flavor.get('ephemeral_gb') or 0)
    return (flavor.get('memory_mb') or 0) * _MIB, disk * _GIB


def _guest(agent, host, instance):
    """The instance's Guest on ``host`` as the driver runs it (or as the
    instance row describes it, for a driver that lost its record).
    """
    guest = agent.driver.list_guests(host).get(instance['uuid'])
    if guest is not None:
        return guest
    return driver_mod.Guest(uuid=instance['uuid'], host=host,
                            nodename=instance.get('node') or host,
                            numa_topology=instance.get('numa_topology'))


def _event(agent, ctxt, uuid, event, host, result, tb=None,
           migration_uuid=None):
    """Record an event's end; with ``migration_uuid``, among the agent's
    batched move writes (services/compute/move_updater.py).
    """
    try:
        if migration_uuid is None:
            agent.conductor.action_event_finish(ctxt, uuid, event, host,
                                                result, traceback=tb)
        else:
            agent.move_updates.update(
                ctxt, uuid, migration_uuid, action_events=[{
                    'phase': 'finish', 'event': event, 'host': host,
                    'result': result, 'traceback': tb}], brief=True)
    except Exception as exc:
        LOG.warning('Could not record event %s of instance %s: %s', event,
                    uuid, exc)


# --- destination -------------------------------------------------------------

def check_can_live_migrate_destination(agent, ctxt, host, instance,
                                       migration, request_spec, limits,
                                       mappings, block_migration):
    """Check ``host`` can take ``instance`` and claim it there.

    The claim is the move claim of the instance's flavor with the stored
    request's NUMA constraints, fitted against this host's free cells and
    CPUs, so a pinned server gets pinned CPUs of this host.

    :param migration: the Migration primitive (dest_node set).
    :returns: the migrate data: ``block_migration`` (``auto`` resolved),
        ``dest_node``, ``dest_numa_topology`` and ``dest_pci_devices``.
    :raises common.exception.MigrationPreCheckError: the driver refuses
        or the claim does not fit (nothing is held then).
    """
    uuid = instance['uuid']
    tracker = agent.tracker(host)
    nodename = migration.get('dest_node') or tracker.default_node()
    try:
        block = agent.driver.check_can_live_migrate_destination(
            host, uuid, block_migration)
        claim = tracker.move_claim(instance, migration['uuid'],
                                   instance.get('flavor'), request_spec,
                                   nodename, limits, mappings=mappings)
    except (exception.MigrationPreCheckError,
            claims.ComputeResourcesUnavailable) as exc:
        reason = getattr(exc, 'kwargs', {}).get('reason') or str(exc)
        _event(agent, ctxt, uuid, DEST_CHECK_EVENT, host, 'Error',
               traceback.format_exc())
        LOG.info('Live migration of %s to %s refused: %s', uuid, host,
                 reason)
        raise exception.MigrationPreCheckError(reason=reason)
    agent.save_record(ctxt, host, nodename)
    _event(agent, ctxt, uuid, DEST_CHECK_EVENT, host, 'Success',
           migration_uuid=migration['uuid'])
    numa = (claim.numa_topology.to_primitive()
            if claim.numa_topology is not None else None)
    return {'block_migration': block, 'dest_node': nodename,
            'dest_numa_topology': numa,
            'dest_pci_devices': list(claim.pci_devices or [])}


def drop_move_claim_at_destination(agent, ctxt, host, migration_uuid):
    """Release a claim a pre-check made (the conductor moved on)."""
    tracker = agent.tracker(host)
    for nodename in tracker.release(migration_uuid):
        agent.save_record(ctxt, host, nodename)


def pre_live_migration(agent, ctxt, host, instance_uuid, migration_uuid):
    """The destination is about to receive the guest: its claim must
    still be held (a restart of this agent since the check lost it).

    :raises virt.migration.LiveMigrationFailed: the claim is gone.
    """
    if not agent.tracker(host).holds_claim(migration_uuid):
        raise virt_migration.LiveMigrationFailed(
            uuid=instance_uuid,
            reason='host %s no longer holds the claim of migration %s'
                   % (host, migration_uuid))
    return {}


def post_live_migration_at_destination(agent, ctxt, host, instance_uuid,
                                       migration_uuid, migrate_data):
    """The guest runs here now: move the instance's row here, with the
    NUMA topology claimed here, and end the task.

    :returns: the updated Instance primitive.
    """
    nodename = migrate_data['dest_node']
    instance = agent.move_updates.update(
        ctxt, instance_uuid, migration_uuid,
        instance_values={
            'host': host, 'node': nodename,
            'numa_topology': migrate_data.get('dest_numa_topology'),
            'task_state': None, 'migration_context': None},
        expected_task_state=[instance_obj.MIGRATING],
        action_events=[{'phase': 'finish', 'event': EVENT, 'host': host,
                        'result': 'Success'}])['instance']
    tracker = agent.tracker(host)
    tracker.finish_move_claim(migration_uuid)
    guest = driver_mod.Guest(
        uuid=instance_uuid, host=host, nodename=nodename,
        numa_topology=migrate_data.get('dest_numa_topology'),
        pci_devices=list(migrate_data.get('dest_pci_devices') or []),
        power_state=instance.get('power_state') or instance_obj.RUNNING)
    agent.driver.post_live_migration_at_destination(guest)
    agent.save_record(ctxt, host, nodename)
    agent.notify_schedulers(ctxt, host, nodename)
    return instance


def rollback_live_migration_at_destination(agent, ctxt, host, instance_uuid,
                                           migration_uuid):
    """The migration was rolled back: forget the claim (no guest was
    started here: the copy never finished).
    """
    for nodename in agent.tracker(host).release(migration_uuid):
        agent.save_record(ctxt, host, nodename)
        agent.notify_schedulers(ctxt, host, nodename)
    LOG.info('Dropped the claim of live migration %s of %s on %s',
             migration_uuid, instance_uuid, host)


# --- source ------------------------------------------------------------------

def check_can_live_migrate_source(agent, ctxt, host, instance_uuid):
    """The guest must be running (or paused) here.

    :raises common.exception.MigrationPreCheckError: it is not.
    """
    try:
        state = agent.driver.get_info(host, instance_uuid)
    except driver_mod.GuestNotFound as exc:
        raise exception.MigrationPreCheckError(reason=str(exc))
    if state not in (instance_obj.RUNNING, instance_obj.PAUSED_POWER):
        raise exception.MigrationPreCheckError(
            reason='the guest of %s is not running on %s (power state %s)'
                   % (instance_uuid, host, state))
    return {}


class LiveMigrationTask(object):
    """One ``live_migration`` cast, on the source, run to its end.

    :param migrate_data: the destination check's answer.
    :param instance: the Instance primitive the cast carried, or None.
    """

    def __init__(self, agent, ctxt, host, instance_uuid, migration_uuid,
                 dest, migrate_data, instance=None):
        self.agent = agent
        self.ctxt = ctxt
        self.host = host
        self.uuid = instance_uuid
        self.migration_uuid = migration_uuid
        self.dest = dest
        self.migrate_data = migrate_data or {}
        self.conductor = agent.conductor
        self.control = virt_migration.Control()
        self.instance = instance
        # NOTE: the status the first write of the run finds: queued when
        # the migration had to wait for a slot (see enqueue).
        self._from = migration_obj.ACCEPTED
        self.moved = False
        self.clock = time.monotonic
        # When progress was last recorded (the copy's start at first),
        # and the report since then not recorded yet.
        self._progress_at = 0.0
        self._unrecorded = {}

    def _migration(self, values, expected=None):
        self.agent.move_updates.update(
            self.ctxt, self.uuid, self.migration_uuid,
            migration_values=values, expected_status=expected, brief=True)

    def _status(self, status, expected):
        """Take the migration from ``expected`` to ``status``, reading the
        instance back only when this task has none yet.
        """
        move = self.agent.move_updates.update(
            self.ctxt, self.uuid, self.migration_uuid,
            migration_values={'status': status}, expected_status=expected,
            brief=self.instance is not None)
        if move['instance'] is not None:
            self.instance = move['instance']

    def enqueue(self):
        """Step 1: run at once when the host has a free slot, else
        ``queued`` on the agent's live migration queue (an abort reaches
        the migration from now on); the RPC thread returns.

        NOTE: a migration that starts at once is never shown queued: its
        first write (preparing) takes it from accepted, one write fewer.
        """
        with _CONTROLS_LOCK:
            _CONTROLS[self.migration_uuid] = self.control
        if self.agent.live_migrations.start_now(self.host, self.run):
            return
        self._from = migration_obj.QUEUED
        try:
            self._status(migration_obj.QUEUED, migration_obj.ACCEPTED)
        except Exception as exc:
            LOG.info('Live migration %s of %s cannot start: %s',
                     self.migration_uuid, self.uuid, exc)
            self._forget()
            return self._rollback(exc)
        self.agent.live_migrations.submit(self.host, self.run)

    def _forget(self):
        with _CONTROLS_LOCK:
            _CONTROLS.pop(self.migration_uuid, None)

    def run(self):
        """Migrate; every failure ends rolled back or with the server on
        the destination, never stuck ``migrating``.
        """
        try:
            self._run()
        finally:
            self._forget()

    def _run(self):
        notifier = notifier_mod.for_host(self.host)
        try:
            self._start()
            with notifier.around(self.ctxt, 'live_migration_pre',
                                 lambda: self.instance):
                self._prepare()
            self._copy()
        except virt_migration.LiveMigrationAborted as exc:
            return self._rollback(exc, migration_obj.CANCELLED)
        except Exception as exc:
            LOG.warning('Live migration %s of %s to %s failed: %s',
                        self.migration_uuid, self.uuid, self.dest, exc)
            return self._rollback(exc)
        try:
            with notifier.around(self.ctxt, 'live_migration_post',
                                 lambda: self.instance):
                self._post()
        except Exception as exc:
            self._after_failed_post(exc)

    def _check_abort(self):
        if self.control.aborted:
            raise virt_migration.LiveMigrationAborted(uuid=self.uuid)

    def _start(self):
        """Step 2 begins: preparing (the instance read back unless the
        cast carried it or the queued write read it).
        """
        self._check_abort()
        self._status(migration_obj.PREPARING, self._from)

    def _prepare(self):
        """Step 2: the destination's own preparation."""
        _compute_api(self.agent).pre_live_migration(
            self.ctxt, self.dest, self.uuid, self.migration_uuid)
        self._check_abort()

    def _copy(self):
        """Step 3: running, the driver's copy with its progress."""
        self._migration({'status': migration_obj.RUNNING},
                        migration_obj.PREPARING)
        LOG.info('Live migrating %s from %s to %s', self.uuid, self.host,
                 self.dest)
        self._progress_at = self.clock()
        self.agent.driver.live_migration(
            _guest(self.agent, self.host, self.instance), self.dest,
            self.migrate_data.get('block_migration'),
            _sizes(self.instance.get('flavor')), self.control,
            self._progress)

    def _progress(self, progress):
        now = self.clock()
        if now - self._progress_at < PROGRESS_INTERVAL:
            self._unrecorded = progress.values()
            return
        self._progress_at, self._unrecorded = now, {}
        try:
            self._migration(progress.values())
        except Exception as exc:
            LOG.warning('Could not record the progress of migration %s: %s',
                        self.migration_uuid, exc)

    def _post(self):
        """Steps 4-5: the row moves to the destination; clean up here."""
        self.instance = _compute_api(
            self.agent).post_live_migration_at_destination(
                self.ctxt, self.dest, self.uuid, self.migration_uuid,
                self.migrate_data)
        self.moved = True
        try:
            self.agent.driver.destroy(self.host, self.uuid)
        except Exception:
            LOG.exception('Could not remove the guest of %s from %s after '
                          'its live migration', self.uuid, self.host)
        self._finish_source(migration_obj.COMPLETED)
        LOG.info('Instance %s live migrated from %s to %s', self.uuid,
                 self.host, self.dest)

    def _current(self):
        """The instance now, or None once it is deleted (or being)."""
        try:
            current = self.conductor.instance_get(self.ctxt, self.uuid)
        except Exception as exc:
            if utils.not_found(exc):
                return None
            LOG.warning('Could not read instance %s: %s', self.uuid, exc)
            return {}
        if current.get('task_state') == instance_obj.DELETING:
            return None
        return current

    def _after_failed_post(self, exc):
        """Step 4 failed: the server was deleted meanwhile, or the
        destination took it and only the rest failed, or it did not.
        """
        current = self._current()
        if current is None:
            LOG.info('Instance %s was deleted during its live migration',
                     self.uuid)
            return self._abandon()
        if current.get('host') == self.dest:
            LOG.warning('Live migration %s of %s reached %s but did not '
                        'finish cleanly: %s', self.migration_uuid,
                        self.uuid, self.dest, exc)
            self.instance, self.moved = current, True
            self.agent.driver.destroy(self.host, self.uuid)
            return self._finish_source(migration_obj.COMPLETED)
        return self._rollback(exc)

    def _abandon(self):
        """The server is gone: nothing of its move may stay held."""
        try:
            _compute_api(self.agent).rollback_live_migration_at_destination(
                self.ctxt, self.dest, self.uuid, self.migration_uuid)
        except Exception as again:
            LOG.warning('Could not tell %s to drop its claim for %s: %s',
                        self.dest, self.uuid, again)
        move_allocations.drop_migration(self.agent.report.client, self.ctxt,
                                        self.migration_uuid)
        self.agent.delete_allocation(self.ctxt, self.uuid)
        self._finish_source(migration_obj.ERROR)

    def _finish_source(self, status):
        """End the migration and stop counting it (and, once the server
        left, the instance) on this host.
        """
        try:
            self._migration(dict(self._unrecorded, status=status))
        except Exception as exc:
            LOG.error('Could not set migration %s %s: %s',
                      self.migration_uuid, status, exc)
        if status == migration_obj.COMPLETED:
            move_allocations.drop_migration(self.agent.report.client,
                                            self.ctxt, self.migration_uuid)
        tracker = self.agent.tracker(self.host)
        released = set(tracker.release(self.migration_uuid))
        if self.moved:
            released.update(tracker.release(self.uuid))
        for nodename in released or {tracker.default_node()}:
            self.agent.save_record(self.ctxt, self.host, nodename)
            self.agent.notify_schedulers(self.ctxt, self.host, nodename)

    def _rollback(self, exc, status=migration_obj.ERROR):
        """Leave the server on its source, as it was, with nothing held
        for it elsewhere.
        """
        tb = traceback.format_exc()
        try:
            _compute_api(self.agent).rollback_live_migration_at_destination(
                self.ctxt, self.dest, self.uuid, self.migration_uuid)
        except Exception as again:
            LOG.warning('Could not tell %s to drop its claim for %s: %s',
                        self.dest, self.uuid, again)
        # NOTE: a run whose first write failed has not read the instance.
        owner = self.instance or self._current() or {}
        try:
            move_allocations.back_to_instance(
                self.agent.report.client, self.ctxt, self.uuid,
                self.migration_uuid, owner.get('project_id'),
                owner.get('user_id'))
        except Exception:
            LOG.exception('Could not give the allocation of migration %s '
                          'back to %s', self.migration_uuid, self.uuid)
        if self._current() is None:
            # NOTE: deleted meanwhile: what just went back must go too.
            self.agent.delete_allocation(self.ctxt, self.uuid)
        self._back_to_source(exc, status, tb)
        self._finish_source(status)

    def _back_to_source(self, exc, status, tb):
        aborted = status == migration_obj.CANCELLED
        try:
            if not aborted:
                self.conductor.instance_fault_create(
                    self.ctxt, self.uuid, FAULT_CODE, str(exc)[:255],
                    details=tb, host=self.host)
            self.instance = self.conductor.instance_update(
                self.ctxt, self.uuid,
                {'task_state': None, 'migration_context': None},
                expected_task_state=[instance_obj.MIGRATING],
                action_event={'phase': 'finish', 'event': EVENT,
                              'host': self.host, 'result': 'Error',
                              'traceback': tb})
        except Exception as again:
            if utils.not_found(again) or utils.unexpected_task_state(again):
                LOG.info('Instance %s changed during its live migration: '
                         '%s', self.uuid, again)
                return
            LOG.exception('Could not end the live migration task of %s',
                          self.uuid)
        notifier_mod.for_host(self.host).emit(
            self.ctxt, 'instance.live_migration_rollback.end',
            self.instance or {'uuid': self.uuid})


def live_migration(agent, ctxt, host, instance_uuid, migration_uuid, dest,
                   migrate_data, instance=None):
    """Queue one live migration from ``host`` (see the module doc); it
    runs on the agent's queue (services/compute/live_migration_queue.py).

    :param instance: the Instance primitive the conductor wrote, or None
        (the run's first write reads it back).
    """
    LiveMigrationTask(agent, ctxt, host, instance_uuid, migration_uuid,
                      dest, migrate_data, instance=instance).enqueue()


def _request(agent, ctxt, host, instance_uuid, migration_uuid, event,
             ask):
    """Pass an operator's request to the copy running here."""
    control = control_of(migration_uuid)
    if control is None:
        LOG.warning('Live migration %s of %s is not running on %s; '
                    'nothing to %s', migration_uuid, instance_uuid, host,
                    event)
        _event(agent, ctxt, instance_uuid, event, host, 'Error',
               'migration %s is not running on %s' % (migration_uuid,
                                                      host))
        return False
    ask(control)
    _event(agent, ctxt, instance_uuid, event, host, 'Success')
    return True


def live_migration_abort(agent, ctxt, host, instance_uuid, migration_uuid):
    """Abort a live migration from ``host`` (it is rolled back)."""
    return _request(agent, ctxt, host, instance_uuid, migration_uuid,
                    ABORT_EVENT, virt_migration.Control.abort)


def live_migration_force_complete(agent, ctxt, host, instance_uuid,
                                  migration_uuid):
    """Have a running copy finish now."""
    return _request(agent, ctxt, host, instance_uuid, migration_uuid,
                    FORCE_EVENT, virt_migration.Control.force_complete)


def recover(agent, ctxt, host, instances):
    """Roll back the live migrations from ``host`` a restart interrupted
    (the instance still on this host, task ``migrating``): the copy
    stopped with the process.

    :param instances: the host's instance primitives.
    """
    for instance in instances:
        if instance.get('task_state') != instance_obj.MIGRATING:
            continue
        context = instance.get('migration_context') or {}
        migration_uuid = context.get('migration_uuid')
        if not migration_uuid:
            continue
        try:
            migration = agent.conductor.migration_get(
                ctxt, instance['uuid'], migration_uuid)
        except Exception as exc:
            LOG.warning('Could not read migration %s of %s: %s',
                        migration_uuid, instance['uuid'], exc)
            continue
        if (migration.get('migration_type') !=
                migration_obj.LIVE_MIGRATION or
                migration.get('status') in migration_obj.ENDED or
                migration.get('status') == migration_obj.ACCEPTED):
            continue
        LOG.warning('Live migration %s of %s was interrupted by a restart '
                    'of %s; rolling it back', migration_uuid,
                    instance['uuid'], host)
        task = LiveMigrationTask(agent, ctxt, host, instance['uuid'],
                                 migration_uuid, migration['dest_compute'],
                                 {})
        task.instance = instance
        task._rollback(rpc_interrupted(instance['uuid']))


def rpc_interrupted(uuid):
    """The fault of a live migration a restart interrupted."""
    return virt_migration.LiveMigrationFailed(
        uuid=uuid, reason='interrupted by a restart of the compute service')
