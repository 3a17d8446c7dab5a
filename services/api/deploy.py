# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Assemble the compute API WSGI application and its middleware.

From the outside in: request id, CORS, healthcheck, microversion parsing,
request checks, authentication, request context, request log, fault
rendering, admin flag, router. Every response, faults included, carries
the microversion headers (both the standard and Nova's legacy one) and the
request id. The middleware is :mod:`common.wsgi`'s; what is the compute
API's is Nova's fault document, the public version paths and the admin
flag.
"""

from oslo_middleware import request_id

from common import auth
from common.db import cells
from common import rpc
from common.wsgi import faults
from common.wsgi import microversion as wsgi_microversion
from common.wsgi import middleware
from services.api import errors
from services.api import handler
from services.api import microversion
from services.api import util

# The version documents (compute's, the built-in image catalog's and the
# noauth2 identity stand-in's), served without a token so that clients
# can discover versions, and the stand-in's token requests (a client asks
# for a token without one; validation checks the caller's token itself).
PUBLIC_PATHS = ('/', '', '/v2', '/v2/', '/v2.1', '/v2.1/', '/image', '/image/',
                '/identity', '/identity/', '/identity/v3', '/identity/v3/',
                '/identity/v3/auth/tokens')


def error_app(status, message, headers=None):
    """A WSGI app answering one fault document."""
    def app(environ, start_response):
        content_type, body = errors.render(status, message)
        return faults.respond(start_response, status, content_type, body,
                              headers)
    return app


def _fault_app(error):
    return error_app(error.status, error.message, error.headers)


def _internal_message(environ, exc):
    # NOTE: as Nova: the caller learns the request id to quote and the
    # exception's type, never its text.
    return ('Unexpected API Error. Please see the berth-api log '
            '(request %s) for details.\n%s'
            % (environ.get(request_id.ENV_REQUEST_ID), type(exc)))


class AdminFlag(object):
    """Set the context's ``is_admin`` from the ``context_is_admin`` rule.

    NOTE: code below the handlers (image visibility, listing filters)
    asks ``ctx.is_admin``; deciding it once per request through policy
    keeps "admin" what the operator's policy file says it is.
    """

    def __init__(self, app, conf):
        self.app = app
        self.conf = conf

    def __call__(self, environ, start_response):
        from services.api import policies
        ctx = environ[util.CONTEXT_KEY]
        ctx.is_admin = bool(policies.get_enforcer(self.conf).authorize(
            ctx, 'context_is_admin', ctx.to_policy_values(), fatal=False))
        return self.app(environ, start_response)


class ComputeRequestId(request_id.RequestId):
    """The request id under both headers Nova's clients read.

    NOTE: Nova answers ``x-compute-request-id`` as well as the standard
    ``x-openstack-request-id``; novaclient and the integration suites
    look for the former.
    """

    compat_headers = ['x-compute-request-id']


def loadapp(conf):
    """The compute API WSGI application configured by ``conf``.

    Points the api database at ``[api_database] connection`` and starts
    this process's RPC transport unless something (the all-in-one) has
    already.
    """
    cells.configure_api(conf)
    if not rpc.initialized():
        rpc.init(conf)
    app = handler.Dispatcher(conf)
    app = AdminFlag(app, conf)
    app = faults.FaultWrapper(app, errors.APIError, _fault_app,
                              _internal_message)
    app = middleware.RequestLog(app, microversion.ENV_KEY)
    app = middleware.ContextMiddleware(app, util.CONTEXT_KEY,
                                       extra={util.CONF_KEY: conf})
    app = auth.wrap(app, conf, public_paths=PUBLIC_PATHS,
                    on_unauthorized=error_app(401, 'Unauthorized'),
                    implied_roles=('member', 'reader'))
    app = middleware.RequestChecks(app, error_app)
    app = wsgi_microversion.MicroversionMiddleware(app, microversion,
                                                   error_app)
    return middleware.outermost(app, conf,
                                request_id_class=ComputeRequestId)
