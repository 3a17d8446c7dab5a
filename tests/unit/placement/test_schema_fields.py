# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The field schemas that keep unstorable values out of placement."""

import json
import re

import pytest

from services.placement import errors
from services.placement.schemas import fields
from services.placement import util


@pytest.mark.parametrize('maximum', [1, 7, 9, 10, 19, 20, 99, 100, 101, 109,
                                     110, 999, 1000, 2020, 30303])
def test_up_to_matches_exactly_one_to_maximum(maximum):
    pattern = re.compile(fields._up_to(maximum))
    for value in range(0, maximum * 3 + 50):
        assert bool(pattern.search(str(value))) == (1 <= value <= maximum), (
            maximum, value)
    assert not pattern.search('0%d' % maximum)
    assert not pattern.search('-1')


@pytest.mark.parametrize('value,accepted', [
    ('1', True), ('2147483647', True), ('999999999', True),
    ('1000000000', True), ('2147483646', True), ('2147483648', False),
    ('2147483650', False), ('3000000000', False), ('10000000000', False),
    ('99999999999999999999999', False),
])
def test_positive_digits_at_the_column_bound(value, accepted):
    schema = {'type': 'object',
              'properties': {'limit': fields.positive_digits()}}
    if accepted:
        util.validate({'limit': value}, schema)
        return
    with pytest.raises(errors.BadRequest) as caught:
        util.validate({'limit': value}, schema)
    assert ("Invalid value for 'limit': the value must be at most "
            "2147483647. Got: '%s'" % value) in caught.value.message


@pytest.mark.parametrize('value', ['', 'compute-1', 'caf\u00e9',
                                   '\U0010ffff', '\U0001f600'])
def test_text_keeps_every_storable_string(value):
    util.validate({'name': value}, {'type': 'object', 'properties': {
        'name': fields.text(maxLength=200)}})


def test_schema_stays_json_encodable():
    # NOTE: the patterns are written with escapes, so a schema can be
    # published (an OpenAPI document) by any JSON encoder.
    text = json.dumps(fields.positive_digits(), ensure_ascii=False)
    text.encode('utf-8')
    json.dumps(fields.TEXT, ensure_ascii=False).encode('utf-8')
