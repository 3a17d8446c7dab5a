# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /os-quota-class-sets/{id} (admin).

As in Nova, only the ``default`` class means anything: its limits,
stored in the api database's ``quota_classes``, override the ``[quota]``
options as every project's default (see :mod:`services.api.quota`).
Another class name may be written and read back, and is used by nothing.
The body lists the resources of the request's microversion: the server
group quotas from 2.50, the network quotas before 2.50 and the file
injection quotas before 2.57 (those retired ones are shown with Nova's
defaults and are never enforced: a value given for them is accepted and
not stored).
"""

from services.api import errors
from services.api import policies
from services.api import quota
from services.api.records import quotas as quota_records
from services.api.schemas import quota_classes as schema
from services.api.schemas import types
from services.api import util

GROUPS_VERSION = (2, 50)
INJECTED_GONE_VERSION = (2, 57)
_GROUPS = ('server_groups', 'server_group_members')
# NOTE: the retired limits Nova shows, with its defaults; never enforced.
_INJECTED = {'injected_files': 5, 'injected_file_content_bytes': 10240,
             'injected_file_path_bytes': 255}
_NETWORK = {'fixed_ips': -1, 'floating_ips': 10, 'networks': 3,
            'security_groups': 10, 'security_group_rules': 20}


def _class_name(req):
    name = req.urlvars['class_name']
    if len(name) > 255:
        raise errors.BadRequest('quota_class_name has more than 255 '
                                'characters.')
    return name


def _body(req, class_limits):
    body = dict(class_limits)
    if not util.at_least(req, GROUPS_VERSION):
        for name in _GROUPS:
            body.pop(name, None)
        body.update(_NETWORK)
    if not util.at_least(req, INJECTED_GONE_VERSION):
        body.update(_INJECTED)
    return body


def _schema(req):
    if util.at_least(req, INJECTED_GONE_VERSION):
        return schema.UPDATE_V257
    if util.at_least(req, GROUPS_VERSION):
        return schema.UPDATE_V250
    return schema.UPDATE


def show_quota_class(req):
    """GET /os-quota-class-sets/{id}: the class's limits."""
    policies.authorize(req, 'os_compute_api:os-quota-class-sets:show')
    name = _class_name(req)
    body = _body(req, quota.class_limits(util.context(req),
                                         util.conf(req), name))
    body['id'] = name
    return util.json_response({'quota_class_set': body})


def update_quota_class(req):
    """PUT /os-quota-class-sets/{id}: set some of the class's limits.

    :raises errors.BadRequest: a resource the microversion does not know,
        or a limit below -1.
    """
    policies.authorize(req, 'os_compute_api:os-quota-class-sets:update')
    name = _class_name(req)
    data = util.extract_json(req, _schema(req))['quota_class_set']
    values = {key: types.to_int(value) for key, value in data.items()
              if key in quota.RESOURCES}
    ctx = util.context(req)
    if values:
        quota_records.set_class_limits(ctx, name, values)
    return util.json_response({'quota_class_set': _body(
        req, quota.class_limits(ctx, util.conf(req), name))})
