# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Record times read fast, request times read strictly."""

import datetime

import pytest

from services.api import util


@pytest.mark.parametrize('text, expected', [
    ('2026-11-29T18:00:07', datetime.datetime(2026, 11, 29, 18, 0, 7)),
    ('2026-11-29T18:00:07.123456',
     datetime.datetime(2026, 11, 29, 18, 0, 7, 123456)),
    ('2026-11-29T18:00:07Z', datetime.datetime(2026, 11, 29, 18, 0, 7)),
    ('2026-11-29T18:00:07+01:00', datetime.datetime(2026, 11, 29, 17, 0, 7)),
])
def test_a_record_time_reads_as_a_request_time_does(text, expected):
    assert util.record_time(text) == expected == util.to_naive(text)
    assert util.record_time(expected) == expected


def test_the_views_write_record_times_as_nova():
    assert util.iso('2026-11-29T18:00:07.123456') == '2026-11-29T18:00:07Z'
    assert util.iso_micro('2026-11-29T18:00:07') == \
        '2026-11-29T18:00:07.000000'
    assert util.iso(None) is None and util.iso_micro('') is None


def test_a_request_time_keeps_iso8601s_grammar():
    # NOTE: Python reads ISO week dates; Nova's parser, and so a request's
    # changes-since, does not.
    with pytest.raises(ValueError):
        util.to_naive('2026-W48-7')
    with pytest.raises(ValueError):
        util.to_naive('yesterday')
