# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The compiled schema checks agree with jsonschema, document by document.

Every placement schema, and a few made-up ones for the keywords placement
does not use, is checked against thousands of documents generated from
it: mostly valid ones, each with a few random mutations (wrong types,
1.0 for 1, True for 1, boundary lengths and numbers, extra or missing
keys). The compiled check must never say yes where jsonschema says no,
and must say yes for (nearly) all that jsonschema accepts.
"""

import copy
import inspect
import random
import string

import jsonschema
import pytest

from common.wsgi import fastschema
from common.wsgi import util
from services.placement import microversion
from services.placement.schemas import aggregate
from services.placement.schemas import allocation
from services.placement.schemas import allocation_candidate
from services.placement.schemas import inventory
from services.placement.schemas import reshaper
from services.placement.schemas import resource_class
from services.placement.schemas import resource_provider
from services.placement.schemas import trait
from services.placement.schemas import usage

UUID = '8b4d4a0c-0b39-4b48-9b07-3d1f4b0e6a11'
MODULES = (aggregate, allocation, allocation_candidate, inventory, reshaper,
           resource_class, resource_provider, trait, usage)
VERSIONS = [microversion.Version(1, minor)
            for minor in range(microversion.MAX_VERSION.minor + 1)]

EXTRA_SCHEMAS = [
    {'type': 'number', 'minimum': 0, 'exclusiveMinimum': True,
     'maximum': 10, 'exclusiveMaximum': True},
    {'type': ['string', 'null'], 'enum': ['a', 'b']},
    {'enum': ['x', 'y']},
    {'oneOf': [{'type': 'integer'}, {'type': 'number', 'minimum': 5}]},
    {'allOf': [{'type': 'string'}, {'not': {'pattern': '^a'}}]},
    {'type': 'object', 'additionalProperties': {'type': 'integer'},
     'properties': {'a': {'type': 'string'}}, 'maxProperties': 2},
    {'type': 'array', 'items': {'type': 'boolean'}, 'maxItems': 2},
    {'minLength': 2, 'maximum': 3, 'required': ['a']},
    {'type': 'array', 'items': {'type': 'string'}, 'uniqueItems': True},
    {'title': 'annotations only', 'description': 'anything goes'},
]


def _schemas():
    """Every schema the placement schema modules define or build."""
    found = {}

    def add(schema):
        if isinstance(schema, dict) and ('type' in schema or
                                         'properties' in schema):
            found[id(schema)] = schema
    for module in MODULES:
        for name, value in vars(module).items():
            if name.startswith('__'):
                continue
            add(value)
            if inspect.isfunction(value) and not name.startswith('_'):
                for version in VERSIONS:
                    try:
                        add(value(version))
                    except Exception:
                        pass
    return list(found.values())


def _string(rng, schema):
    if 'enum' in schema and rng.random() < 0.8:
        return rng.choice(schema['enum'])
    if schema.get('format') == 'uuid' or 'fA-F' in schema.get('pattern', ''):
        return rng.choice([UUID, UUID.replace('-', ''), UUID.upper(),
                           UUID[:-1], 'not-a-uuid'])
    if 'pattern' in schema and 'A-Z' in schema['pattern']:
        alphabet = string.ascii_uppercase + string.digits + '_'
        if rng.random() < 0.8:
            text = ''.join(rng.choice(alphabet)
                           for _ in range(rng.randint(1, 12)))
            return rng.choice(['', 'CUSTOM_', '!', 'in:']) + text
    low = schema.get('minLength', 0)
    high = schema.get('maxLength', low + 12)
    length = rng.choice([low, high, low + 1, max(0, low - 1), high + 1,
                         rng.randint(low, min(high, low + 20))])
    return ''.join(rng.choice(string.ascii_letters + '_-:,!')
                   for _ in range(length))


def _number(rng, schema, integer):
    low = schema.get('minimum', -5)
    high = schema.get('maximum', 50)
    value = rng.choice([low, high, low - 1, high + 1, 0, 1,
                        rng.randint(int(low), int(min(high, low + 100)))])
    if not integer or rng.random() < 0.1:
        value = float(value) + rng.choice([0, 0, 0.5])
    return value


def _generate(rng, schema, depth=0):
    """A document meant to match ``schema`` (which it may not)."""
    for key in ('anyOf', 'oneOf', 'allOf'):
        if key in schema:
            return _generate(rng, rng.choice(schema[key]), depth)
    types = schema.get('type', rng.choice(['object', 'string', 'integer']))
    kind = rng.choice(types) if isinstance(types, list) else types
    if kind == 'object':
        doc = {}
        props = schema.get('properties', {})
        for name, sub in props.items():
            if name in schema.get('required', ()) or rng.random() < 0.5:
                doc[name] = _generate(rng, sub, depth + 1)
        for pattern, sub in schema.get('patternProperties', {}).items():
            for _ in range(rng.randint(0, 2)):
                key = _string(rng, {'pattern': pattern})
                doc[key] = _generate(rng, sub, depth + 1)
        extra = schema.get('additionalProperties')
        if isinstance(extra, dict):
            least = max(0, schema.get('minProperties', 0) - len(doc))
            for _ in range(rng.randint(least, least + 2)):
                doc[_string(rng, {})] = _generate(rng, extra, depth + 1)
        return doc
    if kind == 'array':
        items = schema.get('items', {'type': 'string'})
        least = schema.get('minItems', 0)
        return [_generate(rng, items, depth + 1)
                for _ in range(rng.randint(least, least + 3))]
    if kind == 'string':
        return _string(rng, schema)
    if kind in ('integer', 'number'):
        return _number(rng, schema, kind == 'integer')
    if kind == 'boolean':
        return rng.choice([True, False])
    return None


_WRONG = [None, True, False, 0, 1, 1.0, -1, 2.5, '', 'x', UUID, [], [1],
          {}, {'x': 1}, 2147483648]


def _mutate(rng, doc):
    """``doc`` with one random change somewhere inside it."""
    if isinstance(doc, dict) and doc and rng.random() < 0.7:
        key = rng.choice(sorted(doc))
        choice = rng.random()
        if choice < 0.2:
            del doc[key]
        elif choice < 0.3:
            doc[rng.choice(['extra', 'CUSTOM_X', UUID, 'x y'])] = 1
        else:
            doc[key] = _mutate(rng, doc[key])
        return doc
    if isinstance(doc, list) and doc and rng.random() < 0.7:
        index = rng.randrange(len(doc))
        doc[index] = _mutate(rng, doc[index])
        return doc
    return rng.choice(_WRONG)


def _documents(rng, schema, count):
    for _ in range(count):
        doc = _generate(rng, schema)
        yield doc
        for _ in range(rng.randint(1, 3)):
            doc = _mutate(rng, copy.deepcopy(doc))
            yield doc


SCHEMAS = _schemas() + EXTRA_SCHEMAS


def test_every_placement_schema_compiles():
    assert len(SCHEMAS) > 40
    for schema in _schemas():
        assert fastschema.checker_for(schema, util._FAST_FORMATS), schema


@pytest.mark.parametrize('index', range(len(SCHEMAS)))
def test_agrees_with_jsonschema(index):
    schema = SCHEMAS[index]
    check = fastschema.checker_for(schema, util._FAST_FORMATS)
    validator = util.validator_for(schema)
    rng = random.Random(index)
    valid = quick = 0
    for doc in _documents(rng, schema, 300):
        expected = validator.is_valid(doc)
        answer = check(doc)
        assert answer in (True, False)
        # Never a yes where jsonschema says no ...
        assert expected or not answer, (schema, doc)
        valid += expected
        quick += answer
    assert valid, 'no valid document generated for %r' % (schema,)
    # ... and a yes for (nearly) every valid document: only uniqueItems
    # over values other than strings is left to jsonschema.
    assert quick >= 0.95 * valid, (schema, quick, valid)


def test_claim_body_takes_the_fast_path():
    schema = allocation.put_schema(microversion.Version(1, 39))
    check = fastschema.checker_for(schema, util._FAST_FORMATS)
    body = {'allocations': {UUID: {'resources': {'VCPU': 1,
                                                 'MEMORY_MB': 512}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'}
    assert check(body) is True
    assert util.is_valid(schema, body)
    body['allocations'][UUID]['resources']['VCPU'] = 0
    assert check(body) is False
    assert not util.is_valid(schema, body)


@pytest.mark.parametrize('schema', [
    {'definitions': {'x': {'type': 'string'}}, '$ref': '#/definitions/x'},
    {'type': 'integer', 'multipleOf': 2},
    {'type': 'object', 'dependencies': {'a': ['b']}},
    {'type': 'string', 'format': 'email'},
    {'enum': [1, 2]},
    {'enum': ['a', None]},
    {'type': 'array', 'items': [{'type': 'string'}]},
    {'properties': {'a': {'pattern': '('}}},
])
def test_unsupported_schemas_are_left_to_jsonschema(schema):
    assert fastschema.checker_for(schema, util._FAST_FORMATS) is None
    assert util.is_valid(schema, None) is jsonschema.Draft4Validator(
        schema).is_valid(None)


def test_unknown_types_are_left_to_jsonschema():
    assert fastschema.checker_for({'type': 'decimal'}, {}) is None


def test_checker_is_cached_per_schema_object():
    schema = {'type': 'string', 'minLength': 1}
    first = fastschema.checker_for(schema, {})
    assert fastschema.checker_for(schema, {}) is first
    assert fastschema.checker_for(dict(schema), {}) is not first


@pytest.mark.parametrize('schema', [
    {'type': ['integer', 'string'], 'minimum': 0, 'maximum': 10},
    {'type': ['number', 'string'], 'minimum': 0, 'exclusiveMinimum': True,
     'maximum': 1.5},
])
@pytest.mark.parametrize('value', [
    '5', '11', '-1', '0', '1.5', '1.6', '9' * 45, 'x', 3, 1.2, 12,
])
def test_digit_strings_bounded_as_jsonschema_bounds_them(schema, value):
    check = fastschema.checker_for(schema, util._FAST_FORMATS)
    assert check(value) is util.validator_for(schema).is_valid(value)
