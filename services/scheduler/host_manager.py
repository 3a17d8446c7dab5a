# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The host-state cache: compute nodes as the scheduler sees them.

Host states come from a :class:`HostSource` (the cell databases in a
deployment; an in-memory source in tests and benchmarks) and are kept in
memory. A request never reloads every compute node: only the candidate
providers placement returned are looked at, new nodes are loaded on first
sight (one load at a time per node, see :mod:`host_loads`), and known
nodes are refreshed when their record changed (``updated_at``) or when
the cache entry is older than ``[scheduler] host_state_max_age``.

The cache is one of four parts of the scheduler's view of its hosts, each
in its own module: this cache; the loads in flight (:mod:`host_loads`);
this worker's selections not yet in placement's figures
(:mod:`reservations`); and the copies requests work on, shared by the
requests on one placement answer (:mod:`answer_snapshot`).

Safety: the cached states, their load times, record versions and change
counts are read and written under ``self._lock`` only. A cached state is
never handed to a request: copies are made from it inside
:meth:`HostManager.reading`, which holds the lock, and the only writes into
a cached state after it is cached (:meth:`HostManager.update_instance_info`,
and the serialized form :mod:`host_copy` keeps on it to copy from) happen
under the same lock.
"""

import abc
import collections
import contextlib
import logging
import threading
import time

from common import gc_tuning
from services.scheduler import host_loads

LOG = logging.getLogger(__name__)

# NOTE: the host state of a node whose record has not changed is trusted
# for this long; placement summaries keep its usage fresh meanwhile.
HOST_STATE_MAX_AGE = 60.0
# A refresh that loads this many host states asks for a garbage collector
# settle (common/gc_tuning.py).
SETTLE_AFTER_LOADING = 100


class HostSource(abc.ABC):
    """Where compute node, service, aggregate and instance data comes from."""

    @abc.abstractmethod
    def get_host_states(self, context, compute_uuids):
        """Fresh HostState objects for the given compute node uuids.

        Unknown uuids are left out. Each state carries its aggregates,
        instances and service status.
        """

    @abc.abstractmethod
    def get_updated_since(self, context, compute_uuids):
        """uuid -> record updated_at (any comparable), for change checks."""

    @abc.abstractmethod
    def get_aggregates(self, context):
        """Every host aggregate (list of host_state.Aggregate)."""

    @abc.abstractmethod
    def compute_uuids_for_host(self, context, host, node=None):
        """Compute node uuids of a host (one node when ``node`` is given)."""


class HostManager(object):
    """A thread-safe cache of HostState objects keyed by compute node uuid."""

    def __init__(self, source, max_age=HOST_STATE_MAX_AGE, clock=None):
        """
        :param source: the :class:`HostSource`.
        :param max_age: seconds a cached state is trusted without checking
            its record.
        :param clock: monotonic clock (tests).
        """
        self.source = source
        self.max_age = max_age
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._states = {}
        self._loaded_at = {}
        self._record_version = {}
        self._aggregates = None
        self._aggregates_at = 0.0
        self._loads = host_loads.Loads()
        # NOTE: what makes a copy of a state stale: a node's count goes up
        # whenever its cached state changes, and the epoch when every node
        # may have (aggregates).
        self._changes = collections.Counter()
        self._epoch = 0

    def now(self):
        """This manager's clock (monotonic seconds)."""
        return self._clock()

    def aggregates(self, context=None):
        """The cached aggregates, reloaded when older than max_age.

        A reload that finds them changed (an update the API's cast did
        not announce) has every cached host state reloaded on next use.
        """
        now = self._clock()
        known = self._aggregates
        if known is None or now - self._aggregates_at > self.max_age:
            fresh = self.source.get_aggregates(context)
            with self._lock:
                if known is not None and fresh != known:
                    self._reload_every_state()
                self._aggregates = fresh
                self._aggregates_at = now
            return fresh
        return known

    def invalidate_aggregates(self):
        """Forget aggregates (an aggregate changed: fanout cast).

        NOTE: each host state carries its aggregates (zones, metadata for
        the filters) as loaded with it, and a node whose record does not
        change is otherwise never reloaded: every cached state is
        reloaded on next use, so that a host put into a zone is in it for
        the next request.
        """
        with self._lock:
            self._aggregates = None
            self._reload_every_state()

    def _reload_every_state(self):
        # NOTE: called under self._lock. The states stay usable until
        # their reload; pooled copies are made again.
        self._loaded_at.clear()
        self._record_version.clear()
        self._epoch += 1

    def compute_uuids(self, host, node=None, context=None):
        """Compute node uuids of ``host`` (for forced destinations)."""
        return self.source.compute_uuids_for_host(context, host, node)

    def refresh(self, context, compute_uuids):
        """Load the nodes not cached yet and re-check the old entries.

        The database work of a request, done before its decision: nodes
        that another request is loading right now are waited for, not
        loaded twice (see :mod:`host_loads`).
        """
        # NOTE: reloads the aggregates when due, which may mark every
        # state stale (see aggregates()).
        self.aggregates(context)
        now = self._clock()
        with self._lock:
            stale = self._stale(compute_uuids, now)
        if not stale:
            return
        # NOTE: a node another request finished loading between the check
        # above and this split is loaded once more: harmless, and rare.
        with self._loads.split(stale) as (mine, theirs):
            if mine:
                self._refresh(context, mine, now)
        if not theirs:
            return
        host_loads.wait(theirs)
        # NOTE: a node whose load failed in the other request (or timed
        # out) is still missing or stale: load what is left here.
        with self._lock:
            left = self._stale(stale, now)
        if left:
            self._refresh(context, left, now)

    def _stale(self, compute_uuids, now):
        """The nodes not cached, cached longer than max_age, or marked for
        a reload (no load time); called under self._lock.
        """
        loaded_at = self._loaded_at
        max_age = self.max_age
        return [u for u in compute_uuids
                if u not in loaded_at or u not in self._states or
                now - loaded_at[u] > max_age]

    @contextlib.contextmanager
    def reading(self):
        """Hold the cache still: yield (uuid -> cached HostState, uuid ->
        change count, epoch) for the block, under the cache's lock.

        The block may read the states to copy them (see host_copy, whose
        memo of a state's serialized PCI pools is the one write allowed),
        and must not call back into this manager. A copy made from a
        state is current while the node's (epoch, change count) is.
        """
        with self._lock:
            yield self._states, self._changes, self._epoch

    def _refresh(self, context, uuids, now):
        known = [u for u in uuids if u in self._states]
        versions = self.source.get_updated_since(context, known) if known \
            else {}
        reload = [u for u in uuids if u not in self._states or
                  versions.get(u) != self._record_version.get(u)]
        fresh = {s.uuid: s for s in self.source.get_host_states(
            context, reload)} if reload else {}
        if len(fresh) >= SETTLE_AFTER_LOADING:
            # NOTE: thousands of objects that will live for a while: out of
            # the collector's way once this request is done.
            gc_tuning.settle_soon()
        with self._lock:
            for uuid in uuids:
                if uuid in fresh:
                    state = fresh[uuid]
                    self._states[uuid] = state
                    self._record_version[uuid] = state.updated
                    self._changes[uuid] += 1
                elif uuid in self._states:
                    LOG.debug('Host state %s unchanged', uuid)
                self._loaded_at[uuid] = now

    def update_instance_info(self, compute_uuid, instances):
        """Replace the instances known on a node (compute fanout cast).

        :param instances: dict uuid -> InstanceInfo.
        """
        with self._lock:
            state = self._states.get(compute_uuid)
            if state is not None:
                with state.lock:
                    state.instances = dict(instances)
                    state.num_instances = len(instances)
                self._changes[compute_uuid] += 1

    def forget(self, compute_uuid):
        """Drop a node (deleted service)."""
        with self._lock:
            self._states.pop(compute_uuid, None)
            self._loaded_at.pop(compute_uuid, None)
            self._record_version.pop(compute_uuid, None)
            self._changes[compute_uuid] += 1
