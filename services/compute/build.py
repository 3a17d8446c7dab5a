# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Build one instance on this host: claim, spawn, ACTIVE, or reschedule.

The conductor has written the instance row (host and node set, building,
task ``scheduling``) and the scheduler has claimed its allocation in
placement. Here:

1. the local claim (NUMA cells, pinned CPUs, pages, PCI devices) under
   the resource tracker's lock;
2. task ``spawning``, with the fitted NUMA topology, and the start of the
   action event in the same conductor call; the node record saved so
   schedulers see the pinned CPUs at once;
3. ``instance.create.start``, the driver's spawn;
4. ACTIVE / RUNNING, ``launched_at`` and the event's finish in one call;
   schedulers told; ``instance.create.end``.

A failed claim or spawn reverts the claim, deletes the instance's
allocation, records a fault and asks the conductor to try the next
alternate (``build_instances``); with none left the instance goes to
ERROR. An instance deleted meanwhile is cleaned up and forgotten.
"""

import json
import logging
import traceback

from common.objects import instance as instance_obj
from services.compute import claims
from services.compute import power
from services.compute import utils
from services.compute.virt import driver as driver_mod

LOG = logging.getLogger(__name__)

EVENT = 'compute_build_and_run_instance'


def _allocation_request(selection):
    """The claimed allocation request as a dict ({} when absent)."""
    raw = (selection or {}).get('allocation_request')
    if not raw:
        return {}
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _allocations(selection):
    """Provider uuid -> resources of the claimed allocation request."""
    try:
        return {rp: alloc.get('resources', {}) for rp, alloc in
                _allocation_request(selection).get(
                    'allocations', {}).items()}
    except AttributeError:
        return {}


def _mappings(selection):
    """Request group suffix -> provider uuids of the claimed allocation
    request (placement answers them from microversion 1.34).
    """
    mappings = _allocation_request(selection).get('mappings')
    return mappings if isinstance(mappings, dict) else {}


class BuildTask(object):
    """One ``build_and_run_instance`` cast, run to its end.

    :param agent: the ComputeAgent.
    :param instance: the Instance primitive.
    :param request_spec: the RequestSpec primitive.
    :param selection: the claimed Selection primitive.
    :param alternates: the remaining Selection primitives.
    """

    def __init__(self, agent, ctxt, host, instance, request_spec, selection,
                 alternates, node=None):
        self.agent = agent
        self.ctxt = ctxt
        self.host = host
        self.instance = instance
        self.uuid = instance['uuid']
        self.request_spec = request_spec
        self.selection = selection or {}
        self.alternates = alternates or []
        self.tracker = agent.tracker(host)
        self.nodename = (node or self.selection.get('nodename') or
                         self.tracker.default_node())
        self.task_state = instance.get('task_state')
        self.conductor = agent.conductor

    def run(self):
        """Build; every failure ends in a reschedule, ERROR or cleanup."""
        self.agent.pending_builds.arrived(self.uuid)
        with self.agent.instance_locks(self.uuid), \
                self.agent.build_slot(self.host):
            LOG.info('Building instance %s on %s (%s)', self.uuid,
                     self.host, self.nodename)
            try:
                self._build()
            except Exception as exc:
                LOG.exception('Unexpected error building instance %s',
                              self.uuid)
                self._fail('unexpected error: %s' % exc,
                           traceback.format_exc(), spawned=True)

    def _update(self, values, expected, event=None, brief=False):
        """Update the instance; ``event``: ('start',) or ('finish', result)
        of this build's action event, recorded with the update.

        :param brief: the updated instance is not needed (None is
            returned), and the update may go in a batch with other
            builds' (see instance_updater).
        """
        action_event = None
        if event is not None:
            action_event = {'phase': event[0], 'event': EVENT,
                            'host': self.host}
            if event[0] == 'finish':
                action_event['result'] = event[1]
        if brief:
            updated = self.agent.instance_updates.update(
                self.ctxt, self.uuid, values, expected_task_state=expected,
                action_event=action_event)
        else:
            updated = self.conductor.instance_update(
                self.ctxt, self.uuid, values, expected_task_state=expected,
                action_event=action_event)
        self.task_state = values.get('task_state', self.task_state)
        return updated

    def _build(self):
        try:
            claim = self.tracker.claim(self.instance, self.request_spec,
                                       self.nodename,
                                       self.selection.get('limits'),
                                       mappings=_mappings(self.selection))
        except claims.ComputeResourcesUnavailable as exc:
            return self._fail(str(exc), traceback.format_exc(),
                              spawned=False)
        numa = (claim.numa_topology.to_primitive()
                if claim.numa_topology is not None else None)
        try:
            self._update({'task_state': instance_obj.SPAWNING,
                          'host': self.host, 'node': self.nodename,
                          'numa_topology': numa}, instance_obj.SCHEDULING,
                         event=('start',), brief=True)
        except Exception as exc:
            return self._abandon(exc, spawned=False)
        self.agent.save_record(self.ctxt, self.host, self.nodename)
        guest = driver_mod.Guest(
            uuid=self.uuid, host=self.host, nodename=self.nodename,
            numa_topology=numa, pci_devices=claim.pci_devices,
            allocations=_allocations(self.selection))
        notifier = power.notifier(self.host)
        placed = dict(self.instance, host=self.host, node=self.nodename,
                      numa_topology=numa)
        notifier.emit(self.ctxt, 'instance.create.start',
                      dict(placed, task_state=instance_obj.SPAWNING))
        try:
            self.agent.driver.spawn(guest)
        except Exception as exc:
            return self._fail(str(exc), traceback.format_exc(),
                              spawned=True)
        active = {'vm_state': instance_obj.ACTIVE,
                  'power_state': instance_obj.RUNNING, 'task_state': None,
                  'launched_at': utils.utcnow_iso()}
        try:
            self._update(active, instance_obj.SPAWNING,
                         event=('finish', 'Success'), brief=True)
        except Exception as exc:
            return self._abandon(exc, spawned=True)
        # NOTE: the guarded update changed exactly these fields; reading
        # the row back would only cost the conductor two more queries.
        self.tracker.finish_build(dict(
            self.instance, host=self.host, node=self.nodename,
            numa_topology=numa, **active))
        self.agent.notify_schedulers(self.ctxt, self.host, self.nodename)
        notifier.emit(self.ctxt, 'instance.create.end', dict(placed,
                                                             **active))
        LOG.info('Instance %s is ACTIVE on %s', self.uuid, self.host)

    def _finish_event(self, result, tb):
        """Finish this build's action event (started now if it never was,
        when the build failed before its first update).
        """
        try:
            self.conductor.action_event_finish(
                self.ctxt, self.uuid, EVENT, self.host, result,
                traceback=tb)
        except Exception as exc:
            LOG.warning('Could not record event %s finish of instance %s: '
                        '%s', EVENT, self.uuid, exc)

    def _cleanup(self, spawned, allocation):
        if spawned:
            try:
                self.agent.driver.destroy(self.host, self.uuid)
            except Exception:
                LOG.exception('Could not destroy the guest of %s', self.uuid)
        self.tracker.release(self.uuid)
        self.agent.save_record(self.ctxt, self.host, self.nodename)
        if allocation:
            self.agent.delete_allocation(self.ctxt, self.uuid)
        self.agent.notify_schedulers(self.ctxt, self.host, self.nodename)

    def _abandon(self, exc, spawned):
        """The instance was deleted (or its delete began) mid-build."""
        gone = utils.not_found(exc)
        if not gone and not utils.unexpected_task_state(exc):
            raise exc
        LOG.info('Instance %s was deleted during its build on %s; '
                 'abandoning it', self.uuid, self.host)
        # NOTE: a delete in progress removes the allocation itself; a
        # vanished instance leaves it to us.
        self._cleanup(spawned=spawned, allocation=gone)

    def _fail(self, reason, details, spawned):
        """Revert, record a fault, reschedule or put in ERROR."""
        LOG.warning('Build of instance %s failed on %s: %s', self.uuid,
                    self.host, reason)
        self._cleanup(spawned=spawned, allocation=True)
        try:
            self.conductor.instance_fault_create(
                self.ctxt, self.uuid, 500, reason[:255], details=details,
                host=self.host)
        except Exception as exc:
            LOG.warning('Could not record the fault of %s: %s', self.uuid,
                        exc)
        self._finish_event('Error', details)
        try:
            if self.alternates:
                self._reschedule(reason)
            else:
                self._update(dict(self._unplaced(),
                                  vm_state=instance_obj.ERROR,
                                  task_state=None), self.task_state)
                LOG.error('Instance %s is in ERROR: its build failed on %s '
                          'and no alternate host is left', self.uuid,
                          self.host)
        except Exception as exc:
            if utils.not_found(exc) or utils.unexpected_task_state(exc):
                LOG.info('Instance %s was deleted while its failed build '
                         'was being handled', self.uuid)
                return
            LOG.exception('Could not reschedule or fail instance %s',
                          self.uuid)

    def _unplaced(self):
        """What an instance that left this host no longer has here: host,
        node, and the NUMA placement (back to what was requested).
        """
        return {'host': None, 'node': None,
                'numa_topology': (self.request_spec or {}).get(
                    'numa_topology')}

    def _reschedule(self, reason):
        updated = self._update(dict(self._unplaced(),
                                    task_state=instance_obj.SCHEDULING),
                               self.task_state)
        LOG.info('Rescheduling instance %s away from %s (%d alternates '
                 'left)', self.uuid, self.host, len(self.alternates))
        self.conductor.build_instances(
            self.ctxt, updated, self.request_spec, self.alternates,
            self.host, self.nodename, reason)
