# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""One step of a move on a compute: instance, migration and events at once.

Each step of a resize or cold migration on a compute (services/compute/
resize.py) reads the instance and its migration, records the start of
its action event, moves the migration's status and the instance's task,
and records the event's end. Made one by one, that was five record calls
to the conductor per step, each a round trip over the broker and a
transaction of its own: most of what a cold migration cost the
conductor. Here a step's reads, or its writes, are one transaction, and
the writes are all or nothing: a migration whose status moved while the
instance's guard failed can no longer be left behind.
"""

import logging

from common.db import action_records
from common.db import api as db_api
from common.db import instance_records
from common.db import migration_records
from common import exception
from common.objects import instance as instance_obj
from common.objects import migration as migration_obj

LOG = logging.getLogger(__name__)


def _check_events(action_events):
    events = list(action_events or ())
    for action_event in events:
        action_records.check_action_event(action_event)
    return events


def _record_events(ctx, instance_uuid, events, action_id=None):
    """Record ``events`` under the instance's latest action (``action_id``
    when the caller looked it up), looked up once for all of them.
    """
    if not events:
        return
    if action_id is None and len(events) > 1:
        action_id = action_records.latest_action_id(ctx, instance_uuid)
    action_records.record_action_events(ctx, instance_uuid, events,
                                        action_id=action_id)


def get_move(ctxt, database, instance_uuid, migration_uuid,
             action_events=()):
    """The live instance (without its fault) and its migration, read
    together.

    :param action_events: events of the instance's latest action to
        record (see ``instance_records.update_instance``); with any, this
        is a write transaction.
    :returns: (Instance, Migration).
    :raises common.exception.InstanceNotFound: no live instance.
    :raises common.exception.MigrationNotFound: no such migration.
    """
    events = _check_events(action_events)

    def fetch(ctx):
        instance = instance_records.read_instance(ctx, instance_uuid,
                                                  fault=False)
        migration = migration_records.read_migration(ctx, migration_uuid)
        _record_events(ctx, instance_uuid, events)
        return instance, migration
    if events:
        return db_api.write(database, fetch, ctxt)
    return database.reader(fetch)(ctxt)


def update_move(ctxt, database, instance_uuid, migration_uuid,
                migration_values=None, expected_status=None,
                instance_values=None, expected_task_state=None,
                action_events=(), brief=False):
    """Change a migration and its instance, and record action events, in
    one transaction: all of it happens or none.

    :param migration_values, expected_status: as
        ``migration_records.update_migration`` (None: unchanged).
    :param instance_values, expected_task_state: as
        ``instance_records.update_instance`` (None: unchanged).
    :param brief: read back neither the instance nor the migration.
    :returns: (Instance, Migration); None for what ``brief`` did not
        read.
    :raises ValueError: a field that cannot be changed, a malformed event.
    :raises common.exception.InstanceNotFound: no live instance.
    :raises common.exception.MigrationNotFound: no such migration.
    :raises common.exception.UnexpectedTaskStateError,
        common.exception.UnexpectedMigrationStatusError: a guard failed.
    """
    step = _MoveUpdate(instance_uuid, migration_uuid,
                       migration_values=migration_values,
                       expected_status=expected_status,
                       instance_values=instance_values,
                       expected_task_state=expected_task_state,
                       action_events=action_events, brief=brief)

    def update(ctx):
        # NOTE: a function of the context: the writer decorator takes a
        # method's first argument for its self.
        return step.apply(ctx)
    return db_api.write(database, update, ctxt)


def claim_expired(ctxt, database, instance_uuid, migration_uuid):
    """The automatic confirm of a move left in VERIFY_RESIZE beyond
    ``[DEFAULT] resize_confirm_window``, begun in one transaction: its
    ``finished`` migration moves to ``confirming`` and the instance's
    ``confirmResize`` action starts (by ``ctxt``, as the user's would),
    as Nova's periodic confirm does through its compute API.

    A server no longer RESIZED (an administrator reset its state) or gone
    is not confirmed: its migration is set to ``error``, as Nova does, so
    that later rounds do not try again. One with a task under way (a
    delete that confirms the move itself, say) is left for the next
    round, where Nova would set the migration to ``error`` and leave its
    allocation behind.

    :returns: (Instance, Migration): the migration ``confirming``, or
        ``error`` when the server was not RESIZED (the Instance is None
        when there is no live one).
    :raises common.exception.MigrationNotFound: no such migration.
    :raises common.exception.UnexpectedTaskStateError: a task is under
        way.
    :raises common.exception.UnexpectedMigrationStatusError: the move is
        no longer ``finished`` (a user's confirm or revert won).
    """
    busy = instance_records.prepare_update(instance_uuid, {},
                                           expected_task_state=[None])

    def claim(ctx):
        try:
            instance = instance_records.read_instance(ctx, instance_uuid,
                                                      fault=False)
        except exception.InstanceNotFound:
            instance = None
        status = (migration_obj.CONFIRMING
                  if instance is not None and
                  instance.vm_state == instance_obj.RESIZED else
                  migration_obj.ERROR)
        if status == migration_obj.CONFIRMING:
            # NOTE: guarded by the write, not by the read above.
            instance_records.apply_or_raise(ctx, busy)
        migration = migration_records.prepare_update(
            migration_uuid, {'status': status},
            expected_status=migration_obj.FINISHED)(ctx)
        if status == migration_obj.CONFIRMING:
            action_records.insert_action(ctx, ctxt, instance_uuid,
                                         'confirmResize')
        return instance, migration
    return db_api.write(database, claim, ctxt)


# NOTE: what one update of a batch may meet without failing the others.
_MISSED = (exception.InstanceNotFound, exception.MigrationNotFound,
           exception.UnexpectedTaskStateError,
           exception.UnexpectedMigrationStatusError)


def update_moves(ctxt, database, updates):
    """Several :func:`update_move` in one transaction, each all or
    nothing on its own.

    :param updates: [{'instance_uuid', 'migration_uuid', and optionally
        the keyword arguments of :func:`update_move`}].
    :returns: one entry per update, in order: its (Instance, Migration)
        as :func:`update_move` returns them, or the exception it met (not
        raised): ``ValueError`` (checked before any write),
        ``InstanceNotFound``, ``MigrationNotFound``,
        ``UnexpectedTaskStateError`` or ``UnexpectedMigrationStatusError``.
    """
    results = [None] * len(updates)
    valid = []
    for index, update in enumerate(updates):
        try:
            valid.append((index, _MoveUpdate(**update)))
        except (TypeError, ValueError) as exc:
            results[index] = ValueError(str(exc))
    # NOTE: rows are locked in instance order, so that two batches over
    # the same moves cannot deadlock; a stable sort keeps one instance's
    # updates in the order they came.
    valid.sort(key=lambda item: item[1].instance_uuid)
    if valid:
        outcomes = _apply_all(ctxt, database, [step for _i, step in valid])
        for (index, _step), outcome in zip(valid, outcomes):
            results[index] = outcome
    return results


def _apply_all(ctxt, database, steps):
    """Each step's outcome (or the guard it missed), in one transaction.

    NOTE: a step that misses a guard after a write must leave nothing
    written, which a savepoint around each step ensures, at two
    statements a step. Guards rarely miss (a delete racing a move), so
    the batch first runs without savepoints; the first miss rolls it all
    back and it runs again with them (a lone step's miss is its outcome
    already).
    """
    def run(ctx, alone):
        # NOTE: one read finds the action of every step's events; a step
        # whose instance has none looks again (and logs) on its own.
        actions = action_records.latest_actions(
            ctx, [step.instance_uuid for step in steps if step.events])
        outcomes = []
        for step in steps:
            action_id = actions.get(step.instance_uuid)
            if not alone:
                outcomes.append(step.apply(ctx, action_id))
                continue
            try:
                outcomes.append(step.apply_alone(ctx, action_id))
            except _MISSED as exc:
                outcomes.append(exc)
        return outcomes
    try:
        return db_api.write(database, lambda ctx: run(ctx, False), ctxt)
    except _MISSED as exc:
        if len(steps) == 1:
            return [exc]
        LOG.debug('A step of a batch of %d moves missed its guard (%s); '
                  'writing each step on its own', len(steps), exc)
    return db_api.write(database, lambda ctx: run(ctx, True), ctxt)


class _MoveUpdate(object):
    """One checked update of a move, to run in a write transaction."""

    def __init__(self, instance_uuid, migration_uuid, migration_values=None,
                 expected_status=None, instance_values=None,
                 expected_task_state=None, action_events=(), brief=False):
        self.instance_uuid = instance_uuid
        self.migration_uuid = migration_uuid
        self.brief = brief
        self.events = _check_events(action_events)
        self.migration_update = None
        if migration_values:
            self.migration_update = migration_records.prepare_update(
                migration_uuid, migration_values, expected_status,
                brief=brief)
        self.instance_update = None
        if instance_values:
            self.instance_update = instance_records.prepare_update(
                instance_uuid, instance_values, expected_task_state)

    def apply(self, ctx, action_id=None):
        """Run it; (Instance or None, Migration or None).

        :param action_id: the instance's latest action, if looked up.
        """
        if self.migration_update is not None:
            migration = self.migration_update(ctx)
        elif self.brief:
            # NOTE: e.g. a live migration's destination check recording
            # its event: nobody reads the migration back.
            migration = None
        else:
            migration = migration_records.read_migration(
                ctx, self.migration_uuid)
        if self.instance_update is not None:
            instance_records.apply_or_raise(ctx, self.instance_update)
        _record_events(ctx, self.instance_uuid, self.events, action_id)
        if self.brief:
            return None, migration
        return instance_records.read_instance(
            ctx, self.instance_uuid, fault=False), migration

    def apply_alone(self, ctx, action_id=None):
        """:meth:`apply`, leaving nothing written when it raises, among
        other updates of the same transaction.
        """
        if not self._fails_after_a_write():
            return self.apply(ctx, action_id)
        savepoint = ctx.session.begin_nested()
        try:
            outcome = self.apply(ctx, action_id)
        except _MISSED:
            savepoint.rollback()
            raise
        except Exception:
            # NOTE: a deadlock, say, which MariaDB ends by rolling back
            # the whole transaction with its savepoints: the error goes
            # up as it is (the transaction runs again), not as the
            # savepoint that is gone.
            try:
                savepoint.rollback()
            except Exception as gone:
                LOG.debug('Savepoint of the move of %s is gone: %s',
                          self.instance_uuid, gone)
            raise
        savepoint.commit()
        return outcome

    def _fails_after_a_write(self):
        """Whether :meth:`apply` may raise once it has written something:
        a second guarded write, or the instance read after the
        migration's write or after events alone. Otherwise what can fail
        fails before any write, and it needs no savepoint.
        """
        if self.migration_update is not None:
            return self.instance_update is not None or not self.brief
        return (self.instance_update is None and bool(self.events) and
                not self.brief)
