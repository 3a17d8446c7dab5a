# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Migrations (server moves) in one cell database.

The conductor creates a migration when it starts a move and the compute
agents advance its status through the conductor; the API lists them
(``os-migrations``, ``/servers/{id}/migrations``). Rows stay after the
move as its history and are archived with their instance.
"""

import functools
import uuid as uuid_mod

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import action_records
from common.db import api as db_api
from common.db import cell_tables
from common.db import instance_records
from common import exception
from common.objects import flavor as flavor_obj
from common.objects import migration as migration_obj

_MI = cell_tables.migrations
_IN = cell_tables.instances

_PLAIN = ('id', 'uuid', 'instance_uuid', 'migration_type', 'status',
          'source_compute', 'source_node', 'dest_compute', 'dest_node',
          'dest_host', 'project_id', 'user_id', 'memory_total',
          'memory_processed', 'memory_remaining', 'disk_total',
          'disk_processed', 'disk_remaining')
_FLAVORS = ('old_flavor', 'new_flavor')
UPDATABLE = frozenset(_PLAIN + _FLAVORS) - {'id', 'uuid', 'instance_uuid'}
_INSERT = _MI.insert()
# NOTE: statements a move runs several times each, built once (as the
# instance's updates are) rather than per call.
_BY_UUID = sa.select(_MI).where(_MI.c.deleted == 0,
                                _MI.c.uuid == sa.bindparam('p_uuid'))
_NEWEST_OF_STATUS = sa.select(_MI).where(
    _MI.c.deleted == 0, _MI.c.instance_uuid == sa.bindparam('p_instance'),
    _MI.c.status == sa.bindparam('p_status'),
    _MI.c.migration_type.in_(sa.bindparam('p_types', expanding=True))
).order_by(_MI.c.created_at.desc(), _MI.c.id.desc()).limit(1)


def migration_from_row(row):
    """The :class:`~common.objects.migration.Migration` of a row."""
    return _migration(row._mapping)


def _migration(data):
    """The Migration of a row's column -> value mapping."""
    values = {name: data[name] for name in _PLAIN}
    for name in _FLAVORS:
        found = instance_records.decode_json(
            data[name], None, '%s of migration %s' % (name, data['uuid']))
        values[name] = flavor_obj.Flavor.from_primitive(found)
    values['hidden'] = bool(data['hidden'])
    values['cross_cell_move'] = bool(data['cross_cell_move'])
    values['created_at'] = instance_records.iso_time(data['created_at'])
    values['updated_at'] = instance_records.iso_time(data['updated_at'])
    return migration_obj.Migration(**values)


def _column(name, value):
    if name in _FLAVORS:
        if isinstance(value, flavor_obj.Flavor):
            value = value.to_primitive()
        return None if value is None else instance_records.column_value(
            'flavor', value)
    return value


def create_migration(ctxt, database, migration, action_event=None):
    """Insert ``migration`` (a Migration; a uuid is made when it has none).

    :param action_event: an event of the instance's latest action to
        record in the same transaction (as ``action_event`` of
        ``instance_records.update_instance``): the start of the flow
        that made the migration.
    :returns: the Migration as stored (with its id).
    """
    if action_event is not None:
        action_records.check_action_event(action_event)
    values = {name: _column(name, getattr(migration, name))
              for name in _PLAIN + _FLAVORS if name != 'id'}
    values['uuid'] = values['uuid'] or str(uuid_mod.uuid4())
    values.update(hidden=bool(migration.hidden),
                  cross_cell_move=bool(migration.cross_cell_move),
                  created_at=timeutils.utcnow(), deleted=0)

    def insert(ctx):
        row_id = ctx.session.execute(_INSERT, values).inserted_primary_key[0]
        if action_event is not None:
            action_records.record_action_event(
                ctx, migration.instance_uuid, action_event)
        # NOTE: the row is what was just written; reading it back would
        # cost a round trip per move.
        return _migration(dict(values, id=row_id, updated_at=None))
    return db_api.write(database, insert, ctxt)


def _select(ctx, *where):
    return ctx.session.execute(sa.select(_MI).where(
        _MI.c.deleted == 0, *where)).first()


def get_migration(ctxt, database, migration_uuid):
    """:raises common.exception.MigrationNotFound: no such migration."""
    def fetch(ctx):
        return read_migration(ctx, migration_uuid)
    return database.reader(fetch)(ctxt)


def get_by_id_and_instance(ctxt, database, migration_id, instance_uuid):
    """The migration ``migration_id`` (the row id) of an instance.

    :raises common.exception.MigrationNotFoundForInstance: none.
    """
    not_found = exception.MigrationNotFoundForInstance(
        migration_id=migration_id, instance_id=instance_uuid)
    try:
        row_id = int(migration_id)
    except (TypeError, ValueError):
        # NOTE: the id comes from a URL: text that is no number names no
        # migration (rather than failing the request).
        raise not_found

    def fetch(ctx):
        row = _select(ctx, _MI.c.id == row_id,
                      _MI.c.instance_uuid == instance_uuid)
        if row is None:
            raise not_found
        return migration_from_row(row)
    return database.reader(fetch)(ctxt)


def update_migration(ctxt, database, migration_uuid, values,
                     expected_status=None, brief=False):
    """Change fields of a migration, atomically guarded by its status.

    :param values: field name -> value (flavors as Flavor or primitive).
    :param expected_status: a status or a list of them: the update
        happens only if the migration is in one of them.
    :param brief: return None rather than read the migration back.
    :returns: the updated Migration.
    :raises ValueError: for a field that cannot be changed.
    :raises common.exception.MigrationNotFound: no such migration.
    :raises common.exception.UnexpectedMigrationStatusError: the guard
        failed.
    """
    update = prepare_update(migration_uuid, values, expected_status, brief)
    return db_api.write(database, update, ctxt)


def prepare_update(migration_uuid, values, expected_status=None,
                   brief=False):
    """The update of :func:`update_migration` as a function of a write
    transaction ``ctx`` (to be run with other writes in one).

    :param brief: the function returns None instead of reading the
        updated migration back (the row is read only to say why an
        update did not happen).
    :raises ValueError: for a field that cannot be changed (at once).
    """
    unknown = set(values) - UPDATABLE
    if unknown:
        raise ValueError('not updatable: %s' % ', '.join(sorted(unknown)))
    columns = {name: _column(name, value) for name, value in values.items()}
    columns['updated_at'] = timeutils.utcnow()
    expected = expected_status
    if isinstance(expected, str):
        expected = [expected]

    statement = _update_statement(tuple(sorted(columns)),
                                  expected is not None)
    params = {'v_' + name: value for name, value in columns.items()}
    params['b_uuid'] = migration_uuid
    if expected is not None:
        params['b_statuses'] = list(expected)

    def update(ctx):
        done = ctx.session.execute(statement, params).rowcount
        if done and brief:
            return None
        row = _by_uuid(ctx, migration_uuid)
        if row is None:
            raise exception.MigrationNotFound(migration_id=migration_uuid)
        if not done:
            raise exception.UnexpectedMigrationStatusError(
                migration_id=migration_uuid, expected=expected,
                actual=row.status)
        return migration_from_row(row)
    return update


@functools.lru_cache(maxsize=32)
def _update_statement(columns, guarded):
    """The UPDATE of ``columns`` of a live migration (by uuid), guarded
    by a list of statuses when ``guarded``; one per shape.
    """
    statement = _MI.update().where(_MI.c.uuid == sa.bindparam('b_uuid'),
                                   _MI.c.deleted == 0)
    if guarded:
        statement = statement.where(_MI.c.status.in_(
            sa.bindparam('b_statuses', expanding=True)))
    return statement.values({name: sa.bindparam('v_' + name)
                             for name in columns})


def _by_uuid(ctx, migration_uuid):
    return ctx.session.execute(_BY_UUID, {'p_uuid': migration_uuid}).first()


def read_migration(ctx, migration_uuid):
    """The Migration ``migration_uuid`` read in ``ctx``.

    :raises common.exception.MigrationNotFound: no such migration.
    """
    row = _by_uuid(ctx, migration_uuid)
    if row is None:
        raise exception.MigrationNotFound(migration_id=migration_uuid)
    return migration_from_row(row)


def in_progress_for_instance(ctxt, database, instance_uuid,
                             migration_types=None):
    """The instance's migrations not yet ended, newest first."""
    def fetch(ctx):
        query = sa.select(_MI).where(
            _MI.c.deleted == 0, _MI.c.instance_uuid == instance_uuid,
            _MI.c.status.not_in(sorted(migration_obj.ENDED)))
        if migration_types:
            query = query.where(_MI.c.migration_type.in_(
                list(migration_types)))
        rows = ctx.session.execute(
            query.order_by(_MI.c.created_at.desc(), _MI.c.id.desc()))
        return [migration_from_row(r) for r in rows]
    return database.reader(fetch)(ctxt)


def claim_finished(instance_uuid, migration_types, status):
    """The claim of a server's finished move, as a function of a write
    transaction ``ctx`` (to be run with the action's other writes): its
    newest ``finished`` migration of ``migration_types`` moved to
    ``status``, guarded by ``finished``, and returned as it now is.

    NOTE: the confirm or revert finds and claims the migration in the
    transaction that begins its action, not in a read of its own before.

    :raises common.exception.MigrationNotFound: no finished migration.
    :raises common.exception.UnexpectedMigrationStatusError: another
        request claimed it meanwhile.
    """
    params = {'p_instance': instance_uuid, 'p_status': migration_obj.FINISHED,
              'p_types': sorted(migration_types)}

    def claim(ctx):
        row = ctx.session.execute(_NEWEST_OF_STATUS, params).first()
        if row is None:
            raise exception.MigrationNotFound(
                migration_id='finished of %s' % instance_uuid)
        prepare_update(row.uuid, {'status': status},
                       expected_status=migration_obj.FINISHED,
                       brief=True)(ctx)
        migration = migration_from_row(row)
        migration.status = status
        return migration
    return claim


def counted_for_hosts(ctx, hosts):
    """The migrations the resource trackers of ``hosts`` count (in a
    reader transaction ``ctx``): those to or from any of them still in
    progress.
    """
    hosts = list(hosts)
    query = sa.select(_MI).where(
        _MI.c.deleted == 0,
        sa.or_(_MI.c.source_compute.in_(hosts),
               _MI.c.dest_compute.in_(hosts)),
        _MI.c.status.not_in(sorted(migration_obj.NOT_COUNTED)))
    return [migration_from_row(r) for r in ctx.session.execute(query)]


def accepted_to_hosts(ctx, hosts):
    """{host: the uuids of the migrations to it that are still
    ``accepted``} for ``hosts`` (in a reader transaction ``ctx``): a live
    migration's destination pre-check has claimed there, but nothing
    counts the move yet.
    """
    query = sa.select(_MI.c.uuid, _MI.c.dest_compute).where(
        _MI.c.deleted == 0, _MI.c.dest_compute.in_(list(hosts)),
        _MI.c.status == migration_obj.ACCEPTED)
    accepted = {}
    for row in ctx.session.execute(query):
        accepted.setdefault(row.dest_compute, []).append(row.uuid)
    return accepted


class Filters(object):
    """What ``os-migrations`` and ``/servers/{id}/migrations`` filter on.

    Every attribute is None when not filtered; ``host`` matches either
    side (and then, as in Nova, ``source_compute`` is not applied),
    ``changes_since``/``changes_before`` the ``updated_at`` (the
    creation time of a row never updated). ``of_live_servers`` leaves
    out the migrations of deleted servers, which Nova's lists never show
    (its delete soft-deletes them; Berth keeps them for its own moves'
    cleanup and the archive).
    """

    def __init__(self, instance_uuid=None, status=None, host=None,
                 source_compute=None, dest_compute=None, node=None,
                 migration_type=None, changes_since=None,
                 changes_before=None, user_id=None, project_id=None,
                 statuses=None, of_live_servers=False):
        self.instance_uuid = instance_uuid
        self.status = status
        self.statuses = statuses
        self.host = host
        self.source_compute = source_compute
        self.dest_compute = dest_compute
        self.node = node
        self.migration_type = migration_type
        self.changes_since = changes_since
        self.changes_before = changes_before
        self.user_id = user_id
        self.project_id = project_id
        self.of_live_servers = of_live_servers

    def clauses(self):
        """The WHERE clauses of these filters."""
        found = [_MI.c.deleted == 0, _MI.c.hidden == sa.false()]
        for name in ('instance_uuid', 'status', 'source_compute',
                     'dest_compute', 'migration_type', 'user_id',
                     'project_id'):
            value = getattr(self, name)
            if value is not None and not (
                    name == 'source_compute' and self.host is not None):
                found.append(_MI.c[name] == value)
        if self.of_live_servers:
            found.append(sa.exists().where(
                _IN.c.uuid == _MI.c.instance_uuid, _IN.c.deleted == 0))
        if self.statuses is not None:
            found.append(_MI.c.status.in_(list(self.statuses)))
        if self.host is not None:
            found.append(sa.or_(_MI.c.source_compute == self.host,
                                _MI.c.dest_compute == self.host))
        if self.node is not None:
            found.append(sa.or_(_MI.c.source_node == self.node,
                                _MI.c.dest_node == self.node))
        changed = sa.func.coalesce(_MI.c.updated_at, _MI.c.created_at)
        if self.changes_since is not None:
            found.append(changed >= instance_records.to_datetime(
                self.changes_since))
        if self.changes_before is not None:
            found.append(changed <= instance_records.to_datetime(
                self.changes_before))
        return found


def list_migrations(ctxt, database, filters=None, marker=None, limit=None,
                    after=None):
    """Migrations newest first (created_at, then id, descending).

    :param filters: a :class:`Filters`.
    :param marker: the uuid of the last migration of the previous page.
    :param after: instead of ``marker``, the last Migration of the
        previous page itself, which may live in another cell: the rows
        after its (created_at, id) position (the API's lists across
        cells).
    :raises common.exception.MigrationNotFound: the marker is not in this
        database (the caller may then look in the next cell).
    """
    filters = filters or Filters()

    def fetch(ctx):
        query = sa.select(_MI).where(*filters.clauses())
        position = None
        if marker is not None:
            row = _select(ctx, _MI.c.uuid == marker)
            if row is None:
                raise exception.MigrationNotFound(migration_id=marker)
            position = (row.created_at, row.id)
        elif after is not None:
            position = (instance_records.to_datetime(after.created_at),
                        after.id)
        if position is not None:
            created, row_id = position
            query = query.where(sa.or_(
                _MI.c.created_at < created,
                sa.and_(_MI.c.created_at == created, _MI.c.id < row_id)))
        query = query.order_by(_MI.c.created_at.desc(), _MI.c.id.desc())
        if limit is not None:
            query = query.limit(limit)
        return [migration_from_row(r) for r in ctx.session.execute(query)]
    return database.reader(fetch)(ctxt)


def get_migrations(ctxt, database, uuids):
    """{uuid: Migration} of those of ``uuids`` that are migrations here,
    whatever their status (the audits ask of placement consumers).
    """
    uuids = sorted(set(uuids))

    def fetch(ctx):
        found = {}
        for chunk in db_api.chunks(uuids):
            for row in ctx.session.execute(sa.select(_MI).where(
                    _MI.c.deleted == 0, _MI.c.uuid.in_(chunk))):
                found[row.uuid] = migration_from_row(row)
        return found
    if not uuids:
        return {}
    return database.reader(fetch)(ctxt)


def instances_moving(ctxt, database):
    """The uuids of the instances with a migration not yet ended (one
    query for a whole cell: heal and the audit skip those instances).
    """
    def fetch(ctx):
        return set(ctx.session.execute(
            sa.select(_MI.c.instance_uuid).distinct().where(
                _MI.c.deleted == 0,
                _MI.c.status.not_in(sorted(migration_obj.ENDED)))
        ).scalars())
    return database.reader(fetch)(ctxt)
