# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A stand-in for Keystone's discovery and project lookups, noauth2 only.

The ``openstack`` CLI insists on an identity v3 endpoint even for
commands that never authenticate against it (``flavor create`` checks the
identity API version; ``--project`` options look the project up). With
``[api] auth_strategy = noauth2`` there is no Keystone: a project is any
name the token carries. So ``berth-api`` answers, at ``/identity``,
Keystone's version documents and ``GET /v3/projects[/{id}]`` with a
project whose id and name are the name asked for. With ``keystone`` auth
these paths do not exist: clients use the real Keystone.

Point clients at it with ``OS_IDENTITY_API_VERSION=3`` and
``OS_IDENTITY_ENDPOINT_OVERRIDE=<api>/identity``.
"""

from services.api import errors
from services.api import util

KEYSTONE_VERSION = 'v3.14'
UPDATED = '2020-04-07T00:00:00Z'


def _require_noauth(req):
    if util.conf(req).api.auth_strategy != 'noauth2':
        raise errors.NotFound('The resource could not be found.')


def _version(req):
    href = req.application_url.rstrip('/') + '/identity/v3/'
    return {
        'id': KEYSTONE_VERSION, 'status': 'stable', 'updated': UPDATED,
        'links': [{'rel': 'self', 'href': href}],
        'media-types': [{
            'base': 'application/json',
            'type': 'application/vnd.openstack.identity-v3+json'}],
    }


def versions(req):
    """GET /identity: Keystone's version list (v3 only)."""
    _require_noauth(req)
    return util.json_response({'versions': {'values': [_version(req)]}})


def version_v3(req):
    """GET /identity/v3: the v3 version document."""
    _require_noauth(req)
    return util.json_response({'version': _version(req)})


def _project(req, name):
    return {'id': name, 'name': name, 'domain_id': 'default',
            'enabled': True, 'is_domain': False, 'parent_id': 'default',
            'description': 'A noauth2 project', 'tags': [],
            'links': {'self': '%s/identity/v3/projects/%s' % (
                req.application_url.rstrip('/'), name)}}


def show_project(req):
    """GET /identity/v3/projects/{project_id}: any name is a project."""
    _require_noauth(req)
    return util.json_response(
        {'project': _project(req, req.urlvars['project_id'])})


def list_projects(req):
    """GET /identity/v3/projects: ``name=`` finds that project; else the
    caller's own.
    """
    _require_noauth(req)
    name = req.GET.get('name') or util.context(req).project_id
    return util.json_response({
        'projects': [_project(req, name)] if name else [],
        'links': {'self': None, 'previous': None, 'next': None}})
