# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Fixtures shared by the unit tests."""

import pytest

from common.conf import CONF


@pytest.fixture
def override():
    """``override(name, value, group=None)`` on CONF, undone after the test."""
    done = []

    def _set(name, value, group=None):
        CONF.set_override(name, value, group=group)
        done.append((name, group))

    yield _set
    for name, group in done:
        CONF.clear_override(name, group=group)
