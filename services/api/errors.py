# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""HTTP errors of the compute API and the fault documents they render to.

Handlers raise :class:`APIError` (or a subclass); the fault middleware turns
it into Nova's fault body, whose single key names the kind of fault::

    {"badRequest": {"code": 400, "message": "Invalid input for field ..."}}

python-novaclient, openstacksdk and the ``openstack`` CLI read ``message``
from whatever that single key is, so the key names follow Nova's.
"""

import json

from common.wsgi import faults

# Nova's fault names, by status.
FAULT_NAMES = {
    400: 'badRequest',
    401: 'unauthorized',
    403: 'forbidden',
    404: 'itemNotFound',
    405: 'badMethod',
    406: 'notAcceptable',
    409: 'conflictingRequest',
    413: 'overLimit',
    415: 'badMediaType',
    429: 'overLimit',
    501: 'notImplemented',
    503: 'serviceUnavailable',
}


class APIError(faults.HTTPError):
    """An HTTP error with a status and a message for the caller."""

    def __init__(self, message='', status=None, headers=None):
        """
        :param message: what the caller is told; defaults to the status's
            reason phrase.
        :param status: the HTTP status; defaults to the class's.
        :param headers: extra response headers (e.g. ``Allow``).
        """
        super().__init__(message, status=status, headers=headers)
        self.message = message or faults.TITLES.get(self.status, 'Error')


class BadRequest(APIError):
    status = 400


class Forbidden(APIError):
    status = 403


class NotFound(APIError):
    status = 404


class MethodNotAllowed(APIError):
    status = 405


class NotAcceptable(APIError):
    status = 406


class Conflict(APIError):
    status = 409


class UnsupportedMediaType(APIError):
    status = 415


class NotImplementedYet(APIError):
    """A Nova API Berth does not provide (501, as Nova for a missing API)."""

    status = 501


class ServiceUnavailable(APIError):
    status = 503


def fault_name(status):
    """Nova's fault key for ``status`` (``computeFault`` for other 5xx)."""
    if status in FAULT_NAMES:
        return FAULT_NAMES[status]
    return 'computeFault' if status >= 500 else 'badRequest'


def render(status, message):
    """The (content type, body bytes) of a fault document."""
    body = {fault_name(status): {'code': status, 'message': message}}
    return 'application/json', json.dumps(body).encode('utf-8')
