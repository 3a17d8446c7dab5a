# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server tags (microversion 2.26) in a cell database's ``tags`` table.

A tag is a row (resource_id = the instance uuid, tag); an instance has at
most :data:`MAX_TAGS`. The instance row and its boot tags are written in
one transaction (:func:`common.db.instance_records.create_instance`);
destroying an instance removes its tags, as Nova does, so none is left
to archive.
"""

import sqlalchemy as sa

from common.db import api as db_api
from common.db import cell_tables
from common import exception

MAX_TAGS = 50
_TG = cell_tables.tags
_IN = cell_tables.instances


class TooManyTags(exception.BerthException):
    msg_fmt = 'The number of tags exceeded the per-server limit %(limit)d'


def insert_tags(ctx, uuid, tags):
    """Add ``tags`` to ``uuid`` inside the caller's transaction."""
    wanted = sorted(set(tags or ()))
    if wanted:
        ctx.session.execute(_TG.insert(), [
            {'resource_id': uuid, 'tag': tag} for tag in wanted])


def delete_tags(ctx, uuids):
    """Remove every tag of ``uuids`` inside the caller's transaction."""
    for chunk in db_api.chunks(uuids):
        ctx.session.execute(_TG.delete().where(
            _TG.c.resource_id.in_(chunk)))


def _tags(ctx, uuid):
    return sorted(ctx.session.execute(sa.select(_TG.c.tag).where(
        _TG.c.resource_id == uuid)).scalars())


def _check_live(ctx, uuid):
    found = ctx.session.execute(sa.select(_IN.c.id).where(
        _IN.c.uuid == uuid, _IN.c.deleted == 0)).first()
    if found is None:
        raise exception.InstanceNotFound(instance_id=uuid)


def get_tags(ctxt, database, uuid):
    """The tags of ``uuid``, sorted."""
    return database.reader(_tags)(ctxt, uuid)


def tags_by_instance(ctxt, database, uuids):
    """uuid -> sorted tags, for each of ``uuids`` (empty lists included).
    """
    def fetch(ctx):
        result = {uuid: [] for uuid in uuids}
        for chunk in db_api.chunks(result):
            for row in ctx.session.execute(sa.select(_TG).where(
                    _TG.c.resource_id.in_(chunk))):
                result[row.resource_id].append(row.tag)
        for tags in result.values():
            tags.sort()
        return result
    return database.reader(fetch)(ctxt)


def replace_tags(ctxt, database, uuid, tags):
    """Make ``tags`` the tags of the live instance ``uuid``.

    :returns: the new tags, sorted.
    :raises TooManyTags: more than :data:`MAX_TAGS`.
    :raises common.exception.InstanceNotFound: no live instance.
    """
    if len(set(tags)) > MAX_TAGS:
        raise TooManyTags(limit=MAX_TAGS)

    def replace(ctx):
        _check_live(ctx, uuid)
        delete_tags(ctx, [uuid])
        insert_tags(ctx, uuid, tags)
        return _tags(ctx, uuid)
    return database.writer(replace)(ctxt)


def add_tag(ctxt, database, uuid, tag):
    """Add ``tag`` to the live instance ``uuid``.

    :returns: True when added, False when it had the tag already.
    :raises TooManyTags: the instance has :data:`MAX_TAGS` already (its
        own included, as Nova counts first).
    :raises common.exception.InstanceNotFound: no live instance.
    """
    def add(ctx):
        _check_live(ctx, uuid)
        tags = _tags(ctx, uuid)
        if len(tags) >= MAX_TAGS:
            raise TooManyTags(limit=MAX_TAGS)
        if tag in tags:
            return False
        insert_tags(ctx, uuid, [tag])
        return True
    return database.writer(add)(ctxt)


def remove_tag(ctxt, database, uuid, tag):
    """Remove ``tag`` from ``uuid``; False when it did not have it."""
    def remove(ctx):
        return ctx.session.execute(_TG.delete().where(
            _TG.c.resource_id == uuid, _TG.c.tag == tag)).rowcount > 0
    return database.writer(remove)(ctxt)


def remove_all(ctxt, database, uuid):
    """Remove every tag of ``uuid``."""
    def remove(ctx):
        delete_tags(ctx, [uuid])
    database.writer(remove)(ctxt)
