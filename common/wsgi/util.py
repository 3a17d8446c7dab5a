# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Body helpers both APIs' handlers build on: validation and JSON answers.

What a handler reads and how a failure is worded stays in each API's
``util.py``; the pieces here behave identically in both: decoding a
JSON body (refusing what no backend or encoder takes: lone UTF-16
surrogates, NUL characters, documents nested deeper than
:data:`MAX_DEPTH`), the cached JSON-schema validators (which, as Nova and
upstream placement, accept hyphen-less UUIDs, and which bound integers
given as digit strings as they bound numbers) and the JSON and empty
responses.
"""

import json
import re
import uuid

import jsonschema
import orjson
import webob

from common.wsgi import fastschema

JSON = 'application/json'

# NOTE: no API body nests anywhere near this deep; a deeper one is refused
# before the decoder's or the validator's recursion can overflow (a 500).
MAX_DEPTH = 32
# A lone UTF-16 surrogate (the JSON escape "\ud800" decodes to one): the
# response encoder and the UTF-8 database drivers refuse it. And NUL,
# which PostgreSQL refuses in text.
_UNSTORABLE = re.compile('[\x00\ud800-\udfff]')


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


def _bound(keyword):
    check = jsonschema.Draft4Validator.VALIDATORS[keyword]

    def bounded(validator, value, instance, schema):
        number = fastschema.digit_string_value(instance, schema)
        if number is not None:
            # NOTE: the error names the string the caller sent.
            for error in check(validator, value, number, schema):
                error.message = error.message.replace(
                    repr(number), repr(instance), 1)
                yield error
            return
        yield from check(validator, value, instance, schema)
    return bounded


# Draft 4, with ``minimum``/``maximum`` applied to digit strings too.
_Validator = jsonschema.validators.extend(
    jsonschema.Draft4Validator,
    {'minimum': _bound('minimum'), 'maximum': _bound('maximum')})

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
        cached = (schema, _Validator(schema,
                                     format_checker=_FORMAT_CHECKER))
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


def _may_hold_unstorable(body):
    # NOTE: a surrogate or NUL reaches a string only as a \u escape or,
    # for a surrogate, as the (invalid) UTF-8 bytes 0xED 0xA0-0xBF, which
    # the decoder lets through; most bodies have neither and are not
    # walked at all.
    if isinstance(body, str):
        return '\\u' in body or _UNSTORABLE.search(body) is not None
    return b'\\u' in body or b'\xed' in body


def _where(path):
    return '/'.join(str(p) for p in path) or 'body'


def _too_deep(data):
    """True when containers nest deeper than MAX_DEPTH (no recursion)."""
    level = [data]
    for _depth in range(MAX_DEPTH):
        deeper = []
        for value in level:
            items = value.values() if isinstance(value, dict) else value
            deeper.extend(item for item in items
                          if isinstance(item, (dict, list)))
        if not deeper:
            return False
        level = deeper
    return True


def _unstorable(data):
    """The path of the first key or string holding a NUL or a lone
    surrogate (walked without recursion), or None.
    """
    stack = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if _UNSTORABLE.search(value):
                return _where(path)
            continue
        if isinstance(value, dict):
            for key, item in value.items():
                if _UNSTORABLE.search(key):
                    return _where(path + (key,)) + ' (key)'
                stack.append((item, path + (key,)))
        elif isinstance(value, list):
            stack.extend((item, path + (index,))
                         for index, item in enumerate(value))
    return None


def _unstorable_message(where):
    return ('Invalid input for field/attribute %s: a NUL character or a '
            'lone UTF-16 surrogate is not allowed in a string.' % where)


def _no_constant(name):
    # NOTE: Python's decoder takes NaN and Infinity, which are not JSON
    # and which no bound (NaN) or no database column refuses in time.
    raise ValueError('%s is not a JSON number' % name)


def load_json(body, error_class, prefix):
    """The document a JSON request body holds.

    :param body: the body bytes.
    :param error_class: the API's 400 exception class.
    :param prefix: the start of its message; the decoder's complaint
        follows (``Malformed JSON: Expecting value: line 1 column 1``).
    :raises: ``error_class`` when the body is not JSON, nests deeper than
        :data:`MAX_DEPTH` or holds a NUL character or a lone surrogate
        in any string (key or value).
    """
    try:
        data = json.loads(body, parse_constant=_no_constant)
    except RecursionError:
        raise error_class('The JSON body nests deeper than %d levels.'
                          % MAX_DEPTH)
    except ValueError as exc:
        raise error_class('%s: %s' % (prefix, exc))
    strings = _may_hold_unstorable(body)
    # NOTE: nesting needs an opening bracket per level; counting them is
    # much cheaper than walking every document.
    if isinstance(body, str):
        brackets = body.count('[') + body.count('{')
    else:
        brackets = body.count(b'[') + body.count(b'{')
    if brackets > MAX_DEPTH and isinstance(data, (dict, list)) and (
            _too_deep(data)):
        raise error_class('The JSON body nests deeper than %d levels.'
                          % MAX_DEPTH)
    where = _unstorable(data) if strings else None
    if where:
        raise error_class(_unstorable_message(where))
    return data


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
