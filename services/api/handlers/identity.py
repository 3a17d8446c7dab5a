# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A stand-in for Keystone, noauth2 only: discovery, tokens, projects.

With ``[api] auth_strategy = noauth2`` there is no Keystone: the token
names the caller (``user:project``, see common/auth.py). So that the
stock ``openstack`` client and openstacksdk work with nothing but a
``clouds.yaml`` (password auth, as against a real cloud), ``berth-api``
answers at ``/identity`` Keystone v3's version documents, ``POST
/v3/auth/tokens`` (``password`` and ``token`` methods) with a noauth2
token and a service catalog naming compute, image and placement,
``GET``/``HEAD /v3/auth/tokens`` (validation), and ``GET
/v3/projects[/{id}]`` with a project whose id and name are the name
asked for. No password is checked: this is a development convenience,
exactly as trusting as noauth2 itself. With ``keystone`` auth these paths
do not exist: clients use the real Keystone.

The all-in-one writes a ``clouds.yaml`` pointing at it (cloud ``berth``).
"""

import datetime
import uuid

from oslo_utils import timeutils

from common.conf import glance as glance_conf
from services.api import errors
from services.api.schemas import identity as schema
from services.api import util

KEYSTONE_VERSION = 'v3.14'
UPDATED = '2020-04-07T00:00:00Z'
# NOTE: the region and domain every noauth2 caller is in; the clouds.yaml
# the all-in-one writes names the same region.
REGION = 'RegionOne'
DOMAIN = {'id': 'default', 'name': 'Default'}
INTERFACES = ('public', 'internal', 'admin')
# NOTE: Keystone's default [token] expiration; keystoneauth asks for a
# new token before this runs out, as it would against Keystone.
TOKEN_LIFETIME = datetime.timedelta(hours=1)
METHODS = ('password', 'token')
# NOTE: what Keystone answers to any failed authentication.
NOT_AUTHENTICATED = 'The request you have made requires authentication.'


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


def _unauthorized(message=NOT_AUTHENTICATED):
    return errors.APIError(message, status=401)


def _id(*parts):
    """A stable id for a catalog entry, the same in every answer."""
    return uuid.uuid5(uuid.NAMESPACE_URL, 'berth:' + ':'.join(parts)).hex


def _image_url(req, conf):
    if not glance_conf.is_configured(conf):
        return req.application_url.rstrip('/') + '/image'
    # NOTE: a Glance found through a Keystone catalog has no URL here.
    return conf.glance.endpoint_override


def _service(service_type, name, url):
    return {
        'id': _id('service', service_type), 'type': service_type,
        'name': name,
        'endpoints': [{'id': _id(service_type, interface),
                       'interface': interface, 'region': REGION,
                       'region_id': REGION, 'url': url}
                      for interface in INTERFACES],
    }


def catalog(req):
    """The service catalog: identity, compute, image and placement.

    Only services Berth has are named, so that clients skip the others
    (``availability zone list`` and ``quota show`` ask the catalog
    whether there is a volume or network service). Placement is where
    this API's own placement client goes (``[placement]
    endpoint_override``, which the all-in-one sets); without it the
    catalog has no placement entry.
    """
    conf = util.conf(req)
    base = req.application_url.rstrip('/')
    services = [('identity', 'keystone', base + '/identity'),
                ('compute', 'nova', base + '/v2.1'),
                ('image', 'glance', _image_url(req, conf)),
                ('placement', 'placement',
                 conf.placement.endpoint_override)]
    return [_service(service_type, name, url)
            for service_type, name, url in services if url]


def _caller(token):
    """(user, project) of a noauth2 token, as common/auth.py reads it."""
    user, _sep, project = token.partition(':')
    if not user:
        raise _unauthorized()
    return user, project or user


def _roles(token):
    # NOTE: the roles common/auth.py gives the token at the compute API:
    # "admin" anywhere in it makes an admin; Keystone's implied roles
    # make every caller a member and a reader.
    names = (['admin'] if 'admin' in token else []) + ['member', 'reader']
    return [{'id': _id('role', name), 'name': name} for name in names]


def _time(value):
    return value.strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def _token(req, token, methods, with_catalog=True):
    """The token document of a noauth2 token (always project-scoped)."""
    user, project = _caller(token)
    now = timeutils.utcnow()
    body = {
        'methods': methods,
        'user': {'id': user, 'name': user, 'domain': DOMAIN,
                 'password_expires_at': None},
        'project': {'id': project, 'name': project, 'domain': DOMAIN},
        'is_domain': False,
        'roles': _roles(token),
        'audit_ids': [uuid.uuid4().hex[:22]],
        'issued_at': _time(now),
        'expires_at': _time(now + TOKEN_LIFETIME),
    }
    if with_catalog:
        body['catalog'] = catalog(req)
    return {'token': body}


def _identity_section(identity, method):
    section = identity.get(method)
    if section is None:
        raise errors.BadRequest(
            'Expecting to find %s in identity. The server could not comply '
            'with the request since it is either malformed or otherwise '
            'incorrect. The client is assumed to be in error.' % method)
    return section


def _authenticated_user(identity):
    """(user, project of the token presented or None) of ``identity``.

    NOTE: noauth2 checks no password: the name is the caller, as the
    token is at the compute API.
    """
    methods = identity['methods']
    if not set(methods) <= set(METHODS):
        raise _unauthorized(
            'Attempted to authenticate with an unsupported method.')
    if 'password' in methods:
        user = _identity_section(identity, 'password')['user']
        return user.get('name') or user['id'], None
    presented = _identity_section(identity, 'token')['id']
    return _caller(presented)


def _scoped_project(scope, user, presented_project):
    """The project the new token is for.

    noauth2 has no unscoped tokens: a token always names a project. With
    no scope, a presented token keeps its project and a password gets the
    user's default project, the one named as the user (as a bare noauth2
    token ``user`` does).
    """
    if isinstance(scope, str):
        if scope != 'unscoped':
            raise errors.BadRequest('Invalid scope: %s' % scope)
        scope = None
    if not scope:
        return presented_project or user
    if 'project' in scope:
        project = scope['project']
        return project.get('name') or project['id']
    raise _unauthorized('noauth2 tokens are scoped to a project: domain '
                        'and system scope are not available.')


def create_token(req):
    """POST /identity/v3/auth/tokens: a noauth2 token and its catalog.

    The token (``X-Subject-Token``) is ``user:project``, which every Berth
    API accepts with noauth2.
    """
    _require_noauth(req)
    data = util.extract_json(req, schema.CREATE_TOKEN)['auth']
    identity = data['identity']
    user, presented_project = _authenticated_user(identity)
    project = _scoped_project(data.get('scope'), user, presented_project)
    token = '%s:%s' % (user, project)
    return util.json_response(
        _token(req, token, identity['methods'],
               with_catalog='nocatalog' not in req.GET),
        status=201, headers={'X-Subject-Token': token})


def show_token(req):
    """GET (and HEAD) /identity/v3/auth/tokens: validate X-Subject-Token.

    Every well-formed noauth2 token is valid; the caller needs a token of
    its own, as with Keystone.
    """
    _require_noauth(req)
    if not req.headers.get('X-Auth-Token'):
        raise _unauthorized()
    subject = req.headers.get('X-Subject-Token')
    if not subject:
        raise errors.BadRequest('The X-Subject-Token header names the '
                                'token to validate; it is missing.')
    return util.json_response(
        _token(req, subject, ['token'],
               with_catalog='nocatalog' not in req.GET),
        headers={'X-Subject-Token': subject})
