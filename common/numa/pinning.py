# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Lay pinned vCPUs out on one host cell according to the thread policy.

The three CPU thread policies, as operators see them on a 36-core /
72-thread host (doc/behaviours.md A8):

- ``prefer`` (also the default): pack vCPUs onto sibling threads, whole
  cores first, so a 16-vCPU guest takes 8 complete cores. Works on hosts
  without SMT too (one vCPU per core).
- ``isolate``: one vCPU per whole free core; the core's other threads are
  held idle (``cpuset_reserved``) so no other guest runs on them.
- ``require``: like ``prefer`` but only on cores with at least two free
  sibling threads; a cell without SMT never fits.

Consecutive guest vCPUs land on the same core, so the guest's own thread
pairs match real sibling pairs. Ties go to the lowest CPU ids, which keeps
the layout deterministic (Nova's exact pCPU numbers depend on set
ordering and are not reproduced; their shape is).
"""

from common.numa import topology


def cores(host_cell):
    """The cell's dedicated CPUs grouped by physical core.

    :returns: sorted lists of thread ids, ordered by their lowest id; a
        CPU in no sibling set is a core of its own.
    """
    seen = set()
    result = []
    for siblings in host_cell.siblings:
        threads = sorted(set(siblings) & host_cell.pcpuset)
        if threads:
            result.append(threads)
            seen.update(threads)
    result.extend([cpu] for cpu in sorted(host_cell.pcpuset - seen))
    return sorted(result)


def _pack(candidates, count):
    """Take ``count`` threads from ``candidates`` (lists of free threads).

    While at least a whole core's worth is left, take the fullest core;
    for the tail take the smallest core that still holds it, so that the
    remainder does not break a whole core when a part-used one will do.
    """
    pool = [c for c in candidates if c]
    chosen = []
    remaining = count
    while remaining:
        if not pool:
            return None
        biggest = max(len(c) for c in pool)
        # NOTE: the fullest core first keeps a guest's vCPU pairs on real
        # sibling pairs and leaves part-used cores for small tails; the
        # first of equal cores is the lowest-numbered, for determinism.
        if remaining >= biggest:
            core = next(c for c in pool if len(c) == biggest)
        else:
            # NOTE: the smallest core that still holds the tail: taking
            # two threads of a free four-thread core would split it when
            # a half-used two-thread core takes them whole.
            core = min((c for c in pool if len(c) >= remaining), key=len)
        take = core[:remaining]
        chosen.extend(take)
        remaining -= len(take)
        pool.remove(core)
    return chosen


def _isolate(host_cell, count):
    free = host_cell.free_pcpus
    # NOTE: a core is usable only when none of its threads is pinned: a
    # half-used core would put this guest next to another one.
    whole = [core for core in cores(host_cell) if set(core) <= free]
    if len(whole) < count:
        return None
    chosen = whole[:count]
    # NOTE: the guest runs on each core's first thread; the other threads
    # are held (cpuset_reserved) so the usage accounting pins them too and
    # no other guest is scheduled onto them.
    pcpus = [core[0] for core in chosen]
    reserved = set()
    for core in chosen:
        reserved.update(core[1:])
    return pcpus, reserved


def pin(host_cell, vcpus, thread_policy=None):
    """Choose host pCPUs for the dedicated ``vcpus`` on ``host_cell``.

    :param host_cell: a :class:`~common.numa.topology.HostCell`.
    :param vcpus: the guest vCPU ids to pin.
    :param thread_policy: prefer (or None), isolate or require.
    :returns: (cpu_pinning dict vCPU -> pCPU, set of reserved pCPUs), or
        None when the cell cannot hold them under that policy.
    """
    count = len(vcpus)
    if not count:
        return {}, set()
    reserved = set()
    # NOTE: a core's free threads only: a part-pinned core still offers
    # its free siblings to prefer and require, never to isolate.
    free_by_core = [[t for t in core if t in host_cell.free_pcpus]
                    for core in cores(host_cell)]
    if thread_policy == topology.ISOLATE:
        result = _isolate(host_cell, count)
        if result is None:
            return None
        pcpus, reserved = result
    elif thread_policy == topology.REQUIRE:
        if not host_cell.has_threads:
            return None
        # NOTE: with an odd vCPU count the last vCPU takes one thread of
        # a free pair; its sibling stays free for others.
        pcpus = _pack([c for c in free_by_core if len(c) >= 2], count)
    else:
        pcpus = _pack(free_by_core, count)
    if pcpus is None:
        return None
    return dict(zip(sorted(vcpus), pcpus)), reserved
