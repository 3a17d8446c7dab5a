# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The built-in image catalog at /image: a Glance v2 subset.

Served when no Glance is configured, so that ``openstack image create
--property hw_cpu_policy=dedicated img`` and ``openstack image list``
work against ``berth-api`` (with ``OS_IMAGE_ENDPOINT_OVERRIDE`` pointing
at ``<api>/image``). Images hold properties, not data: an image is
``active`` from its creation (there is nothing to wait for), and an
upload is accepted and only measured (size, checksum).
"""

import hashlib

from services.api import errors
from services.api import images as image_api
from services.api import policies
from services.api.records import images as image_records
from services.api.schemas import images as schema
from services.api import util

GLANCE_VERSION = '2.16'
_FILTERS = ('name', 'status', 'visibility', 'owner', 'disk_format',
            'container_format')
_COLUMN_FIELDS = ('name', 'visibility', 'protected', 'os_hidden', 'owner',
                  'disk_format', 'container_format', 'min_ram', 'min_disk')


def _require_builtin(req):
    if not image_api.builtin(util.conf(req)):
        raise errors.NotFound('The built-in image catalog is off: [glance] '
                              'names the image service.')


def versions(req):
    """GET /image: the Glance version document (no token needed)."""
    _require_builtin(req)
    href = req.application_url.rstrip('/') + '/image/v2/'
    return util.json_response({'versions': [
        {'id': 'v%s' % GLANCE_VERSION, 'status': 'CURRENT',
         'links': [{'rel': 'self', 'href': href}]},
        {'id': 'v2.0', 'status': 'SUPPORTED',
         'links': [{'rel': 'self', 'href': href}]},
    ]})


def view(image):
    """An image as Glance v2 shows it: fields, then flattened properties.
    """
    body = dict(image['properties'])
    body.update({
        'id': image['id'],
        'name': image['name'],
        'status': image['status'],
        'visibility': image['visibility'],
        'protected': bool(image['protected']),
        'os_hidden': bool(image['os_hidden']),
        'owner': image['owner'],
        'checksum': image['checksum'],
        'os_hash_algo': None,
        'os_hash_value': None,
        'size': image['size'],
        'virtual_size': None,
        'min_ram': image['min_ram'],
        'min_disk': image['min_disk'],
        'disk_format': image['disk_format'],
        'container_format': image['container_format'],
        'tags': list(image['tags']),
        'created_at': util.iso(image['created_at']),
        'updated_at': util.iso(image['updated_at']),
        'self': '/v2/images/%s' % image['id'],
        'file': '/v2/images/%s/file' % image['id'],
        'schema': '/v2/schemas/image',
    })
    return body


def _check_owner(ctx, owner, message):
    """403 for a non-admin naming another project the owner (Glance)."""
    if owner != ctx.project_id and not ctx.is_admin:
        raise errors.Forbidden(message)


def _get(req, action):
    ctx = util.context(req)
    try:
        image = image_records.get_image(ctx, req.urlvars['image_id'])
    except image_records.ImageNotFound as exc:
        raise errors.NotFound(str(exc))
    if (image['visibility'] not in ('public', 'community') and
            image['owner'] != ctx.project_id and not ctx.is_admin):
        raise errors.NotFound('Image %s could not be found.' % image['id'])
    policies.authorize(req, action, {'project_id': image['owner']})
    return image


# The path's image if the caller may see it and ``action`` it (the
# compute API's /images proxy uses it too).
get_visible = _get


def list_images(req):
    """GET /image/v2/images: filters name, status, visibility, owner...

    ``limit`` and ``marker`` page, oldest first.
    """
    _require_builtin(req)
    policies.authorize(req, 'image:get_images')
    ctx = util.context(req)
    filters = {k: req.GET[k] for k in _FILTERS if k in req.GET}
    found = image_records.list_images(ctx, ctx.project_id, ctx.is_admin,
                                      filters)
    marker = req.GET.get('marker')
    if marker:
        ids = [i['id'] for i in found]
        if marker not in ids:
            raise errors.BadRequest('marker %s not found' % marker)
        found = found[ids.index(marker) + 1:]
    limit = util.query_int(req, 'limit')
    body = {'images': [view(i) for i in found[:limit]],
            'first': '/v2/images', 'schema': '/v2/schemas/images'}
    if limit is not None and len(found) > limit:
        body['next'] = '/v2/images?marker=%s&limit=%d' % (
            found[limit - 1]['id'], limit)
    return util.json_response(body)


def show_image(req):
    """GET /image/v2/images/{image_id}."""
    _require_builtin(req)
    return util.json_response(view(_get(req, 'image:get_image')))


def create_image(req):
    """POST /image/v2/images: fields and properties; 201 with the image.

    :raises errors.Forbidden: public visibility without the right.
    :raises errors.Conflict: the given id is taken.
    """
    _require_builtin(req)
    policies.authorize(req, 'image:add_image')
    data = util.extract_json(req, schema.CREATE)
    ctx = util.context(req)
    if data.get('visibility') == 'public':
        policies.authorize(req, 'image:publicize_image')
    values = {k: data[k] for k in _COLUMN_FIELDS if k in data}
    values.setdefault('owner', ctx.project_id)
    _check_owner(ctx, values['owner'], "You are not permitted to create "
                 "images owned by '%s'." % values['owner'])
    # NOTE: no data will ever be needed, so the image is usable at once.
    values['status'] = 'active'
    properties = {k: v for k, v in data.items()
                  if k not in _COLUMN_FIELDS and k not in ('id', 'tags')}
    try:
        image = image_records.create_image(
            ctx, values, tags=data.get('tags', ()), properties=properties,
            image_id=data.get('id'))
    except image_records.ImageExists as exc:
        raise errors.Conflict(str(exc))
    resp = util.json_response(view(image), status=201)
    resp.headers['Location'] = '%s/image/v2/images/%s' % (
        req.application_url.rstrip('/'), image['id'])
    return resp


def _apply_patch(image, operations):
    """(columns, tags, properties) after a JSON-patch list."""
    columns = {}
    tags = None
    properties = dict(image['properties'])
    for op in operations:
        key = op['path'][1:]
        if op['op'] != 'remove' and 'value' not in op:
            raise errors.BadRequest('Operation %s on %s needs a value.'
                                    % (op['op'], op['path']))
        if key in ('id', 'status', 'size', 'checksum', 'created_at',
                   'updated_at', 'self', 'file', 'schema'):
            raise errors.Forbidden('Attribute %s is read-only.' % key)
        if op['op'] == 'remove':
            tags = _remove(key, properties, tags)
            continue
        value = op['value']
        if key not in _COLUMN_FIELDS and key != 'tags':
            if op['op'] == 'replace' and key not in properties:
                raise errors.Conflict('Property %s does not exist.' % key)
            # NOTE: property values are strings; other scalars have
            # always been taken and kept as their text.
            value = str(value)
        # NOTE: as Glance, the patched value must be what a create takes.
        util.validate({key: value}, schema.CREATE)
        if key == 'tags':
            tags = list(value)
        elif key in _COLUMN_FIELDS:
            columns[key] = value
        else:
            properties[key] = value
    return columns, tags, properties


def _remove(key, properties, tags):
    """Apply a ``remove`` of ``key``; the tag list afterwards."""
    if key == 'tags':
        return []
    if key in _COLUMN_FIELDS:
        raise errors.Forbidden('Attribute %s is reserved.' % key)
    if key not in properties:
        raise errors.Conflict('Property %s does not exist.' % key)
    del properties[key]
    return tags


def update_image(req):
    """PATCH /image/v2/images/{image_id}: Glance JSON-patch operations."""
    _require_builtin(req)
    image = _get(req, 'image:modify_image')
    operations = util.extract_json(req, schema.PATCH)
    columns, tags, properties = _apply_patch(image, operations)
    if columns.get('visibility') == 'public':
        policies.authorize(req, 'image:publicize_image')
    # NOTE: as Glance, only an admin moves an image to another owner.
    if ('owner' in columns and columns['owner'] != image['owner'] and
            not util.context(req).is_admin):
        raise errors.Forbidden("You are not permitted to modify 'owner' "
                               "on this image.")
    image = image_records.update_image(util.context(req), image['id'],
                                       columns, tags, properties)
    return util.json_response(view(image))


def delete_image(req):
    """DELETE /image/v2/images/{image_id}.

    :raises errors.Forbidden: the image is protected.
    """
    _require_builtin(req)
    delete_unprotected(req, _get(req, 'image:delete_image'))
    return util.no_content(204)


def delete_unprotected(req, image):
    """Delete ``image`` (a record the caller may delete) from the catalog.

    :raises errors.Forbidden: the image is protected.
    """
    if image['protected']:
        raise errors.Forbidden('Image %s is protected and cannot be '
                               'deleted.' % image['id'])
    image_records.delete_image(util.context(req), image['id'])


def upload_image(req):
    """PUT /image/v2/images/{image_id}/file: measured, then dropped."""
    _require_builtin(req)
    image = _get(req, 'image:upload_image')
    digest = hashlib.md5(usedforsecurity=False)
    size = 0
    stream = req.body_file
    while True:
        chunk = stream.read(1 << 20)
        if not chunk:
            break
        digest.update(chunk)
        size += len(chunk)
    image_records.update_image(util.context(req), image['id'], {
        'size': size, 'checksum': digest.hexdigest(), 'status': 'active'})
    return util.no_content(204)


def download_image(req):
    """GET /image/v2/images/{image_id}/file: 204, there is no data."""
    _require_builtin(req)
    _get(req, 'image:get_image')
    return util.no_content(204)


def add_tag(req):
    """PUT /image/v2/images/{image_id}/tags/{tag}."""
    _require_builtin(req)
    image = _get(req, 'image:modify_image')
    tags = set(image['tags']) | {req.urlvars['tag']}
    image_records.update_image(util.context(req), image['id'], tags=tags)
    return util.no_content(204)


def delete_tag(req):
    """DELETE /image/v2/images/{image_id}/tags/{tag}."""
    _require_builtin(req)
    image = _get(req, 'image:modify_image')
    if req.urlvars['tag'] not in image['tags']:
        raise errors.NotFound('Tag %s not found.' % req.urlvars['tag'])
    tags = set(image['tags']) - {req.urlvars['tag']}
    image_records.update_image(util.context(req), image['id'], tags=tags)
    return util.no_content(204)
