# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""HTTP errors of the placement API and how they are rendered.

Handlers raise :class:`PlacementError` (or a subclass); the router turns it
into the upstream error document::

    {"errors": [{"status": 409, "title": "Conflict", "detail": "...",
                 "request_id": "req-...",
                 "code": "placement.concurrent_update"}]}

``code`` appears from microversion 1.23. A caller that does not accept JSON
gets a small HTML page instead, as upstream.
"""

import html
import json

from common.wsgi import faults

# Error codes (microversion 1.23 and later).
DEFAULT = 'placement.undefined_code'
CONCURRENT_UPDATE = 'placement.concurrent_update'
DUPLICATE_NAME = 'placement.duplicate_name'
INVENTORY_INUSE = 'placement.inventory.inuse'
PROVIDER_IN_USE = 'placement.resource_provider.inuse'
PROVIDER_CANNOT_DELETE_PARENT = (
    'placement.resource_provider.cannot_delete_parent')
RESOURCE_PROVIDER_NOT_FOUND = 'placement.resource_provider.not_found'
ILLEGAL_DUPLICATE_QUERYPARAM = 'placement.query.duplicate_key'
QUERYPARAM_BAD_VALUE = 'placement.query.bad_value'
QUERYPARAM_MISSING_VALUE = 'placement.query.missing_value'

# What each status says before the specific message, as clients of
# upstream placement have come to see it.
EXPLANATIONS = {
    400: ('The server could not comply with the request since it is either '
          'malformed or otherwise incorrect.'),
    401: ('This server could not verify that you are authorized to access '
          'the document you requested.'),
    403: 'Access was denied to this resource.',
    404: 'The resource could not be found.',
    405: 'The method %(method)s is not allowed for this resource.',
    406: 'The resource could not be generated that was acceptable to your '
         'browser (content of type %(accept)s.',
    409: 'There was a conflict when trying to complete your request.',
    415: ('The request media type %(content_type)s is not supported by this '
          'server.'),
    500: ('The server has either erred or is incapable of performing the '
          'requested operation.'),
}


class PlacementError(faults.HTTPError):
    """An HTTP error with a status, a message and an error code."""

    def __init__(self, message='', status=None, code=None, headers=None):
        """
        :param message: the specific reason, shown after the explanation.
        :param status: the HTTP status; defaults to the class's.
        :param code: the placement error code (1.23+).
        :param headers: extra response headers, e.g. ``Allow``.
        """
        super().__init__(message, status=status, headers=headers)
        self.code = code or DEFAULT


class BadRequest(PlacementError):
    status = 400


class Forbidden(PlacementError):
    status = 403


class NotFound(PlacementError):
    status = 404


class Conflict(PlacementError):
    status = 409


class NotAcceptable(PlacementError):
    status = 406


class UnsupportedMediaType(PlacementError):
    status = 415


def _explanation(status, environ):
    text = EXPLANATIONS.get(status, '')
    return text % {
        'method': environ.get('REQUEST_METHOD', ''),
        'accept': environ.get('HTTP_ACCEPT', ''),
        'content_type': environ.get('CONTENT_TYPE', ''),
    }


def _wants_html(environ):
    accept = environ.get('HTTP_ACCEPT')
    if not accept:
        return False
    # NOTE: only an explicit preference for HTML without any JSON or
    # wildcard gets the HTML page; API clients always get JSON.
    lowered = accept.lower()
    return ('text/html' in lowered and 'json' not in lowered and
            '*/*' not in lowered)


def render(environ, status, message, code=DEFAULT, request_id=None,
           show_code=False):
    """Return (content_type, body bytes) for an error.

    :param environ: the WSGI environ of the request.
    :param status: HTTP status code.
    :param message: the specific message.
    :param code: placement error code.
    :param request_id: the request id to report.
    :param show_code: include ``code`` (microversion 1.23 and later).
    """
    title = faults.TITLES.get(status, 'Error')
    explanation = _explanation(status, environ)
    detail = explanation
    if message:
        detail = '%s\n\n %s  ' % (explanation, message)
    if _wants_html(environ):
        body = ('<html>\n <head>\n  <title>%d %s</title>\n </head>\n <body>\n'
                '  <h1>%d %s</h1>\n  %s<br /><br />\n%s\n\n </body>\n</html>'
                % (status, title, status, title, html.escape(explanation),
                   html.escape(message or '')))
        return 'text/html; charset=UTF-8', body.encode('utf-8')
    error = {'status': status, 'title': title, 'detail': detail,
             'request_id': request_id}
    if show_code:
        error['code'] = code
    body = json.dumps({'errors': [error]})
    return 'application/json', body.encode('utf-8')
