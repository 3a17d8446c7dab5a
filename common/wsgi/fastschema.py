# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A quick yes for JSON bodies that obviously match their schema.

jsonschema walks a schema anew for every document, building a validator
per level; for a claim (``PUT /allocations``) that took a tenth of the
request. :func:`checker_for` compiles a schema once into nested closures
that answer True or False and nothing else. True means the document is
valid; False only means "ask jsonschema", which then decides and words
the error, so what a client sees never depends on this module.

Only the Draft 4 keywords below are compiled, with jsonschema's own
semantics (an integer is an ``int`` but not a ``bool``, a keyword about
objects ignores non-objects, ...). A schema using any other validating
keyword (``$ref``, ``multipleOf``, ``dependencies``, a format other
than ``uuid``, an ``enum`` of non-strings, ...) gets no checker at all,
and ``uniqueItems`` is only decided for lists of strings.

One extension, shared with the validators of :mod:`common.wsgi.util`:
where a schema's type is ``["integer", "string"]`` or ``["number",
"string"]`` (a number the caller may send as a string), ``minimum`` and
``maximum`` bound the string's value too (:func:`digit_string_value`).
"""

import re

# Draft 4 keywords that validate; any other key (title, description, an
# unknown word) is ignored by jsonschema and so here.
_DRAFT4_KEYWORDS = frozenset((
    '$ref', 'additionalItems', 'additionalProperties', 'allOf', 'anyOf',
    'dependencies', 'enum', 'exclusiveMaximum', 'exclusiveMinimum', 'format',
    'items', 'maxItems', 'maxLength', 'maxProperties', 'maximum', 'minItems',
    'minLength', 'minProperties', 'minimum', 'multipleOf', 'not', 'oneOf',
    'pattern', 'patternProperties', 'properties', 'required', 'type',
    'uniqueItems'))


_DIGITS = re.compile(r'^-?[0-9]+$')
_DECIMAL = re.compile(r'^-?[0-9]+(\.[0-9]+)?$')
# Longer digit strings are beyond any bound a schema sets; they are not
# converted at all.
_LONGEST = 40


def digit_string_value(instance, schema):
    """The number a digit string stands for where ``schema``'s type is
    ``string`` and ``integer`` or ``number`` (a number the caller may
    send as a string); None otherwise, or when ``instance`` is not such a
    string.

    NOTE: JSON Schema's ``minimum`` and ``maximum`` ignore strings, so
    without this ``"1000000000000000000000000000000"`` passes a bounded
    integer parameter and then overflows its column.
    """
    types = schema.get('type')
    if not (isinstance(instance, str) and isinstance(types, list) and
            'string' in types):
        return None
    if 'integer' in types and _DIGITS.match(instance):
        convert = int
    elif 'number' in types and _DECIMAL.match(instance):
        convert = float
    else:
        return None
    if len(instance) > _LONGEST:
        return -10 ** _LONGEST if instance[0] == '-' else 10 ** _LONGEST
    return convert(instance)


class Unsupported(Exception):
    """The schema uses something this module does not compile."""


def _is_integer(value):
    # NOTE: Draft 4, unlike later drafts, does not count 1.0 as an integer.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPES = {
    'object': lambda v: isinstance(v, dict),
    'array': lambda v: isinstance(v, list),
    'string': lambda v: isinstance(v, str),
    'integer': _is_integer,
    'number': _is_number,
    'boolean': lambda v: isinstance(v, bool),
    'null': lambda v: v is None,
}


def _type(names):
    if isinstance(names, str):
        names = [names]
    try:
        tests = [_TYPES[name] for name in names]
    except (KeyError, TypeError):
        raise Unsupported('type %r' % (names,))
    if len(tests) == 1:
        return tests[0]
    return lambda v: any(test(v) for test in tests)


def _object_checks(schema, formats):
    checks = []
    properties = {name: _compile(sub, formats)
                  for name, sub in schema.get('properties', {}).items()}
    patterns = [(re.compile(pattern), _compile(sub, formats))
                for pattern, sub in schema.get('patternProperties',
                                               {}).items()]
    if properties:
        def check_properties(v):
            return all(check(v[name]) for name, check in properties.items()
                       if name in v)
        checks.append(check_properties)
    if patterns:
        def check_patterns(v):
            return all(check(value) for regex, check in patterns
                       for key, value in v.items() if regex.search(key))
        checks.append(check_patterns)
    if 'additionalProperties' in schema:
        checks.append(_additional(schema, properties, formats))
    if 'required' in schema:
        required = list(schema['required'])
        checks.append(lambda v: all(name in v for name in required))
    if 'minProperties' in schema:
        low = schema['minProperties']
        checks.append(lambda v: len(v) >= low)
    if 'maxProperties' in schema:
        high = schema['maxProperties']
        checks.append(lambda v: len(v) <= high)
    return checks


def _additional(schema, properties, formats):
    extra = schema['additionalProperties']
    # NOTE: jsonschema matches extra keys against the patterns joined with
    # "|"; do the same.
    joined = '|'.join(schema.get('patternProperties', {}))
    regex = re.compile(joined) if joined else None

    def extras(v):
        return [key for key in v if key not in properties and
                not (regex is not None and regex.search(key))]
    if isinstance(extra, dict):
        check = _compile(extra, formats)
        return lambda v: all(check(v[key]) for key in extras(v))
    if not extra:
        return lambda v: not extras(v)
    return lambda v: True


def _array_checks(schema, formats):
    checks = []
    if 'items' in schema:
        items = schema['items']
        if not isinstance(items, dict):
            raise Unsupported('items as a list')
        check = _compile(items, formats)
        checks.append(lambda v: all(check(item) for item in v))
    if 'minItems' in schema:
        low = schema['minItems']
        checks.append(lambda v: len(v) >= low)
    if 'maxItems' in schema:
        high = schema['maxItems']
        checks.append(lambda v: len(v) <= high)
    if schema.get('uniqueItems'):
        # NOTE: decided here for lists of strings only; jsonschema's
        # equality of other values (1, 1.0, True) is subtler than a set's.
        checks.append(lambda v: all(isinstance(item, str) for item in v)
                      and len(set(v)) == len(v))
    return checks


def _string_checks(schema):
    checks = []
    if 'minLength' in schema:
        low = schema['minLength']
        checks.append(lambda v: len(v) >= low)
    if 'maxLength' in schema:
        high = schema['maxLength']
        checks.append(lambda v: len(v) <= high)
    if 'pattern' in schema:
        regex = re.compile(schema['pattern'])
        checks.append(lambda v: regex.search(v) is not None)
    return checks


def _number_checks(schema):
    checks = []
    if 'minimum' in schema:
        low = schema['minimum']
        if schema.get('exclusiveMinimum', False):
            checks.append(lambda v: v > low)
        else:
            checks.append(lambda v: v >= low)
    if 'maximum' in schema:
        high = schema['maximum']
        if schema.get('exclusiveMaximum', False):
            checks.append(lambda v: v < high)
        else:
            checks.append(lambda v: v <= high)
    return checks


def _digit_string_checks(schema, number_checks):
    """The number checks applied to a digit string's value (see the module
    doc); None when they do not apply.
    """
    types = schema.get('type')
    if not (number_checks and isinstance(types, list) and
            'string' in types and ('integer' in types or
                                   'number' in types)):
        return None

    def check(v):
        number = digit_string_value(v, schema)
        return number is None or all(c(number) for c in number_checks)
    return check


def _combined(schema, formats):
    checks = []
    if 'allOf' in schema:
        subs = [_compile(sub, formats) for sub in schema['allOf']]
        checks.append(lambda v: all(sub(v) for sub in subs))
    if 'anyOf' in schema:
        subs = [_compile(sub, formats) for sub in schema['anyOf']]
        checks.append(lambda v: any(sub(v) for sub in subs))
    if 'oneOf' in schema:
        subs = [_compile(sub, formats) for sub in schema['oneOf']]
        checks.append(lambda v: sum(1 for sub in subs if sub(v)) == 1)
    if 'not' in schema:
        sub = _compile(schema['not'], formats)
        checks.append(lambda v: not sub(v))
    return checks


def _enum(values):
    # NOTE: only string enums: jsonschema's equality for the others (1 vs
    # 1.0 vs True) is subtler than ``in``.
    if not all(isinstance(value, str) for value in values):
        raise Unsupported('enum of non-strings')
    allowed = frozenset(values)
    return lambda v: isinstance(v, str) and v in allowed


_COMPILED = frozenset((
    'additionalProperties', 'allOf', 'anyOf', 'enum', 'exclusiveMaximum',
    'exclusiveMinimum', 'format', 'items', 'maxItems', 'maxLength',
    'maxProperties', 'maximum', 'minItems', 'minLength', 'minProperties',
    'minimum', 'not', 'oneOf', 'pattern', 'patternProperties', 'properties',
    'required', 'type', 'uniqueItems'))


def _guarded(test, checks):
    """One check running ``checks`` only on values that pass ``test``."""
    if not checks:
        return None
    return lambda v: not test(v) or all(check(v) for check in checks)


def _compile(schema, formats):
    if not isinstance(schema, dict):
        raise Unsupported('schema %r' % (schema,))
    unsupported = (set(schema) & _DRAFT4_KEYWORDS) - _COMPILED
    if unsupported:
        raise Unsupported(', '.join(sorted(unsupported)))
    checks = []
    if 'type' in schema:
        checks.append(_type(schema['type']))
    if 'enum' in schema:
        checks.append(_enum(schema['enum']))
    if 'format' in schema:
        if schema['format'] not in formats:
            raise Unsupported('format %s' % schema['format'])
        checks.append(formats[schema['format']])
    number_checks = _number_checks(schema)
    checks.extend(filter(None, (
        _guarded(_TYPES['object'], _object_checks(schema, formats)),
        _guarded(_TYPES['array'], _array_checks(schema, formats)),
        _guarded(_TYPES['string'], _string_checks(schema)),
        _guarded(_is_number, number_checks),
        _digit_string_checks(schema, number_checks))))
    checks.extend(_combined(schema, formats))
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(check(v) for check in checks)


_CHECKERS = {}


def checker_for(schema, formats):
    """A function(document) -> True when valid, False when in doubt.

    Built once per schema (schemas are module constants) and cached.

    :param schema: a Draft 4 JSON schema.
    :param formats: {format name: function(value) -> bool} with the same
        meaning as the format checker jsonschema validates with.
    :returns: the function, or None when the schema uses a keyword this
        module does not compile (validate with jsonschema alone).
    """
    cached = _CHECKERS.get(id(schema))
    if cached is None or cached[0] is not schema:
        try:
            check = _compile(schema, formats)
        except (Unsupported, re.error):
            check = None
        cached = (schema, check)
        _CHECKERS[id(schema)] = cached
    return cached[1]
