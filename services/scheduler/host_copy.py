# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Private copies of cached host states, with placement's live usage.

A request never writes into the host-state cache: it works on copies,
and what it writes into one (its own selections, NUMA and PCI usage)
stays there. A copy shares what nobody writes (aggregates, instances,
service, the NUMA primitive, which consumption replaces rather than
changes) and owns what a selection changes (the usage figures, PCI
pools, the lock). Copies are made in bulk, a thousand per request or
more, so every line here is about making them cheap; see the notes.
"""

import copy
import threading

import orjson


def private_copy(state, summary=None):
    """A copy of a cached state that one request may change freely.

    Shared, read-only parts (aggregates, instances, service) are not
    copied; what filters and consumption write (limits, NUMA and PCI
    usage) is.

    :param summary: placement's provider summary of the node, whose usage
        the copy takes (see :func:`take_usage`).
    """
    # NOTE: a shallow copy plus the few writable fields; a thousand
    # candidates are copied per request, so dataclasses.replace (which
    # re-runs __init__) and unconditional deep copies are too slow, and
    # even copy.copy (through __reduce_ex__) costs several times what
    # copying the instance dictionary does, with the same result.
    mine = object.__new__(type(state))
    # NOTE: dict.copy() has a fast path that update() and dict() lack:
    # under half the time for a host state's forty entries.
    values = state.__dict__.copy()
    mine.__dict__ = values
    values['lock'] = threading.Lock()
    values['limits'] = {}
    if summary is not None:
        # NOTE: written straight into the new copy, which nobody else
        # sees yet: no lock, no attribute protocol.
        take_usage(values, summary.get('resources', {}))
    # NOTE: the NUMA topology primitive is shared: the NUMA code loads it
    # into new objects and consumption replaces it with a new primitive,
    # nothing writes into it. Anything else is copied.
    if state.numa_topology is not None and not isinstance(
            state.numa_topology, dict):
        mine.numa_topology = copy.deepcopy(state.numa_topology)
    if state.pci_stats:
        mine.pci_stats = _thaw(state, 'pci_stats')
    return mine


def _thaw(state, name):
    """A private deep copy of the JSON-like ``state.<name>``.

    NOTE: the cached state keeps its value serialized (done again only
    when the value is replaced) and each copy is parsed from that by
    orjson, several times faster than copy.deepcopy: deep copies of every
    candidate's NUMA topology and PCI pools took more than half of the
    scheduler's CPU at 1000 hosts. A value that is not plain JSON
    (non-string keys, say) is deep-copied as before.
    """
    value = getattr(state, name)
    frozen = state.__dict__.get('_frozen_' + name)
    if frozen is None or frozen[0] is not value:
        try:
            frozen = (value, orjson.dumps(value))
        except TypeError:
            frozen = (value, None)
        state.__dict__['_frozen_' + name] = frozen
    if frozen[1] is None:
        return copy.deepcopy(value)
    return orjson.loads(frozen[1])


def take_usage(values, resources):
    """Write placement's live usage (a summary's ``resources``) into a
    host state's attribute dict.

    Placement's ``capacity`` already includes the allocation ratio, so
    free figures are capacity minus used, as the claims will see them.
    """
    ram = resources.get('MEMORY_MB')
    if ram:
        ratio = values['ram_allocation_ratio'] or 1.0
        values['total_usable_ram_mb'] = int(ram['capacity'] / ratio)
        values['free_ram_mb'] = ram['capacity'] - ram['used']
    disk = resources.get('DISK_GB')
    if disk:
        values['free_disk_mb'] = (disk['capacity'] - disk['used']) * 1024
        values['disk_mb_used'] = disk['used'] * 1024
    vcpu = resources.get('VCPU')
    pcpu = resources.get('PCPU')
    if vcpu or pcpu:
        values['vcpus_used'] = ((vcpu or {}).get('used', 0) +
                                (pcpu or {}).get('used', 0))
