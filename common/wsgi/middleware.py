# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The API-neutral middleware of every Berth API's stack.

Request context, request checks, the request log and the healthcheck
behave the same in the compute API and placement; what differs (the
environ keys, how an error is rendered) is a parameter. The stack order
stays in each API's ``deploy.py``, where a reader looks for it.
"""

import logging
import time
from urllib import parse

from oslo_middleware import cors
from oslo_middleware import healthcheck
from oslo_middleware import request_id

from common import context as common_context

LOG = logging.getLogger(__name__)


class ContextMiddleware(object):
    """Build the RequestContext from the (authenticated) headers."""

    def __init__(self, app, context_key, extra=None):
        """
        :param context_key: the environ key handlers read it from.
        :param extra: {environ key: value} also set on every request
            (e.g. the application's config).
        """
        self.app = app
        self.context_key = context_key
        self.extra = extra or {}

    def __call__(self, environ, start_response):
        environ[self.context_key] = (
            common_context.RequestContext.from_environ(environ))
        environ.update(self.extra)
        return self.app(environ, start_response)


def _undecodable(environ):
    """What of the request is not UTF-8 text free of NUL, or None.

    The path, the query string (after percent-decoding) and the token
    are checked: handlers, the database drivers and the JSON encoder all
    take them as text, and each fails in its own way (a 500) on bytes
    that are not UTF-8 (``%ff``) or, PostgreSQL, on a NUL.
    """
    # NOTE: PEP 3333 hands the path and the headers over as latin-1
    # strings of the bytes received.
    for name, label, unquote in (
            ('PATH_INFO', 'path', False),
            ('QUERY_STRING', 'query string', True),
            ('HTTP_X_AUTH_TOKEN', 'X-Auth-Token header', False)):
        value = environ.get(name)
        if not value:
            continue
        try:
            raw = value.encode('latin-1')
            if unquote:
                raw = parse.unquote_to_bytes(raw.replace(b'+', b' '))
            text = raw.decode('utf-8')
        except UnicodeError:
            return 'The %s is not valid UTF-8.' % label
        if '\x00' in text:
            return 'The %s holds a NUL character.' % label
    return None


class RequestChecks(object):
    """Reject requests whose text or body length cannot be trusted (400).
    """

    def __init__(self, app, error_app, require_content_type=False):
        """
        :param error_app: callable(status, message) returning a WSGI app
            that renders the error in the API's format.
        :param require_content_type: also refuse a non-empty body without
            a Content-Type (placement does, as upstream; Nova does not).
        """
        self.app = app
        self.error_app = error_app
        self.require_content_type = require_content_type

    def __call__(self, environ, start_response):
        problem = _undecodable(environ)
        if problem:
            return self.error_app(400, problem)(environ, start_response)
        length = environ.get('CONTENT_LENGTH')
        if length:
            try:
                length = int(length)
            except ValueError:
                return self.error_app(
                    400, 'content-length header must be an integer')(
                        environ, start_response)
            if (self.require_content_type and length
                    and not environ.get('CONTENT_TYPE')):
                return self.error_app(
                    400, 'content-type header required when content-length '
                         'is set')(environ, start_response)
        return self.app(environ, start_response)


class RequestLog(object):
    """One INFO line per request: method, path, status, version, time."""

    def __init__(self, app, version_key):
        """
        :param version_key: the environ key holding the microversion.
        """
        self.app = app
        self.version_key = version_key

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
                     environ.get(self.version_key),
                     (time.monotonic() - started) * 1000)
        return result


def mount_healthcheck(app, conf, path='/healthcheck'):
    """Serve the oslo.middleware healthcheck at ``path`` (no auth)."""
    check = healthcheck.Healthcheck(None, conf)

    def dispatch(environ, start_response):
        if environ.get('PATH_INFO') == path:
            return check(environ, start_response)
        return app(environ, start_response)
    return dispatch


def outermost(app, conf, request_id_class=request_id.RequestId):
    """The layers outside the microversion middleware, inside out.

    The healthcheck (no token, no version), CORS when ``[cors]
    allowed_origin`` is set, and the request id every response carries.

    :param request_id_class: the request id middleware; a service whose
        clients read the id under another header too (the compute API's
        ``x-compute-request-id``) passes a subclass naming it.
    """
    app = mount_healthcheck(app, conf)
    if conf.cors.allowed_origin:
        app = cors.CORS(app, conf)
    return request_id_class(app)
