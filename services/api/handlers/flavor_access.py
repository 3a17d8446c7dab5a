# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for flavor access: which projects may use a private flavor.

``GET /flavors/{flavor_id}/os-flavor-access`` lists them; ``POST
/flavors/{flavor_id}/action`` with ``addTenantAccess`` or
``removeTenantAccess`` changes them. Public flavors have no access list
(2.7+: asking to add to one is a 409).
"""

from services.api import errors
from services.api import policies
from services.api.records import flavors as flavor_records
from services.api.schemas import flavors as schema
from services.api import util

PUBLIC_CONFLICT_VERSION = (2, 7)


def _view(flavorid, projects):
    return {'flavor_access': [{'flavor_id': flavorid, 'tenant_id': p}
                              for p in projects]}


def _flavor(req):
    try:
        return flavor_records.get_flavor(util.context(req),
                                         req.urlvars['flavor_id'])
    except flavor_records.FlavorNotFound as exc:
        raise errors.NotFound(str(exc))


def list_access(req):
    """GET /flavors/{flavor_id}/os-flavor-access (admin).

    :raises errors.NotFound: the flavor is public (it has no list).
    """
    policies.authorize(req, 'os_compute_api:os-flavor-access')
    flavor = _flavor(req)
    if flavor['is_public']:
        raise errors.NotFound('Access list not available for public '
                              'flavors.')
    return util.json_response(_view(flavor['flavorid'], flavor['projects']))


def flavor_action(req):
    """POST /flavors/{flavor_id}/action: add or remove project access.

    :raises errors.Conflict: the project already has access, or (2.7+)
        the flavor is public.
    :raises errors.NotFound: removing access the project does not have.
    """
    body = util.extract_json(req, schema.ACTION)
    ctx = util.context(req)
    flavor = _flavor(req)
    if 'addTenantAccess' in body:
        policies.authorize(
            req, 'os_compute_api:os-flavor-access:add_tenant_access')
        if flavor['is_public']:
            message = 'Can not add access to a public flavor.'
            if util.at_least(req, PUBLIC_CONFLICT_VERSION):
                raise errors.Conflict(message)
            raise errors.BadRequest(message)
        try:
            projects = flavor_records.add_project(
                ctx, flavor['flavorid'], body['addTenantAccess']['tenant'])
        except flavor_records.FlavorAccessExists as exc:
            raise errors.Conflict(str(exc))
    else:
        policies.authorize(
            req, 'os_compute_api:os-flavor-access:remove_tenant_access')
        try:
            projects = flavor_records.remove_project(
                ctx, flavor['flavorid'],
                body['removeTenantAccess']['tenant'])
        except flavor_records.FlavorAccessNotFound as exc:
            raise errors.NotFound(str(exc))
    return util.json_response(_view(flavor['flavorid'], projects))
