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
import json
import uuid

import jsonschema
import orjson
from oslo_utils import timeutils
import webob

from services.placement import errors
from services.placement import microversion

CONTEXT_KEY = 'placement.context'
JSON = 'application/json'


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


def _uuid_format(instance):
    # NOTE: upstream accepts hyphen-less UUIDs wherever a schema asks for
    # the uuid format; jsonschema's own check insists on the hyphens.
    if not isinstance(instance, str):
        return True
    return is_uuid_like(instance)


_FORMAT_CHECKER = jsonschema.FormatChecker()
_FORMAT_CHECKER.checks('uuid')(_uuid_format)


def validate(data, schema, prefix='JSON does not validate'):
    """Validate ``data`` against ``schema``; 400 naming the problem.

    The detail carries jsonschema's own report ("... Failed validating
    'pattern' in schema ... On instance['name']"), which names both the
    offending field and the rule it broke, as upstream clients expect.
    """
    validator = _validator_for(schema)
    if validator.is_valid(data):
        return
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    raise errors.BadRequest('%s: %s' % (prefix, error))


# Schemas are module-level constants; building a validator costs far more
# than validating a small body, so each is built once per process.
_VALIDATORS = {}


def _validator_for(schema):
    cached = _VALIDATORS.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = (schema, jsonschema.Draft4Validator(
            schema, format_checker=_FORMAT_CHECKER))
        _VALIDATORS[id(schema)] = cached
    return cached[1]


def extract_json(req, schema):
    """Parse and validate the JSON body of ``req``.

    :raises errors.UnsupportedMediaType: the body is not declared JSON.
    :raises errors.BadRequest: malformed JSON or a schema mismatch.
    :returns: the decoded body.
    """
    require_json_content(req)
    try:
        data = json.loads(req.body)
    except ValueError as exc:
        raise errors.BadRequest('Malformed JSON: %s' % exc)
    validate(data, schema)
    return data


def validate_query(req, schema):
    """Validate the query string (as a dict of last values) against a schema.

    :raises errors.BadRequest: naming the bad or unexpected parameter.
    """
    validate(dict(req.GET), schema,
             prefix='Invalid query string parameters')


def json_response(req, data, status=200, last_modified=None, headers=None):
    """A JSON response; with cache headers from microversion 1.15.

    :param data: a JSON-serialisable object, or None for an empty body.
    :param last_modified: a datetime for Last-Modified; None means now.
    """
    resp = webob.Response(status=status, charset=None)
    if data is not None:
        # NOTE: orjson writes the large candidate and provider lists about
        # twenty times faster than the standard library.
        resp.body = orjson.dumps(data)
        resp.content_type = JSON
    else:
        resp.content_type = None
    if headers:
        resp.headers.update(headers)
    if req.method == 'GET' or data is not None:
        add_cache_headers(req, resp, last_modified)
    return resp


def no_content(req):
    """An empty 204 response."""
    resp = webob.Response(status=204, charset=None)
    resp.content_type = None
    return resp


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


def is_uuid_like(value):
    """True for a canonical or hyphen-less UUID string."""
    try:
        uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        return False
    return True


def normalize_uuid(value):
    """The canonical, hyphenated lower-case form of a UUID string."""
    return str(uuid.UUID(value))


def query_values(req, name):
    """Every value given for query parameter ``name``, in order."""
    return req.GET.getall(name)


def single_query_value(req, name):
    """The one value of ``name``, or None; 400 when it is repeated."""
    values = req.GET.getall(name)
    if len(values) > 1:
        raise errors.BadRequest(
            'Query parameter %r may be given only once.' % name,
            code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
    return values[0] if values else None
