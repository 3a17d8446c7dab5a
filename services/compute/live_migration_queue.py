# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Where a compute agent's outgoing live migrations run.

A live migration's source calls its destination (``pre_live_migration``,
``post_live_migration_at_destination``) while it runs. Run on the RPC
server's own threads, enough concurrent migrations would hold every one
of them, and the destination's calls, which need one of those threads
when the destination is a host of the same agent, would wait until they
time out. So the RPC handler only hands the migration over (status
``queued`` when it must wait for a slot) and returns; the migration runs
here, as Nova's compute runs it on its live migration executor:

* at most ``[DEFAULT] max_concurrent_live_migrations`` at a time from
  each host (0: no limit), the others waiting in arrival order;
* at most :data:`MAX_WORKERS` at a time in the process, whatever the
  number of hosts it simulates.
"""

import collections
import logging
import threading

import futurist

LOG = logging.getLogger(__name__)

#: Live migrations running at once in one process, all hosts together.
MAX_WORKERS = 64


class LiveMigrationQueue(object):
    """Runs callables per host, ``per_host`` at a time (0: unlimited)."""

    def __init__(self, per_host, max_workers=MAX_WORKERS):
        self.per_host = per_host
        self._executor = futurist.ThreadPoolExecutor(
            max_workers=max_workers)
        self._cond = threading.Condition()
        self._running = collections.Counter()
        self._waiting = collections.defaultdict(collections.deque)
        self._stopped = False

    def submit(self, host, work):
        """Run ``work()`` when ``host`` has a free slot."""
        self._start(host, work, wait=True)

    def start_now(self, host, work):
        """Run ``work()`` at once if ``host`` has a free slot: True;
        otherwise False, and nothing is queued.
        """
        return self._start(host, work, wait=False)

    def _start(self, host, work, wait):
        with self._cond:
            if self.per_host and self._running[host] >= self.per_host:
                if wait:
                    self._waiting[host].append(work)
                return False
            self._running[host] += 1
        self._executor.submit(self._run, host, work)
        return True

    def _run(self, host, work):
        while work is not None:
            try:
                work()
            except Exception:
                # NOTE: a task ends its own migration on failure; this
                # only keeps the host's slot from leaking.
                LOG.exception('A live migration from %s failed', host)
            work = self._next(host)

    def _next(self, host):
        """The host's next waiting work (its slot kept), or None (the
        slot freed).
        """
        with self._cond:
            waiting = None if self._stopped else self._waiting.get(host)
            if waiting:
                work = waiting.popleft()
                if not waiting:
                    del self._waiting[host]
                return work
            self._running[host] -= 1
            if not self._running[host]:
                del self._running[host]
            self._cond.notify_all()
            return None

    def pending(self, host=None):
        """How many migrations run or wait (from ``host``, or in all)."""
        with self._cond:
            if host is not None:
                return self._running[host] + len(self._waiting.get(host, ()))
            return (sum(self._running.values()) +
                    sum(len(w) for w in self._waiting.values()))

    def wait_idle(self, timeout=None):
        """True once nothing runs or waits (False after ``timeout``)."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._running, timeout)

    def shutdown(self, wait=True):
        """Take no more and start none of those waiting (their migrations
        stay ``queued``: the agent's restart or a conductor ends them);
        with ``wait``, let the running ones end.
        """
        with self._cond:
            self._stopped = True
            self._waiting.clear()
        self._executor.shutdown(wait=wait)
