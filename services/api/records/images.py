# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The built-in image catalog: images and their properties, no image data.

Used when no Glance is configured. An image is a dict of its row with
``tags`` (list) and ``properties`` (the user-defined keys, e.g.
``hw_cpu_policy``), the two JSON columns. Image data is never kept: an
upload records only its size and checksum, which is all a scheduler
simulation needs.
"""

import json
import uuid as uuid_lib

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api_tables
from common import exception
from services.api import records

images = api_tables.images
_I = images.c
# Columns a caller may set directly; everything else goes to properties.
COLUMNS = ('name', 'visibility', 'protected', 'os_hidden', 'owner',
           'disk_format', 'container_format', 'min_ram', 'min_disk',
           'status', 'size', 'checksum')


# NOTE: every boot reads its image; built once, bound per call.
_IMAGE = sa.select(images).where(_I.uuid == sa.bindparam('image_id'))


class ImageNotFound(exception.NotFound):
    msg_fmt = 'Image %(image_id)s could not be found.'


class ImageExists(exception.BerthException):
    msg_fmt = 'Image with identifier %(image_id)s already exists.'


def _image(row):
    image = dict(row._mapping)
    image['id'] = image.pop('uuid')
    image['tags'] = json.loads(image['tags'] or '[]')
    image['properties'] = json.loads(image['properties'] or '{}')
    return image


def _get_row(conn, image_id):
    """The row of ``image_id``, read on ``conn`` (Connection or Session).
    """
    row = conn.execute(_IMAGE, {'image_id': image_id}).first()
    if row is None:
        raise ImageNotFound(image_id=image_id)
    return row


@records.reader_connection
def get_image(ctxt, image_id):
    """The image ``image_id``.

    :raises ImageNotFound: when there is none.
    """
    return _image(_get_row(ctxt.connection, image_id))


@records.reader
def list_images(ctxt, project_id=None, is_admin=False, filters=None):
    """Images the caller may see, oldest first.

    :param filters: column -> value equality filters (name, status,
        visibility, owner...).
    """
    query = sa.select(images).order_by(_I.created_at, _I.id)
    if not is_admin:
        query = query.where(sa.or_(_I.visibility.in_(['public',
                                                      'community']),
                                   _I.owner == project_id))
    for column, value in (filters or {}).items():
        query = query.where(images.c[column] == value)
    return [_image(row) for row in ctxt.session.execute(query)]


@records.writer
def create_image(ctxt, values, tags=(), properties=None, image_id=None):
    """Create an image.

    :param values: COLUMNS values (status defaults to ``queued``).
    :raises ImageExists: ``image_id`` is taken.
    """
    image_id = image_id or str(uuid_lib.uuid4())
    if ctxt.session.execute(sa.select(_I.id).where(
            _I.uuid == image_id)).first():
        raise ImageExists(image_id=image_id)
    now = timeutils.utcnow()
    row = {'status': 'queued', 'visibility': 'shared', 'protected': False,
           'os_hidden': False, 'min_ram': 0, 'min_disk': 0}
    row.update(values)
    ctxt.session.execute(images.insert().values(
        uuid=image_id, tags=json.dumps(sorted(set(tags))),
        properties=json.dumps(properties or {}), created_at=now,
        updated_at=now, **row))
    return _image(_get_row(ctxt.session, image_id))


@records.writer
def update_image(ctxt, image_id, values=None, tags=None, properties=None):
    """Replace columns, the tag list and/or the whole property dict."""
    _get_row(ctxt.session, image_id)
    changes = dict(values or {})
    if tags is not None:
        changes['tags'] = json.dumps(sorted(set(tags)))
    if properties is not None:
        changes['properties'] = json.dumps(properties)
    changes['updated_at'] = timeutils.utcnow()
    ctxt.session.execute(images.update().where(
        _I.uuid == image_id).values(**changes))
    return _image(_get_row(ctxt.session, image_id))


@records.writer
def delete_image(ctxt, image_id):
    """Delete an image."""
    _get_row(ctxt.session, image_id)
    ctxt.session.execute(images.delete().where(_I.uuid == image_id))
