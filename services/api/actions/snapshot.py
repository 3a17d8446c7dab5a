# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server actions: createImage.

``{"createImage": {"name": ..., "metadata": {...}}}`` snapshots a server
into an image of the built-in catalog (doc/behaviours.md §snapshot). The
API checks body, policy, state and the image metadata quota, creates the
image ``queued`` with Nova's snapshot properties, records the
``createImage`` action with task ``image_snapshot`` in one write and
casts ``snapshot_instance`` to the server's compute. The compute has the
driver snapshot the guest and the conductor mark the image ``active``
(compute agents reach no database; the conductor writes the image row),
or delete it when the snapshot fails.

202 with ``{"image_id": ...}`` from 2.45, with a ``Location`` header
naming the image before.
"""

import logging

from common.db import instance_records
from common.objects import instance as instance_obj
from services.api.actions import checks
from services.api import cell_hosts
from services.api import deletion
from services.api import errors
from services.api import images as image_api
from services.api import quota
from services.api.records import images as image_records
from services.api.schemas import types
from services.api import util

LOG = logging.getLogger(__name__)

POLICY = 'os_compute_api:servers:create_image'
# NOTE: Nova's snapshot states for a server booted from an image.
VM_STATES = (instance_obj.ACTIVE, 'stopped', 'paused', 'suspended')
IMAGE_ID_VERSION = (2, 45)
# NOTE: from 2.39 Nova no longer checks the metadata quota on createImage
# (the image proxy APIs went away).
QUOTA_UNCHECKED_FROM = (2, 39)

CREATE_IMAGE = {
    'type': 'object',
    'properties': {
        'createImage': {
            'type': 'object',
            'properties': {
                'name': types.NAME_WITH_BLANKS,
                'metadata': types.METADATA,
            },
            'required': ['name'],
            'additionalProperties': False,
        },
    },
    'required': ['createImage'],
    'additionalProperties': False,
}


def _check_quota(ctxt, conf, metadata):
    """403 "Image metadata limit exceeded" (Nova) past ``[quota]
    metadata_items``.
    """
    limit = quota.limits(ctxt, conf, ctxt.project_id).get('metadata_items')
    if metadata and limit is not None and 0 <= limit < len(metadata):
        raise errors.Forbidden('Image metadata limit exceeded')


def _base_image(ctxt, image_ref):
    """The server's image row, or None when it was deleted since."""
    try:
        return image_records.get_image(ctxt, image_ref)
    except image_records.ImageNotFound:
        return None


def snapshot_values(ctxt, instance, name, metadata, base):
    """(columns, properties) of the snapshot image of ``instance``.

    Nova's snapshot properties: the base image's properties carried over,
    then ``image_type``, ``instance_uuid``, ``user_id`` and
    ``base_image_ref``, then the request's metadata. The owner is the
    server's project; ``min_disk`` at least the flavor's root disk and
    ``min_ram`` the base image's, as Nova sets them.
    """
    flavor = instance.flavor
    root_gb = getattr(flavor, 'root_gb', 0) or 0
    base = base or {}
    properties = dict(base.get('properties') or {})
    properties.update({
        'image_type': 'snapshot',
        'instance_uuid': instance.uuid,
        'user_id': ctxt.user_id,
        'base_image_ref': instance.image_ref or '',
    })
    properties.update(metadata or {})
    columns = {
        'name': name,
        'owner': instance.project_id,
        'visibility': 'private',
        'status': 'queued',
        'disk_format': base.get('disk_format') or 'raw',
        'container_format': base.get('container_format') or 'bare',
        'min_ram': max(int(base.get('min_ram') or 0), 0),
        'min_disk': max(int(base.get('min_disk') or 0), root_gb),
    }
    return columns, properties


def _undo(ctxt, cell, instance, image_id):
    """Clear the task and delete the image when the cast failed: no
    server left ``image_snapshot``, no image left ``queued``.
    """
    try:
        image_records.delete_image(ctxt, image_id)
        instance_records.update_instance(
            ctxt, cell_hosts.database(cell), instance.uuid,
            {'task_state': None},
            expected_task_state=[instance_obj.IMAGE_SNAPSHOT], brief=True)
    except Exception:
        LOG.exception('Could not undo the snapshot of %s', instance.uuid)


def create_image(req, value):
    """``createImage``: 202, the new image's id (2.45) or Location.

    :raises errors.BadRequest: a bad body; Glance is configured (Berth
        snapshots only into its built-in catalog).
    :raises errors.Forbidden: the policy, or over the metadata quota
        (up to 2.38, as Nova).
    :raises errors.Conflict: a state Nova does not snapshot from.
    """
    util.validate({'createImage': value}, CREATE_IMAGE)
    instance, cell = checks.find(req, POLICY)
    ctxt = util.context(req)
    conf = util.conf(req)
    checks.check_state(instance, 'createImage', VM_STATES)
    metadata = value.get('metadata') or {}
    if not util.at_least(req, QUOTA_UNCHECKED_FROM):
        _check_quota(ctxt, conf, metadata)
    if not image_api.builtin(conf):
        raise errors.BadRequest('Berth snapshots servers only into its '
                                'built-in image catalog; [glance] is '
                                'configured.')
    if cell is None:
        raise checks.invalid_state(instance, 'createImage', 'vm_state',
                                   instance.vm_state)
    columns, properties = snapshot_values(
        ctxt, instance, value['name'], metadata,
        _base_image(ctxt, instance.image_ref))
    image = image_records.create_image(ctxt, columns, properties=properties)
    try:
        checks.begin(req, instance, cell, 'createImage', 'createImage',
                     {'task_state': instance_obj.IMAGE_SNAPSHOT})
    except Exception:
        # NOTE: a refused request leaves no image behind.
        image_records.delete_image(ctxt, image['id'])
        raise
    try:
        deletion.compute_api(cell).snapshot_instance(
            ctxt, instance.host, instance.uuid, image['id'])
    except Exception as exc:
        _undo(ctxt, cell, instance, image['id'])
        LOG.exception('Could not cast the snapshot of %s', instance.uuid)
        raise errors.ServiceUnavailable(
            'The snapshot of %s could not be started: %s'
            % (instance.uuid, exc))
    if util.at_least(req, IMAGE_ID_VERSION):
        return util.json_response({'image_id': image['id']}, status=202)
    resp = util.json_response(None, status=202)
    resp.headers['Location'] = util.self_link(req, 'images', image['id'])
    return resp


ACTIONS = {'createImage': create_image}
