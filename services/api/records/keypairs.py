# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Key pairs in the api database (``key_pairs``): per user, as Nova's.

A name is unique for its user; the quota (``key_pairs``) limits how many
one user has, counted in the transaction that adds one.
"""

from oslo_db import exception as db_exc
from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api_tables as t
from common import exception
from services.api import records

_K = t.key_pairs.c


class KeypairExists(exception.BerthException):
    msg_fmt = "Key pair '%(key_name)s' already exists."


class KeypairNotFound(exception.BerthException):
    msg_fmt = 'Keypair %(name)s not found for user %(user_id)s'


class KeypairLimitExceeded(exception.BerthException):
    msg_fmt = 'Quota exceeded, too many key pairs.'


class MarkerNotFound(exception.BerthException):
    msg_fmt = 'Marker %(marker)s could not be found.'


def _view(row):
    return {'id': row.id, 'name': row.name, 'user_id': row.user_id,
            'fingerprint': row.fingerprint, 'public_key': row.public_key,
            'type': row.type, 'created_at': row.created_at,
            'updated_at': row.updated_at}


def _get(ctxt, user_id, name):
    row = ctxt.session.execute(sa.select(t.key_pairs).where(
        _K.user_id == user_id, _K.name == name)).first()
    if row is None:
        raise KeypairNotFound(name=name, user_id=user_id)
    return _view(row)


@records.reader
def get_keypair(ctxt, user_id, name):
    """The key pair ``name`` of ``user_id``.

    :raises KeypairNotFound: there is none.
    """
    return _get(ctxt, user_id, name)


@records.reader
def list_keypairs(ctxt, user_id, limit=None, marker=None):
    """The key pairs of ``user_id`` in creation order (id).

    :param marker: the name of the last key pair of the previous page.
    :raises MarkerNotFound: the user has no key pair ``marker``.
    """
    query = sa.select(t.key_pairs).where(_K.user_id == user_id).order_by(
        _K.id)
    if marker is not None:
        found = ctxt.session.execute(sa.select(_K.id).where(
            _K.user_id == user_id, _K.name == marker)).scalar()
        if found is None:
            raise MarkerNotFound(marker=marker)
        query = query.where(_K.id > found)
    if limit is not None:
        query = query.limit(limit)
    return [_view(row) for row in ctxt.session.execute(query)]


@records.reader
def count_keypairs(ctxt, user_id):
    """How many key pairs ``user_id`` has."""
    return ctxt.session.execute(sa.select(sa.func.count()).select_from(
        t.key_pairs).where(_K.user_id == user_id)).scalar()


@records.writer
def create_keypair(ctxt, user_id, name, key_type, public_key, fingerprint,
                   limit=-1):
    """Add a key pair, unless the name is taken or the quota is full.

    :param limit: the most key pairs the user may have (-1: no limit).
    :raises KeypairExists: the user has a key pair of that name.
    :raises KeypairLimitExceeded: the user has ``limit`` already.
    """
    taken = ctxt.session.execute(sa.select(_K.id).where(
        _K.user_id == user_id, _K.name == name)).first()
    if taken is not None:
        raise KeypairExists(key_name=name)
    if limit is not None and limit >= 0:
        used = ctxt.session.execute(sa.select(sa.func.count()).select_from(
            t.key_pairs).where(_K.user_id == user_id)).scalar()
        if used + 1 > limit:
            raise KeypairLimitExceeded()
    try:
        new_id = ctxt.session.execute(t.key_pairs.insert().values(
            name=name, user_id=user_id, type=key_type,
            public_key=public_key, fingerprint=fingerprint,
            created_at=timeutils.utcnow())).inserted_primary_key[0]
    except db_exc.DBDuplicateEntry:
        raise KeypairExists(key_name=name)
    return _view(ctxt.session.execute(sa.select(t.key_pairs).where(
        _K.id == new_id)).first())


@records.writer
def delete_keypair(ctxt, user_id, name):
    """Delete a key pair.

    :raises KeypairNotFound: there is none.
    """
    deleted = ctxt.session.execute(t.key_pairs.delete().where(
        _K.user_id == user_id, _K.name == name)).rowcount
    if not deleted:
        raise KeypairNotFound(name=name, user_id=user_id)
