# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A bound for server moves that stopped half-way.

A move goes through several processes (API, conductor, scheduler, two
compute agents), and any of them may die between two steps: a conductor
killed after it handed the source allocation to the migration consumer,
a destination agent that never answered. Nothing else would ever end such
a move: the server would keep its task state (every action refused) and
placement would hold both hosts.

Each run of this conductor periodic task (every ``[conductor]
move_timeout`` seconds, at most every minute) ends the migrations still
in progress but unchanged for longer than that bound::

    the server is gone               -> migration error; the migration
                                        consumer's allocation dropped
    the server is still on its source -> the source allocation back to the
                                        server, its destination one dropped
    the server is on its destination  -> the source allocation dropped
    then: migration error (guarded by the status seen), the server's task
          state cleared (guarded by the task state seen) with a fault

A resize waiting for its confirmation (``finished``) is not stuck, and a
live migration reporting progress keeps its row fresh. The compute agents
drop their move claims once the migration is no longer in progress (see
services/compute/resource_tracker.py).
"""

import datetime
import logging

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import cell_tables
from common.db import instance_records
from common.db import migration_records
from common import exception
from common.objects import migration as migration_obj
from services.conductor import move_allocations

LOG = logging.getLogger(__name__)

FAULT_CODE = 500
BATCH = 200
MAX_SPACING = 60
#: statuses a move rests in legitimately (a resize awaiting confirmation).
WAITING = frozenset((migration_obj.FINISHED,))

_MI = cell_tables.migrations


def spacing(timeout):
    """Seconds between two runs, or None when the bound is disabled."""
    if not timeout or timeout <= 0:
        return None
    return min(timeout, MAX_SPACING)


def stuck_migrations(ctxt, database, timeout, limit=BATCH):
    """Migrations in progress, unchanged for ``timeout`` s, oldest first.
    """
    cutoff = timeutils.utcnow() - datetime.timedelta(seconds=timeout)
    changed = sa.func.coalesce(_MI.c.updated_at, _MI.c.created_at)
    query = sa.select(_MI).where(
        _MI.c.deleted == 0,
        _MI.c.status.not_in(sorted(migration_obj.ENDED | WAITING)),
        changed < cutoff).order_by(_MI.c.id).limit(limit)

    def fetch(ctx):
        return [migration_records.migration_from_row(row)
                for row in ctx.session.execute(query)]
    return database.reader(fetch)(ctxt)


def _release(conductor, ctxt, migration, instance):
    """Settle placement for the side the server is on; which side."""
    placement = conductor.placement
    if instance is None:
        move_allocations.drop_migration(placement, ctxt, migration.uuid)
        return 'gone'
    if instance.host == migration.source_compute and (
            instance.node == migration.source_node or
            migration.source_node is None):
        move_allocations.back_to_instance(
            placement, ctxt, instance.uuid, migration.uuid,
            instance.project_id, instance.user_id)
        return 'source'
    move_allocations.drop_migration(placement, ctxt, migration.uuid)
    return 'destination'


def _end(conductor, ctxt, database, migration, timeout):
    """End one stuck move; False when it moved on meanwhile."""
    try:
        instance = instance_records.get_instance(ctxt, database,
                                                 migration.instance_uuid)
    except exception.InstanceNotFound:
        instance = None
    try:
        migration_records.update_migration(
            ctxt, database, migration.uuid,
            {'status': migration_obj.ERROR},
            expected_status=migration.status)
    except (exception.MigrationNotFound,
            exception.UnexpectedMigrationStatusError):
        return False
    try:
        side = _release(conductor, ctxt, migration, instance)
    except Exception as exc:
        # NOTE: the migration is in error now: the audit finds what
        # placement still holds for it (berth-manage placement audit).
        LOG.error('Could not settle the allocations of stuck migration %s '
                  '(the allocation audit will): %s', migration.uuid, exc)
        side = 'unknown'
    message = ('The %s of instance %s made no progress for %d seconds and '
               'was ended ([conductor] move_timeout); the server is on '
               'its %s host' % (migration.migration_type,
                                migration.instance_uuid, timeout, side))
    LOG.warning('%s (migration %s)', message, migration.uuid)
    if instance is None:
        return True
    try:
        instance_records.update_instance(
            ctxt, database, instance.uuid, {'task_state': None},
            expected_task_state=[instance.task_state], brief=True)
        instance_records.add_fault(ctxt, database, instance.uuid,
                                   FAULT_CODE, message)
    except (exception.InstanceNotFound,
            exception.UnexpectedTaskStateError) as exc:
        LOG.info('Instance %s changed while its stuck move was ended: %s',
                 instance.uuid, exc)
    return True


def run(conductor, ctxt, timeout):
    """One run of the periodic task; the uuids of the migrations ended."""
    ended = []
    for cell in conductor.cells.cells(ctxt):
        if cell.is_cell0:
            continue
        database = conductor.cells.database(cell)
        for migration in stuck_migrations(ctxt, database, timeout):
            try:
                if _end(conductor, ctxt, database, migration, timeout):
                    ended.append(migration.uuid)
            except Exception:
                LOG.exception('Could not end stuck migration %s',
                              migration.uuid)
    return ended
