# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Instances and their faults in one cell database.

The conductor writes instances here (into the cell of the chosen host, or
cell0 for those that never got one), the compute agents update them
through the conductor, and the API reads them. Every function takes the
request context and the cell's :class:`common.db.api.Database`; which
cell holds an instance is the instance mapping's business (see
:mod:`common.db.boot_records`).

Instances are soft-deleted: ``deleted`` becomes the row id and the row
stays for the API's history (``vm_state`` deleted). Their actions and
action events are in :mod:`common.db.action_records`.
"""

import datetime
import functools
import json
import logging

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import action_records
from common.db import api as db_api
from common.db import cell_tables
from common.db import decision_records
from common.db import instance_tags
from common.db import record_times
from common import exception
from common.objects import flavor as flavor_obj
from common.objects import instance as instance_obj

LOG = logging.getLogger(__name__)

_IN = cell_tables.instances
_FA = cell_tables.instance_faults

# NOTE: instance_faults.message is a VARCHAR(255).
_MAX_MESSAGE = 255

# Instance fields stored as JSON text, and their empty value.
_JSON_FIELDS = {'numa_topology': None, 'pci_requests': [], 'metadata': {},
                'image_meta': {}, 'system_metadata': {},
                'migration_context': None}
_TIME_FIELDS = ('launched_at', 'terminated_at', 'created_at', 'updated_at')
# Instance fields that are plain columns of the same name.
_PLAIN_FIELDS = ('uuid', 'display_name', 'hostname', 'project_id',
                 'user_id', 'image_ref', 'vm_state', 'task_state',
                 'power_state',
                 'host', 'node', 'availability_zone', 'reservation_id',
                 'launch_index', 'locked_by', 'key_name', 'key_data',
                 'display_description', 'access_ip_v4', 'access_ip_v6')
UPDATABLE = frozenset(_PLAIN_FIELDS + tuple(_JSON_FIELDS) + _TIME_FIELDS +
                      ('flavor', 'locked')) - {'uuid', 'created_at'}


def _dumps(value):
    return json.dumps(value, separators=(',', ':'), sort_keys=True)


def decode_json(text, default, what):
    if text is None or text == '':
        return default
    try:
        return json.loads(text)
    except ValueError:
        LOG.warning('Ignoring undecodable %s: %.80r', what, text)
        return default


def iso_time(value):
    return None if value is None else value.isoformat()


def to_datetime(value):
    """A column value from an ISO string or a datetime (naive UTC)."""
    if value is None or isinstance(value, datetime.datetime):
        return value
    return record_times.parse(value)


def column_value(name, value):
    """The database form of an Instance field's value."""
    if name == 'flavor':
        if isinstance(value, flavor_obj.Flavor):
            value = value.to_primitive()
        return None if value is None else _dumps(value)
    if name in _JSON_FIELDS:
        return None if value is None else _dumps(value)
    if name in _TIME_FIELDS:
        return to_datetime(value)
    return value


def flavor_sizes(flavor):
    """{'vcpus', 'memory_mb'} columns of a Flavor or its primitive (zeros
    for None or anything else that is not a flavor).
    """
    if isinstance(flavor, flavor_obj.Flavor):
        flavor = flavor.to_primitive()
    if not isinstance(flavor, dict):
        flavor = {}
    return {'vcpus': int(flavor.get('vcpus') or 0),
            'memory_mb': int(flavor.get('memory_mb') or 0)}


def _instance(row, fault=None):
    data = row._mapping
    flavor = decode_json(data['flavor'], None, 'flavor of %s' % row.uuid)
    values = {name: data[name] for name in _PLAIN_FIELDS}
    for name, default in _JSON_FIELDS.items():
        values[name] = decode_json(data[name], default,
                                   '%s of %s' % (name, row.uuid))
    for name in _TIME_FIELDS:
        values[name] = iso_time(data[name])
    values['power_state'] = values['power_state'] or 0
    values['launch_index'] = values['launch_index'] or 0
    values['locked'] = bool(data['locked'])
    return instance_obj.Instance(
        flavor=flavor_obj.Flavor.from_primitive(flavor) if flavor else None,
        deleted=bool(row.deleted), fault=fault, **values)


# NOTE: for the record modules that read instances their own way (usage).
instance_from_row = _instance


def _fault(row):
    return {'code': row.code, 'message': row.message,
            'details': row.details, 'host': row.host,
            'created_at': iso_time(row.created_at)}


def _latest_faults(ctx, uuids):
    """uuid -> the newest fault dict of each instance that has one."""
    result = {}
    for chunk in db_api.chunks(uuids):
        rows = ctx.session.execute(sa.select(_FA).where(
            _FA.c.instance_uuid.in_(chunk), _FA.c.deleted == 0).order_by(
            _FA.c.instance_uuid, _FA.c.created_at.desc(), _FA.c.id.desc()))
        for row in rows:
            result.setdefault(row.instance_uuid, _fault(row))
    return result


_INSERT_INSTANCE = _IN.insert()


class _WrittenRow(object):
    """A row as :func:`_instance` reads it, from the values inserted."""

    _COLUMNS = tuple(c.name for c in _IN.columns)

    def __init__(self, values):
        self._mapping = dict.fromkeys(self._COLUMNS)
        self._mapping.update(values)
        self.uuid = values['uuid']
        self.deleted = values['deleted']


def _select_row(ctx, uuid, read_deleted=False):
    query = sa.select(_IN).where(_IN.c.uuid == uuid)
    if not read_deleted:
        query = query.where(_IN.c.deleted == 0)
    return ctx.session.execute(query).first()


# --- instances ---------------------------------------------------------------

def read_instance(ctx, uuid, fault=True):
    """The live Instance ``uuid`` (with its latest fault unless not
    ``fault``: a query of its own, which the steps of a move never need)
    read in ``ctx``.

    :raises common.exception.InstanceNotFound: when there is none.
    """
    row = _select_row(ctx, uuid)
    if row is None:
        raise exception.InstanceNotFound(instance_id=uuid)
    return _with_fault(ctx, row, fault)


def _with_fault(ctx, row, fault):
    """The Instance of ``row``, with its latest fault when ``fault``."""
    return _instance(row, _latest_faults(ctx, [row.uuid]).get(row.uuid)
                     if fault else None)


def create_instance(ctxt, database, instance, action=None, decision=None):
    """Write a new instance row from an Instance.

    ``cell_uuid`` and ``fault`` are not columns and are ignored; the
    instance's ``tags`` (given at boot) are written with the row.

    :param action: also start this instance action (``create``) in the
        same transaction.
    :param decision: (kind, record, host): also keep the placement's
        decision record under that action (see decision_records).
    :returns: the Instance as stored (``created_at`` filled in).
    :raises oslo_db.exception.DBDuplicateEntry: the uuid exists already.
    """
    def create(ctx):
        values = {name: column_value(name, getattr(instance, name))
                  for name in UPDATABLE | {'uuid'}}
        values['created_at'] = (to_datetime(instance.created_at) or
                                timeutils.utcnow())
        values['updated_at'] = None
        values['deleted'] = 0
        values.update(flavor_sizes(instance.flavor))
        # NOTE: values as parameters of the one prepared statement:
        # building an INSERT with its values costs more than running it.
        ctx.session.execute(_INSERT_INSTANCE, values)
        instance_tags.insert_tags(ctx, instance.uuid, instance.tags)
        if action is not None:
            action_id = action_records.insert_action(ctx, ctxt,
                                                     instance.uuid, action)
            if decision is not None:
                kind, record, host = decision
                decision_records.add(ctx, instance.uuid, kind, record,
                                     action_id=action_id, host=host,
                                     new_action=True)
        # NOTE: the row is what was just written; reading it back would
        # cost a round trip per build.
        return _instance(_WrittenRow(values))
    created = db_api.write(database, create, ctxt)
    created.cell_uuid = instance.cell_uuid
    if instance.tags is not None:
        created.tags = sorted(set(instance.tags))
    return created


def get_instance(ctxt, database, uuid, read_deleted=False, fault=True):
    """The Instance ``uuid``, with its latest fault unless not ``fault``.

    :param read_deleted: also find a deleted instance.
    :raises common.exception.InstanceNotFound: when there is none.
    """
    def fetch(ctx):
        row = _select_row(ctx, uuid, read_deleted)
        if row is None:
            return None
        return _with_fault(ctx, row, fault)
    found = database.reader(fetch)(ctxt)
    if found is None:
        raise exception.InstanceNotFound(instance_id=uuid)
    return found


def get_instances(ctxt, database, uuids, read_deleted=False):
    """uuid -> Instance (with latest fault) for those found."""
    def fetch(ctx):
        rows = []
        for chunk in db_api.chunks(uuids):
            query = sa.select(_IN).where(_IN.c.uuid.in_(chunk))
            if not read_deleted:
                query = query.where(_IN.c.deleted == 0)
            rows.extend(ctx.session.execute(query))
        faults = _latest_faults(ctx, [r.uuid for r in rows])
        return {r.uuid: _instance(r, faults.get(r.uuid)) for r in rows}
    return database.reader(fetch)(ctxt)


def _after_marker(ctx, query, marker):
    """Rows after ``marker`` in (created_at desc, id desc) order."""
    row = ctx.session.execute(sa.select(_IN.c.id, _IN.c.created_at).where(
        _IN.c.uuid == marker)).first()
    if row is None:
        raise exception.InstanceNotFound(instance_id=marker)
    if row.created_at is None:
        return query.where(_IN.c.id < row.id)
    return query.where(sa.or_(
        _IN.c.created_at < row.created_at,
        sa.and_(_IN.c.created_at == row.created_at, _IN.c.id < row.id)))


def list_instances(ctxt, database, project_id=None, host=None,
                   deleted=False, limit=None, marker=None, node=None,
                   changed_since=None, changed_before=None):
    """Instances, newest first, with the latest fault of ERROR ones.

    :param deleted: False for live instances only, True for deleted ones
        only, None for both.
    :param limit: at most this many.
    :param marker: the uuid of the last instance of the previous page.
    :param changed_since, changed_before: naive UTC datetimes bounding
        the last change (``updated_at``, else ``created_at``), inclusive.
    :raises common.exception.InstanceNotFound: an unknown marker.
    """
    def fetch(ctx):
        query = sa.select(_IN).order_by(_IN.c.created_at.desc(),
                                        _IN.c.id.desc())
        query = _changed_within(query, changed_since, changed_before)
        if project_id is not None:
            query = query.where(_IN.c.project_id == project_id)
        if host is not None:
            query = query.where(_IN.c.host == host)
        if node is not None:
            query = query.where(_IN.c.node == node)
        if deleted is not None:
            query = query.where(_IN.c.deleted != 0 if deleted
                                else _IN.c.deleted == 0)
        if marker is not None:
            query = _after_marker(ctx, query, marker)
        if limit is not None:
            query = query.limit(limit)
        rows = list(ctx.session.execute(query))
        errored = [r.uuid for r in rows
                   if r.vm_state == instance_obj.ERROR]
        faults = _latest_faults(ctx, errored) if errored else {}
        return [_instance(r, faults.get(r.uuid)) for r in rows]
    return database.reader(fetch)(ctxt)


def _changed_within(query, since, before):
    """``query`` narrowed to rows last changed within [since, before].

    NOTE: in SQL, not after reading: a client polling ``changes-since``
    over thousands of servers would otherwise read every row each time.
    """
    if since is None and before is None:
        return query
    changed = sa.func.coalesce(_IN.c.updated_at, _IN.c.created_at)
    if since is not None:
        query = query.where(changed >= since)
    if before is not None:
        query = query.where(changed <= before)
    return query


class PreparedUpdate(object):
    """One instance update, checked, its columns in database form.

    Made by :func:`prepare_update`, run by :func:`apply_update`; the
    batch path (:mod:`common.db.instance_updates`) runs many in one
    transaction.
    """

    __slots__ = ('uuid', 'columns', 'guard', 'expected', 'action_event')

    def __init__(self, uuid, columns, guard, expected, action_event):
        self.uuid = uuid
        self.columns = columns
        # None, or (task states listed, None allowed) of the guard.
        self.guard = guard
        # The expected task states as the caller listed them (for the
        # error when the guard fails).
        self.expected = expected
        self.action_event = action_event


def prepare_update(uuid, values, expected_task_state=None,
                   action_event=None):
    """Check an update and put its values in database form.

    Arguments as for :func:`update_instance`.

    :raises ValueError: for a field that cannot be updated, or a
        malformed ``action_event``.
    """
    unknown = set(values) - UPDATABLE
    if unknown:
        raise ValueError('not updatable: %s' % ', '.join(sorted(unknown)))
    if action_event is not None:
        action_records.check_action_event(action_event)
    columns = {k: column_value(k, v) for k, v in values.items()}
    if 'flavor' in values:
        columns.update(flavor_sizes(values['flavor']))
    guard = expected = None
    if expected_task_state is not None:
        expected = expected_task_state
        if not isinstance(expected, (list, tuple, set, frozenset)):
            expected = [expected]
        expected = list(expected)
        guard = (any(s is not None for s in expected), None in expected)
    return PreparedUpdate(uuid, columns, guard, expected, action_event)


def apply_update(ctx, prepared, now):
    """Run a :class:`PreparedUpdate` (``updated_at`` = ``now``); True when
    the live instance was found in an expected task state and updated.
    """
    params = {'v_' + name: value
              for name, value in prepared.columns.items()}
    params['v_updated_at'] = now
    params['b_uuid'] = prepared.uuid
    if prepared.guard is not None and prepared.guard[0]:
        params['b_states'] = [s for s in prepared.expected if s is not None]
    statement = _update_statement(tuple(sorted(prepared.columns)),
                                  prepared.guard)
    return ctx.session.execute(statement, params).rowcount > 0


@functools.lru_cache(maxsize=64)
def _update_statement(columns, guard):
    """The UPDATE of ``columns`` and updated_at, guarded by ``guard`` (see
    :class:`PreparedUpdate`), built once per shape: building a statement
    costs more than running it.
    """
    statement = _IN.update().where(_IN.c.uuid == sa.bindparam('b_uuid'),
                                   _IN.c.deleted == 0)
    if guard is not None:
        listed, allows_none = guard
        clauses = []
        if listed:
            clauses.append(_IN.c.task_state.in_(
                sa.bindparam('b_states', expanding=True)))
        if allows_none:
            clauses.append(_IN.c.task_state.is_(None))
        statement = statement.where(sa.or_(*clauses))
    return statement.values({
        name: sa.bindparam('v_' + name)
        for name in sorted(set(columns) | {'updated_at'})})


def apply_or_raise(ctx, prepared):
    """Run ``prepared``; say why when no live instance was updated.

    :raises common.exception.InstanceNotFound: no live instance.
    :raises common.exception.UnexpectedTaskStateError: the guard failed.
    """
    if apply_update(ctx, prepared, timeutils.utcnow()):
        return
    row = _select_row(ctx, prepared.uuid)
    if row is None:
        raise exception.InstanceNotFound(instance_id=prepared.uuid)
    raise exception.UnexpectedTaskStateError(
        instance_uuid=prepared.uuid, expected=prepared.expected,
        actual=row.task_state)


def update_instance(ctxt, database, uuid, values, expected_task_state=None,
                    action_event=None, brief=False):
    """Change fields of a live instance.

    :param values: Instance field name -> new value (flavor as a Flavor
        or its primitive; JSON fields as structures; times as ISO strings
        or datetimes).
    :param expected_task_state: when given, a task state or a list of
        them (None allowed in the list); the update happens only if the
        instance is in one of them, atomically.
    :param action_event: an event of the instance's latest action to
        record in the same transaction (only if the update happens):
        ``{'phase': 'start' | 'finish', 'event': name, 'host': host}``,
        a finish also with ``result`` (default ``Success``) and
        ``traceback``; either may carry ``details``.
    :param brief: return None instead of reading the updated instance
        back (for callers that do not use it).
    :returns: the updated Instance (with its latest fault).
    :raises ValueError: for a field that cannot be updated, or a
        malformed ``action_event``.
    :raises common.exception.InstanceNotFound: no live instance ``uuid``.
    :raises common.exception.UnexpectedTaskStateError: the guard failed.
    """
    prepared = prepare_update(uuid, values, expected_task_state,
                              action_event)

    def update(ctx):
        apply_or_raise(ctx, prepared)
        if action_event is not None:
            action_records.record_action_event(ctx, uuid, action_event)
        if brief:
            return None
        return read_instance(ctx, uuid)
    return db_api.write(database, update, ctxt)


def begin_action(ctxt, database, uuid, action, values,
                 expected_task_state=(None,), first=None, brief=False):
    """Start instance action ``action`` and apply ``values`` at once.

    The server actions' first write: the task state moves (guarded by
    ``expected_task_state``, so that of two racing requests one gets the
    conflict) and the action is recorded in the same transaction, so a
    refused request leaves neither.

    :param first: ``first(ctx)``, another write of the same transaction
        run before (e.g. a migration's guarded status change); what it
        raises undoes everything.
    :param brief: do not read the instance back.
    :returns: the updated Instance (None when ``brief``).
    :raises common.exception.InstanceNotFound: no live instance ``uuid``.
    :raises common.exception.UnexpectedTaskStateError: the guard failed.
    """
    prepared = prepare_update(uuid, values, expected_task_state)

    def begin(ctx):
        if first is not None:
            first(ctx)
        apply_or_raise(ctx, prepared)
        action_records.insert_action(ctx, ctxt, uuid, action)
        return None if brief else read_instance(ctx, uuid)
    return db_api.write(database, begin, ctxt)


def destroy_instance(ctxt, database, uuid):
    """Soft-delete a live instance: vm_state deleted, the row kept, its
    tags removed (as Nova's).

    :returns: the deleted Instance.
    :raises common.exception.InstanceNotFound: no live instance ``uuid``.
    """
    def destroy(ctx):
        row = _select_row(ctx, uuid)
        if row is None:
            raise exception.InstanceNotFound(instance_id=uuid)
        now = timeutils.utcnow()
        ctx.session.execute(_IN.update().where(_IN.c.id == row.id).values(
            vm_state=instance_obj.DELETED, task_state=None,
            power_state=instance_obj.NOSTATE, deleted=row.id,
            deleted_at=now, updated_at=now,
            terminated_at=row.terminated_at or now))
        instance_tags.delete_tags(ctx, [uuid])
        return _instance(_select_row(ctx, uuid, read_deleted=True))
    return db_api.write(database, destroy, ctxt)


def sum_sizes(conn, totals, unsized, params, flavor_of):
    """(rows, cores, RAM MiB) of the rows a quota count selects.

    Summed by the database from the table's vcpus and memory_mb columns;
    a row without them (written before they existed) is counted from
    ``flavor_of(row)``, its flavor primitive.

    :param conn: the transaction's Connection (or Session).
    :param totals: SELECT count(vcpus), sum(vcpus), sum(memory_mb),
        count(*) of the counted rows, built once by the caller.
    :param unsized: SELECT of the counted rows whose vcpus is NULL.
    :param params: the bound parameters of both statements.
    """
    # NOTE: COUNT(vcpus) counts the rows that have the columns; only when
    # some lack them is a second query needed.
    found = conn.execute(totals, params).one()
    count, cores, ram = (int(found[0] or 0), int(found[1] or 0),
                         int(found[2] or 0))
    if found[0] != found[3]:
        for row in conn.execute(unsized, params):
            sizes = flavor_sizes(flavor_of(row))
            count += 1
            cores += sizes['vcpus']
            ram += sizes['memory_mb']
    return count, cores, ram


# NOTE: the quota count runs for every cell twice per boot: its statements
# are built once (building them cost more CPU than running them).
_LIVE_OF_PROJECT = sa.and_(_IN.c.project_id == sa.bindparam('project_id'),
                           _IN.c.deleted == 0)
_LIVE_SIZES = sa.select(
    sa.func.count(_IN.c.vcpus), sa.func.sum(_IN.c.vcpus),
    sa.func.sum(_IN.c.memory_mb), sa.func.count()).where(_LIVE_OF_PROJECT)
_LIVE_UNSIZED = sa.select(_IN).where(_LIVE_OF_PROJECT, _IN.c.vcpus.is_(None))


def count_instances_by_project(ctxt, database, project_id):
    """(instances, cores, ram MiB) of a project's live instances here."""
    def flavor_of(row):
        return decode_json(row.flavor, None, 'flavor of %s' % row.uuid)

    def fetch(ctx):
        return sum_sizes(ctx.connection, _LIVE_SIZES, _LIVE_UNSIZED,
                         {'project_id': project_id}, flavor_of)
    return database.reader_connection(fetch)(ctxt)


# --- faults ----------------------------------------------------------------

def add_fault(ctxt, database, uuid, code, message, details=None, host=None):
    """Record a fault of an instance (the API shows the newest).

    :param message: cut to 255 characters.
    :param details: text, or a structure stored as JSON text (e.g. the
        scheduler's explanation).
    """
    if details is not None and not isinstance(details, str):
        details = _dumps(details)

    def create(ctx):
        ctx.session.execute(_FA.insert().values(
            instance_uuid=uuid, code=code,
            message=(message or '')[:_MAX_MESSAGE], details=details,
            host=host, created_at=timeutils.utcnow(), deleted=0))
    db_api.write(database, create, ctxt)
