# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /resource_providers/{uuid}/aggregates (1.1 and later).

Before 1.19 the PUT body is a bare list of aggregate uuids and membership
changes leave the provider generation alone. From 1.19 the body and the
response carry ``resource_provider_generation``, which the PUT checks and
bumps like any other change to the provider.
"""

from services.placement.objects import aggregate as agg_obj
from services.placement.objects import resource_provider as rp_obj
from services.placement import policies
from services.placement.schemas import aggregate as schema
from services.placement import util

MIN_VERSION = (1, 1)
GENERATION_VERSION = (1, 19)


def _response(req, provider, uuids, last_modified=None):
    body = {'aggregates': uuids}
    if util.version(req) >= GENERATION_VERSION:
        body['resource_provider_generation'] = provider['generation']
    return util.json_response(req, body, last_modified=last_modified)


def get_aggregates(req):
    """GET /resource_providers/{uuid}/aggregates.

    :param req: the webob request.
    :raises errors.NotFound: no such provider.
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:resource_providers:aggregates:list')
    ctx = util.context(req)
    provider = rp_obj.get_or_404(ctx, req.urlvars['uuid'])
    uuids, last_modified = agg_obj.get_for_provider(ctx, provider['id'])
    return _response(req, provider, uuids, last_modified=last_modified)


def set_aggregates(req):
    """PUT /resource_providers/{uuid}/aggregates: replace the membership.

    :param req: the webob request; body a list of uuids (1.1 - 1.18) or
        ``{"aggregates": [...], "resource_provider_generation": N}``.
    :raises errors.NotFound: no such provider.
    :raises errors.BadRequest: not uuids, duplicates, or the wrong shape
        for the microversion.
    :raises errors.Conflict: (1.19+) the generation is not the current one.
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:resource_providers:aggregates:update')
    ctx = util.context(req)
    provider = rp_obj.get_or_404(ctx, req.urlvars['uuid'])
    with_generation = util.version(req) >= GENERATION_VERSION
    if with_generation:
        data = util.extract_json(req, schema.PUT_AGGREGATES_SCHEMA_V1_19)
        uuids = data['aggregates']
        expected = data['resource_provider_generation']
    else:
        uuids = util.extract_json(req, schema.PUT_AGGREGATES_SCHEMA_V1_1)
        expected = None
    # NOTE: stored in canonical form, the form member_of filters look for.
    uuids = list(dict.fromkeys(util.normalize_uuid(u) for u in uuids))
    agg_obj.set_for_provider(ctx, provider, uuids,
                             expected_generation=expected,
                             bump_generation=with_generation)
    return _response(req, provider, uuids)
