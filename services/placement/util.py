# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Helpers every placement handler uses: context, bodies, responses.

Handlers are plain functions of a webob request. They read the caller's
context and microversion from the environ, validate the body with
:func:`extract_json`, and answer with :func:`json_response`.
"""

import datetime
import email.utils
import uuid

import jsonschema
from oslo_utils import timeutils

from common.wsgi import util as wsgi_util
from services.placement import errors
from services.placement import microversion
from services.placement.schemas import fields

CONTEXT_KEY = 'placement.context'
QUERY_KEY = 'placement.query'
JSON = wsgi_util.JSON
is_uuid_like = wsgi_util.is_uuid_like


def context(req):
    """The :class:`common.context.RequestContext` of the request."""
    return req.environ[CONTEXT_KEY]


def version(req):
    """The :class:`services.placement.microversion.Version` asked for."""
    return req.environ[microversion.ENV_KEY]


def require_version(req, minimum):
    """404 unless the request's microversion is at least ``minimum``.

    Resources that a microversion introduced do not exist below it.
    """
    if version(req) < tuple(minimum):
        raise errors.NotFound('The resource could not be found.')


def require_json_content(req):
    """415 unless the request body is declared as JSON."""
    content_type = req.content_type or None
    if content_type != JSON:
        raise errors.UnsupportedMediaType(
            'The media type %s is not supported, use application/json'
            % content_type)


def validate(data, schema, prefix='JSON does not validate'):
    """Validate ``data`` against ``schema``; 400 naming the problem.

    The detail carries jsonschema's own report ("... Failed validating
    'pattern' in schema ... On instance['name']"), which names both the
    offending field and the rule it broke, as upstream clients expect;
    for the fields of :mod:`services.placement.schemas.fields` that refuse
    what no database or encoder takes (a NUL, a lone surrogate, a limit
    beyond the column), it says that in words instead.
    """
    if wsgi_util.is_valid(schema, data):
        return
    validator = wsgi_util.validator_for(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    raise errors.BadRequest('%s: %s' % (prefix,
                                        fields.refusal(error) or error))


def extract_json(req, schema):
    """Parse and validate the JSON body of ``req``.

    :raises errors.UnsupportedMediaType: the body is not declared JSON.
    :raises errors.BadRequest: malformed JSON or a schema mismatch.
    :returns: the decoded body.
    """
    require_json_content(req)
    data = wsgi_util.load_json(req.body, errors.BadRequest, 'Malformed JSON')
    validate(data, schema)
    return data


def query_params(req):
    """{name: [values in order]} of the query string, built once per request.

    NOTE: webob's MultiDict is a list of pairs: every ``getall(name)`` or
    ``[name]`` scans all of it, so looking up each of N distinct names is
    quadratic (20,000 parameters took seconds). One pass builds this map
    and every lookup after it is a dict access. The map is kept in the
    environ with the query string it was built from.
    """
    query_string = req.environ.get('QUERY_STRING', '')
    cached = req.environ.get(QUERY_KEY)
    if cached is not None and cached[0] == query_string:
        return cached[1]
    params = {}
    for name, value in req.GET.items():
        values = params.get(name)
        if values is None:
            params[name] = [value]
        else:
            values.append(value)
    req.environ[QUERY_KEY] = (query_string, params)
    return params


def validate_query(req, schema):
    """Validate the query string (as a dict of last values) against a schema.

    :raises errors.BadRequest: naming the bad or unexpected parameter.
    """
    # NOTE: a repeated parameter is validated by its last value, as a
    # MultiDict reads it.
    validate({name: values[-1] for name, values in query_params(req).items()},
             schema, prefix='Invalid query string parameters')


def json_response(req, data, status=200, last_modified=None, headers=None):
    """A JSON response; with cache headers from microversion 1.15.

    :param data: a JSON-serialisable object, or None for an empty body.
    :param last_modified: a datetime for Last-Modified; None means now.
    """
    resp = wsgi_util.json_response(data, status=status, headers=headers)
    if req.method == 'GET' or data is not None:
        add_cache_headers(req, resp, last_modified)
    return resp


def no_content(req):
    """An empty 204 response."""
    return wsgi_util.empty_response()


def add_cache_headers(req, resp, last_modified=None):
    """Last-Modified and Cache-Control, from microversion 1.15 on."""
    if version(req) < (1, 15):
        return
    if last_modified is None:
        last_modified = timeutils.utcnow(with_timezone=True)
    elif last_modified.tzinfo is None:
        last_modified = last_modified.replace(tzinfo=datetime.timezone.utc)
    resp.headers['last-modified'] = email.utils.format_datetime(
        last_modified, usegmt=True)
    resp.headers['cache-control'] = 'no-cache'


def latest(*timestamps):
    """The newest non-None timestamp, or None (i.e. "now")."""
    present = [t for t in timestamps if t is not None]
    return max(present) if present else None


def normalize_uuid(value):
    """The canonical, hyphenated lower-case form of a UUID string."""
    return str(uuid.UUID(value))


def query_values(req, name):
    """Every value given for query parameter ``name``, in order."""
    return list(query_params(req).get(name, ()))


def single_query_value(req, name):
    """The one value of ``name``, or None; 400 when it is repeated."""
    values = query_params(req).get(name, ())
    if len(values) > 1:
        raise errors.BadRequest(
            'Query parameter %r may be given only once.' % name,
            code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
    return values[0] if values else None
