# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /resource_classes (microversion 1.2 and later).

Standard classes are listed and shown but never changed; custom classes
are created with POST (or, from 1.7, an idempotent PUT), renamed with PUT
at 1.2 - 1.6, and deleted when no inventory uses them.
"""

from services.placement.objects import resource_class as rc_obj
from services.placement import policies
from services.placement.schemas import resource_class as schema
from services.placement import util

MIN_VERSION = (1, 2)


def _url(req, name):
    # NOTE: relative to where placement is mounted, as upstream's links.
    return '%s/resource_classes/%s' % (req.script_name, name)


def _serialize(req, rc):
    return {'name': rc['name'],
            'links': [{'rel': 'self', 'href': _url(req, rc['name'])}]}


def _created(req, name, status=201):
    resp = util.no_content(req)
    resp.status_code = status
    resp.headers['location'] = _url(req, name)
    return resp


def list_resource_classes(req):
    """GET /resource_classes: standard and custom classes with links.

    :param req: the webob request.
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:resource_classes:list')
    classes = rc_obj.get_all(util.context(req))
    last_modified = util.latest(*[rc['updated_at'] or rc['created_at']
                                  for rc in classes])
    return util.json_response(
        req, {'resource_classes': [_serialize(req, rc) for rc in classes]},
        last_modified=last_modified)


def create_resource_class(req):
    """POST /resource_classes: create a custom class; 201 with Location.

    :param req: the webob request, body ``{"name": "CUSTOM_..."}``.
    :raises errors.Conflict: the name is taken (placement.duplicate_name).
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:resource_classes:create')
    data = util.extract_json(req, schema.POST_RC_SCHEMA_V1_2)
    rc_obj.create(util.context(req), data['name'])
    return _created(req, data['name'])


def get_resource_class(req):
    """GET /resource_classes/{name}: the class and its self link.

    :param req: the webob request.
    :raises errors.NotFound: no such class.
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:resource_classes:show')
    rc = rc_obj.get_or_404(util.context(req), req.urlvars['name'])
    return util.json_response(req, _serialize(req, rc),
                              last_modified=rc['updated_at'] or
                              rc['created_at'])


def update_resource_class(req):
    """PUT /resource_classes/{name}.

    1.2 - 1.6: rename a custom class to the body's ``name``; 200 with it.
    1.7+: no body; create the custom class ``name`` (201) or confirm that
    it exists (204), with Location either way.

    :param req: the webob request.
    :raises errors.BadRequest: a standard class, or a bad name.
    :raises errors.NotFound: renaming a class that does not exist.
    :raises errors.Conflict: renaming to a taken name.
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:resource_classes:update')
    ctx = util.context(req)
    name = req.urlvars['name']
    if util.version(req) >= (1, 7):
        util.validate({'name': name}, schema.PUT_RC_SCHEMA_V1_2)
        try:
            rc_obj.create(ctx, name)
        except rc_obj.ResourceClassExists:
            return _created(req, name, status=204)
        return _created(req, name)
    data = util.extract_json(req, schema.PUT_RC_SCHEMA_V1_2)
    rc = rc_obj.rename(ctx, name, data['name'])
    return util.json_response(req, _serialize(req, rc),
                              last_modified=rc['updated_at'])


def delete_resource_class(req):
    """DELETE /resource_classes/{name}: delete an unused custom class.

    :param req: the webob request.
    :raises errors.BadRequest: a standard class.
    :raises errors.NotFound: no such class.
    :raises errors.Conflict: an inventory uses it.
    """
    util.require_version(req, MIN_VERSION)
    policies.authorize(req, 'placement:resource_classes:delete')
    rc_obj.destroy(util.context(req), req.urlvars['name'])
    return util.no_content(req)
