# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Run every YAML file in ``gabbits/`` against an in-process placement.

Each file is an ordered story of HTTP requests and the responses a client
must see; the files double as a readable specification of the API.
"""

import os

from gabbi import driver
# NOTE: pytest collects this function; gabbi parametrizes it per YAML test.
from gabbi.driver import test_pytest  # noqa: F401

from tests.unit.placement import fixtures

TESTS_DIR = os.path.join(os.path.dirname(__file__), 'gabbits')


def pytest_generate_tests(metafunc):
    """Turn each YAML test into a pytest case."""
    driver.py_test_generator(
        TESTS_DIR, intercept=fixtures.setup_app,
        fixture_module=fixtures, metafunc=metafunc,
        test_loader_name=__name__)
