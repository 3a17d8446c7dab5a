# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A bound for builds that never reached a compute agent.

A compute agent ends the builds of its hosts that will never finish
(:mod:`services.compute.stuck_builds`). Two kinds of build have no host
yet, and nothing else would ever end them:

* **build requests never scheduled**: the API wrote the build request,
  request spec and mapping and cast ``schedule_and_build_instances``, but
  the conductor that took the cast died before it finished the request
  (or the cast was lost). The server shows ``BUILD`` forever, counts
  against quota, and may hold what the scheduler claimed;
* **reschedules never cast on**: a compute agent whose build failed took
  the instance off its host (task ``scheduling``, no host) and asked the
  conductor to try an alternate, and that conductor died.

Each run of this conductor periodic task (every
``[conductor] build_request_timeout`` seconds, at most every minute) ends
those older than that bound::

    build requests created before now - bound
      -> bury in cell0: ERROR, fault "... was not scheduled within N
         seconds ...", mapping -> cell0, build request deleted
      -> only if this run finished the build request:
           remove its placement allocation (the scheduler may have
           claimed before the conductor died) and soft-delete a row a
           dead conductor created in a cell without mapping it
    live instances building with no host, unchanged since now - bound
      -> ERROR with a fault (guarded by the task state seen), allocation
         removed

NOTE: burying, not scheduling again: the cast may still be queued behind
a backlog, or its conductor still waiting for the scheduler. Two
conductors building one server would race on its rows; burying races
safely, as finishing the build request decides who owns the server (see
:func:`services.conductor.cell0.bury_in_cell0`), and the user can boot
again. The bound must thus be longer than a build can legitimately wait
(``[conductor] schedule_timeout``).
"""

import datetime
import logging

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api_tables
from common.db import boot_records
from common.db import cell_tables
from common.db import cells
from common.db import instance_records
from common import exception
from common.objects import instance as instance_obj
from services.conductor import allocations
from services.conductor import cell0

LOG = logging.getLogger(__name__)

FAULT_CODE = 500
# NOTE: a run ends at most this many of each kind; the next run, one
# interval later, goes on. Bounds one run's time after a long outage.
BATCH = 500
MAX_SPACING = 60

_BR = api_tables.build_requests
_IN = cell_tables.instances


class BuildNeverScheduled(Exception):
    """The fault of a build request older than the bound."""


def spacing(timeout):
    """Seconds between two runs, or None when the bound is disabled."""
    if not timeout or timeout <= 0:
        return None
    return min(timeout, MAX_SPACING)


def _cutoff(timeout):
    return timeutils.utcnow() - datetime.timedelta(seconds=timeout)


def stale_build_requests(ctxt, database, timeout, limit=BATCH):
    """The uuids of build requests created more than ``timeout`` s ago,
    oldest first.
    """
    query = sa.select(_BR.c.instance_uuid).where(
        _BR.c.created_at < _cutoff(timeout)).order_by(_BR.c.id).limit(limit)

    def fetch(ctx):
        return list(ctx.connection.execute(query).scalars())
    return database.reader_connection(fetch)(ctxt)


def _stray_rows(conductor, ctxt, uuid):
    """(cell uuid, Database) of the cells other than cell0 holding a live
    row of ``uuid`` (a conductor died after creating it).
    """
    found = []
    for cell in conductor.cells.cells(ctxt):
        if cell.is_cell0:
            continue
        database = conductor.cells.database(cell)
        try:
            instance_records.get_instance(ctxt, database, uuid)
        except exception.InstanceNotFound:
            continue
        found.append((cell.uuid, database))
    return found


def bury_stale_build_requests(conductor, ctxt, timeout):
    """Bury the build requests older than ``timeout`` in cell0.

    :param conductor: the ConductorManager (cells, placement, notify).
    :returns: the uuids buried.
    """
    cell_access = conductor.cells
    uuids = stale_build_requests(ctxt, cell_access.api, timeout)
    if not uuids:
        return []
    requests = boot_records.get_build_requests(ctxt, uuids,
                                               database=cell_access.api)
    instances = [requests[u] for u in uuids if u in requests]
    exc = BuildNeverScheduled(
        'Build of the server was not scheduled within %d seconds: the '
        'conductor that took it stopped or its request was lost '
        '([conductor] build_request_timeout)' % timeout)
    buried = []
    for instance in instances:
        # NOTE: one at a time, so that one failure does not keep the
        # others in BUILD.
        try:
            buried.extend(cell0.bury_in_cell0(conductor, ctxt, [instance],
                                              exc))
        except cells.CellMappingNotFound:
            LOG.error('Cannot bury the stale build request of %s: cell0 '
                      'is not mapped', instance.uuid)
            return buried
        except Exception:
            LOG.exception('Could not bury the stale build request of %s',
                          instance.uuid)
    for uuid in buried:
        # NOTE: only now: the server is ours. A conductor still working
        # on it finds its build request gone and cleans up after itself.
        allocations.delete_allocations(conductor.placement, ctxt, uuid)
        for cell_uuid, database in _stray_rows(conductor, ctxt, uuid):
            LOG.warning('Deleting the unmapped row of %s in cell %s',
                        uuid, cell_uuid)
            try:
                instance_records.destroy_instance(ctxt, database, uuid)
            except exception.InstanceNotFound:
                pass
    if buried:
        LOG.warning('%d build requests older than %d seconds were buried '
                    'in cell0 in ERROR: %s', len(buried), timeout,
                    ', '.join(buried[:10]))
    return buried


def lost_reschedules(ctxt, database, timeout, limit=BATCH):
    """(uuid, task_state) of live instances building without a host,
    unchanged for ``timeout`` seconds.
    """
    changed = sa.func.coalesce(_IN.c.updated_at, _IN.c.created_at)
    query = sa.select(_IN.c.uuid, _IN.c.task_state).where(
        _IN.c.deleted == 0, _IN.c.vm_state == instance_obj.BUILDING,
        _IN.c.host.is_(None), changed < _cutoff(timeout)).order_by(
            _IN.c.id).limit(limit)

    def fetch(ctx):
        return [tuple(row) for row in ctx.connection.execute(query)]
    return database.reader_connection(fetch)(ctxt)


def _end_lost(conductor, ctxt, database, uuid, task_state, timeout):
    """ERROR with a fault for one lost reschedule; False if it moved on."""
    if task_state == instance_obj.DELETING:
        return False
    message = ('Build of instance %s was not rescheduled within %d seconds '
               '([conductor] build_request_timeout)' % (uuid, timeout))
    try:
        instance_records.update_instance(
            ctxt, database, uuid,
            {'vm_state': instance_obj.ERROR, 'task_state': None},
            expected_task_state=[task_state], brief=True)
    except (exception.InstanceNotFound, exception.UnexpectedTaskStateError):
        return False
    instance_records.add_fault(ctxt, database, uuid, FAULT_CODE, message)
    # NOTE: an instance in ERROR without a host holds nothing (as after
    # the last alternate failed).
    allocations.delete_allocations(conductor.placement, ctxt, uuid)
    conductor.notify_create_error(ctxt, {'uuid': uuid}, message)
    LOG.warning(message)
    return True


def end_lost_reschedules(conductor, ctxt, timeout):
    """ERROR for instances left without a host longer than ``timeout``.

    :returns: the uuids set to ERROR.
    """
    done = []
    for cell in conductor.cells.cells(ctxt):
        if cell.is_cell0:
            continue
        database = conductor.cells.database(cell)
        for uuid, task_state in lost_reschedules(ctxt, database, timeout):
            if _end_lost(conductor, ctxt, database, uuid, task_state,
                         timeout):
                done.append(uuid)
    return done


def run(conductor, ctxt, timeout):
    """One run of the periodic task; see the module docstring.

    :returns: (build requests buried, instances set to ERROR).
    """
    if not conductor.cells.has_api:
        return [], []
    return (bury_stale_build_requests(conductor, ctxt, timeout),
            end_lost_reschedules(conductor, ctxt, timeout))
