# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Remove placement allocations of instances no longer on a node.

An instance deleted while its compute was down keeps its allocation
until something removes it (doc/behaviours.md B1, A13): at start and
then whenever a node's providers or instances change, the agent lists the
allocations against the node's providers and looks at every consumer
that is not one of its instances or builds:

- an instance the conductor reports deleted: its allocation goes at once;
- an instance being built: kept (the scheduler claims before the
  conductor names the host);
- an instance moving here (live migration, resize) before its
  migration is counted: kept;
- an instance living on another host, or on none after a failed build:
  its allocation here is a leak and goes;
- the migration of an evacuation from this host: kept (the source's
  allocation, deleted at the agent's next start);
- a consumer the conductor does not know: kept for
  ``orphan_allocation_grace_period`` seconds (the scheduler claims
  before the conductor records the instance), then removed.

Lists are read only when needed, so a quiet node costs nothing here.
"""

import logging
import threading
import time

from common.objects import instance as instance_obj
from services.compute import utils

LOG = logging.getLogger(__name__)
# NOTE: the task states of a server moving to another host.
MOVING = (instance_obj.MIGRATING, instance_obj.RESIZE_PREP,
          instance_obj.RESIZE_MIGRATING, instance_obj.RESIZE_MIGRATED,
          instance_obj.RESIZE_FINISH)

# NOTE: task states of moves whose destination claim may come before the
# instance's row names the destination (services/conductor/
# unshelve_flow.py, evacuate_flow.py).
MOVING_TASK_STATES = frozenset(['unshelving', 'rebuilding',
                                'rebuild_spawning'])
# NOTE: Nova's statuses of an evacuation its source still owes a cleanup.
EVACUATION_SOURCE_STATUSES = ('accepted', 'pre-migrating', 'done')


class AllocationAuditor(object):
    """One per agent; remembers per tree what it last checked.

    :param report: the agent's ReportClient.
    :param conductor: the ConductorAPI (``instance_get``).
    :param grace: seconds an unknown consumer is spared.
    """

    def __init__(self, report, conductor, grace, clock=time.monotonic):
        self.report = report
        self.conductor = conductor
        self.grace = grace
        self.clock = clock
        self._checked = {}
        self._pending = {}
        self._lock = threading.Lock()

    @staticmethod
    def _snapshot(seen, known):
        return (tuple(sorted((u, p['generation']) for u, p in seen.items())),
                frozenset(known))

    def needed(self, root_uuid, seen, known, force=False):
        """True when the tree's allocations must be (re)checked.

        :param seen: {provider uuid: provider dict} read this update.
        :param known: uuids of the node's instances and builds.
        """
        with self._lock:
            if force or self._pending.get(root_uuid):
                return True
            return self._checked.get(root_uuid) != self._snapshot(seen,
                                                                  known)

    def audit(self, ctxt, host, root_uuid, seen, known):
        """Check the allocations against one node's tree.

        :returns: the consumers whose allocations were deleted.
        """
        consumers = set()
        for provider_uuid in sorted(seen):
            consumers.update(self.report.provider_allocations(
                ctxt, provider_uuid))
        removed = []
        pending = set()
        unknown = consumers - set(known)
        if unknown:
            unknown -= self._evacuated_from(ctxt, host)
        for consumer in sorted(unknown):
            verdict = self._judge(ctxt, host, consumer)
            if verdict == 'delete':
                self.report.delete_allocation(ctxt, consumer)
                removed.append(consumer)
            elif verdict == 'wait':
                pending.add(consumer)
        now = self.clock()
        with self._lock:
            for consumer in list(self._pending.get(root_uuid, {})):
                if consumer not in pending:
                    self._pending[root_uuid].pop(consumer)
            waiting = self._pending.setdefault(root_uuid, {})
            for consumer in pending:
                waiting.setdefault(consumer, now)
            self._checked[root_uuid] = self._snapshot(seen, known)
        return removed

    def _evacuated_from(self, ctxt, host):
        """The migration uuids of the evacuations from ``host`` not yet
        cleaned up: they hold its source allocation until the agent's
        next start (services/compute/evacuate.py).
        """
        try:
            return {m['uuid'] for m in self.conductor.migrations_get_by_source(
                ctxt, host, 'evacuation', EVACUATION_SOURCE_STATUSES)}
        except Exception as exc:
            LOG.warning('Cannot list the evacuations from %s: %s', host, exc)
            return set()

    def _judge(self, ctxt, host, consumer):
        """'delete', 'keep' or 'wait' for one consumer."""
        try:
            instance = self.conductor.instance_get(ctxt, consumer)
        except Exception as exc:
            if not utils.not_found(exc):
                LOG.warning('Cannot look up consumer %s of an allocation '
                            'on %s: %s', consumer, host, exc)
                return 'keep'
            return self._unknown(consumer)
        if instance.get('deleted') or instance.get('vm_state') == 'deleted':
            LOG.info('Instance %s is deleted but still has an allocation '
                     'against this compute host; removing it', consumer)
            return 'delete'
        where = instance.get('host')
        if instance.get('task_state') in MOVING_TASK_STATES:
            # NOTE: an unshelve or an evacuation on its way here: the
            # scheduler claims before the row names this host.
            return 'keep'
        if where == host or instance.get('vm_state') == 'building':
            # NOTE: ours (counted on another node of the host, or arrived
            # since the update began), or a build on its way: the
            # scheduler claims before the conductor names the host.
            return 'keep'
        if instance.get('task_state') in MOVING:
            # NOTE: a server being moved holds its destination's
            # allocation before its migration is counted here (the
            # conductor claims, then checks, then casts).
            return 'keep'
        # NOTE: an allocation left here by an instance living elsewhere,
        # or nowhere after a failed build, is a leak.
        LOG.warning('Instance %s (%s) runs on %s, not on %s, but has an '
                    'allocation against this compute host; removing it',
                    consumer, instance.get('vm_state'), where or 'no host',
                    host)
        return 'delete'

    def _unknown(self, consumer):
        with self._lock:
            since = min([w[consumer] for w in self._pending.values()
                         if consumer in w] or [self.clock()])
        if self.clock() - since >= self.grace:
            LOG.info('Consumer %s of an allocation against this compute '
                     'host is no instance the conductor knows; removing '
                     'its allocation', consumer)
            return 'delete'
        return 'wait'

    def forget(self, root_uuid):
        """Check the tree from scratch at its next update."""
        with self._lock:
            self._checked.pop(root_uuid, None)
