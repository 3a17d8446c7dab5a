# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for provider usages and project usages (GET /usages)."""

from services.placement.objects import resource_provider as rp_obj
from services.placement.objects import usage as usage_obj
from services.placement import policies
from services.placement.schemas import usage as schema
from services.placement import util


def list_usages(req):
    """GET /resource_providers/{uuid}/usages.

    Every class the provider has inventory of, with 0 when unused.
    Usages are computed, so Last-Modified is now.

    :raises errors.NotFound: no such provider.
    """
    policies.authorize(req, 'placement:resource_providers:usages')
    ctx = util.context(req)
    provider = rp_obj.get_or_404(ctx, req.urlvars['uuid'])
    data = {'resource_provider_generation': provider['generation'],
            'usages': usage_obj.for_provider(ctx, provider['id'])}
    return util.json_response(req, data)


def get_total_usages(req):
    """GET /usages?project_id=&user_id= (1.9; consumer_type 1.38).

    From 1.38 the usages are grouped by consumer type, each group with a
    ``consumer_count``; ``consumer_type`` narrows to one type, ``all``
    (everything in one group) or ``unknown`` (consumers with no type).

    :raises errors.BadRequest: no project_id, or bad parameters.
    :raises errors.Forbidden: the caller may not see that project.
    """
    util.require_version(req, (1, 9))
    # NOTE: the policy target is the project asked about, so that a
    # project reader may see its own project's usage and no other's.
    policies.authorize(req, 'placement:usages',
                       target={'project_id': req.GET.get('project_id')})
    version = util.version(req)
    util.validate_query(req, schema.for_query(version))
    ctx = util.context(req)
    project_id = req.GET['project_id']
    user_id = req.GET.get('user_id')
    if version >= (1, 38):
        usages = usage_obj.for_project_by_type(
            ctx, project_id, user_id,
            consumer_type=req.GET.get('consumer_type'))
    else:
        usages = usage_obj.for_project(ctx, project_id, user_id)
    return util.json_response(req, {'usages': usages})
