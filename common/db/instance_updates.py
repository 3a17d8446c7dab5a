# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Guarded updates of many instances in one transaction.

A compute agent's builds each update their instance twice (spawning,
then active), every update guarded by the task state it expects and
carrying the build's action event. One by one that is a conductor call
and a transaction per update; an agent serving many nodes, or one node
taking a burst, sends them here together instead
(:func:`update_instances`, the conductor RPC ``instance_updates``).

Each update keeps the meaning it has alone
(:func:`common.db.instance_records.update_instance`): it happens only if
its guard holds, its action event is recorded only if it happens, and an
update that cannot happen is reported, not raised, so that the others of
the batch still do.
"""

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import action_records
from common.db import api as db_api
from common.db import cell_tables
from common.db import instance_records
from common import exception

_IN = cell_tables.instances
_TASK_STATES = sa.select(_IN.c.uuid, _IN.c.task_state).where(
    _IN.c.uuid.in_(sa.bindparam('b_uuids', expanding=True)),
    _IN.c.deleted == 0)


def update_instances(ctxt, database, updates):
    """Run several guarded instance updates in one transaction.

    :param updates: [{'instance_uuid', 'values', 'expected_task_state'
        (optional), 'action_event' (optional)}], as the arguments of
        :func:`~common.db.instance_records.update_instance`.
    :returns: one entry per update, in order: None when it happened, else
        the exception it met (not raised): ``ValueError`` (a field that
        cannot be updated, a malformed action event: checked before any
        write), ``InstanceNotFound`` or ``UnexpectedTaskStateError``.
    """
    results = [None] * len(updates)
    valid = []
    for index, update in enumerate(updates):
        try:
            valid.append((index, instance_records.prepare_update(
                update['instance_uuid'], update.get('values') or {},
                update.get('expected_task_state'),
                update.get('action_event'))))
        except ValueError as exc:
            results[index] = exc
    # NOTE: rows are locked in uuid order, so that two batches over the
    # same instances cannot deadlock; a stable sort keeps one instance's
    # updates in the order they came.
    valid.sort(key=lambda item: item[1].uuid)

    def run(ctx):
        return _run(ctx, [prepared for _index, prepared in valid])
    if valid:
        outcomes = db_api.write(database, run, ctxt)
        for (index, _prepared), outcome in zip(valid, outcomes):
            results[index] = outcome
    return results


def _run(ctx, prepared):
    """The updates, then their events, in one transaction; the outcomes
    (None, or the exception of an update that did not happen).
    """
    now = timeutils.utcnow()
    done = [instance_records.apply_update(ctx, item, now)
            for item in prepared]
    events = [item for item, happened in zip(prepared, done)
              if happened and item.action_event is not None]
    # NOTE: one read finds every event's action; an instance without one
    # is looked up again (and logged) by the single-event path.
    actions = action_records.latest_actions(
        ctx, [item.uuid for item in events]) if events else {}
    for item in events:
        action_records.record_action_event(
            ctx, item.uuid, item.action_event,
            action_id=actions.get(item.uuid))
    missed = [item.uuid for item, happened in zip(prepared, done)
              if not happened]
    if not missed:
        return [None] * len(prepared)
    actual = {row.uuid: row.task_state for row in ctx.session.execute(
        _TASK_STATES, {'b_uuids': missed})}
    outcomes = []
    for item, happened in zip(prepared, done):
        if happened:
            outcomes.append(None)
        elif item.uuid not in actual:
            outcomes.append(exception.InstanceNotFound(
                instance_id=item.uuid))
        else:
            outcomes.append(exception.UnexpectedTaskStateError(
                instance_uuid=item.uuid, expected=item.expected,
                actual=actual[item.uuid]))
    return outcomes
