# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Body helpers both APIs' handlers build on: validation and JSON answers.

What a handler reads and how a failure is worded stays in each API's
``util.py``; the pieces here behave identically in both: decoding a
JSON body, the cached JSON-schema validators (which, as Nova and upstream
placement, accept hyphen-less UUIDs) and the JSON and empty responses.
"""

import json
import uuid

import jsonschema
import orjson
import webob

from common.wsgi import fastschema

JSON = 'application/json'


def is_uuid_like(value):
    """True for a canonical or hyphen-less UUID string."""
    try:
        uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        return False
    return True


def _uuid_format(instance):
    # NOTE: Nova and upstream placement accept hyphen-less UUIDs wherever a
    # schema asks for the uuid format; jsonschema's own check insists on
    # the hyphens.
    return not isinstance(instance, str) or is_uuid_like(instance)


_FORMAT_CHECKER = jsonschema.FormatChecker()
_FORMAT_CHECKER.checks('uuid')(_uuid_format)
_VALIDATORS = {}
# The formats the compiled checks know; a schema naming another one is
# left to jsonschema (see common.wsgi.fastschema).
_FAST_FORMATS = {'uuid': _uuid_format}


def validator_for(schema):
    """The Draft 4 validator of ``schema``, built once per process.

    NOTE: schemas are module constants; building a validator costs far
    more than checking a small body.
    """
    cached = _VALIDATORS.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = (schema, jsonschema.Draft4Validator(
            schema, format_checker=_FORMAT_CHECKER))
        _VALIDATORS[id(schema)] = cached
    return cached[1]


def is_valid(schema, data):
    """True when ``data`` matches ``schema``, as the validator above says.

    A document that plainly matches is recognised by the schema's compiled
    check (:mod:`common.wsgi.fastschema`), many times faster than
    jsonschema; any other is left to jsonschema.
    """
    check = fastschema.checker_for(schema, _FAST_FORMATS)
    if check is not None and check(data):
        return True
    return validator_for(schema).is_valid(data)


def load_json(body, error_class, prefix):
    """The document a JSON request body holds.

    :param body: the body bytes.
    :param error_class: the API's 400 exception class.
    :param prefix: the start of its message; the decoder's complaint
        follows (``Malformed JSON: Expecting value: line 1 column 1``).
    :raises: ``error_class`` when the body is not JSON.
    """
    try:
        return json.loads(body)
    except ValueError as exc:
        raise error_class('%s: %s' % (prefix, exc))


def json_response(data, status=200, headers=None):
    """A JSON response; ``data`` None gives an empty body.

    :param data: a JSON-serialisable object, or None.
    :param headers: extra response headers, a dict.
    """
    resp = webob.Response(status=status, charset=None)
    if data is not None:
        # NOTE: orjson writes the large candidate, provider and server
        # lists about twenty times faster than the standard library.
        resp.body = orjson.dumps(data)
        resp.content_type = JSON
    else:
        resp.content_type = None
    if headers:
        resp.headers.update(headers)
    return resp


def empty_response(status=204):
    """A response without a body or a Content-Type."""
    resp = webob.Response(status=status, charset=None)
    resp.content_type = None
    return resp
