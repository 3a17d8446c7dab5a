# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The host-state cache: compute nodes as the scheduler sees them.

Host states come from a :class:`HostSource` (the cell databases in a
deployment; an in-memory source in tests and benchmarks) and are kept in
memory. A request never reloads every compute node: only the candidate
providers placement returned are looked at, new nodes are loaded on first
sight, and known nodes are refreshed when their record changed
(``updated_at``) or when the cache entry is older than
``[scheduler] host_state_max_age``.

Two things keep the view honest between compute reports:

* placement's provider summaries, which come with every candidate list,
  carry the live usage of VCPU, MEMORY_MB and DISK_GB, including claims
  made by other scheduler workers;
* this worker's own selections, in flight or committed after the summary
  was read, are applied on top (:meth:`HostManager.reserve`).

Each request works on copies of the cached states, so that what it
writes (limits, its own selections) never reaches the cache. Requests on
one shared placement answer share the copies too (a :class:`CopyPool`),
for the nodes that no reservation, report or reload has touched since the
copy was made: copying a thousand states was the largest part of a
request's cost in a burst.
"""

import abc
import collections
import copy
import itertools
import logging
import threading
import time

import orjson

from common import gc_tuning

LOG = logging.getLogger(__name__)

# NOTE: the host state of a node whose record has not changed is trusted
# for this long; placement summaries keep its usage fresh meanwhile.
HOST_STATE_MAX_AGE = 60.0
# A committed claim is certainly in any placement snapshot read this long
# after it; older reservations are forgotten.
RESERVATION_TTL = 60.0
# A refresh that loads this many host states asks for a garbage collector
# settle (common/gc_tuning.py).
SETTLE_AFTER_LOADING = 100
# A request waits this long for another request's load of the same nodes
# before it loads them itself.
LOAD_WAIT_TIMEOUT = 30.0


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


class CopyPool(object):
    """The host-state copies made for the requests on one placement answer.

    Only :meth:`HostManager.copies` reads and writes it, under the
    manager's lock. Its copies are shared: a caller that writes into one
    (filters set limits, a selection consumes) must do so where the other
    callers on the pool do not read at the same time (the scheduler's
    decision lock).
    """

    __slots__ = ('answer', 'epoch', 'copies')

    def __init__(self, answer):
        """
        :param answer: the placement answer whose summaries the copies
            took; kept so that the owner can tell its pool apart.
        """
        self.answer = answer
        # The manager's epoch when the copies were made, and
        # uuid -> (the node's change count then, the copy).
        self.epoch = None
        self.copies = {}


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
        # token -> [uuid, spec, committed at or None], and the same
        # entries by uuid, so that a request finds a node's in O(1).
        self._reservations = {}
        self._reserved_on = {}
        self._tokens = itertools.count()
        # uuid -> Event set when the request loading that node is done.
        self._loading = {}
        # NOTE: what makes a pooled copy stale: a node's count goes up
        # whenever its cached state or its reservations change, and the
        # epoch when every node may have (aggregates).
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

    def get_host_states(self, context, compute_uuids, summaries=None,
                        snapshot_at=None):
        """This request's copies of the host states of ``compute_uuids``.

        :param summaries: placement provider summaries; when given, each
            copy's usage is placement's live figures.
        :param snapshot_at: when the summaries were asked for; this worker's
            selections not committed before then are applied on top.
        :returns: list of HostState in the order of ``compute_uuids``.
        """
        self.refresh(context, compute_uuids)
        return self.copies(compute_uuids, summaries, snapshot_at)

    def refresh(self, context, compute_uuids):
        """Load the nodes not cached yet and re-check the old entries.

        The database work of :meth:`get_host_states`, for callers that do
        it before taking a lock around :meth:`copies`. Nodes that another
        request is loading right now are waited for, not loaded twice:
        when the cache is cold or expires, every concurrent request needs
        the same thousand nodes, and each loading them on its own turned
        one load into a dozen (most of a worker's CPU at the start of a
        burst).
        """
        # NOTE: reloads the aggregates when due, which may mark every
        # state stale (see aggregates()).
        self.aggregates(context)
        now = self._clock()
        with self._lock:
            stale = self._stale(compute_uuids, now)
            if not stale:
                return
            mine, theirs = [], set()
            done = threading.Event()
            for uuid in stale:
                other = self._loading.get(uuid)
                if other is None:
                    self._loading[uuid] = done
                    mine.append(uuid)
                else:
                    theirs.add(other)
        try:
            if mine:
                self._refresh(context, mine, now)
        finally:
            with self._lock:
                for uuid in mine:
                    if self._loading.get(uuid) is done:
                        del self._loading[uuid]
            done.set()
        for other in theirs:
            if not other.wait(LOAD_WAIT_TIMEOUT):
                LOG.warning('Gave up waiting %.0fs for another request to '
                            'load host states', LOAD_WAIT_TIMEOUT)
        # NOTE: a node whose load failed in the other request (or timed
        # out) is still missing or stale: load what is left here.
        if theirs:
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

    def copies(self, compute_uuids, summaries=None, snapshot_at=None,
               pool=None):
        """Copies of the cached states for a request; no database work.

        Nodes not in the cache (see :meth:`refresh`) are left out;
        ``summaries`` and ``snapshot_at`` as for :meth:`get_host_states`.

        :param pool: a :class:`CopyPool` of requests on the same
            ``summaries`` and ``snapshot_at``: its copies are handed out
            again where the node has not changed since, and new copies go
            into it. Without one, every copy is the caller's own.
        """
        states = []
        summaries = summaries or {}
        with self._lock:
            cached = self._states
            changes = self._changes
            if pool is not None and pool.epoch != self._epoch:
                pool.epoch = self._epoch
                pool.copies = {}
            kept = pool.copies if pool is not None else {}
            for uuid in compute_uuids:
                state = cached.get(uuid)
                if state is None:
                    continue
                change = changes.get(uuid, 0)
                copied = kept.get(uuid)
                if copied is not None and copied[0] == change:
                    states.append(copied[1])
                    continue
                summary = summaries.get(uuid)
                mine = _private_copy(state, summary)
                if summary is not None and uuid in self._reserved_on:
                    self._apply_reservations(mine, snapshot_at)
                if pool is not None:
                    kept[uuid] = (change, mine)
                states.append(mine)
        return states

    def reserve(self, compute_uuid, spec):
        """Note a selection on a node before its claim is made.

        :returns: a token for :meth:`committed` or :meth:`release`.
        """
        token = next(self._tokens)
        with self._lock:
            entry = [compute_uuid, spec, None]
            self._reservations[token] = entry
            self._reserved_on.setdefault(compute_uuid, {})[token] = entry
            self._changes[compute_uuid] += 1
        return token

    def committed(self, token):
        """The reserved claim is now in placement."""
        now = self._clock()
        with self._lock:
            entry = self._reservations.get(token)
            if entry is not None:
                entry[2] = now
            for key, (_u, _s, done) in list(self._reservations.items()):
                if done is not None and now - done > RESERVATION_TTL:
                    self._forget_reservation(key)

    def release(self, token):
        """The reserved claim was not made (or was rolled back)."""
        with self._lock:
            self._forget_reservation(token)

    def _forget_reservation(self, token):
        # NOTE: called under self._lock.
        entry = self._reservations.pop(token, None)
        if entry is None:
            return
        self._changes[entry[0]] += 1
        on_node = self._reserved_on.get(entry[0])
        if on_node is not None:
            on_node.pop(token, None)
            if not on_node:
                del self._reserved_on[entry[0]]

    def _apply_reservations(self, state, snapshot_at):
        # NOTE: called under self._lock. A claim committed before the
        # snapshot was taken is already in placement's figures. Entries
        # are applied in reservation (token) order, as they were made.
        on_node = self._reserved_on.get(state.uuid)
        if not on_node:
            return
        for _uuid, spec, done in on_node.values():
            if done is not None and snapshot_at is not None and \
                    done < snapshot_at:
                continue
            state.consume_from_request(spec)

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


def _private_copy(state, summary=None):
    """A copy of a cached state that one request may change freely.

    Shared, read-only parts (aggregates, instances, service) are not
    copied; what filters and consumption write (limits, NUMA and PCI
    usage) is.

    :param summary: placement's provider summary of the node, whose usage
        the copy takes (see :func:`_take_usage`).
    """
    # NOTE: a shallow copy plus the few writable fields; a thousand
    # candidates are copied per request, so dataclasses.replace (which
    # re-runs __init__) and unconditional deep copies are too slow, and
    # even copy.copy (through __reduce_ex__) costs several times what
    # copying the instance dictionary does, with the same result.
    mine = object.__new__(type(state))
    # NOTE: dict.copy() has a fast path that update() and dict() lack:
    # under half the time for a host state's forty entries.
    values = state.__dict__.copy()
    mine.__dict__ = values
    values['lock'] = threading.Lock()
    values['limits'] = {}
    if summary is not None:
        # NOTE: written straight into the new copy, which nobody else
        # sees yet: no lock, no attribute protocol.
        _take_usage(values, summary.get('resources', {}))
    # NOTE: the NUMA topology primitive is shared: the NUMA code loads it
    # into new objects and consumption replaces it with a new primitive,
    # nothing writes into it. Anything else is copied.
    if state.numa_topology is not None and not isinstance(
            state.numa_topology, dict):
        mine.numa_topology = copy.deepcopy(state.numa_topology)
    if state.pci_stats:
        mine.pci_stats = _thaw(state, 'pci_stats')
    return mine


def _thaw(state, name):
    """A private deep copy of the JSON-like ``state.<name>``.

    NOTE: the cached state keeps its value serialized (done again only
    when the value is replaced) and each copy is parsed from that by
    orjson, several times faster than copy.deepcopy: deep copies of every
    candidate's NUMA topology and PCI pools took more than half of the
    scheduler's CPU at 1000 hosts. A value that is not plain JSON
    (non-string keys, say) is deep-copied as before.
    """
    value = getattr(state, name)
    frozen = state.__dict__.get('_frozen_' + name)
    if frozen is None or frozen[0] is not value:
        try:
            frozen = (value, orjson.dumps(value))
        except TypeError:
            frozen = (value, None)
        state.__dict__['_frozen_' + name] = frozen
    if frozen[1] is None:
        return copy.deepcopy(value)
    return orjson.loads(frozen[1])


def _take_usage(values, resources):
    """Write placement's live usage (a summary's ``resources``) into a
    host state's attribute dict.

    Placement's ``capacity`` already includes the allocation ratio, so
    free figures are capacity minus used, as the claims will see them.
    """
    ram = resources.get('MEMORY_MB')
    if ram:
        ratio = values['ram_allocation_ratio'] or 1.0
        values['total_usable_ram_mb'] = int(ram['capacity'] / ratio)
        values['free_ram_mb'] = ram['capacity'] - ram['used']
    disk = resources.get('DISK_GB')
    if disk:
        values['free_disk_mb'] = (disk['capacity'] - disk['used']) * 1024
        values['disk_mb_used'] = disk['used'] * 1024
    vcpu = resources.get('VCPU')
    pcpu = resources.get('PCPU')
    if vcpu or pcpu:
        values['vcpus_used'] = ((vcpu or {}).get('used', 0) +
                                (pcpu or {}).get('used', 0))
