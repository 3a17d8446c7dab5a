# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /os-server-groups.

A group has one policy: affinity, anti-affinity, soft-affinity or
soft-anti-affinity (the soft ones from 2.15); anti-affinity may carry
``max_server_per_host`` (2.64). Servers join a group at boot through the
``group`` scheduler hint; the scheduler's filters and weighers enforce
the policy.
"""

from services.api import errors
from services.api import policies
from services.api import quota
from services.api.records import server_groups as group_records
from services.api.schemas import server_groups as schema
from services.api import util

SOFT_POLICY_VERSION = (2, 15)
USER_PROJECT_VERSION = (2, 13)
POLICY_RULES_VERSION = (2, 64)


def view(req, group):
    """A server group as the request's microversion shows it."""
    body = {'id': group['uuid'], 'name': group['name'],
            'members': list(group['members'])}
    if util.at_least(req, POLICY_RULES_VERSION):
        body['policy'] = group['policy']
        body['rules'] = dict(group['rules'])
    else:
        body['policies'] = [group['policy']]
        body['metadata'] = {}
    if util.at_least(req, USER_PROJECT_VERSION):
        body['project_id'] = group['project_id']
        body['user_id'] = group['user_id']
    return body


def _get(req, action):
    ctx = util.context(req)
    try:
        group = group_records.get_group(ctx, req.urlvars['group_id'])
    except group_records.InstanceGroupNotFound as exc:
        raise errors.NotFound(str(exc))
    policies.authorize(req, action, {'project_id': group['project_id'],
                                     'user_id': group['user_id']})
    return group


def list_groups(req):
    """GET /os-server-groups: the caller's (``all_projects``: every)."""
    policies.authorize(req, 'os_compute_api:os-server-groups:index')
    ctx = util.context(req)
    project_id = ctx.project_id
    if util.query_bool(req, 'all_projects') and policies.authorize(
            req, 'os_compute_api:os-server-groups:index:all_projects',
            fatal=False):
        project_id = None
    groups = group_records.list_groups(
        ctx, project_id=project_id,
        limit=min(util.query_int(req, 'limit', util.conf(req).api.max_limit),
                  util.conf(req).api.max_limit),
        offset=util.query_int(req, 'offset', 0))
    return util.json_response(
        {'server_groups': [view(req, g) for g in groups]})


def show_group(req):
    """GET /os-server-groups/{group_id}."""
    group = _get(req, 'os_compute_api:os-server-groups:show')
    return util.json_response({'server_group': view(req, group)})


def _policy_and_rules(req):
    if util.at_least(req, POLICY_RULES_VERSION):
        data = util.extract_json(req, schema.CREATE_V264)['server_group']
        policy = data['policy']
        rules = {k: int(v) for k, v in data.get('rules', {}).items()}
        if rules and policy != 'anti-affinity':
            raise errors.BadRequest(
                'Only anti-affinity policy supports rules.')
        if rules.get('max_server_per_host', 1) < 1:
            raise errors.BadRequest('max_server_per_host must be >= 1.')
        return data['name'], policy, rules
    body_schema = (schema.CREATE_V215 if util.at_least(
        req, SOFT_POLICY_VERSION) else schema.CREATE)
    data = util.extract_json(req, body_schema)['server_group']
    return data['name'], data['policies'][0], {}


def create_group(req):
    """POST /os-server-groups.

    :raises errors.BadRequest: rules with a policy other than
        anti-affinity, or a body of another microversion's shape.
    :raises errors.Forbidden: the project's server_groups quota is used.
    """
    policies.authorize(req, 'os_compute_api:os-server-groups:create')
    name, policy, rules = _policy_and_rules(req)
    ctx = util.context(req)
    try:
        quota.check_server_groups(ctx, util.conf(req), ctx.project_id)
    except quota.QuotaExceeded:
        raise errors.Forbidden('Quota exceeded, too many server groups.')
    group = group_records.create_group(ctx, name, policy, rules,
                                       ctx.project_id, ctx.user_id)
    return util.json_response({'server_group': view(req, group)})


def delete_group(req):
    """DELETE /os-server-groups/{group_id}; its servers stay."""
    group = _get(req, 'os_compute_api:os-server-groups:delete')
    group_records.delete_group(util.context(req), group['uuid'])
    return util.no_content(204)
