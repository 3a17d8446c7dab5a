# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""HTTP errors: the exception handlers raise and the fault middleware.

Handlers raise a subclass of :class:`HTTPError`; :class:`FaultWrapper`
turns it, a policy denial or any unexpected exception into a response.
The body is each API's own (Nova's fault document for the compute API,
upstream placement's ``errors`` list): the API hands in the function that
renders it, this module only knows statuses and headers.
"""

import logging

from common import policy as common_policy

LOG = logging.getLogger(__name__)

# The reason phrases of the status line and of the error documents.
TITLES = {
    400: 'Bad Request',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'Not Found',
    405: 'Method Not Allowed',
    406: 'Not Acceptable',
    409: 'Conflict',
    413: 'Request Entity Too Large',
    415: 'Unsupported Media Type',
    429: 'Too Many Requests',
    500: 'Internal Server Error',
    501: 'Not Implemented',
    503: 'Service Unavailable',
}


class HTTPError(Exception):
    """An HTTP error with a status, a message and extra headers."""

    status = 400

    def __init__(self, message='', status=None, headers=None):
        """
        :param message: what the caller is told.
        :param status: the HTTP status; defaults to the class's.
        :param headers: extra response headers (e.g. ``Allow``).
        """
        super().__init__(message)
        if status is not None:
            self.status = status
        self.message = message
        self.headers = headers or {}


def respond(start_response, status, content_type, body, headers=None):
    """Start a response carrying an already rendered error body.

    :param status: the HTTP status code; the reason phrase is TITLES'.
    :param content_type: the body's media type.
    :param body: the body bytes.
    :param headers: extra response headers, a dict.
    :returns: the WSGI response iterable.
    """
    response_headers = [('Content-Type', content_type),
                        ('Content-Length', str(len(body)))]
    response_headers.extend((headers or {}).items())
    start_response('%d %s' % (status, TITLES.get(status, '')),
                   response_headers)
    return [body]


class FaultWrapper(object):
    """Render the API's errors and policy denials; log anything unexpected.

    A policy denial becomes a 403 and an unexpected exception a 500 of the
    API's own error class, so that one renderer answers all three.
    """

    def __init__(self, app, error_class, fault_app, internal_message):
        """
        :param error_class: the API's :class:`HTTPError` subclass; it is
            built as ``error_class(message, status=N)``.
        :param fault_app: callable(error) returning the WSGI app that
            renders ``error`` in the API's format.
        :param internal_message: callable(environ, exception) returning
            the message of a 500.
        """
        self.app = app
        self.error_class = error_class
        self.fault_app = fault_app
        self.internal_message = internal_message

    def __call__(self, environ, start_response):
        try:
            return self.app(environ, start_response)
        except self.error_class as exc:
            error = exc
        except common_policy.PolicyNotAuthorized as exc:
            error = self.error_class(str(exc), status=403)
        except Exception as exc:
            LOG.exception('Unexpected error serving %s %s',
                          environ.get('REQUEST_METHOD'),
                          environ.get('PATH_INFO'))
            error = self.error_class(self.internal_message(environ, exc),
                                     status=500)
        return self.fault_app(error)(environ, start_response)
