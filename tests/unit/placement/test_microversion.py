# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Guard tests for the one canonical list of placement microversions."""

import pytest

from services.placement import microversion

# NOTE: Berth promises wire compatibility with upstream placement up to
# and including this version; raising it is a deliberate, reviewed change.
EXPECTED_MAX = '1.39'


def test_versions_are_contiguous():
    """Every minor from 1.0 to the maximum is listed, once, in order."""
    parsed = [tuple(int(p) for p in v.split('.'))
              for v in microversion.VERSIONS]
    assert parsed == [(1, minor) for minor in range(len(parsed))]


def test_ends_of_the_list():
    """The minimum is 1.0 and the maximum the promised one."""
    assert microversion.VERSIONS[0] == '1.0'
    assert microversion.VERSIONS[-1] == EXPECTED_MAX
    assert str(microversion.MIN_VERSION) == '1.0'
    assert str(microversion.MAX_VERSION) == EXPECTED_MAX


@pytest.mark.parametrize('header, expected', [
    (None, (1, 0)),
    ('placement 1.0', (1, 0)),
    ('placement 1.14', (1, 14)),
    ('placement 1.39', (1, 39)),
    ('placement latest', (1, 39)),
    ('Placement 1.5', (1, 5)),
    ('compute 2.1, placement 1.7', (1, 7)),
    ('placement 1.20 , compute 2.53', (1, 20)),
    # NOTE: a header for another service only leaves placement at 1.0.
    ('compute 2.60', (1, 0)),
])
def test_accepted_headers(header, expected):
    """Headers that name a version this service provides."""
    headers = {} if header is None else {microversion.HEADER: header}
    version = microversion.from_headers(headers)
    assert version == expected
    assert isinstance(version, microversion.Version)


@pytest.mark.parametrize('header, status', [
    ('placement 1.40', 406),
    ('placement 2.0', 406),
    ('placement 0.9', 406),
    ('placement 1.a', 400),
    ('placement 1', 400),
    ('placement 1.2.3', 400),
    ('placement lastest', 400),
])
def test_refused_headers(header, status):
    """Malformed versions are 400, well-formed unknown ones 406."""
    with pytest.raises(microversion.MicroversionError) as ctx:
        microversion.from_headers({microversion.HEADER: header})
    assert ctx.value.status == status


def test_version_compares_with_tuples():
    """Handlers write ``util.version(req) >= (1, 14)``."""
    version = microversion.Version(1, 14)
    assert version >= (1, 14)
    assert version < (1, 15)
    assert version.matches((1, 10), (1, 20))
    assert not version.matches(min_version=(1, 15))
    assert not version.matches(max_version=(1, 13))
    assert str(version) == '1.14'
