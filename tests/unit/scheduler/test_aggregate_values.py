# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The shared per-aggregate value rules (minimum wins, bad values warn)."""

import logging

import pytest

from services.scheduler import aggregate_values
from tests.unit.scheduler import fakes


@pytest.mark.parametrize('values, default, cast_to, based_on, expected', [
    (set(), 16.0, float, min, 16.0),
    ({'4.0'}, 16.0, float, min, 4.0),
    ({'4.0', '2.0'}, 16.0, float, min, 2.0),
    ({'4.0', '2.0'}, 16.0, float, max, 4.0),
    ({'10', '3'}, 50, int, min, 3),
])
def test_validate_num_values(values, default, cast_to, based_on, expected):
    assert aggregate_values.validate_num_values(
        values, default, cast_to=cast_to, based_on=based_on) == expected


def test_validate_num_values_raises_on_bad_values():
    with pytest.raises(ValueError):
        aggregate_values.validate_num_values({'abc'}, 1.0, cast_to=float)


@pytest.mark.parametrize('based_on, word', [(min, 'minimum'),
                                            (max, 'maximum')])
def test_several_values_are_logged(caplog, based_on, word):
    with caplog.at_level(logging.INFO):
        aggregate_values.validate_num_values({'1', '2', '3'}, 0,
                                             based_on=based_on)
    assert ('3 values found, of which the %s value will be used.' % word
            in caplog.text)


def test_one_value_is_not_logged(caplog):
    with caplog.at_level(logging.INFO):
        aggregate_values.validate_num_values({'1'}, 0)
    assert 'values found' not in caplog.text


@pytest.mark.parametrize('metadata, expected', [
    ([], 16.0),
    ([{'cpu_allocation_ratio': '4.0'}, {'cpu_allocation_ratio': '2.0'}],
     2.0),
    ([{'cpu_allocation_ratio': '4.0'}, {'other': 'x'}], 4.0),
    ([{'cpu_allocation_ratio': '4.0'}, {'cpu_allocation_ratio': 'abc'}],
     16.0),
])
def test_aggregate_value(metadata, expected):
    host = fakes.host('h1', aggregates=[fakes.aggregate(metadata=item)
                                        for item in metadata])
    assert aggregate_values.aggregate_value(
        host, 'cpu_allocation_ratio', 16.0, cast_to=float) == expected


def test_undecodable_value_warns_and_uses_the_default(caplog):
    host = fakes.host('h1', aggregates=[
        fakes.aggregate(metadata={'cpu_allocation_ratio': 'abc'})])
    with caplog.at_level(logging.WARNING):
        value = aggregate_values.aggregate_value(
            host, 'cpu_allocation_ratio', 16.0, cast_to=float)
    assert value == 16.0
    assert "Could not decode cpu_allocation_ratio: '" in caplog.text
