# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /flavors: list, show, create, update, delete.

Everybody may list and show the public flavors and the private ones their
project was given; only admins create, describe and delete flavors, and
see every flavor with ``is_public=None``.
"""

import uuid

from oslo_utils import strutils

from services.api import errors
from services.api import policies
from services.api.records import flavors as flavor_records
from services.api.schemas import flavors as schema
from services.api.schemas import types
from services.api import util

DESCRIPTION_VERSION = (2, 55)
EXTRA_SPECS_VERSION = (2, 61)
INT_SWAP_VERSION = (2, 75)
_SORT_KEYS = {'id': 'flavorid', 'flavorid': 'flavorid', 'name': 'name',
              'memory_mb': 'memory_mb', 'vcpus': 'vcpus',
              'root_gb': 'root_gb', 'ephemeral_gb': 'ephemeral_gb',
              'swap': 'swap', 'rxtx_factor': 'rxtx_factor',
              'is_public': 'is_public', 'created_at': 'created_at',
              'updated_at': 'updated_at', 'description': 'description'}


def view(req, flavor, detail=True):
    """A flavor as the request's microversion shows it."""
    body = {'id': flavor['flavorid'], 'name': flavor['name'],
            'links': util.links(req, 'flavors', flavor['flavorid'])}
    if util.at_least(req, DESCRIPTION_VERSION):
        body['description'] = flavor['description']
    if not detail:
        return body
    swap = flavor['swap']
    if not swap and not util.at_least(req, INT_SWAP_VERSION):
        swap = ''
    body.update({
        'ram': flavor['memory_mb'],
        'disk': flavor['root_gb'],
        'vcpus': flavor['vcpus'],
        'swap': swap,
        'OS-FLV-EXT-DATA:ephemeral': flavor['ephemeral_gb'],
        'OS-FLV-DISABLED:disabled': bool(flavor['disabled']),
        'os-flavor-access:is_public': bool(flavor['is_public']),
        'rxtx_factor': flavor['rxtx_factor'],
    })
    if util.at_least(req, EXTRA_SPECS_VERSION) and policies.authorize(
            req, 'os_compute_api:os-flavor-extra-specs:index', fatal=False):
        body['extra_specs'] = dict(flavor['extra_specs'])
    return body


def _is_admin(req):
    return policies.authorize(req, 'os_compute_api:os-flavor-manage:create',
                              fatal=False)


def get_visible(req, flavorid):
    """The flavor ``flavorid`` if the caller may use it.

    :raises errors.NotFound: no such flavor, or a private one the
        caller's project was not given.
    """
    ctx = util.context(req)
    try:
        flavor = flavor_records.get_flavor(ctx, flavorid)
    except flavor_records.FlavorNotFound as exc:
        raise errors.NotFound(str(exc))
    if (not flavor['is_public'] and ctx.project_id not in flavor['projects']
            and not _is_admin(req)):
        raise errors.NotFound('Flavor %s could not be found.' % flavorid)
    return flavor


def _is_public_filter(req):
    """True, False or None (all) for the caller and its ``is_public``."""
    if not _is_admin(req):
        return True
    value = req.GET.get('is_public')
    if value is None:
        return True
    if value.strip().lower() == 'none':
        return None
    try:
        return strutils.bool_from_string(value, strict=True)
    except ValueError:
        raise errors.BadRequest('Invalid is_public filter [%s]' % value)


def _list(req, detail):
    ctx = util.context(req)
    sort_key = _SORT_KEYS.get(req.GET.get('sort_key', 'flavorid'))
    sort_dir = req.GET.get('sort_dir', 'asc')
    if sort_key is None or sort_dir not in ('asc', 'desc'):
        raise errors.BadRequest('Invalid sort_key or sort_dir.')
    limit = min(util.query_int(req, 'limit', util.conf(req).api.max_limit),
                util.conf(req).api.max_limit)
    is_public = _is_public_filter(req)
    try:
        flavors = flavor_records.list_flavors(
            ctx, is_public=is_public,
            project_id=None if _is_admin(req) else ctx.project_id,
            min_memory_mb=util.query_int(req, 'minRam'),
            min_root_gb=util.query_int(req, 'minDisk'),
            sort_key=sort_key, sort_dir=sort_dir, limit=limit,
            marker=req.GET.get('marker'))
    except flavor_records.FlavorNotFound:
        raise errors.BadRequest('marker [%s] not found'
                                % req.GET.get('marker'))
    return util.json_response(
        {'flavors': [view(req, f, detail=detail) for f in flavors]})


def list_flavors(req):
    """GET /flavors: ids, names and links."""
    return _list(req, detail=False)


def list_flavors_detail(req):
    """GET /flavors/detail: every field."""
    return _list(req, detail=True)


def show_flavor(req):
    """GET /flavors/{flavor_id}.

    :raises errors.NotFound: unknown, or private and not shared.
    """
    flavor = get_visible(req, req.urlvars['flavor_id'])
    return util.json_response({'flavor': view(req, flavor)})


def _create_values(req, body):
    data = body['flavor']
    flavorid = data.get('id')
    if flavorid is None or str(flavorid).strip().lower() == 'auto':
        flavorid = str(uuid.uuid4())
    values = {
        'flavorid': str(flavorid),
        'name': data['name'],
        'memory_mb': types.to_int(data['ram']),
        'vcpus': types.to_int(data['vcpus']),
        'root_gb': types.to_int(data['disk']),
        'ephemeral_gb': types.to_int(
            data.get('OS-FLV-EXT-DATA:ephemeral', 0)),
        'swap': types.to_int(data.get('swap', 0) or 0),
        'rxtx_factor': float(data.get('rxtx_factor', 1.0)),
        'is_public': types.to_bool(
            data.get('os-flavor-access:is_public', True)),
        'description': data.get('description'),
    }
    for field, minimum in (('memory_mb', 1), ('vcpus', 1), ('root_gb', 0),
                           ('ephemeral_gb', 0), ('swap', 0)):
        if values[field] < minimum:
            raise errors.BadRequest(
                'Invalid input for field/attribute %s. Value: %s. Must be '
                '>= %d.' % (field, values[field], minimum))
    return values


def create_flavor(req):
    """POST /flavors (admin).

    :raises errors.Conflict: the name or the id exists.
    """
    policies.authorize(req, 'os_compute_api:os-flavor-manage:create')
    body = util.extract_json(req, schema.CREATE_V255 if util.at_least(
        req, DESCRIPTION_VERSION) else schema.CREATE)
    values = _create_values(req, body)
    try:
        flavor = flavor_records.create_flavor(util.context(req), values)
    except flavor_records.FlavorExists as exc:
        raise errors.Conflict(str(exc))
    return util.json_response({'flavor': view(req, flavor)})


def update_flavor(req):
    """PUT /flavors/{flavor_id}: change the description (2.55, admin)."""
    util.require_version(req, DESCRIPTION_VERSION)
    policies.authorize(req, 'os_compute_api:os-flavor-manage:update')
    body = util.extract_json(req, schema.UPDATE_V255)
    try:
        flavor = flavor_records.update_description(
            util.context(req), req.urlvars['flavor_id'],
            body['flavor']['description'])
    except flavor_records.FlavorNotFound as exc:
        raise errors.NotFound(str(exc))
    return util.json_response({'flavor': view(req, flavor)})


def delete_flavor(req):
    """DELETE /flavors/{flavor_id} (admin).

    Instances keep their own copy of the flavor, so deleting one that is
    in use changes nothing for them.
    """
    policies.authorize(req, 'os_compute_api:os-flavor-manage:delete')
    try:
        flavor_records.delete_flavor(util.context(req),
                                     req.urlvars['flavor_id'])
    except flavor_records.FlavorNotFound as exc:
        raise errors.NotFound(str(exc))
    return util.no_content(202)
