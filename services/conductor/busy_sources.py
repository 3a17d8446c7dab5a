# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Which source hosts this conductor is choosing destinations for now.

A live migration can hand its source allocation to the migration
consumer inside the scheduler's claim of the destination (one placement
write) or in a write of its own first (two). One write is cheaper for a
lone move; but every claim that carries a hand-over writes the source's
provider too, and a burst of moves off one host (an operator emptying
it) then queues all its claims on that provider's lock in placement,
each holding it for the whole claim: a hundred live migrations off one
host took 40% longer to empty it (doc/benchmarks.md). So a move whose
source already has another move choosing its destination in this
conductor hands over first, and only a lone one combines.
"""

import collections
import contextlib
import threading


class BusySources(object):
    """Counts, per source host, the moves choosing a destination."""

    def __init__(self):
        self._moving = collections.Counter()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def choosing_from(self, host):
        """Hold ``host`` busy for the block; yields True when no other
        move from it was choosing its destination as the block began.
        """
        with self._lock:
            alone = not self._moving[host]
            self._moving[host] += 1
        try:
            yield alone
        finally:
            with self._lock:
                self._moving[host] -= 1
                if not self._moving[host]:
                    del self._moving[host]
