# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The deprecated /images proxy (below 2.36; 404 from 2.36).

Nova's compute API proxied these reads, deletes and metadata writes to
Glance; Berth answers them over its built-in image catalog (:mod:`services.api.
handlers.images`), with the same visibility and ownership rules as the
catalog's Glance paths. With an external Glance (``[glance]``) the proxy
is a 501: Berth's Glance client only fetches single images for boots.
"""

from services.api import errors
from services.api.handlers import images as catalog
from services.api import images as image_api
from services.api import policies
from services.api import quota
from services.api.records import images as image_records
from services.api.schemas import image_metadata as metadata_schema
from services.api import util

REMOVED_VERSION = (2, 36)
_STATUS = {'active': 'ACTIVE', 'queued': 'SAVING', 'saving': 'SAVING',
           'uploading': 'SAVING', 'importing': 'SAVING',
           'deleted': 'DELETED', 'pending_delete': 'DELETED',
           'killed': 'ERROR'}
_PROGRESS = {'ACTIVE': 100, 'SAVING': 25}


def _check(req):
    if util.at_least(req, REMOVED_VERSION):
        raise errors.NotFound('The resource could not be found.')
    if not image_api.builtin(util.conf(req)):
        raise errors.NotImplementedYet(
            'The /images proxy serves only the built-in image catalog; '
            'ask the image service ([glance]) directly.')


def _links(req, image_id):
    base = req.application_url.rstrip('/')
    return util.links(req, 'images', image_id) + [
        {'rel': 'alternate', 'type': 'application/vnd.openstack.image',
         'href': '%s/image/v2/images/%s' % (base, image_id)}]


def _basic(req, image):
    return {'id': image['id'], 'name': image['name'],
            'links': _links(req, image['id'])}


def _detail(req, image):
    status = _STATUS.get(image['status'], 'UNKNOWN')
    body = _basic(req, image)
    body.update({
        'minRam': image['min_ram'], 'minDisk': image['min_disk'],
        'metadata': dict(image['properties']),
        'created': util.iso(image['created_at']),
        'updated': util.iso(image['updated_at']),
        'status': status, 'progress': _PROGRESS.get(status, 0),
        'OS-EXT-IMG-SIZE:size': image['size'],
    })
    server = image['properties'].get('instance_uuid')
    if server:
        body['server'] = {'id': server,
                          'links': util.links(req, 'servers', server)}
    return body


def _list(req, view):
    _check(req)
    policies.authorize(req, 'image:get_images')
    ctx = util.context(req)
    filters = {k: req.GET[k] for k in ('name',) if k in req.GET}
    found = image_records.list_images(ctx, ctx.project_id, ctx.is_admin,
                                      filters)
    status = req.GET.get('status')
    if status:
        found = [i for i in found
                 if _STATUS.get(i['status'], 'UNKNOWN') == status.upper()]
    marker = req.GET.get('marker')
    if marker:
        ids = [i['id'] for i in found]
        if marker not in ids:
            raise errors.BadRequest('marker [%s] not found' % marker)
        found = found[ids.index(marker) + 1:]
    limit = util.query_int(req, 'limit')
    if limit is not None:
        found = found[:limit]
    return util.json_response({'images': [view(req, i) for i in found]})


def list_images(req):
    """GET /images: ids, names and links."""
    return _list(req, _basic)


def list_images_detail(req):
    """GET /images/detail."""
    return _list(req, _detail)


def _image(req, rule='image:get_image'):
    _check(req)
    return catalog.get_visible(req, rule)


def show_image(req):
    """GET /images/{image_id}."""
    return util.json_response({'image': _detail(req, _image(req))})


def delete_image(req):
    """DELETE /images/{image_id}: 204.

    :raises errors.Forbidden: the image is protected.
    """
    catalog.delete_unprotected(req, _image(req, 'image:delete_image'))
    return util.no_content(204)


def list_metadata(req):
    """GET /images/{image_id}/metadata."""
    return util.json_response({'metadata': dict(
        _image(req)['properties'])})


def show_metadata(req):
    """GET /images/{image_id}/metadata/{key}."""
    properties = _image(req)['properties']
    key = req.urlvars['meta_key']
    if key not in properties:
        raise errors.NotFound('Image %s has no metadata item %s.'
                              % (req.urlvars['image_id'], key))
    return util.json_response({'meta': {key: properties[key]}})


def _write(req, properties):
    """Store ``properties`` as the image's, within the metadata quota.

    :raises errors.Forbidden: more items than ``metadata_items`` allows.
    """
    ctx = util.context(req)
    limit = quota.limits(ctx, util.conf(req), ctx.project_id)[
        'metadata_items']
    if 0 <= limit < len(properties):
        raise errors.Forbidden('Quota exceeded for metadata_items: at most '
                               '%d metadata items.' % limit)
    return image_records.update_image(ctx, req.urlvars['image_id'],
                                      properties=properties)['properties']


def replace_metadata(req):
    """PUT /images/{image_id}/metadata: the new metadata, all of it."""
    _image(req, 'image:modify_image')
    data = util.extract_json(req, metadata_schema.METADATA)['metadata']
    return util.json_response({'metadata': _write(req, dict(data))})


def update_metadata(req):
    """POST /images/{image_id}/metadata: merged into the metadata."""
    image = _image(req, 'image:modify_image')
    data = util.extract_json(req, metadata_schema.METADATA)['metadata']
    properties = dict(image['properties'])
    properties.update(data)
    return util.json_response({'metadata': _write(req, properties)})


def set_metadata_item(req):
    """PUT /images/{image_id}/metadata/{key}: one item.

    :raises errors.BadRequest: the body names another key.
    """
    image = _image(req, 'image:modify_image')
    meta = util.extract_json(req, metadata_schema.META)['meta']
    key = req.urlvars['meta_key']
    if key not in meta:
        raise errors.BadRequest('Request body and URI mismatch')
    properties = dict(image['properties'])
    properties[key] = meta[key]
    _write(req, properties)
    return util.json_response({'meta': {key: meta[key]}})


def delete_metadata_item(req):
    """DELETE /images/{image_id}/metadata/{key}: 204."""
    image = _image(req, 'image:modify_image')
    key = req.urlvars['meta_key']
    properties = dict(image['properties'])
    if key not in properties:
        raise errors.NotFound('Image %s has no metadata item %s.'
                              % (image['id'], key))
    del properties[key]
    image_records.update_image(util.context(req), image['id'],
                               properties=properties)
    return util.no_content(204)
