# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""One load at a time per compute node.

When the host-state cache is cold or expires, every concurrent request
needs the same thousand nodes; each loading them on its own turned one
database load into a dozen (most of a worker's CPU at the start of a
burst). A request takes the nodes nobody is loading, loads those, and
then waits for the loads of the others instead of repeating them.

Safety: the map of loads in flight is read and written only under this
module's lock; a load's end is an Event set once, after its node states
are in the cache (or after it failed, so that the waiters load what is
still missing themselves).
"""

import contextlib
import logging
import threading

LOG = logging.getLogger(__name__)

# A request waits this long for another request's load of the same nodes
# before it loads them itself.
LOAD_WAIT_TIMEOUT = 30.0


class Loads(object):
    """The node loads in flight, each with the Event that ends it."""

    def __init__(self):
        self._lock = threading.Lock()
        # uuid -> Event set when the request loading that node is done.
        self._loading = {}

    @contextlib.contextmanager
    def split(self, compute_uuids):
        """Yield (the nodes this caller loads, the loads it then waits for).

        The caller's loads end when the block does, whether it loaded
        them or failed.
        """
        done = threading.Event()
        mine, theirs = [], set()
        with self._lock:
            for uuid in compute_uuids:
                other = self._loading.get(uuid)
                if other is None:
                    self._loading[uuid] = done
                    mine.append(uuid)
                else:
                    theirs.add(other)
        try:
            yield mine, theirs
        finally:
            with self._lock:
                for uuid in mine:
                    if self._loading.get(uuid) is done:
                        del self._loading[uuid]
            done.set()


def wait(loads):
    """Wait for other requests' ``loads`` (Events), each for at most
    :data:`LOAD_WAIT_TIMEOUT` seconds.
    """
    for other in loads:
        if not other.wait(LOAD_WAIT_TIMEOUT):
            LOG.warning('Gave up waiting %.0fs for another request to '
                        'load host states', LOAD_WAIT_TIMEOUT)
