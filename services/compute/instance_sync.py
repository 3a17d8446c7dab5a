# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The agent's copy of a host's instance rows, kept in step cheaply.

Every periodic update rebuilds usage from the instances the cell database
says are on the node. Listing them all each time made the conductor
decode, convert and send ~360 KB for a 500-instance host: most of that
host's update. The agent keeps the rows of its last fetch instead and
asks the conductor only what changed:

* each reply lists the uuid of every live instance on the host, so an
  instance deleted or moved away by anyone drops out at the next update,
  whatever its timestamps say;
* rows changed since the previous reply's ``as_of`` minus
  :data:`OVERLAP` come back whole and replace the kept ones (a row seen
  twice is simply replaced: the copy is keyed by uuid);
* a listed uuid the copy has no row for (an instance created with an
  older ``created_at`` and not updated since) makes that update a full
  fetch;
* after :data:`FULL_SYNC_EVERY` incremental fetches the next is full
  anyway: the safety net for whatever the timestamps cannot tell.

An agent serving many hosts (simulated ones) reads every host's reply of
a periodic update with one conductor call per :data:`SYNC_BATCH` hosts
(fewer where full reads of busy hosts would make a large reply,
:data:`SYNC_BATCH_ROWS`; :func:`sync_many`), not one per host: a thousand
calls a minute was most of what an idle thousand-host agent cost its
conductor.
"""

import datetime
import logging
import threading

from oslo_utils import timeutils

from services.conductor import rpcapi as conductor_rpcapi

LOG = logging.getLogger(__name__)

# NOTE: each sync starts this long before the previous reply's as_of: the
# rows written by transactions still open while the conductor read, and
# by other conductors whose clocks run a little behind, are then read
# again rather than missed. What it costs is re-reading the rows changed
# in that window.
OVERLAP = datetime.timedelta(seconds=30)
# NOTE: one full fetch after this many incremental ones (every 11th
# update; 11 minutes at the default 60 s interval): repairs a copy gone
# wrong through a clock jump beyond OVERLAP or a row written by hand.
FULL_SYNC_EVERY = 10
# NOTE: hosts per instances_sync_hosts call, and the rows a call's full
# syncs may be expected to return (each host's from its previous fetch):
# a reply stays one reasonable message (a host of 500 servers is ~360 KB
# on its own and goes alone).
SYNC_BATCH = 100
SYNC_BATCH_ROWS = 1000


class HostInstances(object):
    """The live instance rows of one host, fetched incrementally.

    :param conductor: the ConductorAPI.
    :param host: the host (service) name.
    :param full_sync_every: incremental fetches between two full ones
        (0: always full).
    """

    def __init__(self, conductor, host, full_sync_every=FULL_SYNC_EVERY,
                 overlap=OVERLAP):
        self.conductor = conductor
        self.host = host
        self.full_sync_every = full_sync_every
        self.overlap = overlap
        self._lock = threading.Lock()
        self._rows = {}
        self._since = None
        self._incremental = 0
        #: fetches so far, by kind ('full', 'incremental').
        self.fetches = {'full': 0, 'incremental': 0}
        #: the last reply's moves: (Migration primitives in progress to
        #: or from the host, {uuid: row} of their instances elsewhere).
        self.moves = ([], {})
        #: the last reply's migrations to the host not started yet (a
        #: live migration between its destination's claim and its start).
        self.accepted = frozenset()

    def fetch(self, ctxt, prefetched=None):
        """The rows of the live instances on the host.

        The rows are shared with the copy kept for the next fetch: callers
        must not change them.

        :param prefetched: the conductor's reply to the ``changed_since``
            of :meth:`next_request`, read for several hosts at once
            (:func:`sync_many`); None reads it here.
        :raises: what the conductor call raises; the next fetch then
            starts from the same time again.
        """
        with self._lock:
            full = self._full_due()
            if prefetched is None:
                reply = self._call(ctxt, None if full else self._since)
            else:
                reply = prefetched
                self._count(full)
            if not full and not self._merge(reply):
                LOG.debug('Instances of %s appeared without a recent '
                          'change; fetching them all', self.host)
                full = True
                reply = self._call(ctxt, None)
            if full:
                self._replace(reply)
            self.moves = (reply.get('migrations') or [],
                          {row['uuid']: row
                           for row in reply.get('moving') or ()})
            self.accepted = frozenset(reply.get('accepted') or ())
            self._advance(reply['as_of'], full)
            return list(self._rows.values())

    def next_request(self):
        """(the ``changed_since`` the next fetch asks for, the rows it is
        expected to return): :data:`~services.conductor.rpcapi.SINCE_EVER`
        and every row kept when it is full; an incremental one counts
        one.
        """
        with self._lock:
            if self._full_due():
                return conductor_rpcapi.SINCE_EVER, max(len(self._rows), 1)
            return self._since, 1

    def _full_due(self):
        return (self._since is None or
                self._incremental >= self.full_sync_every)

    def _count(self, full):
        self.fetches['full' if full else 'incremental'] += 1

    def _call(self, ctxt, since):
        """The conductor's sync reply (everything when ``since`` is None).
        """
        self._count(since is None)
        return self.conductor.instances_get_by_host(
            ctxt, self.host,
            changed_since=since or conductor_rpcapi.SINCE_EVER)

    def _merge(self, reply):
        """Apply an incremental reply; False when rows are missing."""
        live = set(reply['uuids'])
        for row in reply['instances']:
            if row['uuid'] in live:
                self._rows[row['uuid']] = row
        for uuid in [u for u in self._rows if u not in live]:
            del self._rows[uuid]
        return len(self._rows) == len(live)

    def _replace(self, reply):
        live = set(reply['uuids'])
        self._rows = {row['uuid']: row for row in reply['instances']
                      if row['uuid'] in live}

    def _advance(self, as_of, full):
        """Where the next fetch starts."""
        self._incremental = 0 if full else self._incremental + 1
        since = timeutils.normalize_time(timeutils.parse_isotime(as_of))
        self._since = (since - self.overlap).isoformat()


def _batches(requests, batch, rows):
    """The hosts of ``requests`` ({host: (since, expected rows)}) in
    groups of at most ``batch`` hosts and, but for a group of one,
    ``rows`` expected rows.
    """
    group, weight = {}, 0
    for host in sorted(requests):
        since, expected = requests[host]
        if group and (len(group) >= batch or weight + expected > rows):
            yield group
            group, weight = {}, 0
        group[host] = since
        weight += expected
    if group:
        yield group


def sync_many(conductor, ctxt, copies, batch=SYNC_BATCH,
              rows=SYNC_BATCH_ROWS):
    """The conductor's sync replies for several hosts' copies, read
    ``batch`` hosts (and about ``rows`` rows) per call: {host: reply}.

    A batch whose call fails is left out (and logged): those hosts fetch
    on their own.

    :param copies: the :class:`HostInstances` of the hosts.
    """
    requests = {kept.host: kept.next_request() for kept in copies}
    replies = {}
    for group in _batches(requests, batch, rows):
        try:
            replies.update(conductor.instances_sync_hosts(ctxt, group))
        except Exception as exc:
            LOG.warning('Could not read the instances of %d hosts at once '
                        '(each reads its own): %s', len(group), exc)
    return replies
