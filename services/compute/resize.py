# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Resize and cold migration on the computes: Nova's five casts.

The conductor has created the migration, handed the source allocation
to it and claimed the destination in placement
(services/conductor/migrate_flow.py). Then, each step under the
instance's lock, each with its ``compute_<step>`` action event:

1. ``prep_resize`` (destination): the move claim under the tracker's
   lock (new flavor: NUMA cells, pinned CPUs, pages, PCI devices); the
   instance's ``migration_context`` gets the old and new placements, the
   migration goes ``pre-migrating`` -> ``migrating`` and the task
   ``resize_migrating``. A failure releases the claim and asks the
   conductor for the next alternate.
2. ``resize_instance`` (source): the driver powers the guest off and
   sends it; ``post-migrating``, task ``resize_finish``.
3. ``finish_resize`` (destination): the driver creates the guest (off
   for a server that was stopped, as Nova); migration ``finished``; the
   row names the destination, new flavor and topology, vm_state
   ``resized`` (VERIFY_RESIZE); the claim now counts by the row.
4. ``confirm_resize`` (source; from the API, or from the destination
   once ``[DEFAULT] resize_confirm_window`` passed): the migration
   consumer's allocation dropped, the old guest removed, migration
   ``confirmed``, vm_state back to active (stopped if it was), the
   migration context cleared; the source stops counting the old flavor.
5. ``revert_resize`` (destination; from the API, or from the conductor
   rolling a failed move back) gives the source allocation back to the
   server, removes the new guest and its claim, then
   ``finish_revert_resize`` (source) starts the old one again and
   puts the row back: source, old flavor and topology, migration
   ``reverted``.

Steps 1 to 4 write once each, when they end (one ``move_update``, see
services/compute/move_updater.py), and that write sets the task of the
step it casts: the server shows ``resize_migrating`` while its source
sends it and ``resize_finish`` while its destination starts it, as in
Nova, without a write of its own at each step's start (the step's start
event goes with its end, with the time it started). The instance and
migration that write reads back travel with the ``finish_resize`` cast.
Nova's ``resize_migrated`` (between the send and the finish) is not
shown.

A driver failure in 2 or 3 is rolled back through 5 (the conductor gives
the allocation back first) and ends with migration ``error`` and a
fault, the server running on its source; never stuck in a task state.
A source restarted while its server is in ``resize_migrating`` rolls the
move back the same way (:func:`recover`); a ``resize_instance`` cast
still queued for it then finds the move dropped and does nothing.
Placement is the conductor's; the trackers count both sides from the
migration and the context (services/compute/move_usage.py).
"""

import datetime
import logging
import threading
import traceback

from oslo_utils import timeutils

from common.objects import instance as inst
from common.objects import migration as migration_obj
from common.placement import move_allocations
from services.compute import build
from services.compute import notifier as notifier_mod
from services.compute import utils
from services.compute.virt import driver as driver_mod

LOG = logging.getLogger(__name__)

FAULT_CODE = 500

_API = {}
_API_LOCK = threading.Lock()


def compute_api():
    """The compute RPC client one compute casts the next step with (a
    function, so tests can replace it).
    """
    with _API_LOCK:
        if 'api' not in _API:
            from services.compute import rpcapi
            _API['api'] = rpcapi.ComputeAPI()
        return _API['api']


def _old_vm_state(instance):
    return inst.state_before_move(instance.get('system_metadata'))


def _without_old_vm_state(instance):
    return inst.without_state_before_move(instance.get('system_metadata'))


def _powered(old_vm_state):
    """(vm_state, power_state) a moved server ends with on confirm or
    revert: stopped stays stopped, as Nova keeps it.
    """
    if old_vm_state == inst.STOPPED:
        return inst.STOPPED, inst.SHUTDOWN
    return inst.ACTIVE, inst.RUNNING


class _Step(object):
    """One cast of a move, on one host of this agent.

    A step reads or writes the instance, its migration and its action
    events together, one record call each time (the conductor's
    ``move_get``, and ``move_update`` batched with the agent's other
    steps by services/compute/move_updater.py). A step whose cast
    carries what it needs reads nothing; otherwise it reads the move
    first (starting its event); its last write records the outcome.
    """

    event = None

    def __init__(self, agent, ctxt, host, instance_uuid, migration_uuid):
        self.agent = agent
        self.ctxt = ctxt
        self.host = host
        self.uuid = instance_uuid
        self.migration_uuid = migration_uuid
        self.conductor = agent.conductor
        self.notifier = notifier_mod.for_host(host)
        self.instance = None
        self.migration = None
        self.started = None
        # NOTE: set by a step that deleted the migration consumer's
        # allocation itself (a confirm), so that :meth:`_abandon` does
        # not send the DELETE again.
        self.migration_dropped = False

    def _event(self, phase, result=None, tb=None):
        action_event = {'phase': phase, 'event': self.event,
                        'host': self.host}
        if phase == 'finish':
            action_event.update(result=result, traceback=tb)
        else:
            # NOTE: a start recorded with the step's end write keeps the
            # time the step began.
            action_event['start_time'] = self.started
        return action_event

    def _finish_event(self, result, tb=None):
        try:
            self.conductor.action_event_finish(
                self.ctxt, self.uuid, self.event, self.host, result,
                traceback=tb)
        except Exception as exc:
            LOG.warning('Could not record event %s finish of %s: %s',
                        self.event, self.uuid, exc)

    def _fault(self, message, details=None):
        try:
            self.conductor.instance_fault_create(
                self.ctxt, self.uuid, FAULT_CODE, str(message)[:255],
                details=details, host=self.host)
        except Exception as exc:
            LOG.warning('Could not record the fault of %s: %s', self.uuid,
                        exc)

    def _starts_event(self):
        return True

    def _load(self):
        events = [self._event('start')] if self._starts_event() else []
        move = self.conductor.move_get(self.ctxt, self.uuid,
                                       self.migration_uuid,
                                       action_events=events)
        self.instance, self.migration = move['instance'], move['migration']

    def _current_instance(self):
        """The instance primitive (read now if the step did not)."""
        if self.instance is None:
            self.instance = self.conductor.instance_get(self.ctxt,
                                                        self.uuid)
        return self.instance

    def _finish(self, status, expected, values, expected_task_state,
                events=None, brief=True):
        """The step's last write: the migration's ``status`` (guarded by
        ``expected``; None leaves it), the instance's ``values`` (guarded
        by ``expected_task_state``) and the event's Success, at once.

        :param brief: read nothing back (False where an ``.end``
            notification will show the instance as written).
        """
        move = self.agent.move_updates.update(
            self.ctxt, self.uuid, self.migration_uuid,
            migration_values=None if status is None else {'status': status},
            expected_status=expected, instance_values=values,
            expected_task_state=expected_task_state,
            action_events=(events or []) + [self._event('finish',
                                                        'Success')],
            brief=brief)
        if move['migration'] is not None:
            self.migration = move['migration']
        if move['instance'] is not None:
            self.instance = move['instance']

    def _refresh(self, nodename, host=None):
        host = host or self.host
        self.agent.save_record(self.ctxt, host, nodename)
        self.agent.notify_schedulers(self.ctxt, host, nodename)

    def run(self):
        """Run the step under the instance's lock; a server deleted
        meanwhile ends the whole move (see :meth:`_abandon`).
        """
        with self.agent.instance_locks(self.uuid):
            self.started = timeutils.utcnow().isoformat()
            try:
                self._load()
                self._run()
            except Exception as exc:
                if utils.not_found(exc) or utils.unexpected_task_state(exc):
                    LOG.info('Instance %s changed during %s on %s; '
                             'stopping: %s', self.uuid, self.event,
                             self.host, exc)
                    if self._deleted():
                        self._abandon()
                    return
                if utils.exception_named(exc, 'MigrationNotFound',
                                         'UnexpectedMigrationStatusError'):
                    LOG.info('Migration %s of %s changed during %s: %s',
                             self.migration_uuid, self.uuid, self.event,
                             exc)
                    return
                LOG.exception('Unexpected error in %s of %s on %s',
                              self.event, self.uuid, self.host)
                self._failed(exc, traceback.format_exc())

    def _deleted(self):
        """True when the server is gone or being deleted (rather than
        changed by someone else, e.g. the stuck-move bound).
        """
        try:
            current = self.conductor.instance_get(self.ctxt, self.uuid)
        except Exception as exc:
            if utils.not_found(exc):
                return True
            LOG.warning('Could not read instance %s: %s', self.uuid, exc)
            return False
        return current.get('task_state') == inst.DELETING

    def _abandon(self):
        """The server is deleted mid-move: nothing of the move may stay.

        NOTE: the delete (services/compute/delete.py) only knows the host
        the row names and the instance's own allocation: the guest made
        here, the move claims, the source allocation the migration
        consumer holds and a destination claimed after the delete are
        this step's to drop; the migration ends ``error``. A later step
        of the move finds the server gone and does the same (all of it
        is safe to repeat).
        """
        LOG.info('Instance %s was deleted during its move (migration %s); '
                 'dropping what the move held', self.uuid,
                 self.migration_uuid)
        try:
            self.agent.driver.destroy(self.host, self.uuid)
        except Exception:
            LOG.exception('Could not remove the guest of %s from %s',
                          self.uuid, self.host)
        if not self.migration_dropped:
            move_allocations.drop_migration(self.agent.report.client,
                                            self.ctxt, self.migration_uuid)
        self.agent.delete_allocation(self.ctxt, self.uuid)
        self._end_migration()
        hosts = {self.host}
        if self.migration:
            hosts.update((self.migration.get('source_compute'),
                          self.migration.get('dest_compute')))
        for host in hosts & set(self.agent.trackers):
            for nodename in self.agent.tracker(host).release(
                    self.migration_uuid):
                self._refresh(nodename, host)

    def _end_migration(self):
        """The migration to ``error`` unless it has ended meanwhile."""
        try:
            migration = self.conductor.migration_get(
                self.ctxt, self.uuid, self.migration_uuid)
            if migration.get('status') not in migration_obj.ENDED:
                self.conductor.migration_update(
                    self.ctxt, self.uuid, self.migration_uuid,
                    {'status': migration_obj.ERROR},
                    expected_status=migration.get('status'))
        except Exception as exc:
            LOG.warning('Could not end migration %s of deleted instance '
                        '%s: %s', self.migration_uuid, self.uuid, exc)

    def _failed(self, exc, tb):
        """A step failed: fault, event Error, the move rolled back."""
        self._fault(exc, tb)
        self._finish_event('Error', tb)
        # NOTE: through the conductor (which gives a resize's stored
        # spec its old flavor back): the destination gives the source
        # allocation back and drops its claim, the source takes the
        # server back (steps 5a and 5b), ending the migration in error.
        self.conductor.revert_resize(self.ctxt, self.uuid,
                                     self.migration_uuid, reason=str(exc))


class _SentStep(_Step):
    """A step whose cast carries the instance and migration as its sender
    read or wrote them: it reads nothing, and its one write is guarded by
    both.
    """

    def __init__(self, agent, ctxt, host, instance, migration):
        super().__init__(agent, ctxt, host, instance['uuid'],
                         migration['uuid'])
        self.sent = instance, migration

    def _load(self):
        self.instance, self.migration = self.sent


class PrepResize(_Step):
    """Step 1, on the destination."""

    event = 'compute_prep_resize'

    def __init__(self, agent, ctxt, host, instance, migration_uuid, flavor,
                 request_spec, selection, alternates, node=None):
        super().__init__(agent, ctxt, host, instance['uuid'], migration_uuid)
        self.sent = instance
        self.flavor = flavor
        self.request_spec = request_spec or {}
        self.selection = selection or {}
        self.alternates = alternates or []
        self.tracker = agent.tracker(host)
        self.nodename = (node or self.selection.get('nodename') or
                         self.tracker.default_node())

    def _load(self):
        self.instance = self.sent

    def _run(self):
        claim = None
        try:
            self.agent.driver.prepare_migration_target(self.host, self.uuid)
            claim = self.tracker.move_claim(
                self.instance, self.migration_uuid, self.flavor,
                self.request_spec, self.nodename,
                self.selection.get('limits'),
                mappings=build._mappings(self.selection))
            self._record(claim)
        except Exception as exc:
            if claim is not None:
                self.tracker.release(self.migration_uuid)
                self._refresh(self.nodename)
            if utils.not_found(exc) or utils.unexpected_task_state(exc):
                raise
            return self._reschedule(exc, traceback.format_exc())
        self._refresh(self.nodename)
        compute_api().resize_instance(
            self.ctxt, self.instance['host'], self.uuid, self.migration_uuid,
            dest_compute=self.host)
        LOG.info('Prepared %s on %s (%s) for migration %s', self.uuid,
                 self.host, self.nodename, self.migration_uuid)

    def _record(self, claim):
        numa = (claim.numa_topology.to_primitive()
                if claim.numa_topology is not None else None)
        context = migration_obj.MigrationContext(
            migration_uuid=self.migration_uuid,
            old_numa_topology=self.instance.get('numa_topology'),
            new_numa_topology=numa,
            old_pci_requests=list(self.instance.get('pci_requests') or []),
            new_pci_requests=list(self.request_spec.get('pci_requests') or
                                  []),
            new_pci_devices=list(claim.pci_devices or []))
        # NOTE: the claim is this step's work, done in memory: its event
        # starts and ends with the one write that records it, which also
        # gives the server the task of the source's send.
        self._finish(migration_obj.MIGRATING, migration_obj.PRE_MIGRATING,
                     {'migration_context': context.to_primitive(),
                      'task_state': inst.RESIZE_MIGRATING},
                     [inst.RESIZE_PREP], events=[self._event('start')])

    def _reschedule(self, exc, tb):
        LOG.warning('prep_resize of %s failed on %s: %s', self.uuid,
                    self.host, exc)
        self._finish_event('Error', tb)
        self.conductor.migrate_reschedule(
            self.ctxt, self.uuid, self.migration_uuid, self.request_spec,
            self.alternates, self.host, str(exc))

    def _failed(self, exc, tb):
        self._reschedule(exc, tb)


class ResizeInstance(_Step):
    """Step 2, on the source; the server is ``resize_migrating`` (the
    destination's prep wrote it).
    """

    event = 'compute_resize_instance'

    def __init__(self, agent, ctxt, host, instance_uuid, migration_uuid,
                 dest_compute):
        super().__init__(agent, ctxt, host, instance_uuid, migration_uuid)
        self.dest_compute = dest_compute

    def _load(self):
        # NOTE: what the cast says of the migration, until the step's
        # write reads it back.
        self.migration = {'uuid': self.migration_uuid,
                          'source_compute': self.host,
                          'dest_compute': self.dest_compute}

    def _run(self):
        if self.agent.dropped_sends.dropped(self.migration_uuid):
            LOG.info('Not sending %s from %s: its move %s was rolled back '
                     'when this host restarted', self.uuid, self.host,
                     self.migration_uuid)
            return
        try:
            with self.notifier.around(self.ctxt, 'resize',
                                      self._current_instance):
                self.agent.driver.migrate_disk_and_power_off(
                    self.host, self.uuid, self.dest_compute)
        except Exception as exc:
            LOG.warning('Sending %s from %s failed: %s', self.uuid,
                        self.host, exc)
            return self._failed(exc, traceback.format_exc())
        # NOTE: read back (instance and migration) for the destination,
        # which then reads nothing itself.
        self._finish(migration_obj.POST_MIGRATING, migration_obj.MIGRATING,
                     {'task_state': inst.RESIZE_FINISH,
                      'power_state': inst.SHUTDOWN},
                     [inst.RESIZE_MIGRATING], events=[self._event('start')],
                     brief=False)
        compute_api().finish_resize(
            self.ctxt, self.dest_compute, self.uuid, self.migration_uuid,
            instance=self.instance, migration=self.migration)


class FinishResize(_SentStep):
    """Step 3, on the destination; the server is ``resize_finish``. The
    source sends the instance and migration its write read back.
    """

    event = 'compute_finish_resize'

    def _run(self):
        context = self.instance.get('migration_context') or {}
        node = self.migration['dest_node']
        power_on = _old_vm_state(self.instance) != inst.STOPPED
        guest = driver_mod.Guest(
            uuid=self.uuid, host=self.host, nodename=node,
            numa_topology=context.get('new_numa_topology'),
            pci_devices=list(context.get('new_pci_devices') or []))
        try:
            with self.notifier.around(self.ctxt, 'resize_finish',
                                      lambda: self.instance):
                self.agent.driver.finish_migration(guest, power_on)
        except Exception as exc:
            return self._failed(exc, traceback.format_exc())
        self._finish(
            migration_obj.FINISHED, migration_obj.POST_MIGRATING,
            {'host': self.host, 'node': node,
             'flavor': self.migration['new_flavor'],
             'numa_topology': context.get('new_numa_topology'),
             'pci_requests': list(context.get('new_pci_requests') or []),
             'vm_state': inst.RESIZED, 'task_state': None,
             'power_state': inst.RUNNING if power_on else inst.SHUTDOWN},
            [inst.RESIZE_FINISH], events=[self._event('start')])
        self.agent.tracker(self.host).finish_move_claim(self.migration_uuid)
        self._refresh(node)
        LOG.info('Instance %s moved to %s (%s); VERIFY_RESIZE', self.uuid,
                 self.host, node)


class ConfirmResize(_SentStep):
    """Step 4, on the source. The API (or the destination's
    ``resize_confirm_window``) sends the instance and migration it
    claimed when it confirmed (the migration ``confirming``, the task
    None).
    """

    event = 'compute_confirm_resize'

    def _run(self):
        # NOTE: first, so that nothing the step meets afterwards (a
        # failed driver, a deleted server) keeps the source's resources
        # held; placement down is logged and left to the audit.
        self.migration_dropped = move_allocations.drop_migration(
            self.agent.report.client, self.ctxt, self.migration_uuid)
        migration = migration_obj.Migration.from_primitive(self.migration)
        with self.notifier.around(self.ctxt, 'resize_confirm',
                                  lambda: self.instance):
            if not migration.same_host:
                self.agent.driver.confirm_migration(self.host, self.uuid)
            vm_state, power_state = _powered(_old_vm_state(self.instance))
            self._finish(
                migration_obj.CONFIRMED, migration_obj.CONFIRMING,
                {'vm_state': vm_state, 'power_state': power_state,
                 'task_state': None, 'migration_context': None,
                 'system_metadata': _without_old_vm_state(self.instance)},
                [None], events=[self._event('start')],
                brief=not self.notifier.enabled)
        self.agent.tracker(self.host).release(self.migration_uuid)
        self._refresh(self.migration['source_node'])
        LOG.info('Confirmed the move of %s off %s', self.uuid, self.host)

    def _failed(self, exc, tb):
        """Nova's: a failed confirm leaves the server in ERROR."""
        _error(self, exc, tb)


class RevertResize(_Step):
    """Step 5a, on the destination."""

    event = 'compute_revert_resize'

    def __init__(self, agent, ctxt, host, instance_uuid, migration_uuid,
                 reason=None):
        super().__init__(agent, ctxt, host, instance_uuid, migration_uuid)
        self.reason = reason

    def _starts_event(self):
        # NOTE: a rollback (a reason) is part of the failed step's event.
        return self.reason is None

    def _run(self):
        self._give_back()
        self.agent.driver.destroy(self.host, self.uuid)
        tracker = self.agent.tracker(self.host)
        tracker.release(self.migration_uuid)
        self._refresh(self.migration['dest_node'])
        if self.reason is None:
            self._finish_event('Success')
        compute_api().finish_revert_resize(
            self.ctxt, self.migration['source_compute'], self.uuid,
            self.migration_uuid, reason=self.reason)

    def _give_back(self):
        """The source allocation back to the server and the destination
        claim dropped, first, as Nova's revert does: whatever the step
        meets afterwards, placement holds the host the server goes back
        to. Placement refusing or down is logged: the allocation audit
        finds what is left.
        """
        try:
            move_allocations.back_to_instance(
                self.agent.report.client, self.ctxt, self.uuid,
                self.migration_uuid, self.instance.get('project_id'),
                self.instance.get('user_id'))
        except Exception:
            LOG.exception('Could not give the allocation of migration %s '
                          'back to %s', self.migration_uuid, self.uuid)

    def _failed(self, exc, tb):
        """Cannot hand back: ERROR with a fault (the guest may be left)."""
        _error(self, exc, tb)


class FinishRevertResize(_Step):
    """Step 5b, on the source."""

    event = 'compute_finish_revert_resize'

    def __init__(self, agent, ctxt, host, instance_uuid, migration_uuid,
                 reason=None):
        super().__init__(agent, ctxt, host, instance_uuid, migration_uuid)
        self.reason = reason

    def _run(self):
        context = self.instance.get('migration_context') or {}
        node = self.migration['source_node']
        vm_state, power_state = _powered(_old_vm_state(self.instance))
        guest = driver_mod.Guest(
            uuid=self.uuid, host=self.host, nodename=node,
            numa_topology=context.get('old_numa_topology'),
            pci_devices=list(context.get('old_pci_devices') or []))
        with self.notifier.around(self.ctxt, 'resize_revert',
                                  lambda: self.instance):
            self.agent.driver.finish_revert_migration(
                guest, power_on=power_state == inst.RUNNING)
            status = (migration_obj.REVERTED if self.reason is None else
                      migration_obj.ERROR)
            self._finish(
                status, None,
                {'host': self.host, 'node': node,
                 'flavor': self.migration['old_flavor'],
                 'numa_topology': context.get('old_numa_topology'),
                 'pci_requests': migration_obj.pci_requests_before(
                     context, self.instance.get('pci_requests')),
                 'vm_state': vm_state, 'power_state': power_state,
                 'task_state': None, 'migration_context': None,
                 'system_metadata': _without_old_vm_state(self.instance)},
                None, brief=not self.notifier.enabled)
        self.agent.tracker(self.host).release(self.migration_uuid)
        self._refresh(node)
        LOG.info('Instance %s is back on %s (migration %s %s)', self.uuid,
                 self.host, self.migration_uuid, status)

    def _failed(self, exc, tb):
        _error(self, exc, tb)


def _error(step, exc, tb):
    """The last resort of a failed confirm or revert: ERROR, fault,
    migration error.
    """
    step._fault(exc, tb)
    step._finish_event('Error', tb)
    try:
        step.conductor.migration_update(
            step.ctxt, step.uuid, step.migration_uuid,
            {'status': migration_obj.ERROR})
        step.conductor.instance_update(
            step.ctxt, step.uuid, {'vm_state': inst.ERROR,
                                   'task_state': None}, brief=True)
    except Exception:
        LOG.exception('Could not put %s in ERROR', step.uuid)


def _age_start(migration):
    stamp = migration.get('updated_at') or migration.get('created_at')
    if not stamp:
        return None
    return timeutils.normalize_time(timeutils.parse_isotime(stamp))


def confirm_expired(agent, ctxt, window):
    """Confirm the moves finished here more than ``window`` seconds ago
    (``[DEFAULT] resize_confirm_window``), as Nova's
    ``_poll_unconfirmed_resizes`` does on the destination.

    The migrations are those the last resource update read (moves to or
    from each host); each one's confirm begins as a user's does (the
    migration ``finished`` -> ``confirming`` under a guard, so a user's
    confirm or revert meanwhile wins, and a ``confirmResize`` action), in
    one record call, then its source compute is told to confirm it, as
    the API tells it a user's. A server no longer RESIZED, or gone, gets
    its migration ``error`` instead (Nova's rule); one with a task under
    way is left for the next round.

    :returns: the migration uuids confirmed.
    """
    horizon = timeutils.utcnow() - datetime.timedelta(seconds=window)
    confirmed = []
    for host, tracker in agent.trackers.items():
        migrations, _moving = tracker.instances.moves
        for migration in migrations:
            started = _age_start(migration)
            if (migration['status'] != migration_obj.FINISHED or
                    migration.get('dest_compute') != host or
                    started is None or started > horizon):
                continue
            if _confirm_expired(agent, ctxt, migration):
                confirmed.append(migration['uuid'])
    return confirmed


def _confirm_expired(agent, ctxt, migration):
    """Begin the confirm of one expired move and cast it to its source;
    whether it was cast.
    """
    uuid = migration['instance_uuid']
    try:
        claimed = agent.conductor.move_claim_expired(ctxt, uuid,
                                                     migration['uuid'])
        if claimed['migration']['status'] != migration_obj.CONFIRMING:
            LOG.warning('Set migration %s to error: instance %s is %s, '
                        'not resized', migration['uuid'], uuid,
                        (claimed['instance'] or {}).get('vm_state',
                                                        'gone'))
            return False
        compute_api().confirm_resize(
            ctxt, claimed['migration']['source_compute'],
            claimed['instance'], claimed['migration'])
    except Exception as exc:
        LOG.info('Could not confirm migration %s of %s: %s',
                 migration['uuid'], uuid, exc)
        return False
    LOG.info('Automatically confirming migration %s of %s (older than '
             'resize_confirm_window)', migration['uuid'], uuid)
    return True


INTERRUPTED = ('The move was interrupted by a restart of the compute '
               'service')


class DroppedSends(object):
    """The moves :func:`recover` rolled back when this agent started; one
    per agent. A ``resize_instance`` cast for one of them may still have
    been queued (the task ``resize_migrating`` is written before the cast
    is sent): it must not send the server that is going back.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._uuids = set()

    def drop(self, migration_uuid):
        with self._lock:
            self._uuids.add(migration_uuid)

    def dropped(self, migration_uuid):
        with self._lock:
            return migration_uuid in self._uuids


def recover(agent, ctxt, host, instances):
    """Roll back the moves a restart of ``host`` interrupted while it was
    to send the server (task ``resize_migrating``): the guest may be half
    stopped, so it goes back as it was, through the conductor (steps 5a
    and 5b), with a fault; a ``resize_instance`` cast for it that was
    still queued then does nothing (:class:`DroppedSends`). Earlier and
    later steps are casts the broker still holds for the hosts that run
    them.

    :param instances: the host's instance primitives.
    """
    for instance in instances:
        context = instance.get('migration_context') or {}
        if instance.get('task_state') != inst.RESIZE_MIGRATING or (
                not context.get('migration_uuid')):
            continue
        uuid = instance['uuid']
        LOG.warning('Instance %s was being sent away when %s stopped; '
                    'rolling its move back', uuid, host)
        try:
            agent.conductor.instance_fault_create(
                ctxt, uuid, FAULT_CODE, INTERRUPTED, host=host)
            agent.conductor.revert_resize(
                ctxt, uuid, context['migration_uuid'], reason=INTERRUPTED)
        except Exception:
            LOG.exception('Could not roll back the move of %s', uuid)
            continue
        agent.dropped_sends.drop(context['migration_uuid'])
