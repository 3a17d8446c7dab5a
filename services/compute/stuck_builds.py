# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Builds of this agent's hosts that will never finish go to ERROR.

Two endings, as Nova's compute has them:

* at start (Nova's ``init_host``): the builds of the host that the agent
  which stopped had taken will never run again. Those it was spawning
  (task ``spawning``) go to ERROR at once. Those still in task
  ``scheduling`` were either taken and dropped before their spawn, or
  cast while the agent was down and still waiting in its queue; the
  queued ones arrive as soon as the agent consumes again, so the others
  go to ERROR once ``[compute] restart_build_grace`` seconds have passed
  without their cast (0: at once, as Nova, queued casts included);
* every ``[compute] instance_build_timeout`` seconds (when set): an
  instance of the host building for longer than that since it was
  created goes to ERROR with a fault (Nova's ``_check_instance_build_time``
  sets the state only; the fault tells the user why).

Each update is guarded by the task state the instance was seen in, so a
build that moves on meanwhile, or a delete, wins. The instance keeps its
host and its placement allocation, as an instance in ERROR does in Nova
until it is deleted (doc/operations.md, "Builds that never finish"): the
resource tracker keeps counting it, and deleting the server frees both.
A build cast that arrives after its instance went to ERROR here finds
the task state changed and abandons the build without touching the
allocation.
"""

import logging
import threading
import time

from oslo_utils import timeutils

from common.objects import instance as instance_obj
from services.compute import utils

LOG = logging.getLogger(__name__)

FAULT_CODE = 500
# NOTE: the longest wait between two checks, so that a long timeout is
# still enforced within a minute of its expiry (Nova checks on every run
# of its periodic tasks, once a minute by default).
MAX_CHECK_INTERVAL = 60

RESTART_MESSAGE = ('Build of instance %s was interrupted by a restart of '
                   'its compute service')
TIMEOUT_MESSAGE = ('Build of instance %s timed out: still building after '
                   '%d seconds ([compute] instance_build_timeout)')


def building(instance):
    """True for an instance whose build has not ended (nor its delete
    begun).
    """
    return (instance.get('vm_state') == instance_obj.BUILDING and
            instance.get('task_state') != instance_obj.DELETING)


def error_out(conductor, ctxt, host, instance, message):
    """Put one building instance in ERROR with ``message`` as its fault.

    The update is guarded by the task state ``instance`` shows; the fault
    is written only when the update happened.

    :returns: True when the instance went to ERROR; False when it was
        deleted or moved on meanwhile.
    :raises: what the conductor call raises otherwise.
    """
    uuid = instance['uuid']
    try:
        conductor.instance_update(
            ctxt, uuid, {'vm_state': instance_obj.ERROR, 'task_state': None},
            expected_task_state=instance.get('task_state'))
    except Exception as exc:
        if utils.not_found(exc) or utils.unexpected_task_state(exc):
            LOG.info('Instance %s changed while its build was being ended '
                     '(%s); leaving it', uuid, type(exc).__name__)
            return False
        raise
    LOG.warning('%s; instance set to ERROR on %s', message, host)
    try:
        conductor.instance_fault_create(ctxt, uuid, FAULT_CODE,
                                        message[:255], host=host)
    except Exception as exc:
        LOG.warning('Could not record the fault of %s: %s', uuid, exc)
    return True


class PendingBuilds(object):
    """Builds found in task ``scheduling`` at start whose cast may still
    be queued; one per agent.

    :param grace: seconds their casts have to arrive
        (``[compute] restart_build_grace``).
    :param clock: a monotonic clock (tests).
    """

    def __init__(self, grace, clock=time.monotonic):
        self.grace = grace
        self.clock = clock
        self._lock = threading.Lock()
        self._pending = {}

    def add(self, host, instance):
        """Wait for the cast of ``instance`` (a row of ``host``)."""
        with self._lock:
            self._pending[instance['uuid']] = (host, instance, self.clock())

    def arrived(self, uuid):
        """A build cast for ``uuid`` arrived: it is not waited for."""
        with self._lock:
            self._pending.pop(uuid, None)

    def due(self):
        """[(host, instance)] whose cast did not arrive within the grace
        period; they are no longer waited for.
        """
        now = self.clock()
        with self._lock:
            late = [uuid for uuid, (_h, _i, since) in self._pending.items()
                    if now - since >= self.grace]
            return [self._pending.pop(uuid)[:2] for uuid in late]

    def __len__(self):
        with self._lock:
            return len(self._pending)


def recover(agent, ctxt, host, instances):
    """At start: end the builds of ``host`` the last agent dropped.

    :param instances: the host's instance rows (the start-up list).
    :returns: the uuids set to ERROR now (the others in task
        ``scheduling`` wait in ``agent.pending_builds``).
    """
    done = []
    for instance in instances:
        if not building(instance):
            continue
        if instance.get('task_state') == instance_obj.SCHEDULING and (
                agent.pending_builds.grace > 0):
            agent.pending_builds.add(host, instance)
        elif error_out(agent.conductor, ctxt, host, instance,
                       RESTART_MESSAGE % instance['uuid']):
            done.append(instance['uuid'])
    return done


def end_unclaimed(agent, ctxt):
    """ERROR for the builds found at start whose cast never came.

    :returns: the uuids set to ERROR.
    """
    done = []
    for host, instance in agent.pending_builds.due():
        try:
            if error_out(agent.conductor, ctxt, host, instance,
                         RESTART_MESSAGE % instance['uuid']):
                done.append(instance['uuid'])
        except Exception as exc:
            LOG.warning('Could not end the build of %s: %s (will retry)',
                        instance['uuid'], exc)
            agent.pending_builds.add(host, instance)
    return done


def check_interval(timeout):
    """Seconds between two timeout checks, or None (disabled)."""
    if not timeout or timeout <= 0:
        return None
    return min(timeout, MAX_CHECK_INTERVAL)


def _age(instance, now):
    """Seconds since the instance was created, or None if unknown."""
    created = instance.get('created_at')
    if not created:
        return None
    when = timeutils.normalize_time(timeutils.parse_isotime(created))
    return (now - when).total_seconds()


def check_build_timeouts(agent, ctxt, timeout):
    """ERROR for the instances of the agent's hosts building too long.

    The candidates come from each tracker's instance rows, brought up to
    date (an incremental sync: what changed since the last one); each is
    read again, and ended only if it is still building and older than
    ``timeout``.

    :param agent: the ComputeAgent.
    :param timeout: ``[compute] instance_build_timeout``, seconds (> 0).
    :returns: the uuids set to ERROR.
    """
    conductor = agent.conductor
    now = timeutils.utcnow()
    done = []
    for host, tracker in agent.trackers.items():
        try:
            rows = tracker.instances.fetch(ctxt)
        except Exception as exc:
            LOG.warning('Cannot check the builds of %s: %s', host, exc)
            continue
        for row in rows:
            if not building(row):
                continue
            try:
                instance = conductor.instance_get(ctxt, row['uuid'])
            except Exception as exc:
                if not utils.not_found(exc):
                    LOG.warning('Cannot check the build of %s: %s',
                                row['uuid'], exc)
                continue
            age = _age(instance, now)
            if (not building(instance) or instance.get('host') != host or
                    age is None or age < timeout):
                continue
            if error_out(conductor, ctxt, host, instance,
                         TIMEOUT_MESSAGE % (instance['uuid'], timeout)):
                done.append(instance['uuid'])
    if done:
        LOG.warning('%d builds timed out after %d seconds', len(done),
                    timeout)
    return done
