# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Where each successful placement's decision record is kept: in the cell.

The record (services.scheduler.decision_record) is the ``details`` of the
conductor's scheduling event of the action that placed the server: the
``create`` action's ``conductor_schedule_and_build_instances`` for a
boot, and for a move the event of that move's action
(:data:`KIND_EVENTS`). It lives and is archived with the server's other
actions, and each placement of the server (boot, then every move) keeps
its own. :func:`record` is the writer any placing workflow calls with its
kind of placement; :func:`decisions` reads them back, newest first.
"""

import json

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import action_records
from common.db import api as db_api
from common.db import cell_tables

_AC = cell_tables.instance_actions
_EV = cell_tables.instance_actions_events

#: kind of placement -> the conductor event whose details hold its record.
KIND_EVENTS = {
    'build': 'conductor_schedule_and_build_instances',
    'resize': 'conductor_migrate_server',
    'migrate': 'conductor_migrate_server',
    'live-migrate': 'conductor_live_migrate_instance',
    'evacuate': 'conductor_rebuild_server',
    'unshelve': 'conductor_unshelve_instance',
}
KINDS = tuple(KIND_EVENTS)
_EVENTS = frozenset(KIND_EVENTS.values())

_LATEST_ACTION = sa.select(_AC.c.id).where(
    _AC.c.instance_uuid == sa.bindparam('p_uuid'),
    _AC.c.deleted == 0).order_by(
    _AC.c.created_at.desc(), _AC.c.id.desc()).limit(1)
_SET_OPEN = _EV.update().where(
    _EV.c.action_id == sa.bindparam('p_action_id'),
    _EV.c.event == sa.bindparam('p_event'),
    _EV.c.finish_time.is_(None)).values(details=sa.bindparam('p_details'))
_INSERT_FINISHED = _EV.insert().values(
    event=sa.bindparam('p_event'), action_id=sa.bindparam('p_action_id'),
    start_time=sa.bindparam('p_now'), finish_time=sa.bindparam('p_now'),
    result='Success', host=sa.bindparam('p_host'),
    details=sa.bindparam('p_details'), created_at=sa.bindparam('p_now'),
    deleted=0)


def details(kind, record, now=None):
    """The JSON text stored: ``record`` with its kind and time.

    :raises ValueError: an unknown kind.
    """
    if kind not in KIND_EVENTS:
        raise ValueError('kind of placement must be one of %s, not %r'
                         % (', '.join(KINDS), kind))
    now = now or timeutils.utcnow()
    stored = dict(record, kind=kind,
                  recorded_at=now.strftime('%Y-%m-%dT%H:%M:%S.%fZ'))
    return json.dumps(stored, separators=(',', ':'), sort_keys=True)


def add(ctx, uuid, kind, record, action_id=None, host=None,
        new_action=False):
    """Store ``record`` in an open write transaction ``ctx``.

    The record goes to the kind's event of ``action_id`` (default: the
    instance's latest action): into its details when the event is open
    (a move that records its event itself), else as a finished
    ``Success`` event. The action itself is left as it is.

    :param new_action: ``action_id`` was inserted in this transaction, so
        it has no event yet: the record is inserted straight away.
        NOTE: the UPDATE looking for an open event locks a range of the
        events' action_id index on MariaDB; boots creating hundreds of
        instances at once deadlocked on it.
    :returns: False when the instance has no action to hold it.
    """
    if action_id is None:
        action_id = ctx.session.execute(_LATEST_ACTION,
                                        {'p_uuid': uuid}).scalar()
    if action_id is None:
        return False
    now = timeutils.utcnow()
    params = {'p_action_id': action_id, 'p_event': KIND_EVENTS.get(kind),
              'p_details': details(kind, record, now), 'p_now': now,
              'p_host': host}
    if new_action or not ctx.session.execute(_SET_OPEN, params).rowcount:
        ctx.session.execute(_INSERT_FINISHED, params)
    return True


def add_and_finish(ctx, uuid, kind, record, host=None):
    """In an open write transaction ``ctx``: the ``Success`` finish of the
    kind's event under the instance's latest action, with the decision
    ``record`` (when there is one) as its details, in the one statement
    that finishes it (details the event has already are kept).
    """
    event = KIND_EVENTS[kind]
    action_records.record_action_event(ctx, uuid, {
        'phase': 'finish', 'event': event, 'host': host,
        'result': 'Success',
        'details': details(kind, record) if record else None},
        action_id=action_records.latest_action_id(ctx, uuid))


def record(ctxt, database, uuid, kind, record, host=None):
    """Keep the decision record of a placement of ``uuid`` (the writer a
    placing workflow calls once its destination is chosen).

    :param database: the instance's cell Database.
    :param kind: the kind of placement, one of :data:`KINDS`.
    :param record: the Selection's ``decision``.
    :param host: the host recording it (the conductor's).
    :returns: False when the instance has no action to hold it.
    """
    def write(ctx):
        return add(ctx, uuid, kind, record, host=host)
    return db_api.write(database, write, ctxt)


def _parsed(event):
    if event['event'] not in _EVENTS or not event.get('details'):
        return None
    try:
        found = json.loads(event['details'])
    except ValueError:
        return None
    if not isinstance(found, dict) or found.get('kind') not in KIND_EVENTS:
        return None
    return found


def is_record(details):
    """True when an event's ``details`` text is a decision record."""
    if not details or not details.startswith('{'):
        return False
    try:
        found = json.loads(details)
    except ValueError:
        return False
    return isinstance(found, dict) and found.get('kind') in KIND_EVENTS


def decisions(ctxt, database, uuid):
    """The decision records of ``uuid``, newest first, each with the
    ``request_id`` and ``action`` of the action that holds it.
    """
    found = []
    for action in action_records.list_actions(ctxt, database, uuid):
        for event in reversed(action['events']):
            parsed = _parsed(event)
            if parsed is not None:
                parsed['action'] = action['action']
                parsed['request_id'] = action['request_id']
                found.append(parsed)
    return found
