# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Shelve, offload and unshelve on this host (doc/behaviours.md
§shelve).

``shelve_instance`` (task ``shelving``, set by the API):

1. event ``compute_shelve_instance`` starts; ``instance.shelve.start``;
2. the guest is powered off (left as it is when already off);
3. vm_state SHELVED, power state SHUTDOWN, ``shelved_at`` and
   ``shelved_host`` in the system metadata, the event's finish;
   ``instance.shelve.end``. With ``[DEFAULT] shelved_offload_time = 0``
   the same write sets task ``shelving_offloading`` and the offload
   follows at once.

No image is uploaded: Berth's drivers keep no guest disk, so the server's
own image is what an unshelve spawns again (Nova snapshots a
``<name>-shelved`` image here).

``shelve_offload_instance`` (task ``shelving_offloading``): event
``compute_shelve_offload_instance``, ``instance.shelve_offload.start``,
the guest destroyed, the claim released, the placement allocation
deleted, then SHELVED_OFFLOADED with no host and no node;
``instance.shelve_offload.end``. The resource tracker never counts a
SHELVED_OFFLOADED server (services/compute/usage.py).

``unshelve_instance`` (the conductor has claimed this host in placement
and written host and node; task ``unshelving``): the build's local claim
(NUMA, pinning, PCI) under the tracker's lock, task ``spawning`` with the
fitted topology and the ``compute_unshelve_instance`` event's start,
``instance.unshelve.start``, the driver's spawn, then ACTIVE / RUNNING
and ``instance.unshelve.end``. A claim or spawn that fails releases
everything (guest, claim, allocation) and leaves the server
SHELVED_OFFLOADED with no host and a fault, as Nova does: an unshelve is
not rescheduled.

:func:`offload_expired` is the agent's periodic offload of servers
shelved longer than ``shelved_offload_time`` (when it is positive).
"""

import datetime
import logging
import traceback

from oslo_utils import timeutils

from common import notifications
from common.objects import instance as inst
from services.compute import build
from services.compute import claims
from services.compute import power
from services.compute import utils
from services.compute.virt import driver as driver_mod

LOG = logging.getLogger(__name__)

SHELVE_EVENT = 'compute_shelve_instance'
OFFLOAD_EVENT = 'compute_shelve_offload_instance'
UNSHELVE_EVENT = 'compute_unshelve_instance'
FAULT_CODE = 500


def _event(phase, name, host, result=None, tb=None):
    event = {'phase': phase, 'event': name, 'host': host}
    if phase == 'finish':
        event['result'] = result
        if tb:
            event['traceback'] = tb
    return event


def _dropped(exc, uuid, what):
    """True (logged) when ``exc`` says the server was deleted or changed
    meanwhile: the request is then no longer wanted.
    """
    if utils.not_found(exc) or utils.unexpected_task_state(exc):
        LOG.info('Instance %s is no longer waiting for its %s (%s)', uuid,
                 what, exc)
        return True
    return False


def _fault(conductor, ctxt, uuid, host, exc, tb):
    try:
        conductor.instance_fault_create(ctxt, uuid, FAULT_CODE,
                                        str(exc)[:255] or
                                        type(exc).__name__, details=tb,
                                        host=host)
    except Exception as again:
        LOG.warning('Could not record the fault of %s: %s', uuid, again)


# --- shelve -----------------------------------------------------------------

def _begin(conductor, ctxt, host, uuid, task_state, event, what):
    """Start ``event`` of a server the API set to ``task_state``; its
    primitive, or None when it was deleted or changed meanwhile.
    """
    try:
        return conductor.instance_update(
            ctxt, uuid, {'task_state': task_state},
            expected_task_state=[task_state],
            action_event=_event('start', event, host))
    except Exception as exc:
        if _dropped(exc, uuid, what):
            return None
        raise


def shelve_instance(agent, ctxt, host, uuid):
    """Shelve one server of ``host`` (see the module doc)."""
    conductor = agent.conductor
    notifier = power.notifier(host)
    with agent.instance_locks(uuid):
        instance = _begin(conductor, ctxt, host, uuid, inst.SHELVING,
                          SHELVE_EVENT, 'shelve')
        if instance is None:
            return
        notifier.emit(ctxt, 'instance.shelve.start', instance)
        offload = agent.conf.shelved_offload_time == 0
        try:
            if agent.driver.get_info(host, uuid) != inst.SHUTDOWN:
                agent.driver.power_off(host, uuid)
            system_metadata = dict(instance.get('system_metadata') or {},
                                   shelved_at=utils.utcnow_iso(),
                                   shelved_host=host)
            instance = conductor.instance_update(
                ctxt, uuid, {'vm_state': inst.SHELVED,
                             'power_state': inst.SHUTDOWN,
                             'task_state': (inst.SHELVING_OFFLOADING
                                            if offload else None),
                             'system_metadata': system_metadata},
                expected_task_state=[inst.SHELVING],
                action_event=_event('finish', SHELVE_EVENT, host,
                                    'Success'))
        except Exception as exc:
            if _dropped(exc, uuid, 'shelve'):
                return
            return _shelve_failed(agent, ctxt, host, uuid, exc,
                                  traceback.format_exc())
        notifier.emit(ctxt, 'instance.shelve.end', instance)
        LOG.info('Instance %s is SHELVED on %s', uuid, host)
        if offload:
            _offload(agent, ctxt, host, uuid)


def _shelve_failed(agent, ctxt, host, uuid, exc, tb):
    """Fault, event Error, no task, vm_state unchanged (Nova's
    ``reverts_task_state``).
    """
    LOG.warning('Shelve of instance %s failed on %s: %s', uuid, host, exc)
    _fault(agent.conductor, ctxt, uuid, host, exc, tb)
    try:
        instance = agent.conductor.instance_update(
            ctxt, uuid, {'task_state': None,
                         'power_state': _power_state(agent, host, uuid)},
            expected_task_state=[inst.SHELVING],
            action_event=_event('finish', SHELVE_EVENT, host, 'Error', tb))
    except Exception as again:
        if not _dropped(again, uuid, 'shelve'):
            LOG.exception('Could not end the failed shelve of %s', uuid)
        return
    power.notifier(host).emit(ctxt, 'instance.shelve.error', instance,
                              fault=notifications.exception_payload(exc))


def _power_state(agent, host, uuid):
    try:
        return agent.driver.get_info(host, uuid)
    except Exception:
        return inst.NOSTATE


# --- offload ----------------------------------------------------------------

def shelve_offload_instance(agent, ctxt, host, uuid):
    """Offload one SHELVED server of ``host`` (see the module doc)."""
    with agent.instance_locks(uuid):
        _offload(agent, ctxt, host, uuid)


def _offload(agent, ctxt, host, uuid):
    conductor = agent.conductor
    notifier = power.notifier(host)
    instance = _begin(conductor, ctxt, host, uuid, inst.SHELVING_OFFLOADING,
                      OFFLOAD_EVENT, 'offload')
    if instance is None:
        return
    notifier.emit(ctxt, 'instance.shelve_offload.start', instance)
    agent.driver.destroy(host, uuid)
    nodes = agent.tracker(host).release(uuid)
    # NOTE: the allocation goes before the row says offloaded: a failure
    # between the two leaves a SHELVED server holding nothing, which the
    # audit reports, never an offloaded one still holding its host.
    agent.delete_allocation(ctxt, uuid)
    try:
        instance = conductor.instance_update(
            ctxt, uuid, {'vm_state': inst.SHELVED_OFFLOADED,
                         'task_state': None, 'host': None, 'node': None,
                         'power_state': inst.SHUTDOWN},
            expected_task_state=[inst.SHELVING_OFFLOADING],
            action_event=_event('finish', OFFLOAD_EVENT, host, 'Success'))
    except Exception as exc:
        if _dropped(exc, uuid, 'offload'):
            return
        raise
    for nodename in nodes or [instance.get('node')]:
        if nodename:
            agent.save_record(ctxt, host, nodename)
            agent.notify_schedulers(ctxt, host, nodename)
    notifier.emit(ctxt, 'instance.shelve_offload.end', instance)
    LOG.info('Instance %s is SHELVED_OFFLOADED (was on %s)', uuid, host)


def _shelved_for(instance, now):
    """Seconds since ``instance`` was shelved, or None when unknown."""
    stamp = (instance.get('system_metadata') or {}).get('shelved_at')
    if not stamp:
        return None
    try:
        when = timeutils.normalize_time(timeutils.parse_isotime(stamp))
    except ValueError:
        return None
    return (now - when) / datetime.timedelta(seconds=1)


def offload_expired(agent, ctxt, now=None):
    """Offload the agent's SHELVED servers (no task) shelved for longer
    than ``shelved_offload_time`` seconds; the uuids offloaded.
    """
    limit = agent.conf.shelved_offload_time
    if limit is None or limit <= 0:
        return []
    now = now or timeutils.utcnow()
    done = []
    for host in agent.hosts:
        for instance in agent.conductor.instances_get_by_host(ctxt, host):
            if instance.get('vm_state') != inst.SHELVED or instance.get(
                    'task_state') is not None:
                continue
            age = _shelved_for(instance, now)
            if age is None or age < limit:
                continue
            uuid = instance['uuid']
            try:
                agent.conductor.instance_update(
                    ctxt, uuid, {'task_state': inst.SHELVING_OFFLOADING},
                    expected_task_state=[None])
                shelve_offload_instance(agent, ctxt, host, uuid)
                done.append(uuid)
            except Exception as exc:
                if not _dropped(exc, uuid, 'periodic offload'):
                    LOG.exception('Could not offload instance %s', uuid)
    return done


# --- unshelve ---------------------------------------------------------------

class UnshelveTask(object):
    """One ``unshelve_instance`` cast to this host, run to its end."""

    def __init__(self, agent, ctxt, host, uuid, request_spec, selection,
                 node=None):
        self.agent = agent
        self.ctxt = ctxt
        self.host = host
        self.uuid = uuid
        self.request_spec = request_spec or {}
        self.selection = selection or {}
        self.tracker = agent.tracker(host)
        self.nodename = (node or self.selection.get('nodename') or
                         self.tracker.default_node())
        self.conductor = agent.conductor
        self.notifier = power.notifier(host)
        self.task_state = inst.UNSHELVING

    def run(self):
        """Claim and spawn; a failure leaves the server offloaded."""
        with self.agent.instance_locks(self.uuid):
            try:
                instance = self.conductor.instance_get(self.ctxt, self.uuid)
            except Exception as exc:
                if utils.not_found(exc):
                    LOG.info('Instance %s was deleted before its unshelve',
                             self.uuid)
                    self.agent.delete_allocation(self.ctxt, self.uuid)
                    return
                raise
            try:
                self._unshelve(instance)
            except Exception as exc:
                self._fail(exc, traceback.format_exc())

    def _unshelve(self, instance):
        try:
            claim = self.tracker.claim(
                instance, self.request_spec, self.nodename,
                self.selection.get('limits'),
                mappings=build._mappings(self.selection))
        except claims.ComputeResourcesUnavailable as exc:
            return self._fail(exc, traceback.format_exc(), spawned=False)
        numa = (claim.numa_topology.to_primitive()
                if claim.numa_topology is not None else None)
        instance = self.conductor.instance_update(
            self.ctxt, self.uuid,
            {'task_state': inst.SPAWNING, 'host': self.host,
             'node': self.nodename, 'numa_topology': numa},
            expected_task_state=[inst.UNSHELVING],
            action_event=_event('start', UNSHELVE_EVENT, self.host))
        self.task_state = inst.SPAWNING
        self.agent.save_record(self.ctxt, self.host, self.nodename)
        self.notifier.emit(self.ctxt, 'instance.unshelve.start', instance)
        self.agent.driver.spawn(driver_mod.Guest(
            uuid=self.uuid, host=self.host, nodename=self.nodename,
            numa_topology=numa, pci_devices=claim.pci_devices,
            allocations=build._allocations(self.selection)))
        instance = self.conductor.instance_update(
            self.ctxt, self.uuid,
            {'vm_state': inst.ACTIVE, 'power_state': inst.RUNNING,
             'task_state': None},
            expected_task_state=[inst.SPAWNING],
            action_event=_event('finish', UNSHELVE_EVENT, self.host,
                                'Success'))
        self.tracker.finish_build(instance)
        self.agent.notify_schedulers(self.ctxt, self.host, self.nodename)
        self.notifier.emit(self.ctxt, 'instance.unshelve.end', instance)
        LOG.info('Instance %s unshelved on %s', self.uuid, self.host)

    def _fail(self, exc, tb, spawned=True):
        """Everything given back; SHELVED_OFFLOADED with a fault."""
        deleted = _dropped(exc, self.uuid, 'unshelve')
        if not deleted:
            LOG.warning('Unshelve of instance %s failed on %s: %s',
                        self.uuid, self.host, exc)
        if spawned:
            try:
                self.agent.driver.destroy(self.host, self.uuid)
            except Exception:
                LOG.exception('Could not destroy the guest of %s', self.uuid)
        self.tracker.release(self.uuid)
        self.agent.save_record(self.ctxt, self.host, self.nodename)
        self.agent.notify_schedulers(self.ctxt, self.host, self.nodename)
        if deleted and not utils.not_found(exc):
            # NOTE: a delete in progress removes the allocation itself.
            return
        self.agent.delete_allocation(self.ctxt, self.uuid)
        if deleted:
            return
        _fault(self.conductor, self.ctxt, self.uuid, self.host, exc, tb)
        try:
            self.conductor.instance_update(
                self.ctxt, self.uuid,
                {'vm_state': inst.SHELVED_OFFLOADED, 'task_state': None,
                 'host': None, 'node': None},
                expected_task_state=[self.task_state],
                action_event=_event('finish', UNSHELVE_EVENT, self.host,
                                    'Error', tb))
        except Exception as again:
            if not _dropped(again, self.uuid, 'unshelve'):
                LOG.exception('Could not end the failed unshelve of %s',
                              self.uuid)


def unshelve_instance(agent, ctxt, host, uuid, request_spec, selection,
                      node=None):
    """Spawn an offloaded server on ``host`` (see the module doc)."""
    UnshelveTask(agent, ctxt, host, uuid, request_spec, selection,
                 node).run()


# --- after a restart --------------------------------------------------------

def recover(agent, ctxt, host, instances):
    """Finish what a restart interrupted on ``host``: a shelve or an
    offload runs again (its cast, if redelivered, then finds its task
    gone and drops itself, as the power actions' do); an unshelve that was
    spawning gives everything back and leaves the server offloaded with a
    fault.

    :param instances: the host's instance primitives.
    """
    for instance in instances:
        task = instance.get('task_state')
        uuid = instance['uuid']
        try:
            if task == inst.SHELVING:
                LOG.info('Resuming the interrupted shelve of %s', uuid)
                shelve_instance(agent, ctxt, host, uuid)
            elif task == inst.SHELVING_OFFLOADING:
                LOG.info('Resuming the interrupted offload of %s', uuid)
                shelve_offload_instance(agent, ctxt, host, uuid)
            elif (task == inst.SPAWNING and instance.get('vm_state') ==
                  inst.SHELVED_OFFLOADED):
                task_ = UnshelveTask(agent, ctxt, host, uuid, {}, {},
                                     instance.get('node'))
                task_.task_state = inst.SPAWNING
                with agent.instance_locks(uuid):
                    task_._fail(RuntimeError(
                        'The unshelve was interrupted by a restart of the '
                        'compute service'), None)
        except Exception:
            LOG.exception('Could not recover instance %s', uuid)
