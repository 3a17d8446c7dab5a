# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Helpers every compute API handler uses: context, bodies, responses.

Handlers are plain functions of a webob request. They read the caller's
context and microversion from the environ, validate bodies with
:func:`extract_json` (a 400 naming the offending field, as Nova), and
answer with :func:`json_response`.
"""

import json

import jsonschema
from oslo_utils import strutils
from oslo_utils import timeutils

from common.db import record_times
from common.wsgi import util as wsgi_util
from services.api import errors
from services.api import microversion

CONTEXT_KEY = 'berth.compute.context'
CONF_KEY = 'berth.compute.conf'
JSON = wsgi_util.JSON
is_uuid_like = wsgi_util.is_uuid_like
json_response = wsgi_util.json_response
# NOTE: 204 by default; handlers of accepted actions ask for 202.
no_content = wsgi_util.empty_response


def context(req):
    """The :class:`common.context.RequestContext` of the request."""
    return req.environ[CONTEXT_KEY]


def conf(req):
    """The ConfigOpts the application was built with."""
    return req.environ[CONF_KEY]


def version(req):
    """The :class:`services.api.microversion.Version` asked for."""
    return req.environ[microversion.ENV_KEY]


def at_least(req, minimum):
    """True when the request's microversion is ``minimum`` or newer."""
    return version(req) >= tuple(minimum)


def require_version(req, minimum):
    """404 unless the request's microversion is at least ``minimum``.

    Resources that a microversion introduced do not exist below it.
    """
    if not at_least(req, minimum):
        raise errors.NotFound('The resource could not be found.')


def require_version_below(req, maximum):
    """404 unless the request's microversion is below ``maximum``.

    Resources that a microversion removed do not exist from it on.
    """
    if at_least(req, maximum):
        raise errors.NotFound('The resource could not be found.')


def _field_name(error):
    path = [str(p) for p in error.absolute_path]
    if error.validator == 'required' or not path:
        # NOTE: a missing property is reported on its parent, as Nova does,
        # and the message names the property itself.
        return '/'.join(path) or 'body'
    return '/'.join(path)


def validate(data, schema):
    """Validate ``data`` against ``schema``.

    :raises errors.BadRequest: "Invalid input for field/attribute <field>.
        Value: <value>. <reason>", the message Nova's clients show.
    """
    validator = wsgi_util.validator_for(schema)
    if validator.is_valid(data):
        return
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    raise errors.BadRequest(
        'Invalid input for field/attribute %s. Value: %s. %s' % (
            _field_name(error), _short(error.instance), error.message))


def _short(value):
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 200 else text[:197] + '...'


def extract_json(req, schema):
    """Parse and validate the JSON body of ``req``.

    :raises errors.BadRequest: malformed JSON or a schema mismatch.
    :returns: the decoded body.
    """
    if not req.body:
        raise errors.BadRequest('The request body is empty; a JSON body '
                                'is required.')
    content_type = req.content_type or JSON
    if 'json' not in content_type:
        raise errors.UnsupportedMediaType(
            'The media type %s is not supported, use application/json'
            % content_type)
    data = wsgi_util.load_json(req.body, errors.BadRequest,
                               'Malformed request body')
    validate(data, schema)
    return data


def query_bool(req, name, default=False):
    """A boolean query parameter (``1``, ``true``, ``yes``...)."""
    value = req.GET.get(name)
    if value is None:
        return default
    return strutils.bool_from_string(value, default=default)


def query_int(req, name, default=None, minimum=0, maximum=2 ** 31 - 1):
    """An integer query parameter within [minimum, maximum] (by default
    what a 32-bit signed column holds); 400 for anything else.
    """
    value = req.GET.get(name)
    if value is None or value == '':
        return default
    try:
        number = int(value)
    except ValueError:
        raise errors.BadRequest('Invalid input for query parameters %s. '
                                'Value: %s. Not an integer.'
                                % (name, _short(value)))
    if not minimum <= number <= maximum:
        raise errors.BadRequest('Invalid input for query parameters %s. '
                                'Value: %s. Must be >= %d and <= %d.'
                                % (name, _short(value), minimum, maximum))
    return number


def self_link(req, *parts):
    """The absolute URL of ``parts`` under this API's v2.1 root."""
    base = req.application_url.rstrip('/')
    return '/'.join([base, 'v2.1'] + [str(p) for p in parts])


def links(req, collection, ident):
    """Nova's ``links``: a versioned self link and a bookmark."""
    base = req.application_url.rstrip('/')
    return [{'rel': 'self', 'href': self_link(req, collection, ident)},
            {'rel': 'bookmark',
             'href': '%s/%s/%s' % (base, collection, ident)}]


def _datetime(value):
    if isinstance(value, str):
        return timeutils.normalize_time(timeutils.parse_isotime(value))
    return timeutils.normalize_time(value)


def to_naive(value):
    """``value`` (datetime or ISO string) as a naive UTC datetime; a
    string is read with iso8601's grammar (a request's date-time).
    """
    return _datetime(value)


def record_time(value):
    """A record's time (datetime or its ``isoformat`` string) as a naive
    UTC datetime.

    NOTE: every time of a listed server passes here (see
    :func:`common.db.record_times.parse`).
    """
    if isinstance(value, str):
        return record_times.parse(value)
    return timeutils.normalize_time(value)


def iso(value):
    """``value`` (datetime or ISO string, UTC) as Nova writes resource
    times: ``2024-01-02T03:04:05Z``; None stays None.
    """
    if value is None or value == '':
        return None
    return record_time(value).replace(microsecond=0).isoformat() + 'Z'


def iso_micro(value):
    """``value`` as Nova writes record times: ``2016-12-27T22:51:32.000000``.
    """
    if value is None or value == '':
        return None
    return record_time(value).strftime('%Y-%m-%dT%H:%M:%S.%f')


def json_text(value):
    """``value`` as the JSON text older microversions show, '' for None."""
    if value is None:
        return ''
    return value if isinstance(value, str) else json.dumps(value)
