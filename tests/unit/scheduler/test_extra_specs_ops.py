# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Truth table of the extra-spec operators (doc/behaviours.md A27, more)."""

import pytest

from services.scheduler import extra_specs_ops

# (value, requirement, expected)
SEEDS_A27 = [
    ('4', '= 3', True),
    ('2', '= 3', False),
    ('3', '== 3', True),
    ('fast', 's== fast', True),
    ('abc', '<in> b', True),
    ('a b c', '<all-in> a c', True),
    ('v2', '<or> v1 <or> v2 <or> v3', True),
    ('fast', 'fast', True),
    (None, '= 1', False),
    ('3', '>=', False),
]

TABLE = [
    # '=' is numerically "at least", not equality.
    ('3', '= 3', True),
    ('3.0', '= 3', True),
    ('16', '= 8', True),
    ('abc', '= 3', False),
    ('3', '= abc', False),
    # numeric ==, !=, >=, <=
    ('3', '== 3.0', True),
    ('4', '== 3', False),
    ('4', '!= 3', True),
    ('3', '!= 3', False),
    ('3', '>= 3', True),
    ('2', '>= 3', False),
    ('3', '<= 3', True),
    ('4', '<= 3', False),
    ('10', '>= 9', True),
    ('x', '== 3', False),
    (4, '>= 3', True),
    # string comparisons (lexicographic, so '10' < '9')
    ('fast', 's== slow', False),
    ('fast', 's!= slow', True),
    ('fast', 's!= fast', False),
    ('10', 's< 9', True),
    ('b', 's< a', False),
    ('a', 's<= a', True),
    ('b', 's<= a', False),
    ('b', 's> a', True),
    ('a', 's> a', False),
    ('a', 's>= a', True),
    ('a', 's>= b', False),
    ('2.1.0', 's== 2.1.0', True),
    # <in>: substring, or element of a collection
    ('abc', '<in> d', False),
    ('gcc-9', '<in> gcc', True),
    (['aes', 'avx'], '<in> aes', True),
    (['aes', 'avx'], '<in> ae', False),
    # <all-in>
    ('a b c', '<all-in> a d', False),
    (['aes', 'mmx', 'avx'], '<all-in> aes mmx', True),
    (['aes', 'avx'], '<all-in> aes mmx', False),
    # <or>
    ('v4', '<or> v1 <or> v2 <or> v3', False),
    ('v1', '<or> v1', True),
    ('fpu', '<or> fpu <or> gpu', True),
    ('<or>', '<or> <or>', False),
    # no operator: the whole requirement equals the value
    ('fast', 'slow', False),
    ('fast disk', 'fast disk', True),
    ('', '', True),
    ('3', '3.0', False),
    ('=3', '=3', True),
    # None never matches
    (None, 'fast', False),
    (None, 's== x', False),
    (None, '<in> x', False),
    (None, '<or> x <or> y', False),
]

# Every operator without an operand is False.
NO_OPERAND = [('3', op, False) for op in sorted(extra_specs_ops.OPERATORS)]


@pytest.mark.parametrize('value,req,expected',
                         SEEDS_A27 + TABLE + NO_OPERAND)
def test_match(value, req, expected):
    assert extra_specs_ops.match(value, req) is expected


def test_every_documented_operator_is_known():
    assert extra_specs_ops.OPERATORS == {
        '=', 's==', 's!=', 's>=', 's>', 's<=', 's<', '<in>', '<all-in>',
        '<or>', '==', '!=', '>=', '<='}


def test_every_operator_is_exercised_with_an_operand():
    used = {req.split()[0] for _value, req, _expected in SEEDS_A27 + TABLE
            if req.split() and len(req.split()) > 1}
    assert extra_specs_ops.OPERATORS <= used
