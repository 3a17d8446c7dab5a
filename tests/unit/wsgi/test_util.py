# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""JSON bodies: decoding, validation and responses."""

import pytest

from common.wsgi import util

UUID = '8b4d4a0c-0b39-4b48-9b07-3d1f4b0e6a11'
SCHEMA = {'type': 'object', 'properties': {'id': {'format': 'uuid'}}}


class BadRequest(Exception):
    pass


@pytest.mark.parametrize('value,expected', [
    (UUID, True), (UUID.replace('-', ''), True), (UUID.upper(), True),
    ('nope', False), (None, False), (42, False),
])
def test_is_uuid_like(value, expected):
    assert util.is_uuid_like(value) is expected


def test_load_json():
    assert util.load_json(b'{"a": 1}', BadRequest, 'Malformed') == {'a': 1}
    with pytest.raises(BadRequest) as info:
        util.load_json(b'{bad', BadRequest, 'Malformed JSON')
    assert str(info.value).startswith('Malformed JSON: Expecting ')


def test_validator_is_cached_and_takes_hyphenless_uuids():
    validator = util.validator_for(SCHEMA)
    assert util.validator_for(SCHEMA) is validator
    assert validator.is_valid({'id': UUID.replace('-', '')})
    assert not validator.is_valid({'id': 'not-a-uuid'})
    # An equal but distinct schema gets its own validator.
    assert util.validator_for(dict(SCHEMA)) is not validator


def test_json_response():
    resp = util.json_response({'a': [1]}, status=201, headers={'X-A': 'b'})
    assert (resp.status_int, resp.body) == (201, b'{"a":[1]}')
    assert resp.headers['Content-Type'] == 'application/json'
    assert resp.headers['X-A'] == 'b'
    empty = util.json_response(None)
    assert empty.body == b'' and 'Content-Type' not in empty.headers


@pytest.mark.parametrize('status', [204, 202])
def test_empty_response(status):
    resp = util.empty_response(status)
    assert resp.status_int == status
    assert resp.body == b'' and 'Content-Type' not in resp.headers


@pytest.mark.parametrize('body,message', [
    (b'{"a": "\\ud800"}', 'field/attribute a: a NUL character or a lone '
                          'UTF-16 surrogate is not allowed in a string.'),
    (b'{"a": ["x", "\\udfff"]}', 'field/attribute a/1: '),
    (b'{"a": {"b\\u0000": 1}}', 'field/attribute a/b\x00 (key): '),
    (b'{"a": "\xed\xa0\x80"}', 'field/attribute a: '),
    (b'[' * 33 + b']' * 33, 'The JSON body nests deeper than 32 levels.'),
    (b'[' * 200000 + b']' * 200000,
     'The JSON body nests deeper than 32 levels.'),
    (b'[Infinity]', 'Malformed: Infinity is not a JSON number'),
])
def test_load_json_refuses_what_cannot_be_stored(body, message):
    with pytest.raises(BadRequest) as info:
        util.load_json(body, BadRequest, 'Malformed')
    assert message in str(info.value)


@pytest.mark.parametrize('body', [
    b'{"a": "\\u00e9\\ud83d\\ude00"}', '{"a": "\u00e9"}'.encode(),
    b'[' * 32 + b']' * 32, b'{"a": [1, {"b": "[[[[{{{{"}]}',
])
def test_load_json_takes_ordinary_documents(body):
    assert util.load_json(body, BadRequest, 'Malformed') is not None


DIGITS = {'type': ['integer', 'string'], 'pattern': '^-?[0-9]+$',
          'minimum': 1, 'maximum': 2 ** 31 - 1}


@pytest.mark.parametrize('value,valid', [
    (1, True), ('1', True), ('2147483647', True), (2 ** 31, False),
    ('2147483648', False), ('0', False), ('-5', False), ('9' * 5000, False),
    ('1000000000000000000000000000000', False), ('x', False),
])
def test_digit_strings_are_bounded(value, valid):
    assert util.validator_for(DIGITS).is_valid(value) is valid
    assert util.is_valid(DIGITS, value) is valid


def test_digit_string_error_names_the_string():
    [error] = util.validator_for(DIGITS).iter_errors('2147483648')
    assert error.message == (
        "'2147483648' is greater than the maximum of 2147483647")
