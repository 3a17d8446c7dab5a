# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Host discovery: map new compute hosts to their cells.

A compute host is usable once the api database maps it to its cell
(``host_mappings``). Discovery looks in every cell but cell0 for compute
nodes not yet ``mapped``, creates the missing host mappings and marks
the nodes mapped; ``by_service`` instead looks for compute services whose
host has no mapping, which also finds hosts whose mappings were removed
by hand (doc/behaviours.md B5). ``berth-manage cell_v2 discover_hosts`` and the
conductor's periodic task (``[scheduler]
discover_hosts_in_cells_interval``) both run it. Messages are upstream's,
so operators' runbooks keep working::

    Found 2 cell mappings.
    Skipping cell0 since it does not contain hosts.
    Getting computes from cell 'cell1': <cell uuid>
    Checking host mapping for compute host 'host1': <node uuid>
    Creating host mapping for compute host 'host1': <node uuid>
    Found 1 unmapped computes in cell: <cell uuid>
"""

import logging

from oslo_db import exception as db_exc
import sqlalchemy as sa

from common.db import boot_records
from common.db import compute_records
from common import exception

LOG = logging.getLogger(__name__)


def _quiet(_message):
    pass


def _map_host(ctxt, cell_access, cell, host, known, announce):
    """Create the host mapping of ``host`` in ``cell`` unless it has one.

    :param known: host -> cell uuid of the mappings seen so far.
    :param announce: called just before a mapping is created.
    :returns: True when a mapping was created.
    :raises common.exception.HostMappingExists: mapped to another cell.
    """
    current = known.get(host)
    if current is None:
        current = boot_records.get_host_mapping(ctxt, host,
                                                database=cell_access.api)
    if current is None:
        announce()
        try:
            boot_records.create_host_mapping(ctxt, host, cell.uuid,
                                             database=cell_access.api)
            known[host] = cell.uuid
            return True
        except exception.HostMappingExists as exc:
            # NOTE: another discovery (a second conductor worker, or the
            # command) mapped it a moment ago.
            current = exc.kwargs.get('cell_uuid')
    known[host] = current
    if current != cell.uuid:
        raise exception.HostMappingExists(name=host, cell_uuid=current)
    return False


def _by_nodes(ctxt, cell_access, cell, database, known, status, progress):
    created = []
    done = []
    nodes = list(compute_records.list_unmapped_nodes(ctxt, database))
    progress.expect(len(nodes))
    for node in nodes:
        progress.step()
        label = "compute host '%s': %s" % (node['host'], node['uuid'])
        status('Checking host mapping for ' + label)
        if _map_host(ctxt, cell_access, cell, node['host'], known,
                     lambda: status('Creating host mapping for ' + label)):
            created.append(node['host'])
        done.append(node['id'])
    compute_records.mark_mapped(ctxt, database, done)
    return created


def _by_services(ctxt, cell_access, cell, database, known, status,
                 progress):
    created = []
    services = compute_records.list_services(
        ctxt, database, binary=compute_records.COMPUTE_BINARY)
    progress.expect(len(services))
    known.update(boot_records.get_host_mappings(
        ctxt, [s['host'] for s in services], database=cell_access.api))
    for service in services:
        progress.step()
        host = service['host']
        if host in known:
            continue
        if _map_host(ctxt, cell_access, cell, host, known,
                     lambda: status("Creating host mapping for service "
                                    "'%s'" % host)):
            created.append(host)
    return created


class _NoProgress(object):
    def expect(self, amount):
        pass

    def step(self, amount=1):
        pass


def discover_hosts(ctxt, cell_access, cell_uuid=None, status=None,
                   by_service=False, progress=None):
    """Map the new compute hosts of every cell (or of one).

    :param cell_access: a CellAccess (api database and cell registry).
    :param cell_uuid: only this cell.
    :param status: ``status(message)`` for each progress line (the
        command prints them with ``--verbose``); default: nothing.
    :param by_service: discover by compute services instead of nodes.
    :param progress: told ``expect(n)`` of the hosts of each cell and
        ``step()`` for each one checked (berth-manage's progress line).
    :returns: the hosts newly mapped, in order.
    :raises common.db.cells.CellMappingNotFound: unknown ``cell_uuid``.
    :raises common.exception.HostMappingExists: a host found in one cell
        is mapped to another.
    """
    status = status or _quiet
    progress = progress or _NoProgress()
    cell_access.refresh()
    if cell_uuid is not None:
        mappings = [cell_access.cell(ctxt, cell_uuid)]
    else:
        mappings = cell_access.cells(ctxt)
    status('Found %d cell mappings.' % len(mappings))
    known = {}
    found = []
    for cell in mappings:
        if cell.is_cell0:
            status('Skipping cell0 since it does not contain hosts.')
            continue
        if cell.name:
            status("Getting computes from cell '%s': %s"
                   % (cell.name, cell.uuid))
        else:
            status('Getting computes from cell: %s' % cell.uuid)
        database = cell_access.database(cell)
        discover = _by_services if by_service else _by_nodes
        try:
            created = discover(ctxt, cell_access, cell, database, known,
                               status, progress)
        except (db_exc.DBError, sa.exc.DBAPIError) as exc:
            # NOTE: one broken cell (down, or never synced) must not keep
            # the others' new hosts unmapped.
            status('Failed to get computes from cell %s: %s'
                   % (cell.uuid, str(exc).splitlines()[0]))
            LOG.warning('Host discovery skipped cell %s: %s', cell.uuid,
                        exc)
            continue
        status('Found %d unmapped computes in cell: %s'
               % (len(created), cell.uuid))
        found.extend(created)
    if found:
        LOG.info('Mapped new compute hosts: %s', ', '.join(found))
    return found
