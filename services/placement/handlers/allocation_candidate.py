# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handler for GET /allocation_candidates (microversion 1.10 and later).

The query names request groups (see :mod:`services.placement.request_groups`);
the answer lists allocation requests a scheduler can claim with
``PUT /allocations/{consumer}`` and summaries of the providers involved.
"""

import logging

from common.conf import CONF
from services.placement import microversion
from services.placement.objects import allocation_candidate as ac_obj
from services.placement import policies
from services.placement import request_groups
from services.placement.schemas import allocation_candidate as schema
from services.placement import util

LOG = logging.getLogger(__name__)

MIN_VERSION = (1, 10)


def list_allocation_candidates(req):
    """GET /allocation_candidates?resources=...[&group parameters].

    :param req: the webob request.
    :returns: 200 with ``allocation_requests`` and ``provider_summaries``;
        the body is computed, so Last-Modified (1.15+) is now.
    :raises errors.NotFound: below microversion 1.10.
    :raises errors.BadRequest: a malformed or inconsistent query.
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:allocation_candidates:list')
    version = util.version(req)
    util.validate_query(req, schema.for_version(version))
    ctx = util.context(req)
    creq = request_groups.parse(ctx, req, version)
    body = ac_obj.get_candidates(
        ctx, creq, microversion.Version(*version),
        randomize=CONF.placement.randomize_allocation_candidates,
        max_candidates=CONF.placement.max_allocation_candidates,
        strategy=CONF.placement.allocation_candidates_generation_strategy,
        use_cache=CONF.placement.provider_cache)
    return util.json_response(req, body)
