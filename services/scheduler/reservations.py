# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""This worker's selections that placement's figures may not show yet.

Placement's provider summaries, read with every candidate list, carry the
live usage of each node, including claims made by other workers. What they
cannot carry is this worker's own selections made after the summaries were
read: a choice that is being claimed right now, or a claim committed after
the snapshot. The ledger keeps those, and every host-state copy made for a
request applies the ones its snapshot cannot contain.

A selection is reserved before its claim is sent, so that the requests of
this worker deciding meanwhile already see the host as taken; it is
released when the claim is refused or rolled back, and forgotten
:data:`RESERVATION_TTL` seconds after it was committed, when every
snapshot read since contains it.

Safety: every entry and every per-node change count is read and written
under the ledger's own lock. The ledger never calls out while holding it
(consumption applies to a copy nobody else sees yet), so it nests inside
any other lock, e.g. the host-state cache's.
"""

import collections
import itertools
import threading

# A committed claim is certainly in any placement snapshot read this long
# after it; older reservations are forgotten.
RESERVATION_TTL = 60.0


class Reservations(object):
    """The ledger of this worker's selections, by token and by node."""

    def __init__(self, clock):
        """
        :param clock: monotonic clock, the one snapshot times come from
            (the host-state cache's ``now``).
        """
        self._clock = clock
        self._lock = threading.Lock()
        # token -> [uuid, spec, committed at or None], and the same
        # entries by uuid, so that a copy finds a node's in O(1).
        self._by_token = {}
        self._on_node = {}
        self._tokens = itertools.count()
        # NOTE: uuid -> how often the node's reservations changed; a copy
        # that applied them is stale once the count moves (see
        # answer_snapshot, which hands copies to several requests).
        self._changes = collections.Counter()

    def reserve(self, compute_uuid, spec):
        """Note a selection on a node before its claim is made.

        :returns: a token for :meth:`committed` or :meth:`release`.
        """
        token = next(self._tokens)
        with self._lock:
            entry = [compute_uuid, spec, None]
            self._by_token[token] = entry
            self._on_node.setdefault(compute_uuid, {})[token] = entry
            self._changes[compute_uuid] += 1
        return token

    def committed(self, token):
        """The reserved claim is now in placement."""
        now = self._clock()
        with self._lock:
            entry = self._by_token.get(token)
            if entry is not None:
                entry[2] = now
            for key, (_u, _s, done) in list(self._by_token.items()):
                if done is not None and now - done > RESERVATION_TTL:
                    self._forget(key)

    def release(self, token):
        """The reserved claim was not made (or was rolled back).

        Releasing a token twice, or None, does nothing.
        """
        if token is None:
            return
        with self._lock:
            self._forget(token)

    def _forget(self, token):
        # NOTE: called under self._lock.
        entry = self._by_token.pop(token, None)
        if entry is None:
            return
        self._changes[entry[0]] += 1
        on_node = self._on_node.get(entry[0])
        if on_node is not None:
            on_node.pop(token, None)
            if not on_node:
                del self._on_node[entry[0]]

    def versions(self, compute_uuids):
        """(change count of each node in order, the set of those with
        reservations now).

        NOTE: read before a copy is made; a reservation that comes in
        between is applied to the copy under a newer count than the one
        recorded, so the copy is only made again, never missed.
        """
        with self._lock:
            get = self._changes.get
            return ([get(u, 0) for u in compute_uuids],
                    {u for u in compute_uuids if u in self._on_node})

    def apply(self, state, snapshot_at):
        """Consume this worker's reservations on ``state``'s node that a
        snapshot read at ``snapshot_at`` cannot contain.

        :param state: a private copy nobody else sees yet.
        """
        with self._lock:
            on_node = self._on_node.get(state.uuid)
            # NOTE: a claim committed before the snapshot was taken is
            # already in placement's figures. Entries are applied in
            # reservation (token) order, as they were made.
            specs = [spec for _uuid, spec, done in (on_node or {}).values()
                     if done is None or snapshot_at is None or
                     done >= snapshot_at]
        for spec in specs:
            state.consume_from_request(spec)
