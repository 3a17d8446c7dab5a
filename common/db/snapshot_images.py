# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The end of a server snapshot's image in the built-in catalog.

The API creates the image ``queued`` (services/api/actions/snapshot.py);
the compute agent that took the snapshot cannot reach the api database
(doc/architecture.md), so the conductor finishes the image here: active
with the snapshot's size and checksum, or deleted when the snapshot
failed, so that no half-written image is left.
"""

import json

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api_tables

_IM = api_tables.images
# Only these may be set on a snapshot's image.
FINISH_FIELDS = ('status', 'size', 'checksum')


def finish_image(ctxt, database, image_id, values):
    """Set ``values`` on image ``image_id``, or delete it (values None).

    Only a ``queued`` or ``saving`` image is changed: an image the user
    deleted or changed meanwhile is left as it is.

    :returns: True when an image was changed or deleted.
    :raises ValueError: a field other than FINISH_FIELDS.
    """
    if values is not None:
        unknown = set(values) - set(FINISH_FIELDS)
        if unknown:
            raise ValueError('not settable on a snapshot image: %s'
                             % ', '.join(sorted(unknown)))
    pending = sa.and_(_IM.c.uuid == image_id,
                      _IM.c.status.in_(('queued', 'saving')))

    def finish(ctx):
        if values is None:
            statement = _IM.delete().where(pending)
        else:
            statement = _IM.update().where(pending).values(
                updated_at=timeutils.utcnow(), **values)
        return ctx.connection.execute(statement).rowcount > 0
    return database.writer_connection(finish)(ctxt)


def drop_pending_of_instance(ctxt, database, instance_uuid):
    """Delete the queued snapshot images of ``instance_uuid`` (a snapshot
    a compute restart interrupted); the number deleted.
    """
    pending = sa.and_(_IM.c.status.in_(('queued', 'saving')),
                      _IM.c.properties.contains(instance_uuid))

    def drop(ctx):
        dropped = 0
        for row in ctx.connection.execute(
                sa.select(_IM.c.uuid, _IM.c.properties).where(pending)):
            props = json.loads(row.properties or '{}')
            if props.get('image_type') == 'snapshot' and \
                    props.get('instance_uuid') == instance_uuid:
                ctx.connection.execute(_IM.delete().where(
                    _IM.c.uuid == row.uuid))
                dropped += 1
        return dropped
    return database.writer_connection(drop)(ctxt)
