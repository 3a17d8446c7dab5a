# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Host aggregates in the api database: hosts and metadata.

An aggregate is a dict: ``id``, ``uuid``, ``name``, ``hosts`` (sorted),
``metadata`` (key -> value), timestamps and ``availability_zone`` (its
``availability_zone`` metadata value, or None): a zone is nothing but an
aggregate carrying that key. The scheduler reads these tables directly
(``services/scheduler/sources/database.py``); only the API writes them.
"""

import uuid as uuid_lib

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api_tables as t
from common import exception
from services.api import records

AZ_KEY = 'availability_zone'

_A = t.aggregates.c
_H = t.aggregate_hosts.c
_M = t.aggregate_metadata.c


class AggregateNotFound(exception.NotFound):
    msg_fmt = 'Aggregate %(aggregate_id)s could not be found.'


class AggregateNameExists(exception.BerthException):
    msg_fmt = 'Aggregate %(name)s already exists.'


class AggregateHostExists(exception.BerthException):
    msg_fmt = ('Aggregate %(aggregate_id)s already has host %(host)s.')


class AggregateHostNotFound(exception.NotFound):
    msg_fmt = 'Aggregate %(aggregate_id)s has no host %(host)s.'


def _load(ctxt, rows):
    aggregates = [dict(row._mapping) for row in rows]
    if not aggregates:
        return []
    by_id = {a['id']: a for a in aggregates}
    for agg in aggregates:
        agg['hosts'] = []
        agg['metadata'] = {}
    ids = list(by_id)
    for row in ctxt.session.execute(
            sa.select(_H.aggregate_id, _H.host).where(
                _H.aggregate_id.in_(ids)).order_by(_H.host)):
        by_id[row.aggregate_id]['hosts'].append(row.host)
    for row in ctxt.session.execute(
            sa.select(_M.aggregate_id, _M.key, _M.value).where(
                _M.aggregate_id.in_(ids))):
        by_id[row.aggregate_id]['metadata'][row.key] = row.value
    for agg in aggregates:
        agg['availability_zone'] = agg['metadata'].get(AZ_KEY)
    return aggregates


def _get(ctxt, aggregate_id):
    query = sa.select(t.aggregates)
    text = str(aggregate_id)
    if text.isascii() and text.isdigit():
        # NOTE: an id beyond the Integer column names no aggregate; the
        # backends refuse to compare with it.
        if len(text) > 10 or int(text) > 2 ** 31 - 1:
            raise AggregateNotFound(aggregate_id=aggregate_id)
        query = query.where(_A.id == int(text))
    else:
        query = query.where(_A.uuid == str(aggregate_id))
    found = _load(ctxt, ctxt.session.execute(query))
    if not found:
        raise AggregateNotFound(aggregate_id=aggregate_id)
    return found[0]


@records.reader
def get_aggregate(ctxt, aggregate_id):
    """The aggregate with this id (or uuid).

    :raises AggregateNotFound: when there is none.
    """
    return _get(ctxt, aggregate_id)


@records.reader
def list_aggregates(ctxt, host=None):
    """Every aggregate (or those ``host`` is in), in id order."""
    query = sa.select(t.aggregates).order_by(_A.id)
    if host is not None:
        query = query.where(_A.id.in_(sa.select(_H.aggregate_id).where(
            _H.host == host)))
    return _load(ctxt, ctxt.session.execute(query))


@records.reader
def zones_by_host(ctxt):
    """host -> sorted list of the zones of the aggregates it is in."""
    query = sa.select(_H.host, _M.value).select_from(
        t.aggregate_hosts.join(t.aggregate_metadata,
                               _M.aggregate_id == _H.aggregate_id)).where(
        _M.key == AZ_KEY)
    zones = {}
    for row in ctxt.session.execute(query):
        zones.setdefault(row.host, set()).add(row.value)
    return {host: sorted(values) for host, values in zones.items()}


@records.reader
def zone_names(ctxt):
    """Every zone some aggregate names."""
    return set(ctxt.session.execute(
        sa.select(_M.value).where(_M.key == AZ_KEY).distinct()).scalars())


def _name_taken(ctxt, name, except_id=None):
    query = sa.select(_A.id).where(_A.name == name)
    if except_id is not None:
        query = query.where(_A.id != except_id)
    return ctxt.session.execute(query).first() is not None


def _set_metadata(ctxt, agg_id, metadata, now):
    for key, value in metadata.items():
        ctxt.session.execute(t.aggregate_metadata.delete().where(
            _M.aggregate_id == agg_id, _M.key == key))
        if value is not None:
            ctxt.session.execute(t.aggregate_metadata.insert().values(
                aggregate_id=agg_id, key=key, value=str(value),
                created_at=now))


@records.writer
def create_aggregate(ctxt, name, availability_zone=None):
    """Create an aggregate (with zone metadata when a zone is given).

    :raises AggregateNameExists: the name is taken.
    """
    if _name_taken(ctxt, name):
        raise AggregateNameExists(name=name)
    now = timeutils.utcnow()
    try:
        agg_id = ctxt.session.execute(t.aggregates.insert().values(
            uuid=str(uuid_lib.uuid4()), name=name,
            created_at=now)).inserted_primary_key[0]
    except db_exc.DBDuplicateEntry:
        raise AggregateNameExists(name=name)
    if availability_zone:
        _set_metadata(ctxt, agg_id, {AZ_KEY: availability_zone}, now)
    return _get(ctxt, agg_id)


@records.writer
def update_aggregate(ctxt, aggregate_id, name=None, availability_zone=None,
                     clear_zone=False):
    """Rename an aggregate and/or set (or clear) its zone.

    :raises AggregateNameExists: the new name is taken.
    """
    agg = _get(ctxt, aggregate_id)
    now = timeutils.utcnow()
    if name is not None and name != agg['name']:
        if _name_taken(ctxt, name, except_id=agg['id']):
            raise AggregateNameExists(name=name)
        ctxt.session.execute(t.aggregates.update().where(
            _A.id == agg['id']).values(name=name, updated_at=now))
    if availability_zone is not None or clear_zone:
        _set_metadata(ctxt, agg['id'], {AZ_KEY: availability_zone}, now)
        ctxt.session.execute(t.aggregates.update().where(
            _A.id == agg['id']).values(updated_at=now))
    return _get(ctxt, agg['id'])


@records.writer
def delete_aggregate(ctxt, aggregate_id):
    """Delete an aggregate and its metadata; return what it was."""
    agg = _get(ctxt, aggregate_id)
    ctxt.session.execute(t.aggregate_metadata.delete().where(
        _M.aggregate_id == agg['id']))
    ctxt.session.execute(t.aggregate_hosts.delete().where(
        _H.aggregate_id == agg['id']))
    ctxt.session.execute(t.aggregates.delete().where(_A.id == agg['id']))
    return agg


@records.writer
def add_host(ctxt, aggregate_id, host):
    """Add ``host``; return the aggregate.

    :raises AggregateHostExists: it is already there.
    """
    agg = _get(ctxt, aggregate_id)
    if host in agg['hosts']:
        raise AggregateHostExists(aggregate_id=aggregate_id, host=host)
    try:
        ctxt.session.execute(t.aggregate_hosts.insert().values(
            aggregate_id=agg['id'], host=host,
            created_at=timeutils.utcnow()))
    except db_exc.DBDuplicateEntry:
        raise AggregateHostExists(aggregate_id=aggregate_id, host=host)
    return _get(ctxt, agg['id'])


@records.writer
def remove_host(ctxt, aggregate_id, host):
    """Remove ``host``; return the aggregate.

    :raises AggregateHostNotFound: it is not there.
    """
    agg = _get(ctxt, aggregate_id)
    result = ctxt.session.execute(t.aggregate_hosts.delete().where(
        _H.aggregate_id == agg['id'], _H.host == host))
    if not result.rowcount:
        raise AggregateHostNotFound(aggregate_id=aggregate_id, host=host)
    return _get(ctxt, agg['id'])


@records.writer
def remove_host_everywhere(ctxt, host):
    """Take ``host`` out of every aggregate (its service was deleted).

    :returns: the aggregates it was in, as they were.
    """
    aggregates = list_aggregates(ctxt, host=host)
    ctxt.session.execute(t.aggregate_hosts.delete().where(_H.host == host))
    return aggregates


@records.writer
def set_metadata(ctxt, aggregate_id, metadata):
    """Set metadata keys (a None value deletes the key); return the agg."""
    agg = _get(ctxt, aggregate_id)
    now = timeutils.utcnow()
    _set_metadata(ctxt, agg['id'], metadata, now)
    ctxt.session.execute(t.aggregates.update().where(
        _A.id == agg['id']).values(updated_at=now))
    return _get(ctxt, agg['id'])
