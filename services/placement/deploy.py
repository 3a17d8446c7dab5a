# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Assemble the placement WSGI application and its middleware.

From the outside in: request id, CORS, healthcheck, microversion parsing,
request checks, authentication, request context, request log, error
rendering, router. Every response, errors included, carries the
microversion headers and the request id. The middleware is
:mod:`common.wsgi`'s; what is placement's is the error document (with its
code from 1.23) and the Content-Type check.
"""

from oslo_middleware import request_id

from common import auth
from common.wsgi import faults
from common.wsgi import microversion as wsgi_microversion
from common.wsgi import middleware
from services.placement import errors
from services.placement import handler
from services.placement import microversion
from services.placement import util


def _error_app(status, message='', code=errors.DEFAULT, headers=None):
    """A WSGI app that renders one placement error."""
    def app(environ, start_response):
        version = environ.get(microversion.ENV_KEY, microversion.MIN_VERSION)
        content_type, body = errors.render(
            environ, status, message, code,
            request_id=environ.get(request_id.ENV_REQUEST_ID),
            show_code=version >= (1, 23))
        return faults.respond(start_response, status, content_type, body,
                              headers)
    return app


def _fault_app(error):
    return _error_app(error.status, error.message, error.code, error.headers)


def _internal_message(environ, exc):
    return 'Uncaught exception: %s' % exc


def loadapp(conf):
    """The placement WSGI application configured by ``conf``."""
    app = handler.Router()
    app = faults.FaultWrapper(app, errors.PlacementError, _fault_app,
                              _internal_message)
    app = middleware.RequestLog(app, microversion.ENV_KEY)
    app = middleware.ContextMiddleware(app, util.CONTEXT_KEY)
    app = auth.wrap(app, conf, public_paths=('/', ''),
                    on_unauthorized=_error_app(401, 'Unauthorized'))
    # NOTE: as upstream, a body without a Content-Type is refused.
    app = middleware.RequestChecks(app, _error_app,
                                   require_content_type=True)
    app = wsgi_microversion.MicroversionMiddleware(app, microversion,
                                                   _error_app)
    return middleware.outermost(app, conf)
