# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Flavors, their extra specs and project access, in the api database.

A flavor is a dict of its ``flavors`` row (``flavorid`` is the id users
see) with ``extra_specs`` (key -> value) and, for private flavors,
``projects``. Only the compute API writes these tables; instances keep
their own copy of the flavor they were booted with.
"""

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api_tables as t
from common import exception
from common.objects import flavor as flavor_obj
from services.api import records

_F = t.flavors.c
_ES = t.flavor_extra_specs.c
_FP = t.flavor_projects.c

SORT_KEYS = ('flavorid', 'name', 'memory_mb', 'vcpus', 'root_gb',
             'ephemeral_gb', 'swap', 'rxtx_factor', 'is_public', 'disabled',
             'created_at', 'updated_at', 'description', 'id')

# NOTE: every boot reads its flavor: these are built once, their
# parameters bound per call (an expanding one for the IN lists).
_FLAVOR = sa.select(t.flavors).where(_F.flavorid == sa.bindparam('flavorid'))
_EXTRA_SPEC, _PROJECT = 0, 1
# NOTE: the extra specs and the projects of flavors in one statement (a
# round trip less per boot), each branch on its table's flavor_id index:
# rows of kind _EXTRA_SPEC carry key and value, rows of kind _PROJECT a
# project id as ``name``; projects come in the order they were added.
_EXTRAS_OF = sa.union_all(
    sa.select(_ES.flavor_id, sa.literal_column(str(_EXTRA_SPEC)).label(
        'kind'), _ES.key.label('name'), _ES.value, _ES.id).where(
        _ES.flavor_id.in_(sa.bindparam('ids', expanding=True))),
    sa.select(_FP.flavor_id, sa.literal_column(str(_PROJECT)),
              _FP.project_id, sa.null(), _FP.id).where(
        _FP.flavor_id.in_(sa.bindparam('ids', expanding=True))),
).order_by(sa.literal_column('kind'), sa.literal_column('id'))


class FlavorNotFound(exception.NotFound):
    msg_fmt = 'Flavor %(flavor_id)s could not be found.'


class FlavorExists(exception.BerthException):
    msg_fmt = 'Flavor with %(field)s %(value)s already exists.'


class FlavorAccessExists(exception.BerthException):
    msg_fmt = ('Flavor access already exists for flavor %(flavor_id)s and '
               'project %(project_id)s combination.')


class FlavorAccessNotFound(exception.NotFound):
    msg_fmt = ('Flavor access not found for %(flavor_id)s / %(project_id)s '
               'combination.')


def to_object(flavor):
    """The :class:`common.objects.flavor.Flavor` of a flavor dict."""
    return flavor_obj.Flavor(
        name=flavor['name'], flavorid=flavor['flavorid'],
        vcpus=flavor['vcpus'], memory_mb=flavor['memory_mb'],
        root_gb=flavor['root_gb'], ephemeral_gb=flavor['ephemeral_gb'],
        swap=flavor['swap'], extra_specs=dict(flavor['extra_specs']),
        is_public=flavor['is_public'])


def _row_id(ctxt, flavorid):
    found = ctxt.session.execute(
        sa.select(_F.id).where(_F.flavorid == flavorid)).scalar()
    if found is None:
        raise FlavorNotFound(flavor_id=flavorid)
    return found


def _load(conn, rows):
    """Flavor dicts of ``rows`` with their extra specs and projects, read
    on ``conn`` (the transaction's Connection).
    """
    flavors = [dict(row._mapping) for row in rows]
    if not flavors:
        return []
    by_id = {f['id']: f for f in flavors}
    for flavor in flavors:
        flavor['extra_specs'] = {}
        flavor['projects'] = []
    for flavor_id, kind, name, value, _id in conn.execute(
            _EXTRAS_OF, {'ids': list(by_id)}):
        if kind == _EXTRA_SPEC:
            by_id[flavor_id]['extra_specs'][name] = value
        else:
            by_id[flavor_id]['projects'].append(name)
    return flavors


@records.writer
def create_flavor(ctxt, values, projects=()):
    """Create a flavor.

    :param values: flavors columns (flavorid, name, memory_mb, vcpus...).
    :param projects: projects given access (private flavors).
    :raises FlavorExists: the name or the id is taken.
    :returns: the flavor dict.
    """
    for field in ('flavorid', 'name'):
        taken = ctxt.session.execute(sa.select(_F.id).where(
            t.flavors.c[field] == values[field])).first()
        if taken:
            raise FlavorExists(field='id' if field == 'flavorid' else field,
                               value=values[field])
    now = timeutils.utcnow()
    try:
        row_id = ctxt.session.execute(t.flavors.insert().values(
            created_at=now, **values)).inserted_primary_key[0]
    except db_exc.DBDuplicateEntry:
        raise FlavorExists(field='name or id', value=values['name'])
    for project_id in projects:
        ctxt.session.execute(t.flavor_projects.insert().values(
            flavor_id=row_id, project_id=project_id, created_at=now))
    return get_flavor(ctxt, values['flavorid'])


@records.reader_connection
def get_flavor(ctxt, flavorid):
    """The flavor dict of ``flavorid``.

    Also called by the writers here, inside their transaction (on its
    connection, so that it sees their changes).

    :raises FlavorNotFound: when there is none.
    """
    conn = ctxt.connection
    rows = conn.execute(_FLAVOR, {'flavorid': flavorid}).all()
    found = _load(conn, rows)
    if not found:
        raise FlavorNotFound(flavor_id=flavorid)
    return found[0]


@records.reader_connection
def row_ids(ctxt, flavorids):
    """{flavorid: row id} of the flavors still there among ``flavorids``
    (what Nova's migrations show as ``old/new_instance_type_id``).
    """
    wanted = sorted(set(f for f in flavorids if f is not None))
    if not wanted:
        return {}
    return dict(ctxt.connection.execute(sa.select(_F.flavorid, _F.id).where(
        _F.flavorid.in_(wanted))).all())


@records.reader_connection
def list_flavors(ctxt, is_public=True, project_id=None, min_memory_mb=None,
                 min_root_gb=None, sort_key='flavorid', sort_dir='asc',
                 limit=None, marker=None):
    """Flavors, filtered and paged.

    :param is_public: True: public ones (plus the private ones
        ``project_id`` may use, when given); False: private ones; None:
        all.
    :param marker: the flavorid after which the page starts.
    :raises FlavorNotFound: an unknown marker.
    """
    query = sa.select(t.flavors).where(_F.disabled == sa.false())
    if is_public is None:
        pass
    elif is_public and project_id:
        shared = sa.select(_FP.flavor_id).where(
            _FP.project_id == project_id)
        query = query.where(sa.or_(_F.is_public == sa.true(),
                                   _F.id.in_(shared)))
    else:
        query = query.where(_F.is_public == bool(is_public))
    if min_memory_mb:
        query = query.where(_F.memory_mb >= min_memory_mb)
    if min_root_gb:
        query = query.where(_F.root_gb >= min_root_gb)
    column = t.flavors.c[sort_key]
    order = column.desc() if sort_dir == 'desc' else column.asc()
    query = query.order_by(order, _F.id.asc())
    conn = ctxt.connection
    rows = list(conn.execute(query))
    if marker is not None:
        index = next((i for i, r in enumerate(rows)
                      if r.flavorid == marker), None)
        if index is None:
            raise FlavorNotFound(flavor_id=marker)
        rows = rows[index + 1:]
    if limit is not None:
        rows = rows[:limit]
    return _load(conn, rows)


@records.writer
def update_description(ctxt, flavorid, description):
    """Set a flavor's description; return the flavor."""
    row_id = _row_id(ctxt, flavorid)
    ctxt.session.execute(t.flavors.update().where(_F.id == row_id).values(
        description=description, updated_at=timeutils.utcnow()))
    return get_flavor(ctxt, flavorid)


@records.writer
def delete_flavor(ctxt, flavorid):
    """Delete a flavor with its extra specs and access list."""
    row_id = _row_id(ctxt, flavorid)
    ctxt.session.execute(t.flavor_extra_specs.delete().where(
        _ES.flavor_id == row_id))
    ctxt.session.execute(t.flavor_projects.delete().where(
        _FP.flavor_id == row_id))
    ctxt.session.execute(t.flavors.delete().where(_F.id == row_id))


@records.writer
def update_extra_specs(ctxt, flavorid, specs):
    """Create or replace the extra specs in ``specs``; return all of them.

    :raises FlavorNotFound: no such flavor.
    """
    row_id = _row_id(ctxt, flavorid)
    now = timeutils.utcnow()
    existing = set(ctxt.session.execute(sa.select(_ES.key).where(
        _ES.flavor_id == row_id)).scalars())
    for key, value in specs.items():
        if key in existing:
            ctxt.session.execute(t.flavor_extra_specs.update().where(
                _ES.flavor_id == row_id, _ES.key == key).values(
                    value=value, updated_at=now))
        else:
            ctxt.session.execute(t.flavor_extra_specs.insert().values(
                flavor_id=row_id, key=key, value=value, created_at=now))
    return get_flavor(ctxt, flavorid)['extra_specs']


@records.writer
def delete_extra_spec(ctxt, flavorid, key):
    """Delete one extra spec.

    :raises FlavorNotFound: no such flavor, or no such key on it.
    """
    row_id = _row_id(ctxt, flavorid)
    result = ctxt.session.execute(t.flavor_extra_specs.delete().where(
        _ES.flavor_id == row_id, _ES.key == key))
    if not result.rowcount:
        raise FlavorNotFound(
            message='Flavor %s has no extra specs with key %s.'
            % (flavorid, key))


@records.writer
def add_project(ctxt, flavorid, project_id):
    """Give ``project_id`` access to a flavor; return the project list.

    :raises FlavorAccessExists: it already has it.
    """
    row_id = _row_id(ctxt, flavorid)
    try:
        ctxt.session.execute(t.flavor_projects.insert().values(
            flavor_id=row_id, project_id=project_id,
            created_at=timeutils.utcnow()))
        ctxt.session.flush()
    except db_exc.DBDuplicateEntry:
        raise FlavorAccessExists(flavor_id=flavorid, project_id=project_id)
    return get_flavor(ctxt, flavorid)['projects']


@records.writer
def remove_project(ctxt, flavorid, project_id):
    """Take a flavor from ``project_id``; return the project list.

    :raises FlavorAccessNotFound: it had no access.
    """
    row_id = _row_id(ctxt, flavorid)
    result = ctxt.session.execute(t.flavor_projects.delete().where(
        _FP.flavor_id == row_id, _FP.project_id == project_id))
    if not result.rowcount:
        raise FlavorAccessNotFound(flavor_id=flavorid, project_id=project_id)
    return get_flavor(ctxt, flavorid)['projects']
