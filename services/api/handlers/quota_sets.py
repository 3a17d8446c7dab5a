# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /os-quota-sets: a project's limits, usage and defaults.

The resources are those Berth counts or reports: instances, cores, ram,
metadata_items, key_pairs, server_groups and server_group_members (the
2.57 set; the file and network quotas Nova dropped are not shown).
"""

from services.api import errors
from services.api import policies
from services.api import quota
from services.api.schemas import quota_sets as schema
from services.api.schemas import types
from services.api import util


# NOTE: limits Nova still shows before 2.57 (file injection) and 2.36
# (nova-network proxies); Berth enforces none of them and reports Nova's
# defaults. ``networks`` is not among them: Nova lists it only with
# nova-network, and its response schemas refuse it otherwise.
_BEFORE_2_57 = {'injected_files': 5, 'injected_file_content_bytes': 10240,
                'injected_file_path_bytes': 255}
_BEFORE_2_36 = {'fixed_ips': -1, 'floating_ips': 10,
                'security_groups': 10, 'security_group_rules': 20}


def _legacy(req):
    """The retired resources the request's microversion still shows."""
    legacy = {}
    if not util.at_least(req, (2, 57)):
        legacy.update(_BEFORE_2_57)
    if not util.at_least(req, (2, 36)):
        legacy.update(_BEFORE_2_36)
    return legacy


def _target(req):
    return {'project_id': req.urlvars['project_id'],
            'user_id': util.context(req).user_id}


def _body(req, project_id, values, detail=False):
    body = {'id': project_id}
    for name, limit in _legacy(req).items():
        body[name] = ({'limit': limit, 'in_use': 0, 'reserved': 0}
                      if detail else limit)
    body.update(values)
    return {'quota_set': body}


def show_quota(req):
    """GET /os-quota-sets/{project_id}: the limits."""
    policies.authorize(req, 'os_compute_api:os-quota-sets:show',
                       _target(req))
    ctx = util.context(req)
    project_id = req.urlvars['project_id']
    return util.json_response(_body(
        req, project_id, quota.limits(ctx, util.conf(req), project_id)))


def show_quota_detail(req):
    """GET /os-quota-sets/{project_id}/detail: limits with usage."""
    policies.authorize(req, 'os_compute_api:os-quota-sets:detail',
                       _target(req))
    ctx = util.context(req)
    project_id = req.urlvars['project_id']
    project_limits = quota.limits(ctx, util.conf(req), project_id)
    used = quota.usage(ctx, project_id)
    return util.json_response(_body(req, project_id, {
        name: {'limit': limit, 'in_use': used.get(name, 0), 'reserved': 0}
        for name, limit in project_limits.items()}, detail=True))


def show_defaults(req):
    """GET /os-quota-sets/{project_id}/defaults."""
    policies.authorize(req, 'os_compute_api:os-quota-sets:defaults',
                       _target(req))
    return util.json_response(_body(
        req, req.urlvars['project_id'],
        quota.defaults(util.context(req), util.conf(req))))


def update_quota(req):
    """PUT /os-quota-sets/{project_id} (admin).

    :raises errors.BadRequest: a limit below what is already used,
        unless ``force`` is given.
    """
    from services.api.records import quotas as quota_records
    policies.authorize(req, 'os_compute_api:os-quota-sets:update',
                       _target(req))
    data = dict(util.extract_json(req, schema.UPDATE)['quota_set'])
    force = types.to_bool(data.pop('force', False))
    ctx = util.context(req)
    project_id = req.urlvars['project_id']
    if len(project_id) > 255:
        # NOTE: no project has such an id; the column holds 255.
        raise errors.BadRequest('Invalid project id %s...: longer than 255 '
                                'characters.' % project_id[:64])
    values = {name: types.to_int(value) for name, value in data.items()}
    if not force:
        used = quota.usage(ctx, project_id)
        for name, limit in values.items():
            if limit >= 0 and used.get(name, 0) > limit:
                raise errors.BadRequest(
                    'Quota limit %d for %s must be greater than or equal '
                    'to already used and reserved %d.'
                    % (limit, name, used[name]))
    quota_records.set_project_limits(ctx, project_id, values)
    body = _body(req, project_id,
                 quota.limits(ctx, util.conf(req), project_id))
    body['quota_set'].pop('id')
    return util.json_response(body)


def delete_quota(req):
    """DELETE /os-quota-sets/{project_id} (admin): back to defaults."""
    from services.api.records import quotas as quota_records
    policies.authorize(req, 'os_compute_api:os-quota-sets:delete',
                       _target(req))
    quota_records.delete_project_limits(util.context(req),
                                        req.urlvars['project_id'])
    return util.no_content(202)
