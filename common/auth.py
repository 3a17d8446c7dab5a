# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Authentication middleware shared by Berth's HTTP APIs.

``noauth2`` (development): the ``X-Auth-Token`` header names the caller.
``admin`` is an admin of project ``admin``; ``user:project`` is that user
in that project, and a token containing ``admin`` grants the admin role.
``X-Roles``, ``X-User-Id``, ``X-Project-Id`` and ``OpenStack-System-Scope``
headers, when present, take precedence, so tests can act as any role.
An API whose policy defaults expect Keystone's implied roles (Nova's new
defaults want ``member`` and ``reader``) passes them as ``implied_roles``:
every noauth2 caller then has them, as a Keystone project member would.

``keystone``: keystonemiddleware's auth_token validates the token and sets
the same headers.

Paths in ``public_paths`` (the version documents) need no token.
"""

import logging

from keystonemiddleware import auth_token

LOG = logging.getLogger(__name__)


class NoAuthMiddleware(object):
    """Trust the token header to say who the caller is (noauth2)."""

    def __init__(self, app, public_paths=('/',), on_unauthorized=None,
                 implied_roles=()):
        """
        :param app: the wrapped WSGI application.
        :param public_paths: paths served without any token.
        :param on_unauthorized: WSGI app answering a missing token (401).
        :param implied_roles: roles every caller has besides ``admin``.
        """
        self.app = app
        self.public_paths = set(public_paths)
        self.on_unauthorized = on_unauthorized
        self.implied_roles = list(implied_roles)

    def __call__(self, environ, start_response):
        if (environ.get('PATH_INFO') or '/') in self.public_paths:
            return self.app(environ, start_response)
        token = environ.get('HTTP_X_AUTH_TOKEN')
        if not token:
            return self.on_unauthorized(environ, start_response)
        user_id, _sep, project_id = token.partition(':')
        project_id = project_id or user_id
        environ.setdefault('HTTP_X_USER_ID', user_id)
        environ.setdefault('HTTP_X_PROJECT_ID', project_id)
        if 'HTTP_X_ROLES' not in environ:
            roles = (['admin'] if 'admin' in token else []) + (
                self.implied_roles)
            environ['HTTP_X_ROLES'] = ','.join(roles)
        environ.setdefault('HTTP_X_IDENTITY_STATUS', 'Confirmed')
        return self.app(environ, start_response)


class PublicPathsAuthToken(object):
    """keystonemiddleware auth_token, except for the public paths."""

    def __init__(self, app, conf, public_paths=('/',)):
        self.app = app
        self.public_paths = set(public_paths)
        self.protected = auth_token.AuthProtocol(
            app, {'oslo_config_config': conf})

    def __call__(self, environ, start_response):
        if (environ.get('PATH_INFO') or '/') in self.public_paths:
            return self.app(environ, start_response)
        return self.protected(environ, start_response)


def wrap(app, conf, public_paths=('/',), on_unauthorized=None,
         implied_roles=()):
    """Wrap ``app`` with the auth middleware ``[api] auth_strategy`` names.

    :param implied_roles: with noauth2, roles every caller has.
    """
    if conf.api.auth_strategy == 'noauth2':
        return NoAuthMiddleware(app, public_paths, on_unauthorized,
                                implied_roles)
    return PublicPathsAuthToken(app, conf, public_paths)
