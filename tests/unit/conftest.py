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


@pytest.fixture(autouse=True)
def _option_defaults_kept():
    """Undo ``set_default`` calls a test made on a ConfigOpts of its own.

    NOTE: oslo.config keeps an option's set default in its group's
    registration record, and a group registered on a second ConfigOpts
    shares that record with CONF: the all-in-one's defaults (its CPU
    sets, say) set on a test's private ConfigOpts would otherwise stay
    in CONF for every later test of the same worker.
    """
    missing = object()
    saved = [(info, info.get('default', missing))
             for group in list(CONF._groups.values())
             for info in list(group._opts.values())]
    yield
    changed = False
    for info, default in saved:
        if info.get('default', missing) is not default:
            changed = True
            if default is missing:
                info.pop('default', None)
            else:
                info['default'] = default
    if changed:
        # NOTE: CONF caches values it has read; oslo.config has no public
        # way to drop the cache without also dropping overrides.
        CONF._ConfigOpts__cache.clear()
