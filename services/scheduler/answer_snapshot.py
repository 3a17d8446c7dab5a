# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""One placement answer as the requests that share it see it.

A placement answer (allocation candidates and provider summaries, read at
one snapshot time) may serve many requests: identical queries share it
(:mod:`shared_queries`). What every one of those requests would otherwise
compute again is kept here, once per answer: the candidates grouped by
compute node, and the host-state copies made for them. Copying a thousand
states was the largest part of a request's cost in a burst.

Safety argument for the shared copies:

* a copy is handed out again only while nothing that went into it moved:
  the cached state (its change count and the cache's epoch, see
  :meth:`HostManager.reading`) and this worker's reservations on the node
  (:meth:`Reservations.versions`). Otherwise a fresh copy replaces it;
* a shared copy is written after it is handed out only by the requests
  that claim, and only while they hold the scheduler's decision lock
  (:mod:`placing`): filtering, weighing and consumption of the requests
  on one answer never overlap. Filters record limits on the request, not
  on the copy (:class:`~services.scheduler.filters.Limits`);
* a request that claims nothing (a dry run) gets copies of its own and
  may write into them freely.

The pool of copies is guarded by the snapshot's own lock, taken before
the cache's (which nests the ledger's); nothing here calls out while
holding it but the cache and the ledger.
"""

import logging
import threading

from services.scheduler import host_copy

LOG = logging.getLogger(__name__)

_SHARING = 'MISC_SHARES_VIA_AGGREGATE'
# NOTE: seconds an answer's snapshot is kept at least, so that the
# requests that shared a query in flight also share its copies.
MIN_AGE = 1.0


def _roots(allocation_requests, summaries):
    """Compute node (root provider) uuid -> its allocation requests.

    NOTE: a request may also allocate from a sharing provider (a storage
    pool), which is a root of its own; the compute node is the root of the
    providers that are not sharing ones.
    """
    by_root = {}
    empty = {}
    for request in allocation_requests:
        allocations = request['allocations']
        if len(allocations) == 1:
            # NOTE: the common case, one provider: the same rule without
            # building a set per request.
            (rp,) = allocations
            summary = summaries.get(rp, empty)
            if _SHARING in summary.get('traits', ()):
                LOG.debug('Skipping allocation request spanning roots %s',
                          set())
                continue
            root = summary.get('root_provider_uuid', rp)
            if root in by_root:
                by_root[root].append(request)
            else:
                by_root[root] = [request]
            continue
        roots = set()
        for rp in allocations:
            summary = summaries.get(rp, empty)
            if _SHARING not in summary.get('traits', ()):
                roots.add(summary.get('root_provider_uuid', rp))
        if len(roots) != 1:
            LOG.debug('Skipping allocation request spanning roots %s', roots)
            continue
        by_root.setdefault(roots.pop(), []).append(request)
    return by_root


class AnswerSnapshot(object):
    """A placement answer, its candidates by compute node, and the
    host-state copies of the requests that share it.

    :ivar answer: (allocation requests, provider summaries, allocation
        request version), as the placement client returns it.
    :ivar snapshot_at: when the answer's query was sent (host-state
        cache clock).
    :ivar by_root: compute node uuid -> its allocation requests.
    :ivar compute_uuids: the candidate compute nodes, in answer order.
    """

    __slots__ = ('answer', 'snapshot_at', 'by_root', 'compute_uuids',
                 'summaries', 'version', '_lock', '_copies')

    def __init__(self, answer, snapshot_at):
        alloc_reqs, summaries, version = answer
        self.answer = answer
        self.snapshot_at = snapshot_at
        self.summaries = summaries
        self.version = version
        self.by_root = _roots(alloc_reqs, summaries)
        self.compute_uuids = list(self.by_root)
        self._lock = threading.Lock()
        # uuid -> (what the copy was made from, the copy).
        self._copies = {}

    def host_states(self, cache, reservations, shared=True):
        """The host states of the candidates, for one request.

        Nodes not in the cache (see :meth:`HostManager.refresh`) are left
        out. Each state's usage is placement's summary, plus this
        worker's reservations the snapshot cannot contain.

        :param cache: the :class:`HostManager`.
        :param reservations: the :class:`Reservations` ledger.
        :param shared: False: copies of the caller's own, neither taken
            from the pool nor put into it (a request that writes outside
            the decision lock).
        :returns: list of HostState, in candidate order.
        """
        uuids = self.compute_uuids
        with self._lock, cache.reading() as (cached, changes, epoch):
            booked, reserved = reservations.versions(uuids)
            kept = self._copies if shared else {}
            states = []
            for uuid, booked_count in zip(uuids, booked):
                state = cached.get(uuid)
                if state is None:
                    continue
                made_from = (epoch, changes.get(uuid, 0), booked_count)
                copied = kept.get(uuid)
                if copied is not None and copied[0] == made_from:
                    # NOTE: the same inputs make the same copy: hand out
                    # the one another request on this answer already has
                    # (see the module docstring for why that is safe).
                    states.append(copied[1])
                    continue
                summary = self.summaries.get(uuid)
                mine = host_copy.private_copy(state, summary)
                if summary is not None and uuid in reserved:
                    reservations.apply(mine, self.snapshot_at)
                if shared:
                    kept[uuid] = (made_from, mine)
                states.append(mine)
        return states


class Snapshots(object):
    """The snapshots of the answers that may still be handed out.

    :param clock: the host-state cache's clock.
    :param keep_for: seconds a snapshot is kept after its snapshot time
        (at least :data:`MIN_AGE`): as long as its answer may be shared.
    """

    def __init__(self, clock, keep_for):
        self._clock = clock
        self.keep_for = max(keep_for, MIN_AGE)
        self._lock = threading.Lock()
        # id(answer) -> AnswerSnapshot
        self._by_answer = {}

    def of(self, answer, snapshot_at):
        """The :class:`AnswerSnapshot` of ``answer``, made on first use.

        Snapshots older than the answers that may still be handed out are
        dropped here: each holds a copy of up to every host state.
        """
        with self._lock:
            snapshot = self._by_answer.get(id(answer))
            # NOTE: id() of a dropped answer may be reused by a new one:
            # the snapshot must be of this very answer.
            if snapshot is not None and snapshot.answer is answer:
                return snapshot
            now = self._clock()
            for key in [k for k, v in self._by_answer.items()
                        if now - v.snapshot_at >= self.keep_for]:
                del self._by_answer[key]
            snapshot = AnswerSnapshot(answer, snapshot_at)
            self._by_answer[id(answer)] = snapshot
            return snapshot
