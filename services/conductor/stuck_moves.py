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
          state cleared (guarded by the task state seen) with a fault;
          a resize's stored request spec takes the flavor the server has
          (services/conductor/move_spec.py). A server still in
          VERIFY_RESIZE leaves it (with no finished migration left, no
          confirm, revert or other action could take it out): for a
          confirm lost on its way to the source, to the state it was
          resized from, as the confirm would have; for a revert lost
          half-way (the destination may have handed the server back
          already), to ERROR, where it runs being unknown

A resize waiting for its confirmation (``finished``) is not stuck unless
its server was deleted, and a live migration reporting progress keeps its
row fresh. The compute agents drop their move claims once the migration
is no longer in progress (see services/compute/resource_tracker.py).

The same run ends the moves whose conductor stopped before it wrote
anything of them (the API's call or cast was lost with it): a server
still in the task the API gave it (``resize_prep``, ``unshelving``),
unchanged for longer than the bound, with no migration in progress, gets
its task cleared and a fault; an offloaded server being unshelved also
loses what the scheduler may have claimed for it, as a failed unshelve
does.
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
from services.conductor import allocations
from services.conductor import move_allocations
from services.conductor import move_spec

LOG = logging.getLogger(__name__)

FAULT_CODE = 500
BATCH = 200
MAX_SPACING = 60
#: statuses a move rests in legitimately (a resize awaiting confirmation).
WAITING = frozenset((migration_obj.FINISHED,))
#: the task states the API sets before the conductor writes the move.
UNSTARTED_TASKS = {instance_obj.RESIZE_PREP: 'resize or migration',
                   instance_obj.UNSHELVING: 'unshelve'}

_MI = cell_tables.migrations
_IN = cell_tables.instances


def spacing(timeout):
    """Seconds between two runs, or None when the bound is disabled."""
    if not timeout or timeout <= 0:
        return None
    return min(timeout, MAX_SPACING)


def _cutoff(timeout):
    return timeutils.utcnow() - datetime.timedelta(seconds=timeout)


def stuck_migrations(ctxt, database, timeout, limit=BATCH):
    """Migrations in progress, unchanged for ``timeout`` s, oldest first
    (a finished one waiting for a confirmation its deleted server will
    never get too).
    """
    changed = sa.func.coalesce(_MI.c.updated_at, _MI.c.created_at)
    server_gone = ~sa.exists().where(_IN.c.uuid == _MI.c.instance_uuid,
                                     _IN.c.deleted == 0)
    query = sa.select(_MI).where(
        _MI.c.deleted == 0,
        _MI.c.status.not_in(sorted(migration_obj.ENDED)),
        sa.or_(_MI.c.status.not_in(sorted(WAITING)), server_gone),
        changed < _cutoff(timeout)).order_by(_MI.c.id).limit(limit)

    def fetch(ctx):
        return [migration_records.migration_from_row(row)
                for row in ctx.session.execute(query)]
    return database.reader(fetch)(ctxt)


def _release(conductor, ctxt, migration, instance):
    """Settle placement for the side the server is on; which side."""
    placement = conductor.placement
    if instance is None:
        move_allocations.drop_migration(placement, ctxt, migration.uuid)
        # NOTE: a destination claimed after the delete.
        allocations.delete_allocations(placement, ctxt,
                                       migration.instance_uuid)
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
    values = {'task_state': None}
    if instance.vm_state == instance_obj.RESIZED:
        values.update(_out_of_verify_resize(instance, migration, side))
    try:
        instance_records.update_instance(
            ctxt, database, instance.uuid, values,
            expected_task_state=[instance.task_state], brief=True)
        instance_records.add_fault(ctxt, database, instance.uuid,
                                   FAULT_CODE, message)
    except (exception.InstanceNotFound,
            exception.UnexpectedTaskStateError) as exc:
        LOG.info('Instance %s changed while its stuck move was ended: %s',
                 instance.uuid, exc)
        return True
    if migration.migration_type == migration_obj.RESIZE:
        # NOTE: the flavor the server is left with (the new one was
        # stored when the resize was scheduled).
        move_spec.give_flavor_back(conductor, ctxt, instance.to_primitive(),
                                   instance.flavor, instance.pci_requests)
    return True


def _out_of_verify_resize(instance, migration, side):
    """The values that take a server out of VERIFY_RESIZE once its move
    ended here (see the module doc); the record of the vm_state it was
    resized from goes with it.
    """
    metadata = instance.system_metadata
    state = instance_obj.ERROR
    if migration.status == migration_obj.CONFIRMING and (
            side == 'destination'):
        state = instance_obj.state_before_move(metadata)
    return {'vm_state': state,
            'system_metadata': instance_obj.without_state_before_move(
                metadata)}


def unstarted_moves(ctxt, database, timeout, limit=BATCH):
    """uuids of the servers still in a move's first task state, unchanged
    for ``timeout`` s, with no migration in progress.
    """
    changed = sa.func.coalesce(_IN.c.updated_at, _IN.c.created_at)
    moving = sa.exists().where(
        _MI.c.instance_uuid == _IN.c.uuid, _MI.c.deleted == 0,
        _MI.c.status.not_in(sorted(migration_obj.ENDED)))
    query = sa.select(_IN.c.uuid).where(
        _IN.c.deleted == 0, _IN.c.task_state.in_(sorted(UNSTARTED_TASKS)),
        changed < _cutoff(timeout), ~moving).order_by(_IN.c.id).limit(limit)

    def fetch(ctx):
        return [row.uuid for row in ctx.session.execute(query)]
    return database.reader(fetch)(ctxt)


def _end_unstarted(conductor, ctxt, database, uuid, timeout):
    """Clear the task of a move nobody carries on; False when it moved on
    meanwhile.
    """
    try:
        instance = instance_records.get_instance(ctxt, database, uuid)
    except exception.InstanceNotFound:
        return False
    task = instance.task_state
    if task not in UNSTARTED_TASKS:
        return False
    values = {'task_state': None}
    if task == instance_obj.RESIZE_PREP:
        values['system_metadata'] = instance_obj.without_state_before_move(
            instance.system_metadata)
    offloaded = instance.vm_state == instance_obj.SHELVED_OFFLOADED
    if offloaded:
        values.update(host=None, node=None)
    try:
        instance_records.update_instance(ctxt, database, uuid, values,
                                         expected_task_state=[task],
                                         brief=True)
    except (exception.InstanceNotFound, exception.UnexpectedTaskStateError):
        return False
    if offloaded:
        # NOTE: the scheduler may have claimed a host before the
        # conductor stopped; an offloaded server holds nothing.
        allocations.delete_allocations(conductor.placement, ctxt, uuid)
    message = ('The %s of instance %s did not start within %d seconds '
               '([conductor] move_timeout): its conductor stopped before '
               'it was under way' % (UNSTARTED_TASKS[task], uuid, timeout))
    instance_records.add_fault(ctxt, database, uuid, FAULT_CODE, message)
    LOG.warning('%s', message)
    return True


def _run_cell(conductor, ctxt, database, timeout):
    ended = []
    for migration in stuck_migrations(ctxt, database, timeout):
        try:
            if _end(conductor, ctxt, database, migration, timeout):
                ended.append(migration.uuid)
        except Exception:
            LOG.exception('Could not end stuck migration %s',
                          migration.uuid)
    for uuid in unstarted_moves(ctxt, database, timeout):
        try:
            if _end_unstarted(conductor, ctxt, database, uuid, timeout):
                ended.append(uuid)
        except Exception:
            LOG.exception('Could not end the unstarted move of %s', uuid)
    return ended


def run(conductor, ctxt, timeout):
    """One run of the periodic task; the uuids of the migrations ended
    (and of the servers whose move never started).
    """
    ended = []
    for cell in conductor.cells.cells(ctxt):
        if cell.is_cell0:
            continue
        ended.extend(_run_cell(conductor, ctxt,
                               conductor.cells.database(cell), timeout))
    return ended
