# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Retried allocation writes take their providers' locks, in this process.

Allocation writes are optimistic: each bumps the generation of every
provider it allocates from, and one that finds a generation moved on is
run again (``[placement] allocation_conflict_retry_count``). A burst on
one provider (a host emptied by a hundred live migrations at once, each
handing its allocation to the migration consumer: every one writes the
source host) made the retries of one process race one another round
after round: one winner per round, and after ten rounds many requests
answered 409 to their clients (a move then refused). A retry holding
its providers' locks races only first attempts, so the burst drains one
write per transaction rather than failing. First attempts take no lock:
without a conflict nothing waits.

NOTE: several placement processes still race each other's retries (as
upstream's do); within each, the retries queue.
"""

import contextlib
import threading

_LOCKS = {}
_GUARD = threading.Lock()


@contextlib.contextmanager
def held(provider_uuids):
    """Hold the lock of every provider in ``provider_uuids``.

    Taken in sorted order, so that two writes over the same providers
    cannot wait for each other. One lock per provider ever retried stays
    (a provider's lock is a few dozen bytes; a cloud has thousands).
    """
    with _GUARD:
        locks = [_LOCKS.setdefault(uuid, threading.Lock())
                 for uuid in sorted(set(provider_uuids))]
    taken = []
    try:
        for lock in locks:
            lock.acquire()
            taken.append(lock)
        yield
    finally:
        for lock in reversed(taken):
            lock.release()
