# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Microversion negotiation shared by the Berth APIs.

Each API keeps its own ``microversion`` module: the canonical version list,
the header names, the messages of its errors. What they share is here: the
:class:`Version` value, reading one service's entry of an
``OpenStack-API-Version`` header, the negotiation (none asked: the
minimum; ``latest``: the maximum; malformed: 400; outside the list: 406)
and the middleware that records the version and stamps it on every
response.
"""

import collections

import webob


class Version(collections.namedtuple('Version', 'major minor')):
    """A parsed microversion; compares with tuples, e.g. ``mv >= (1, 14)``."""

    def __str__(self):
        return '%d.%d' % (self.major, self.minor)

    def matches(self, min_version=None, max_version=None):
        """True when this version lies in [min_version, max_version]."""
        if min_version is not None and self < tuple(min_version):
            return False
        if max_version is not None and self > tuple(max_version):
            return False
        return True


def parse(text):
    """A :class:`Version` from ``'X.Y'``.

    :raises ValueError: when ``text`` is not two dot-separated integers.
    """
    major, minor = str(text).strip().split('.')
    if not (major.isdigit() and minor.isdigit()):
        raise ValueError(text)
    return Version(int(major), int(minor))


class MicroversionError(Exception):
    """A bad version header; ``status`` is 400 (malformed) or 406."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def service_value(header_value, service_type):
    """The ``service_type`` entry of an OpenStack-API-Version header.

    :param header_value: e.g. ``'compute 2.60, placement 1.30'``.
    :returns: the version text (``'1.30'``), or None when absent.
    """
    for item in header_value.split(','):
        parts = item.strip().split(None, 1)
        if len(parts) == 2 and parts[0].lower() == service_type:
            return parts[1].strip()
    return None


def _exactly_latest(text):
    return text == 'latest'


def negotiate(text, min_version, max_version, malformed, unacceptable,
              parser=parse, is_latest=_exactly_latest):
    """The Version a request gets for the version ``text`` it sent.

    :param text: the requested version text, or None/'' for none.
    :param malformed: the 400 message; ``{text}``, ``{min}`` and ``{max}``
        are filled in.
    :param unacceptable: the 406 message, filled in likewise.
    :param parser: callable(text) returning a Version, raising ValueError.
    :param is_latest: callable(text), True when ``text`` asks for the
        maximum.
    :raises MicroversionError: 400 for a malformed version, 406 for one
        outside [min_version, max_version].
    """
    if not text:
        return min_version
    if is_latest(text):
        return max_version
    fields = {'text': text, 'min': min_version, 'max': max_version}
    try:
        version = parser(text)
    except ValueError:
        raise MicroversionError(400, malformed.format(**fields))
    if not min_version <= version <= max_version:
        raise MicroversionError(406, unacceptable.format(**fields))
    return version


class MicroversionMiddleware(object):
    """Parse the requested microversion; stamp it on every response.

    ``versions`` is the API's microversion module (or any object) with
    ``ENV_KEY`` (where the version is kept in the environ), ``MIN_VERSION``
    (recorded for a refused header), ``from_headers(headers)`` (raising
    :class:`MicroversionError`) and ``response_headers(version)``, the
    ``[(name, value)]`` every response carries; they replace any header of
    those names the application set.
    """

    def __init__(self, app, versions, error_app):
        """
        :param versions: the API's microversion module, as above.
        :param error_app: callable(status, message) returning a WSGI app
            that renders the error in the API's format.
        """
        self.app = app
        self.versions = versions
        self.error_app = error_app

    def __call__(self, environ, start_response):
        versions = self.versions
        req = webob.Request(environ)
        try:
            version = versions.from_headers(req.headers)
        except MicroversionError as exc:
            version = versions.MIN_VERSION
            app = self.error_app(exc.status, exc.message)
        else:
            app = self.app
        environ[versions.ENV_KEY] = version
        stamp = versions.response_headers(version)
        replaced = {name.lower() for name, _value in stamp}

        def stamped_start_response(status, headers, exc_info=None):
            headers = [(k, v) for k, v in headers
                       if k.lower() not in replaced]
            headers.extend(stamp)
            return start_response(status, headers, exc_info)

        return app(environ, stamped_start_response)
