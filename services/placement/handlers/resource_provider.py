# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /resource_providers and /resource_providers/{uuid}."""

import uuid as uuidlib

from services.placement import errors
from services.placement.objects import resource_provider as rp_obj
from services.placement import policies
from services.placement import query
from services.placement.schemas import resource_provider as schema
from services.placement import util

# (link rel, path suffix, microversion that added it)
_LINKS = [
    ('self', '', (1, 0)),
    ('inventories', '/inventories', (1, 0)),
    ('usages', '/usages', (1, 0)),
    ('aggregates', '/aggregates', (1, 1)),
    ('traits', '/traits', (1, 6)),
    ('allocations', '/allocations', (1, 11)),
]


def _location(uuid):
    return '/resource_providers/%s' % uuid


def serialize(req, provider):
    """The JSON view of a provider at the request's microversion."""
    version = util.version(req)
    base = _location(provider['uuid'])
    data = {
        'uuid': provider['uuid'],
        'name': provider['name'],
        'generation': provider['generation'],
        # NOTE: relative links, as upstream: placement is often served
        # under a path prefix it cannot know.
        'links': [{'rel': rel, 'href': base + suffix}
                  for rel, suffix, since in _LINKS if version >= since],
    }
    if version >= (1, 14):
        data['parent_provider_uuid'] = provider['parent_provider_uuid']
        data['root_provider_uuid'] = provider['root_provider_uuid']
    return data


def _timestamp(provider):
    return provider['updated_at'] or provider['created_at']


def list_resource_providers(req):
    """GET /resource_providers, filtered by the query string.

    Filters by microversion: name and uuid; member_of (1.3, repeated 1.24,
    forbidden 1.32); resources (1.4); in_tree (1.14); required (1.18,
    forbidden 1.22, any-of 1.39).

    :raises errors.BadRequest: an unknown, malformed or too new filter.
    """
    policies.authorize(req, 'placement:resource_providers:list')
    ctx = util.context(req)
    version = util.version(req)
    util.validate_query(req, schema.for_list(version))
    filters = {}
    for key in ('name', 'uuid'):
        value = req.GET.get(key)
        if value is not None:
            filters[key] = value
    if 'uuid' in filters:
        filters['uuid'] = util.normalize_uuid(filters['uuid'])
    if 'in_tree' in req.GET:
        filters['in_tree'] = query.parse_in_tree(req.GET['in_tree'])
    if 'member_of' in req.GET:
        filters['member_of'] = query.parse_member_of(
            util.query_values(req, 'member_of'), version)
    if 'resources' in req.GET:
        filters['resources'] = query.parse_resources(
            ctx, req.GET['resources'])
    if 'required' in req.GET:
        filters['required'] = query.parse_required(
            ctx, util.query_values(req, 'required'), version)
    providers = rp_obj.list_providers(ctx, **filters)
    last_modified = util.latest(*[_timestamp(p) for p in providers])
    return util.json_response(
        req, {'resource_providers': [serialize(req, p) for p in providers]},
        last_modified=last_modified)


def create_resource_provider(req):
    """POST /resource_providers.

    Before 1.20 the answer is a 201 with only a Location header; from
    1.20 it is a 200 with the provider, so that clients need not GET it.

    :raises errors.BadRequest: bad body, or a bad parent (1.14).
    :raises errors.Conflict: the name or uuid is taken.
    """
    policies.authorize(req, 'placement:resource_providers:create')
    ctx = util.context(req)
    version = util.version(req)
    data = util.extract_json(req, schema.for_create(version))
    uuid = util.normalize_uuid(data.get('uuid') or str(uuidlib.uuid4()))
    parent = data.get('parent_provider_uuid')
    if parent is not None:
        parent = util.normalize_uuid(parent)
    provider = rp_obj.create(ctx, uuid, data['name'], parent_uuid=parent)
    headers = {'location': _location(uuid)}
    if version < (1, 20):
        resp = util.json_response(req, None, status=201, headers=headers)
        return resp
    return util.json_response(req, serialize(req, provider),
                              last_modified=_timestamp(provider),
                              headers=headers)


def get_resource_provider(req):
    """GET /resource_providers/{uuid}.

    :raises errors.NotFound: no such provider.
    """
    policies.authorize(req, 'placement:resource_providers:show')
    provider = rp_obj.get_or_404(util.context(req), req.urlvars['uuid'])
    return util.json_response(req, serialize(req, provider),
                              last_modified=_timestamp(provider))


def update_resource_provider(req):
    """PUT /resource_providers/{uuid}: the name and (1.14) the parent.

    A parent may be set once from 1.14; from 1.37 a provider may also
    move to another parent or become a root, but never below itself.

    :raises errors.BadRequest: bad body or an impossible parent.
    :raises errors.Conflict: the new name is taken.
    :raises errors.NotFound: no such provider.
    """
    policies.authorize(req, 'placement:resource_providers:update')
    ctx = util.context(req)
    version = util.version(req)
    # NOTE: the body is checked before the provider is looked up, so that
    # a malformed request is a 4xx about the request whatever the uuid.
    data = util.extract_json(req, schema.for_update(version))
    provider = rp_obj.get_or_404(ctx, req.urlvars['uuid'])
    parent = rp_obj.UNCHANGED
    if 'parent_provider_uuid' in data:
        parent = data['parent_provider_uuid']
        if parent is not None:
            parent = util.normalize_uuid(parent)
    provider = rp_obj.update(ctx, provider, data['name'], parent_uuid=parent,
                             may_reparent=version >= (1, 37))
    return util.json_response(req, serialize(req, provider),
                              last_modified=_timestamp(provider))


def delete_resource_provider(req):
    """DELETE /resource_providers/{uuid}.

    :raises errors.NotFound: no such provider.
    :raises errors.Conflict: it has allocations or children.
    """
    policies.authorize(req, 'placement:resource_providers:delete')
    ctx = util.context(req)
    uuid = req.urlvars['uuid']
    provider = rp_obj.get_by_uuid(ctx, uuid)
    if provider is None:
        raise errors.NotFound(
            'No resource provider with uuid %s found for delete' % uuid,
            code=errors.RESOURCE_PROVIDER_NOT_FOUND)
    rp_obj.delete(ctx, provider)
    return util.no_content(req)
