# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Host states handed over directly: unit tests and benchmarks.

    source = MemoryHostSource([fakes.host('h1'), fakes.host('h2')])
    manager = host_manager.HostManager(source)

The source plays the part of the databases: it keeps its own copy of each
state and hands out fresh copies, so the scheduler's consumption of a
selected host never alters the "record" until :meth:`update` says so.
"""

import copy
import dataclasses
import threading

from oslo_utils import timeutils

from services.scheduler import host_manager

# NOTE: fields copied by reference: aggregates are shared read-only (as
# the database source shares them), the lock is replaced.
_SHARED = ('aggregates', 'lock')


def _copy(state):
    """A copy of ``state`` that shares nothing mutable with it."""
    fields = {f.name: copy.deepcopy(getattr(state, f.name))
              for f in dataclasses.fields(state) if f.name not in _SHARED}
    fields['aggregates'] = list(state.aggregates)
    fields['lock'] = threading.Lock()
    return dataclasses.replace(state, **fields)


class MemoryHostSource(host_manager.HostSource):
    """A HostSource over HostState objects given to it."""

    def __init__(self, states=(), aggregates=None):
        """
        :param states: HostState objects; each needs a ``uuid``.
        :param aggregates: the aggregate list :meth:`get_aggregates`
            returns; when None, those the states carry.
        """
        self._lock = threading.Lock()
        self._states = {}
        self._aggregates = aggregates
        for state in states:
            self.update(state)

    def update(self, state, touch=True):
        """Add or replace the record of ``state.uuid``.

        :param touch: give the record a new ``updated`` time, as a compute
            report does, so that caches reload it.
        """
        record = _copy(state)
        if touch or record.updated is None:
            record.updated = timeutils.utcnow()
        with self._lock:
            self._states[record.uuid] = record

    def remove(self, uuid):
        """Forget a node, as if its record was deleted."""
        with self._lock:
            self._states.pop(uuid, None)

    def get_host_states(self, context, compute_uuids):
        """Copies of the known states, in the order asked; unknown skipped."""
        with self._lock:
            found = [self._states[u] for u in dict.fromkeys(compute_uuids)
                     if u in self._states]
            return [_copy(state) for state in found]

    def get_updated_since(self, context, compute_uuids):
        """uuid -> the record's ``updated`` of the known nodes."""
        with self._lock:
            return {u: self._states[u].updated for u in compute_uuids
                    if u in self._states}

    def get_aggregates(self, context):
        """The aggregates given, else every distinct one the states carry."""
        if self._aggregates is not None:
            return list(self._aggregates)
        seen = {}
        with self._lock:
            for state in self._states.values():
                for aggregate in state.aggregates:
                    seen.setdefault(id(aggregate), aggregate)
        return list(seen.values())

    def compute_uuids_for_host(self, context, host, node=None):
        """uuids of the nodes of ``host`` (only ``node`` when given)."""
        with self._lock:
            return [s.uuid for s in self._states.values()
                    if s.host == host and (node is None or
                                           s.nodename == node)]
