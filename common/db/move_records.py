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

from common.db import action_records
from common.db import api as db_api
from common.db import instance_records
from common.db import migration_records


def _check_events(action_events):
    events = list(action_events or ())
    for action_event in events:
        action_records.check_action_event(action_event)
    return events


def _record_events(ctx, instance_uuid, events):
    """Record ``events`` under the instance's latest action, looked up
    once for all of them.
    """
    if not events:
        return
    action_id = None
    if len(events) > 1:
        action_id = action_records.latest_action_id(ctx, instance_uuid)
    for action_event in events:
        action_records.record_action_event(ctx, instance_uuid,
                                           action_event,
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
    :param brief: read back neither the instance nor a migration that
        ``migration_values`` changed.
    :returns: (Instance, Migration); None for what ``brief`` did not
        read.
    :raises ValueError: a field that cannot be changed, a malformed event.
    :raises common.exception.InstanceNotFound: no live instance.
    :raises common.exception.MigrationNotFound: no such migration.
    :raises common.exception.UnexpectedTaskStateError,
        common.exception.UnexpectedMigrationStatusError: a guard failed.
    """
    events = _check_events(action_events)
    migration_update = None
    if migration_values:
        migration_update = migration_records.prepare_update(
            migration_uuid, migration_values, expected_status, brief=brief)
    instance_update = None
    if instance_values:
        instance_update = instance_records.prepare_update(
            instance_uuid, instance_values, expected_task_state)

    def update(ctx):
        if migration_update is not None:
            migration = migration_update(ctx)
        else:
            migration = migration_records.read_migration(ctx,
                                                         migration_uuid)
        if instance_update is not None:
            instance_records.apply_or_raise(ctx, instance_update)
        _record_events(ctx, instance_uuid, events)
        if brief:
            return None, migration
        return instance_records.read_instance(ctx, instance_uuid,
                                              fault=False), migration
    return db_api.write(database, update, ctxt)
