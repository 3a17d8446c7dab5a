# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""PCI device pools: whether a host can serve a request's PCI devices.

A host reports its assignable devices as pools of identical devices::

    {'vendor_id': '8086', 'product_id': '154d', 'numa_node': 0,
     'dev_type': 'type-VF', 'physical_network': 'physnet1', 'count': 7}

(extra tags may sit in the pool itself or in a nested ``tags`` dict). A
request asks for ``count`` devices, each matching one of its ``spec``
alternatives::

    {'count': 2, 'spec': [{'vendor_id': '8086', 'product_id': '154d'}],
     'alias_name': 'nic', 'numa_policy': 'legacy'}

One request may be served from several pools, and several requests may
compete for the same pools. Deciding that greedily can refuse a host that
could serve them all (the first request takes the only device the second
one fits), so the matching is a small bipartite flow: requests on one
side, pools on the other, pool counts as capacities.
"""

import collections
import logging

from common import exception

LOG = logging.getLogger(__name__)

# PCI NUMA affinity policies (flavor ``hw:pci_numa_affinity_policy``,
# alias ``numa_policy``).
LEGACY = 'legacy'
REQUIRED = 'required'
PREFERRED = 'preferred'
SOCKET = 'socket'

DEV_TYPE_PF = 'type-PF'

# NOTE: aliases are written with ``device_type``; pools and requests use
# ``dev_type``. Accept both so an alias copied verbatim still matches.
_KEY_ALIASES = {'device_type': 'dev_type'}
# NOTE: PCI ids and addresses are hex: '10DE' and '10de' are one vendor.
_CASELESS_KEYS = frozenset(['vendor_id', 'product_id', 'address'])


class PciDeviceRequestFailed(exception.BerthException):
    """The host's pools cannot serve the PCI requests being applied."""

    msg_fmt = 'PCI device request %(requests)s failed'


def _pool_value(pool, key):
    """A pool attribute, looked up in the pool and then in its tags."""
    if key in pool:
        return pool[key]
    tags = pool.get('tags')
    if isinstance(tags, dict):
        return tags.get(key)
    return None


def _normalized(key, value):
    """``value`` as a comparable string (None stays None)."""
    if value is None:
        return None
    text = str(value)
    return text.lower() if key in _CASELESS_KEYS else text


def spec_matches(pool, spec):
    """True when every key of one request ``spec`` equals the pool's value.

    A pool of physical functions (``dev_type`` type-PF) only matches a
    spec that names its ``dev_type``.
    """
    spec = {_KEY_ALIASES.get(key, key): value for key, value in spec.items()}
    # NOTE: handing out a whole PF also takes every VF on it away from
    # other guests; only a request that explicitly asks for a PF gets one.
    if _pool_value(pool, 'dev_type') == DEV_TYPE_PF and 'dev_type' not in spec:
        return False
    return all(_normalized(key, _pool_value(pool, key)) ==
               _normalized(key, wanted) for key, wanted in spec.items())


def request_matches(pool, request):
    """True when the pool's devices fit any spec of the request."""
    return any(spec_matches(pool, spec) for spec in request.get('spec') or [])


def _cell_ids(numa_cells):
    """The ids of ``numa_cells``: ints, dicts with 'id' or objects."""
    ids = set()
    for cell in numa_cells:
        if isinstance(cell, dict):
            cell = cell.get('id')
        else:
            cell = getattr(cell, 'id', cell)
        ids.add(str(cell))
    return ids


def _numa_allows(pool, request, cell_ids, relax_preferred):
    """Whether the request's NUMA policy lets it use the pool.

    :param cell_ids: host NUMA cells the instance is fitted to, or None
        when the instance has no NUMA topology (no locality constraint).
    :param relax_preferred: let ``preferred`` requests use any pool.
    """
    if cell_ids is None:
        return True
    policy = request.get('numa_policy') or LEGACY
    node = pool.get('numa_node')
    local = node is not None and str(node) in cell_ids
    if policy == PREFERRED and relax_preferred:
        return True
    if policy in (REQUIRED, SOCKET):
        # NOTE: Berth has no socket map for PCI devices; ``socket`` is
        # held to the stricter ``required`` rule rather than ignored.
        return local
    # NOTE: legacy (and preferred, on the first attempt) accept devices
    # whose NUMA node is unknown, as hosts without NUMA reporting have.
    return local or node is None


def device_allowed(pool, request, numa_cells=None):
    """True when one pool (or one device described as a pool) matches the
    request and its NUMA policy allows it on ``numa_cells`` (None: no
    locality constraint; ``preferred`` is relaxed).
    """
    cell_ids = None if numa_cells is None else _cell_ids(numa_cells)
    return (request_matches(pool, request) and
            _numa_allows(pool, request, cell_ids, True))


def _augment(root, edges, flow, used, capacity):
    """Give request ``root`` one more device, rerouting others if needed.

    Breadth-first search for an augmenting path: root -> full pool ->
    a request holding a device there -> another pool ... -> a pool with
    a free device. Returns False when no such path exists.
    """
    parent = {}
    queue = collections.deque()
    for pool_index in edges[root]:
        parent[pool_index] = (root, None)
        queue.append(pool_index)
    while queue:
        pool_index = queue.popleft()
        if used[pool_index] < capacity[pool_index]:
            used[pool_index] += 1
            while True:
                request_index, previous = parent[pool_index]
                held = flow[request_index]
                held[pool_index] = held.get(pool_index, 0) + 1
                if previous is None:
                    return True
                # NOTE: this request moves one device from ``previous``
                # to ``pool_index``, freeing it for the path before it.
                held[previous] -= 1
                pool_index = previous
        for request_index, held in enumerate(flow):
            if held.get(pool_index, 0) <= 0:
                continue
            for other in edges[request_index]:
                if other not in parent:
                    parent[other] = (request_index, pool_index)
                    queue.append(other)
    return False


def _allocate(pools, requests, cell_ids, relax_preferred):
    """Per request, pool index -> device count; None when impossible."""
    capacity = [max(int(pool.get('count') or 0), 0) for pool in pools]
    edges = [[index for index, pool in enumerate(pools)
              if capacity[index] and request_matches(pool, request)
              and _numa_allows(pool, request, cell_ids, relax_preferred)]
             for request in requests]
    flow = [{} for _ in requests]
    used = [0] * len(pools)
    for request_index, request in enumerate(requests):
        for _ in range(int(request.get('count', 1))):
            if not _augment(request_index, edges, flow, used, capacity):
                return None
    return flow


def support_requests(pools, requests, numa_cells=None):
    """True when ``pools`` can serve every request of ``requests`` at once.

    :param pools: the host's PCI device pools (not modified).
    :param requests: the PCI requests of one instance.
    :param numa_cells: the host NUMA cells the instance would use (ids,
        dicts with 'id' or objects with ``.id``), to apply each request's
        NUMA affinity policy; None skips locality.
    """
    if not requests:
        return True
    cell_ids = None if numa_cells is None else _cell_ids(numa_cells)
    return _allocate(pools, requests, cell_ids, True) is not None


def apply_requests(pools, requests, numa_cells=None):
    """Take the requested devices out of ``pools`` (counts are decreased).

    ``preferred`` requests get NUMA-local devices when the whole set of
    requests can be served that way, any devices otherwise.

    :raises PciDeviceRequestFailed: the pools cannot serve the requests;
        ``pools`` is left unchanged.
    """
    if not requests:
        return
    cell_ids = None if numa_cells is None else _cell_ids(numa_cells)
    plan = None
    if cell_ids is not None and any(
            request.get('numa_policy') == PREFERRED for request in requests):
        plan = _allocate(pools, requests, cell_ids, False)
    if plan is None:
        plan = _allocate(pools, requests, cell_ids, True)
    if plan is None:
        raise PciDeviceRequestFailed(requests=requests)
    for held in plan:
        for pool_index, count in held.items():
            pools[pool_index]['count'] -= count
    # NOTE: emptied pools stay in the list with count 0, so the host
    # still shows which devices it has (the PCI weigher reads that).


def consume_from_request(host_state, spec_obj):
    """Apply ``spec_obj``'s PCI requests to ``host_state.pci_stats``.

    The ``pci_consume`` callable for ``HostState.consume_from_request``.
    """
    apply_requests(host_state.pci_stats, spec_obj.pci_requests)
