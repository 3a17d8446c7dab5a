# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""pytest configuration shared by all Berth tests."""

from gabbi import driver as gabbi_driver
from gabbi import pytester as gabbi_pytester
import pytest


def _is_gabbi(item):
    """True for the pytest cases gabbi generates from YAML files."""
    return getattr(item, 'function', None) is gabbi_driver.test_pytest


def _only_gabbi_items(step):
    """Wrap a gabbi collection step so it sees gabbi's own cases only.

    NOTE: gabbi 4.2's pytest plugin takes every parametrized case whose id
    holds a colon for one of its YAML tests (and fails with a KeyError), so
    a plain test with an id like ``VCPU:2`` broke the whole collection.
    """
    def wrapper(items, config):
        mine = [item for item in items if _is_gabbi(item)]
        step(mine, config)
        kept = set(map(id, mine))
        items[:] = [item for item in items
                    if not _is_gabbi(item) or id(item) in kept]
    return wrapper


gabbi_pytester.a_pytest_collection_modifyitems = _only_gabbi_items(
    gabbi_pytester.a_pytest_collection_modifyitems)
gabbi_pytester.c_pytest_collection_modifyitems = _only_gabbi_items(
    gabbi_pytester.c_pytest_collection_modifyitems)


def gabbi_scope(nodeid):
    """The YAML file of a gabbi node id, or None for any other test.

    gabbi ids read ``path::test_pytest[<loader>:<file>_<test name>]``; the
    file is the part before the first underscore after the colon (which
    is why gabbi YAML file names must not contain underscores).
    """
    if '::test_pytest[' not in nodeid:
        return None
    name = nodeid.split('::test_pytest[', 1)[1].rsplit(']', 1)[0]
    if ':' not in name:
        return None
    loader, rest = name.split(':', 1)
    return '%s:%s' % (loader, rest.split('_', 1)[0])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With ``--dist loadscope``, make each gabbi YAML file one scope.

    NOTE: a YAML file is an ordered story whose fixture starts before its
    first test, so it must run whole, in order, in one worker; plain
    loadscope would put every YAML file (one test module) on one worker.
    Other tests keep loadscope's module/class scopes.
    """
    if config.getoption('dist') != 'loadscope':
        return None
    from xdist.scheduler import loadscope

    class GabbiFileScheduling(loadscope.LoadScopeScheduling):
        """loadscope, with one scope per gabbi YAML file."""

        def _split_scope(self, nodeid):
            return gabbi_scope(nodeid) or super()._split_scope(nodeid)

    return GabbiFileScheduling(config, log)
