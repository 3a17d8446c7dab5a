# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A bound for live migrations a conductor never handed to a compute.

The conductor's flow (:mod:`.live_migrate_flow`) runs in one conductor's
memory between the API's cast and its own cast to the source compute;
from there on the computes finish or roll back (a restarted source rolls
back what it was copying). A conductor that dies in between leaves:

* a ``live-migration`` migration still ``accepted``, the server
  ``migrating``, and the source allocation held by the migration
  consumer (perhaps the destination's by the server);
* or, when it died before writing the migration, a server ``migrating``
  with no live migration under way.

Each run of this periodic task (every ``[DEFAULT]
live_migration_start_timeout`` seconds, at most every minute) ends those
older than that bound, as the flow itself ends a refused migration: the
source allocation back to the server, the destination's claim dropped,
migration ``error``, task None (vm_state kept), a fault and the
``conductor_live_migrate_instance`` event failed. The bound must be
longer than a flow can take (its pre-checks each wait up to
``long_rpc_timeout``).
"""

import datetime
import logging

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import cell_tables
from common.db import instance_records
from common.db import migration_records
from common import exception
from common.objects import instance as instance_obj
from common.objects import migration as migration_obj
from services.conductor import live_migrate_flow

LOG = logging.getLogger(__name__)

BATCH = 500
MAX_SPACING = 60
_MI = cell_tables.migrations
_IN = cell_tables.instances


class LiveMigrationNeverStarted(exception.BerthException):
    msg_fmt = ('Live migration of instance %(uuid)s was not started within '
               '%(timeout)d seconds ([DEFAULT] '
               'live_migration_start_timeout)')


def spacing(timeout):
    """Seconds between two runs, or None when the bound is disabled."""
    if not timeout or timeout <= 0:
        return None
    return min(timeout, MAX_SPACING)


def _cutoff(timeout):
    return timeutils.utcnow() - datetime.timedelta(seconds=timeout)


def stale_migrations(ctxt, database, timeout, limit=BATCH):
    """The Migrations of live migrations ``accepted`` before the bound."""
    query = sa.select(_MI).where(
        _MI.c.deleted == 0, _MI.c.migration_type ==
        migration_obj.LIVE_MIGRATION,
        _MI.c.status == migration_obj.ACCEPTED,
        _MI.c.created_at < _cutoff(timeout)).order_by(_MI.c.id).limit(limit)

    def fetch(ctx):
        return [migration_records.migration_from_row(row)
                for row in ctx.session.execute(query)]
    return database.reader(fetch)(ctxt)


def stale_migrating(ctxt, database, timeout, limit=BATCH):
    """uuids of instances ``migrating`` unchanged since before the bound."""
    changed = sa.func.coalesce(_IN.c.updated_at, _IN.c.created_at)
    query = sa.select(_IN.c.uuid).where(
        _IN.c.deleted == 0, _IN.c.task_state == instance_obj.MIGRATING,
        changed < _cutoff(timeout)).order_by(_IN.c.id).limit(limit)

    def fetch(ctx):
        return [row.uuid for row in ctx.session.execute(query)]
    return database.reader(fetch)(ctxt)


def _end_migration(conductor, ctxt, cell, database, migration, timeout):
    """End one stale migration as its flow would have; False when it
    moved on meanwhile.
    """
    uuid = migration.instance_uuid
    try:
        migration_records.update_migration(
            ctxt, database, migration.uuid,
            {'status': migration_obj.ERROR},
            expected_status=migration_obj.ACCEPTED)
        instance = instance_records.get_instance(ctxt, database, uuid)
    except exception.UnexpectedMigrationStatusError:
        return False
    except exception.InstanceNotFound:
        instance = instance_obj.Instance(uuid=uuid,
                                         project_id=migration.project_id,
                                         user_id=migration.user_id)
    instance.cell_uuid = cell.uuid
    flow = live_migrate_flow.flow_for(
        conductor, ctxt, database, instance.to_primitive(),
        migration.to_primitive())
    error = LiveMigrationNeverStarted(uuid=uuid, timeout=timeout)
    LOG.warning('%s', error)
    flow.fail(error, expected=True)
    return True


def _end_task(ctxt, database, uuid, timeout):
    """Clear the task of a server migrating without a live migration."""
    if migration_records.in_progress_for_instance(
            ctxt, database, uuid, [migration_obj.LIVE_MIGRATION]):
        return False
    try:
        instance_records.update_instance(
            ctxt, database, uuid, {'task_state': None},
            expected_task_state=[instance_obj.MIGRATING], brief=True)
    except (exception.InstanceNotFound, exception.UnexpectedTaskStateError):
        return False
    error = LiveMigrationNeverStarted(uuid=uuid, timeout=timeout)
    instance_records.add_fault(ctxt, database, uuid,
                               live_migrate_flow.FAULT_CODE, str(error))
    LOG.warning('%s', error)
    return True


def run(conductor, ctxt, timeout):
    """One run of the periodic task; see the module docstring.

    :returns: the uuids of the servers whose migration was ended.
    """
    done = []
    for cell in conductor.cells.cells(ctxt):
        if cell.is_cell0:
            continue
        database = conductor.cells.database(cell)
        for migration in stale_migrations(ctxt, database, timeout):
            if _end_migration(conductor, ctxt, cell, database, migration,
                              timeout):
                done.append(migration.instance_uuid)
        for uuid in stale_migrating(ctxt, database, timeout):
            if _end_task(ctxt, database, uuid, timeout):
                done.append(uuid)
    return done
