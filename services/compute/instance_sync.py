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

    def fetch(self, ctxt):
        """The rows of the live instances on the host.

        The rows are shared with the copy kept for the next fetch: callers
        must not change them.

        :raises: what the conductor call raises; the next fetch then
            starts from the same time again.
        """
        with self._lock:
            full = (self._since is None or
                    self._incremental >= self.full_sync_every)
            reply = self._call(ctxt, None if full else self._since)
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

    def _call(self, ctxt, since):
        """The conductor's sync reply (everything when ``since`` is None).
        """
        self.fetches['full' if since is None else 'incremental'] += 1
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
