# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Instance actions and their events in one cell database.

Nova's instance actions (``create``, ``migrate``, ``delete``...) and the
events recorded under them (a build's, a move's steps, with their hosts,
results and tracebacks): what ``os-instance-actions`` shows. Every
function takes the request context and the cell's
:class:`common.db.api.Database`, or the session context ``ctx`` of a
transaction that another record module runs, so that an event can be
written with the change it records.

NOTE: these were part of :mod:`common.db.instance_records`, which grew
past the size budget; they are kept apart because they are a record of
their own (their own two tables, their own API). The dependency is one
way: :mod:`common.db.instance_records` uses this module (an instance's
``create`` action, the event of an update), never the reverse, so the
small helper below repeats its ``iso_time``.
"""

import logging

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api as db_api
from common.db import cell_tables
from common.db import event_details
from common.db import record_times

LOG = logging.getLogger(__name__)

_AC = cell_tables.instance_actions
_EV = cell_tables.instance_actions_events

# Keys of the action event update_instance may record with an update.
ACTION_EVENT_KEYS = frozenset(('phase', 'event', 'host', 'result',
                               'traceback', 'details', 'start_time'))

_INSERT_ACTION = _AC.insert()


def _iso_time(value):
    return None if value is None else value.isoformat()


def record_action(ctxt, database, uuid, action, request_id=None,
                  user_id=None, project_id=None):
    """Start an instance action (``create``, ``delete``...).

    Request id, user and project default to the context's.

    :returns: the action's id.
    """
    def create(ctx):
        return insert_action(ctx, ctxt, uuid, action, request_id, user_id,
                             project_id)
    return db_api.write(database, create, ctxt)


def insert_action(ctx, ctxt, uuid, action, request_id=None, user_id=None,
                  project_id=None):
    """Start action ``action`` of ``uuid`` in the transaction ``ctx``;
    request id, user and project default to ``ctxt``'s. Its id.
    """
    now = timeutils.utcnow()
    return ctx.session.execute(_INSERT_ACTION, dict(
        action=action, instance_uuid=uuid,
        request_id=request_id or ctxt.request_id,
        user_id=user_id or ctxt.user_id,
        project_id=project_id or ctxt.project_id, start_time=now,
        created_at=now, deleted=0)).inserted_primary_key[0]


# NOTE: the statements of action events are built once: building a
# statement costs more than running it. Parameter names differ from
# column names, as SQLAlchemy requires of bound values in a VALUES or SET
# clause.
_LATEST_ACTION = sa.select(_AC.c.id).where(
    _AC.c.instance_uuid == sa.bindparam('p_uuid'),
    _AC.c.deleted == 0).order_by(
    _AC.c.created_at.desc(), _AC.c.id.desc()).limit(1)
_ACTIONS_OF = sa.select(
    _AC.c.id, _AC.c.instance_uuid, _AC.c.created_at).where(
    _AC.c.instance_uuid.in_(sa.bindparam('p_uuids', expanding=True)),
    _AC.c.deleted == 0)
_START_EVENT = _EV.insert().values(
    event=sa.bindparam('p_event'), action_id=sa.bindparam('p_action_id'),
    start_time=sa.bindparam('p_now'), host=sa.bindparam('p_host'),
    details=sa.bindparam('p_details'), created_at=sa.bindparam('p_now'),
    deleted=0)
_FINISH_FIELDS = ('finish_time', 'result', 'traceback', 'updated_at')


def _finish_values(extra):
    return {name: sa.bindparam('p_' + name)
            for name in _FINISH_FIELDS + extra}


# The finish of an event (its details kept when it has some: a placement's
# decision record), and of its action with and without its message.
_FINISH_OPEN_EVENT = _EV.update().where(
    _EV.c.action_id == sa.bindparam('p_action_id'),
    _EV.c.event == sa.bindparam('p_event'),
    _EV.c.finish_time.is_(None)).values(
    details=sa.func.coalesce(_EV.c.details, sa.bindparam('p_details')),
    **_finish_values(()))
_FINISHED_EVENT = _EV.insert().values(
    event=sa.bindparam('p_event'), action_id=sa.bindparam('p_action_id'),
    start_time=sa.bindparam('p_start_time'), host=sa.bindparam('p_host'),
    created_at=sa.bindparam('p_start_time'), deleted=0,
    **_finish_values(('details',)))
_FINISH_ACTION = {
    extra: _AC.update().where(_AC.c.id == sa.bindparam('p_id')).values(
        finish_time=sa.bindparam('p_now'), updated_at=sa.bindparam('p_now'),
        **{name: sa.bindparam('p_' + name) for name in extra})
    for extra in ((), ('message',))}


def latest_actions(ctx, uuids):
    """uuid -> the id of each instance's latest action (the newest
    ``created_at``, then the highest id); instances without one are left
    out.
    """
    latest = {}
    for row in ctx.session.execute(_ACTIONS_OF,
                                   {'p_uuids': sorted(set(uuids))}):
        key = (row.created_at, row.id)
        known = latest.get(row.instance_uuid)
        if known is None or key > known:
            latest[row.instance_uuid] = key
    return {uuid: key[1] for uuid, key in latest.items()}


def latest_action_id(ctx, uuid):
    """The id of the instance's latest action, or None."""
    return ctx.session.execute(_LATEST_ACTION, {'p_uuid': uuid}).scalar()


def _action_of(ctx, uuid, event, action_id):
    """``action_id``, else the latest action of ``uuid``; None (logged)
    when the instance has none.
    """
    if action_id is None:
        action_id = latest_action_id(ctx, uuid)
    if action_id is None:
        LOG.warning('Instance %s has no action to record event %s in',
                    uuid, event)
    return action_id


def _time(value):
    """A naive UTC datetime of an event's ISO ``start_time`` (None: now).
    """
    if value is None:
        return timeutils.utcnow()
    return record_times.parse(value)


def _start_event(ctx, uuid, event, host=None, details=None, action_id=None,
                 start_time=None):
    """Insert a started event under the latest action (or ``action_id``);
    its id or None.

    :param start_time: when it started (ISO), if not now.
    """
    action_id = _action_of(ctx, uuid, event, action_id)
    if action_id is None:
        return None
    return ctx.session.execute(_START_EVENT, {
        'p_event': event, 'p_action_id': action_id,
        'p_now': _time(start_time), 'p_host': host,
        'p_details': details}).inserted_primary_key[0]


def _finish_event(ctx, uuid, event, host=None, result='Success',
                  traceback=None, details=None, action_id=None,
                  started=None):
    """Finish the open event (or insert a finished one) and its action
    (the latest action, or ``action_id``).

    A failed event without ``details`` gets those its traceback gives
    (:mod:`common.db.event_details`); details the event has already are
    kept.

    :param started: the start event recorded with this finish (its
        ``start_time``, an ISO string or None for now): the event is
        then inserted finished, its start never having been written on
        its own.
    """
    action_id = _action_of(ctx, uuid, event, action_id)
    if action_id is None:
        return
    now = timeutils.utcnow()
    failed = bool(result) and result.lower() == 'error'
    if details is None and failed:
        details = event_details.from_traceback(traceback)
    params = {'p_action_id': action_id, 'p_event': event, 'p_host': host,
              'p_finish_time': now, 'p_result': result,
              'p_traceback': traceback, 'p_updated_at': now,
              'p_details': details, 'p_start_time': now}
    if started is not None:
        params['p_start_time'] = _time(started.get('start_time'))
        ctx.session.execute(_FINISHED_EVENT, params)
    # NOTE: the open event is finished by the UPDATE that finds it; an
    # action has at most one open event of a name (a build's event is
    # finished before its reschedule starts the next).
    elif not ctx.session.execute(_FINISH_OPEN_EVENT, params).rowcount:
        ctx.session.execute(_FINISHED_EVENT, params)
    action = {'p_id': action_id, 'p_now': now}
    extra = ()
    if failed:
        action['p_message'] = 'Error'
        extra = ('message',)
    ctx.session.execute(_FINISH_ACTION[extra], action)


def action_event_start(ctxt, database, uuid, event, host=None, details=None):
    """Start an event under the instance's latest action.

    :returns: the event's id, or None when the instance has no action.
    """
    def create(ctx):
        return _start_event(ctx, uuid, event, host, details)
    return db_api.write(database, create, ctxt)


def action_event_finish(ctxt, database, uuid, event, host=None,
                        result='Success', traceback=None, details=None):
    """Finish an event of the latest action (started now if it never was).

    An ``Error`` result also sets the action's message to ``Error``, as
    Nova shows a failed action.
    """
    def finish(ctx):
        _finish_event(ctx, uuid, event, host, result, traceback, details)
    db_api.write(database, finish, ctxt)


def check_action_event(action_event):
    """ValueError unless ``action_event`` is a start or finish record."""
    if not isinstance(action_event, dict):
        raise ValueError('action_event must be a dict, not %s'
                         % type(action_event).__name__)
    unknown = set(action_event) - ACTION_EVENT_KEYS
    if unknown:
        raise ValueError('action_event: unknown keys %s'
                         % ', '.join(sorted(unknown)))
    if action_event.get('phase') not in ('start', 'finish'):
        raise ValueError("action_event phase must be 'start' or 'finish', "
                         "not %r" % (action_event.get('phase'),))
    if not isinstance(action_event.get('event'), str):
        raise ValueError('action_event needs an event name')
    start_time = action_event.get('start_time')
    if start_time is not None:
        if not isinstance(start_time, str):
            raise ValueError('action_event start_time must be an ISO time')
        _time(start_time)


def record_action_event(ctx, uuid, action_event, action_id=None,
                        started=None):
    """Record ``action_event`` (see
    :func:`common.db.instance_records.update_instance`) under the
    instance's latest action, or under ``action_id`` when the caller
    looked it up already.

    :param started: with a finish, the start event of the same name
        recorded with it, which is then not recorded on its own (see
        :func:`record_action_events`).
    """
    if action_event['phase'] == 'start':
        _start_event(ctx, uuid, action_event['event'],
                     action_event.get('host'), action_event.get('details'),
                     action_id=action_id,
                     start_time=action_event.get('start_time'))
    else:
        _finish_event(ctx, uuid, action_event['event'],
                      action_event.get('host'),
                      action_event.get('result', 'Success'),
                      action_event.get('traceback'),
                      action_event.get('details'), action_id=action_id,
                      started=started)


def _starts_the_next(events, index):
    """Whether events[index] is a start the next event finishes."""
    event = events[index]
    return (event['phase'] == 'start' and index + 1 < len(events) and
            events[index + 1]['phase'] == 'finish' and
            events[index + 1]['event'] == event['event'] and
            not event.get('details'))


def record_action_events(ctx, uuid, events, action_id=None):
    """Record ``events`` in order under one action (see
    :func:`record_action_event`); a start followed by its own finish is
    one finished event row (one statement rather than two).
    """
    index = 0
    while index < len(events):
        if _starts_the_next(events, index):
            record_action_event(ctx, uuid, events[index + 1], action_id,
                                started=events[index])
            index += 2
            continue
        record_action_event(ctx, uuid, events[index], action_id)
        index += 1


def _event(row):
    return {'event': row.event, 'start_time': _iso_time(row.start_time),
            'finish_time': _iso_time(row.finish_time), 'result': row.result,
            'traceback': row.traceback, 'host': row.host,
            'details': row.details}


def list_actions(ctxt, database, uuid):
    """The actions of an instance, newest first, each with its events.

    :returns: list of dicts {id, action, instance_uuid, request_id,
        user_id, project_id, start_time, finish_time, message,
        updated_at, events: [{event, start_time, finish_time, result,
        traceback, host, details}]}.
    """
    def fetch(ctx):
        actions = list(ctx.session.execute(sa.select(_AC).where(
            _AC.c.instance_uuid == uuid, _AC.c.deleted == 0).order_by(
            _AC.c.created_at.desc(), _AC.c.id.desc())))
        events = {}
        if actions:
            for row in ctx.session.execute(sa.select(_EV).where(
                    _EV.c.action_id.in_([a.id for a in actions]),
                    _EV.c.deleted == 0).order_by(_EV.c.id)):
                events.setdefault(row.action_id, []).append(_event(row))
        return [{'id': a.id, 'action': a.action,
                 'instance_uuid': a.instance_uuid,
                 'request_id': a.request_id, 'user_id': a.user_id,
                 'project_id': a.project_id,
                 'start_time': _iso_time(a.start_time),
                 'finish_time': _iso_time(a.finish_time), 'message': a.message,
                 'updated_at': _iso_time(a.updated_at),
                 'events': events.get(a.id, [])} for a in actions]
    return database.reader(fetch)(ctxt)
