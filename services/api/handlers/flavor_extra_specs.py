# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /flavors/{flavor_id}/os-extra_specs.

Every write is validated (:mod:`services.api.extra_specs`): an unknown
``hw:`` key or a value such as ``hw:cpu_thread_policy=avoid`` is a 400
naming the key, so that the flavor never reaches a boot with it; from
2.86 the message is Nova's.
"""

from services.api import errors
from services.api import extra_specs
from services.api.handlers import flavors as flavor_handlers
from services.api import policies
from services.api.records import flavors as flavor_records
from services.api.schemas import flavors as schema
from services.api import util

NOVA_VALIDATION_VERSION = (2, 86)


def _specs_from_body(body):
    """{key: value as a string}, values as Nova stores them."""
    specs = {}
    for key, value in body.items():
        if isinstance(value, bool):
            value = 'True' if value else 'False'
        specs[key] = str(value)
    return specs


def _check(req, specs):
    """400 for a bad key or value: Berth's message naming the key below
    2.86, Nova's words from 2.86 (which also checks Nova's vmware: and
    powervm: keys).
    """
    nova = util.at_least(req, NOVA_VALIDATION_VERSION)
    try:
        extra_specs.validate(specs, nova_namespaces=nova)
    except extra_specs.InvalidExtraSpec as exc:
        raise errors.BadRequest(exc.nova_message if nova else str(exc))


def _update(req, specs):
    try:
        return flavor_records.update_extra_specs(
            util.context(req), req.urlvars['flavor_id'], specs)
    except flavor_records.FlavorNotFound as exc:
        raise errors.NotFound(str(exc))


def list_extra_specs(req):
    """GET /flavors/{flavor_id}/os-extra_specs."""
    policies.authorize(req, 'os_compute_api:os-flavor-extra-specs:index')
    flavor = flavor_handlers.get_visible(req, req.urlvars['flavor_id'])
    return util.json_response({'extra_specs': flavor['extra_specs']})


def create_extra_specs(req):
    """POST /flavors/{flavor_id}/os-extra_specs: set several (admin).

    :raises errors.BadRequest: a key or value fails validation.
    """
    policies.authorize(req, 'os_compute_api:os-flavor-extra-specs:create')
    body = util.extract_json(req, schema.EXTRA_SPECS_CREATE)
    specs = _specs_from_body(body['extra_specs'])
    _check(req, specs)
    _update(req, specs)
    return util.json_response({'extra_specs': specs})


def show_extra_spec(req):
    """GET /flavors/{flavor_id}/os-extra_specs/{key}."""
    policies.authorize(req, 'os_compute_api:os-flavor-extra-specs:show')
    flavor = flavor_handlers.get_visible(req, req.urlvars['flavor_id'])
    key = req.urlvars['key']
    if key not in flavor['extra_specs']:
        raise errors.NotFound('Flavor %s has no extra specs with key %s.'
                              % (flavor['flavorid'], key))
    return util.json_response({key: flavor['extra_specs'][key]})


def update_extra_spec(req):
    """PUT /flavors/{flavor_id}/os-extra_specs/{key}: set one (admin).

    :raises errors.BadRequest: the body names another key, or the value
        fails validation.
    """
    policies.authorize(req, 'os_compute_api:os-flavor-extra-specs:update')
    body = util.extract_json(req, schema.EXTRA_SPEC_UPDATE)
    key = req.urlvars['key']
    if key not in body:
        raise errors.BadRequest('Request body and URI mismatch')
    specs = _specs_from_body(body)
    _check(req, specs)
    _update(req, specs)
    return util.json_response(specs)


def delete_extra_spec(req):
    """DELETE /flavors/{flavor_id}/os-extra_specs/{key} (admin)."""
    policies.authorize(req, 'os_compute_api:os-flavor-extra-specs:delete')
    try:
        flavor_records.delete_extra_spec(util.context(req),
                                         req.urlvars['flavor_id'],
                                         req.urlvars['key'])
    except flavor_records.FlavorNotFound as exc:
        raise errors.NotFound(str(exc))
    return util.no_content(200)
