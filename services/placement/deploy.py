# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Assemble the placement WSGI application and its middleware.

From the outside in: request id, CORS, healthcheck, microversion parsing,
request checks, authentication, request context, error rendering, router.
Every response, errors included, carries the microversion headers and the
request id.
"""

import logging
import time

from oslo_middleware import cors
from oslo_middleware import healthcheck
from oslo_middleware import request_id
import webob

from common import auth
from common import context as common_context
from common import policy as common_policy
from services.placement import errors
from services.placement import handler
from services.placement import microversion
from services.placement import util

LOG = logging.getLogger(__name__)

_VARY = 'openstack-api-version'


def _error_app(status, message='', code=errors.DEFAULT, headers=None):
    """A WSGI app that renders one placement error."""
    def app(environ, start_response):
        version = environ.get(microversion.ENV_KEY, microversion.MIN_VERSION)
        content_type, body = errors.render(
            environ, status, message, code,
            request_id=environ.get(request_id.ENV_REQUEST_ID),
            show_code=version >= (1, 23))
        response_headers = [('Content-Type', content_type),
                            ('Content-Length', str(len(body)))]
        response_headers.extend((headers or {}).items())
        start_response('%d %s' % (status, errors.TITLES.get(status, '')),
                       response_headers)
        return [body]
    return app


class FaultWrapper(object):
    """Render PlacementError and policy denials; log anything unexpected."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        try:
            return self.app(environ, start_response)
        except errors.PlacementError as exc:
            app = _error_app(exc.status, exc.message, exc.code, exc.headers)
        except common_policy.PolicyNotAuthorized as exc:
            app = _error_app(403, str(exc))
        except Exception as exc:
            LOG.exception('Unexpected error serving %s %s',
                          environ.get('REQUEST_METHOD'),
                          environ.get('PATH_INFO'))
            app = _error_app(500, 'Uncaught exception: %s' % exc)
        return app(environ, start_response)


class ContextMiddleware(object):
    """Build the RequestContext from the (authenticated) headers."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        environ[util.CONTEXT_KEY] = common_context.RequestContext.from_environ(
            environ)
        return self.app(environ, start_response)


class RequestChecks(object):
    """Reject bodies whose length or type cannot be trusted."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        length = environ.get('CONTENT_LENGTH')
        if length:
            try:
                length = int(length)
            except ValueError:
                return _error_app(
                    400, 'content-length header must be an integer')(
                        environ, start_response)
            if length and not environ.get('CONTENT_TYPE'):
                return _error_app(
                    400, 'content-type header required when content-length '
                         'is set')(environ, start_response)
        return self.app(environ, start_response)


class MicroversionMiddleware(object):
    """Parse the requested microversion; stamp it on every response."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        req = webob.Request(environ)
        try:
            version = microversion.from_headers(req.headers)
        except microversion.MicroversionError as exc:
            environ[microversion.ENV_KEY] = microversion.MIN_VERSION
            app = _error_app(exc.status, exc.message)
            version = microversion.MIN_VERSION
        else:
            environ[microversion.ENV_KEY] = version
            app = self.app

        def stamped_start_response(status, headers, exc_info=None):
            headers = [(k, v) for k, v in headers
                       if k.lower() not in (_VARY, 'vary')]
            headers.append(('OpenStack-API-Version',
                            '%s %s' % (microversion.SERVICE_TYPE, version)))
            headers.append(('Vary', _VARY))
            return start_response(status, headers, exc_info)

        return app(environ, stamped_start_response)


class RequestLog(object):
    """One INFO line per request: method, path, status, size, time."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        started = time.monotonic()
        seen = {}

        def logging_start_response(status, headers, exc_info=None):
            seen['status'] = status.split(' ', 1)[0]
            return start_response(status, headers, exc_info)

        result = self.app(environ, logging_start_response)
        if LOG.isEnabledFor(logging.INFO):
            query = environ.get('QUERY_STRING')
            LOG.info('%s "%s %s%s" status: %s microversion: %s time: %.1fms',
                     environ.get('REMOTE_ADDR', '-'),
                     environ.get('REQUEST_METHOD'),
                     environ.get('PATH_INFO'),
                     '?' + query if query else '',
                     seen.get('status'),
                     environ.get(microversion.ENV_KEY),
                     (time.monotonic() - started) * 1000)
        return result


def _mount_healthcheck(app, conf):
    """Serve the oslo.middleware healthcheck at /healthcheck."""
    check = healthcheck.Healthcheck(None, conf)

    def dispatch(environ, start_response):
        if environ.get('PATH_INFO') == '/healthcheck':
            return check(environ, start_response)
        return app(environ, start_response)
    return dispatch


def loadapp(conf):
    """The placement WSGI application configured by ``conf``."""
    app = handler.Router()
    app = FaultWrapper(app)
    app = RequestLog(app)
    app = ContextMiddleware(app)
    app = auth.wrap(app, conf, public_paths=('/', ''),
                    on_unauthorized=_error_app(401, 'Unauthorized'))
    app = RequestChecks(app)
    app = MicroversionMiddleware(app)
    app = _mount_healthcheck(app, conf)
    if conf.cors.allowed_origin:
        app = cors.CORS(app, conf)
    app = request_id.RequestId(app)
    return app
