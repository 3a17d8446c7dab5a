# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Identical placement queries share one answer.

A burst of boots of one flavor sends the scheduler many requests whose
``GET /allocation_candidates`` queries are the same, and at a thousand
candidates that query is most of the cost of a request, in placement and
in decoding its answer here. A request whose query is already on its way
waits for that answer instead of sending its own, and a finished answer
younger than ``max_age`` seconds is handed to the next requests too.

This is safe for the same reason a single answer is: candidates are a
snapshot that may be stale by the time of the claim, the claim in
placement is what decides, and this worker's selections made after the
snapshot (the snapshot time of the query that fetched the answer, which
every sharer uses) are applied on top of the summaries (see
reservations). The host-state copies of the requests on one answer are
shared too (see answer_snapshot).
What a shared answer cannot show is capacity that appeared since (a new
host, a deleted server): a request that finds no host in one asks
placement for its own answer (``reuse=False``) before it gives up.
"""

import logging
import threading

from oslo_config import cfg

from common.conf import CONF
from common.placement import client as placement_client

LOG = logging.getLogger(__name__)


class _Flight(object):
    """One query on its way, and what came back."""

    __slots__ = ('done', 'snapshot_at', 'answer', 'error', 'sharers')

    def __init__(self, snapshot_at):
        self.sharers = 0
        self.done = threading.Event()
        self.snapshot_at = snapshot_at
        self.answer = None
        self.error = None


class SharedQueries(object):
    """Runs ``fetch`` once for concurrent callers with the same query.

    :param fetch: callable(context, params) -> answer (the placement
        client's ``get_allocation_candidates``).
    :param clock: the host manager's clock; read just before a query is
        sent, as the snapshot time of its answer.
    :param enabled: False: every caller sends its own query.
    :param max_age: seconds a finished answer is handed to later callers
        (counted from its snapshot time); 0 shares queries in flight only.
    """

    def __init__(self, fetch, clock, enabled=True, max_age=0.0):
        self._fetch = fetch
        self._clock = clock
        self.enabled = enabled
        self.max_age = max_age
        self._lock = threading.Lock()
        self._flights = {}
        # key -> (snapshot time, answer): the newest finished answers.
        self._answers = {}

    def get(self, context, params, reuse=True):
        """(snapshot time, answer, shared) for the query ``params``.

        :param params: the query as a list of (name, value) pairs.
        :param reuse: False: send this query now, whatever is in flight or
            kept; its answer is the one later callers get.
        :returns: ``shared`` is True when the answer came from another
            request's query.
        :raises: what ``fetch`` raised, to the caller that sent the query
            and to those that waited for it.
        """
        if not self.enabled:
            snapshot_at = self._clock()
            return snapshot_at, self._fetch(context, params), False
        key = tuple(params)
        if not reuse:
            return self._own(context, params, key)
        with self._lock:
            kept = self._answers.get(key)
            if kept is not None and self._clock() - kept[0] < self.max_age:
                return kept[0], kept[1], True
            flight = self._flights.get(key)
            leader = flight is None
            if leader:
                flight = self._flights[key] = _Flight(self._clock())
            else:
                flight.sharers += 1
        if leader:
            return self._lead(context, params, key, flight)
        if not flight.done.wait(_join_timeout()):
            # NOTE: the leader is stuck in retries longer than one call
            # may take; ask for ourselves rather than wait on.
            return self._own(context, params, key)
        if flight.error is not None:
            raise flight.error
        return flight.snapshot_at, flight.answer, True

    def _lead(self, context, params, key, flight):
        try:
            flight.answer = self._fetch(context, params)
        except Exception as exc:
            flight.error = exc
            raise
        finally:
            with self._lock:
                self._flights.pop(key, None)
                if flight.error is None:
                    self._keep(key, flight.snapshot_at, flight.answer)
            flight.done.set()
        if flight.sharers:
            LOG.debug('Allocation candidates shared by %d more requests',
                      flight.sharers)
        return flight.snapshot_at, flight.answer, False

    def _own(self, context, params, key):
        """Send the query outside any flight; keep its answer."""
        snapshot_at = self._clock()
        answer = self._fetch(context, params)
        with self._lock:
            self._keep(key, snapshot_at, answer)
        return snapshot_at, answer, False

    def _keep(self, key, snapshot_at, answer):
        """Keep ``answer`` for later callers unless a newer one is kept;
        called under self._lock.
        """
        if self.max_age <= 0:
            return
        kept = self._answers.get(key)
        if kept is not None and kept[0] > snapshot_at:
            return
        # NOTE: one entry per distinct query (flavor, zone, hints ...);
        # the old ones go whenever an answer is kept, so that the dict
        # stays as small as the set of queries of the last max_age.
        now = self._clock()
        for old in [k for k, (at, _a) in self._answers.items()
                    if now - at >= self.max_age]:
            del self._answers[old]
        self._answers[key] = (snapshot_at, answer)


def _join_timeout():
    """Seconds a sharer waits: as long as one placement call may take."""
    try:
        configured = CONF.placement.timeout
    except cfg.NoSuchOptError:
        configured = None
    return configured or placement_client.DEFAULT_TIMEOUT
