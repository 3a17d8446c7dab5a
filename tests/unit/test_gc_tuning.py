# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""gc_tuning.settle: start-up objects frozen, later garbage still freed."""

import gc
import weakref

import pytest

from common import gc_tuning


class _Node(object):
    pass


@pytest.fixture
def unfrozen():
    yield
    gc.unfreeze()


def _cycle():
    node = _Node()
    node.self = node
    return node


def test_settle_freezes_objects_alive_at_start(unfrozen):
    gc.unfreeze()
    survivor = _cycle()
    gc_tuning.settle()

    assert gc.get_freeze_count() > 0
    assert not any(obj is survivor for obj in gc.get_objects())


def test_cycles_made_after_settle_are_still_collected(unfrozen):
    gc_tuning.settle()
    ref = weakref.ref(_cycle())

    gc.collect()

    assert ref() is None


def test_garbage_cycles_are_collected_before_freezing(unfrozen):
    gc.unfreeze()
    ref = weakref.ref(_cycle())

    gc_tuning.settle()

    assert ref() is None
