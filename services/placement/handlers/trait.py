# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /traits and /resource_providers/{uuid}/traits (1.6+).

Traits are names. Standard ones come from os-traits; custom ones
(``CUSTOM_*``) are created with an idempotent PUT. A provider's traits are
replaced as a whole, guarded by the provider generation.
"""

from services.placement import errors
from services.placement.objects import resource_provider as rp_obj
from services.placement.objects import trait as trait_obj
from services.placement import policies
from services.placement.schemas import trait as schema
from services.placement import util

MIN_VERSION = (1, 6)

_INVALID_NAME = (
    'The trait is invalid. A valid trait must be no longer than 255 '
    'characters, start with the prefix "CUSTOM_" and use following '
    'characters: "A"-"Z", "0"-"9" and "_"')
_BAD_NAME_FILTER = (
    'Badly formatted name parameter. Expected name query string parameter '
    'in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "%s"')


def _url(req, name):
    return '%s/traits/%s' % (req.script_name, name)


def _stamp(row):
    return row['updated_at'] or row['created_at']


def _empty(req, status, last_modified=None, location=None):
    """A body-less response; cache headers from 1.15 as upstream."""
    resp = util.no_content(req)
    resp.status_code = status
    if location:
        resp.headers['location'] = location
    util.add_cache_headers(req, resp, last_modified)
    return resp


def _parse_name_filter(value):
    """(names, prefix) from ``in:A,B`` or ``startswith:X``."""
    kind, sep, rest = value.partition(':')
    if not sep or kind not in ('in', 'startswith'):
        raise errors.BadRequest(_BAD_NAME_FILTER % value)
    if kind == 'in':
        return [n.strip() for n in rest.split(',') if n.strip()], None
    return None, rest


def list_traits(req):
    """GET /traits[?name=in:A,B|startswith:X][&associated=true|false].

    :param req: the webob request.
    :raises errors.BadRequest: unknown parameters or malformed values.
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:traits:list')
    util.validate_query(req, schema.LIST_TRAITS_QUERY)
    names = prefix = associated = None
    name_filter = req.GET.get('name')
    if name_filter is not None:
        names, prefix = _parse_name_filter(name_filter)
    if 'associated' in req.GET:
        value = req.GET['associated'].lower()
        if value not in ('true', 'false'):
            raise errors.BadRequest(
                'The query parameter "associated" only accepts "true" or '
                '"false"')
        associated = value == 'true'
    traits = trait_obj.get_all(util.context(req), names=names, prefix=prefix,
                               associated=associated)
    return util.json_response(
        req, {'traits': [t['name'] for t in traits]},
        last_modified=util.latest(*[_stamp(t) for t in traits]))


def get_trait(req):
    """GET /traits/{name}: 204 when the trait exists.

    :param req: the webob request.
    :raises errors.NotFound: no such trait.
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:traits:show')
    name = req.urlvars['name']
    trait = trait_obj.get_by_name(util.context(req), name)
    if trait is None:
        raise trait_obj.TraitNotFound(name)
    return _empty(req, 204, last_modified=_stamp(trait))


def put_trait(req):
    """PUT /traits/{name}: create a custom trait (201) or confirm it (204).

    :param req: the webob request.
    :raises errors.BadRequest: the name is not a valid custom trait name.
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:traits:update')
    name = req.urlvars['name']
    try:
        util.validate({'name': name}, schema.CUSTOM_TRAIT)
    except errors.BadRequest:
        raise errors.BadRequest(_INVALID_NAME)
    trait, created = trait_obj.ensure(util.context(req), name)
    return _empty(req, 201 if created else 204,
                  last_modified=_stamp(trait), location=_url(req, name))


def delete_trait(req):
    """DELETE /traits/{name}: delete an unused custom trait.

    :param req: the webob request.
    :raises errors.BadRequest: a standard trait.
    :raises errors.NotFound: no such trait.
    :raises errors.Conflict: a provider has it.
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:traits:delete')
    name = req.urlvars['name']
    if not name.startswith(trait_obj.CUSTOM_PREFIX):
        raise errors.BadRequest('Cannot delete standard trait %s.' % name)
    trait_obj.destroy(util.context(req), name)
    return util.no_content(req)


def _provider_traits_response(req, provider, traits):
    return util.json_response(
        req, {'traits': [t['name'] for t in traits],
              'resource_provider_generation': provider['generation']},
        last_modified=util.latest(*[_stamp(t) for t in traits]))


def list_traits_for_resource_provider(req):
    """GET /resource_providers/{uuid}/traits: traits and generation.

    :param req: the webob request.
    :raises errors.NotFound: no such provider.
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:resource_providers:traits:list')
    ctx = util.context(req)
    provider, traits = rp_obj.read_with(ctx, req.urlvars['uuid'],
                                        trait_obj.get_for_provider)
    return _provider_traits_response(req, provider, traits)


def update_traits_for_resource_provider(req):
    """PUT /resource_providers/{uuid}/traits: replace the provider's traits.

    :param req: the webob request, body ``{"traits": [...],
        "resource_provider_generation": N}``.
    :raises errors.NotFound: no such provider.
    :raises errors.BadRequest: a bad body, or traits that do not exist.
    :raises errors.Conflict: the generation is not the current one.
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:resource_providers:traits:update')
    ctx = util.context(req)
    data = util.extract_json(req, schema.SET_TRAITS_FOR_RP)
    provider = rp_obj.get_or_404(ctx, req.urlvars['uuid'])
    traits = trait_obj.set_for_provider(
        ctx, provider, data['traits'],
        expected_generation=data['resource_provider_generation'])
    return _provider_traits_response(req, provider, traits)


def delete_traits_for_resource_provider(req):
    """DELETE /resource_providers/{uuid}/traits: remove all its traits.

    :param req: the webob request.
    :raises errors.NotFound: no such provider.
    :raises errors.Conflict: the provider changed concurrently.
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:resource_providers:traits:delete')
    ctx = util.context(req)
    provider = rp_obj.get_or_404(ctx, req.urlvars['uuid'])
    trait_obj.set_for_provider(ctx, provider, [])
    return util.no_content(req)
