# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Delete instances, and put a restarted host back in order.

``terminate_instance``: the guest goes, the claim is released, the
placement allocation deleted, the row soft-deleted by the conductor;
``instance.delete.start`` and ``.end`` around it.

At start (Nova's ``init_host``), for each host: deletes a crash
interrupted are finished (task ``deleting``), builds it dropped go to
ERROR (see :mod:`services.compute.stuck_builds`), interrupted rebuilds
go to ERROR (an interrupted evacuation too), interrupted shelves and
offloads run again, an interrupted unshelve spawn leaves the server
offloaded, interrupted snapshots lose their task and image (see
:mod:`services.compute.rebuild`, :mod:`services.compute.snapshot`), power
actions it interrupted run again (:func:`services.compute.power.recover`),
guests of servers evacuated while the host was down are destroyed and
their source allocations deleted (:mod:`services.compute.evacuate`), and
guests whose instance is no longer on the host are removed. The
startup resource update then removes the allocations of instances deleted
while the host was down (seed A13).
"""

import logging

from common.objects import instance as instance_obj
from services.compute import evacuate
from services.compute import live_migration
from services.compute import power
from services.compute import rebuild
from services.compute import resize
from services.compute import shelve
from services.compute import snapshot
from services.compute import stuck_builds
from services.compute import utils

LOG = logging.getLogger(__name__)

EVENT = 'compute_terminate_instance'


def _event(conductor, ctxt, uuid, host, phase, result=None):
    try:
        if phase == 'start':
            conductor.action_event_start(ctxt, uuid, EVENT, host)
        else:
            conductor.action_event_finish(ctxt, uuid, EVENT, host, result)
    except Exception as exc:
        if not utils.not_found(exc):
            LOG.warning('Could not record event %s %s of instance %s: %s',
                        EVENT, phase, uuid, exc)


def _current(conductor, ctxt, uuid):
    """The instance primitive for the notifications (None when gone)."""
    try:
        return conductor.instance_get(ctxt, uuid)
    except Exception as exc:
        if not utils.not_found(exc):
            LOG.warning('Could not read instance %s: %s', uuid, exc)
        return None


def terminate(agent, ctxt, host, instance_uuid):
    """Delete one instance of ``host``; safe to repeat.

    :param agent: the ComputeAgent.
    """
    conductor = agent.conductor
    with agent.instance_locks(instance_uuid):
        LOG.info('Terminating instance %s on %s', instance_uuid, host)
        instance = _current(conductor, ctxt, instance_uuid)
        notifier = power.notifier(host)
        if instance is not None:
            notifier.emit(ctxt, 'instance.delete.start', instance)
        _event(conductor, ctxt, instance_uuid, host, 'start')
        agent.driver.destroy(host, instance_uuid)
        tracker = agent.tracker(host)
        nodes = tracker.release(instance_uuid)
        agent.delete_allocation(ctxt, instance_uuid)
        _event(conductor, ctxt, instance_uuid, host, 'finish', 'Success')
        try:
            conductor.instance_destroy(ctxt, instance_uuid)
        except Exception as exc:
            if not utils.not_found(exc):
                raise
            LOG.info('Instance %s was already gone', instance_uuid)
        if instance is not None:
            notifier.emit(ctxt, 'instance.delete.end', dict(
                instance, vm_state=instance_obj.DELETED, task_state=None,
                power_state=instance_obj.NOSTATE,
                terminated_at=utils.utcnow_iso()))
        for nodename in nodes:
            agent.save_record(ctxt, host, nodename)
            agent.notify_schedulers(ctxt, host, nodename)


def recover_host(agent, ctxt, host):
    """Finish what a restart interrupted on ``host`` (see module doc)."""
    conductor = agent.conductor
    try:
        evacuate.destroy_evacuated(agent, ctxt, host)
    except Exception:
        LOG.exception('Could not clean up the servers evacuated from %s '
                      '(the next start tries again)', host)
    instances = conductor.instances_get_by_host(ctxt, host)
    for instance in instances:
        if instance.get('task_state') == instance_obj.DELETING:
            LOG.info('Completing the interrupted delete of instance %s',
                     instance['uuid'])
            terminate(agent, ctxt, host, instance['uuid'])
    stuck_builds.recover(agent, ctxt, host, instances)
    evacuate.recover(agent, ctxt, host, instances)
    shelve.recover(agent, ctxt, host, instances)
    rebuild.recover(agent, ctxt, host, instances)
    snapshot.recover(agent, ctxt, host, instances)
    power.recover(agent, ctxt, host, instances)
    resize.recover(agent, ctxt, host, instances)
    live_migration.recover(agent, ctxt, host, instances)
    live = {i['uuid'] for i in instances
            if not i.get('deleted') and i.get('task_state') !=
            instance_obj.DELETING}
    for uuid in sorted(set(agent.driver.list_guests(host)) - live):
        LOG.warning('Removing guest %s from %s: its instance is not on '
                    'this host any more', uuid, host)
        agent.driver.destroy(host, uuid)
