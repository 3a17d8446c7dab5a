# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""What a functional test does when a service it needs is not there."""

import os

import pytest


def in_ci():
    """True when running under CI, where nothing may be skipped."""
    return os.environ.get('CI', '').lower() == 'true'


def unavailable(message):
    """Skip (developer machine) or fail (CI) for a missing service."""
    if in_ci():
        pytest.fail('%s (CI=true: a functional test may not skip)'
                    % message, pytrace=False)
    pytest.skip(message)
