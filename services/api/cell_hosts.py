# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Services and compute nodes of every cell, as the API sees them.

The API answers for the whole deployment: the service and hypervisor
lists span every cell's database, a service id (its uuid) or a
hypervisor id (the compute node's uuid, which is also its placement
provider's) is looked up in each cell in turn, and whether a service is
up is decided exactly as the scheduler decides it
(:meth:`common.servicegroup.API.service_is_up` on the record's heartbeat).

The cell list is read from the api database at most every
``CELL_CACHE_TTL`` seconds: cells are added rarely, by an operator.
"""

import threading
import time

from common.db import boot_records
from common.db import cells
from common.db import compute_records
from common import servicegroup

COMPUTE_BINARY = compute_records.COMPUTE_BINARY
CELL_CACHE_TTL = 30.0

_CACHE = {'at': None, 'cells': None}
_LOCK = threading.Lock()
# NOTE: only service_is_up() is used, which needs no records of its own;
# the in-memory driver keeps the API free of the [database] cell.
_SERVICEGROUP = servicegroup.API(driver=servicegroup.MemoryDriver())


def all_cells(ctxt, include_cell0=True):
    """Every CellMapping (cell0 first), from a short-lived cache."""
    now = time.monotonic()
    with _LOCK:
        cached = _CACHE['cells']
        fresh = (cached is not None and _CACHE['at'] is not None
                 and now - _CACHE['at'] < CELL_CACHE_TTL)
    if not fresh:
        cached = boot_records.list_cells(ctxt)
        with _LOCK:
            _CACHE['cells'] = cached
            _CACHE['at'] = now
    return [c for c in cached if include_cell0 or not c.is_cell0]


def forget_cells():
    """Drop the cell cache (tests, and after cells change)."""
    with _LOCK:
        _CACHE['cells'] = None
        _CACHE['at'] = None


def database(cell):
    """The Database of a CellMapping."""
    return cells.get_cell_database(cell)


def is_up(service):
    """True when a service record dict's heartbeat is recent enough."""
    return _SERVICEGROUP.service_is_up(
        compute_records.service_record(service))


def list_services(ctxt, binary=None, host=None):
    """[(CellMapping, service dict)] of every cell with hosts."""
    found = []
    for cell in all_cells(ctxt, include_cell0=False):
        for service in compute_records.list_services(
                ctxt, database(cell), binary=binary, host=host):
            found.append((cell, service))
    return found


def find_service(ctxt, uuid):
    """(CellMapping, service dict) of the service ``uuid``, or None."""
    for cell in all_cells(ctxt, include_cell0=False):
        service = compute_records.get_service(ctxt, database(cell),
                                              uuid=uuid)
        if service is not None:
            return cell, service
    return None


def compute_service(ctxt, host, cell=None):
    """The compute service dict of ``host`` (in ``cell`` if given)."""
    candidates = [cell] if cell is not None else host_cells(ctxt, host)
    for candidate in candidates:
        service = compute_records.get_service(
            ctxt, database(candidate), host=host, binary=COMPUTE_BINARY)
        if service is not None:
            return service
    return None


def host_cells(ctxt, host):
    """The cells to look for ``host`` in: its mapped cell, else all."""
    mapped = boot_records.get_host_mapping(ctxt, host)
    cells_ = all_cells(ctxt, include_cell0=False)
    if mapped is not None:
        in_mapped = [c for c in cells_ if c.uuid == mapped]
        if in_mapped:
            return in_mapped
    return cells_


def list_compute_nodes(ctxt, host=None):
    """[(CellMapping, compute node dict)] of every cell."""
    found = []
    cells_ = (host_cells(ctxt, host) if host is not None
              else all_cells(ctxt, include_cell0=False))
    for cell in cells_:
        for node in compute_records.list_compute_nodes(
                ctxt, database(cell), host=host):
            found.append((cell, node))
    return found


def find_compute_node(ctxt, uuid):
    """(CellMapping, compute node dict) of node ``uuid``, or None."""
    for cell in all_cells(ctxt, include_cell0=False):
        node = compute_records.get_compute_node(ctxt, database(cell),
                                                uuid=uuid)
        if node is not None:
            return cell, node
    return None


def find_compute_node_by_id(ctxt, node_id):
    """(CellMapping, compute node dict) of the first node whose integer
    id (the pre-2.53 hypervisor id) is ``node_id``, or None.

    NOTE: ids are per cell database; as in Nova, below 2.53 two cells'
    nodes may share one and the first cell's wins.
    """
    for cell in all_cells(ctxt, include_cell0=False):
        node = compute_records.get_compute_node(ctxt, database(cell),
                                                node_id=node_id)
        if node is not None:
            return cell, node
    return None


def host_exists(ctxt, host, node=None):
    """True when ``host`` (and ``node`` on it) has a live compute node."""
    return any(node is None or n['hypervisor_hostname'] == node
               for _cell, n in list_compute_nodes(ctxt, host=host))
