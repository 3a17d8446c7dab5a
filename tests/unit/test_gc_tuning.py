# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""gc_tuning.settle: start-up objects frozen, later garbage still freed."""

import gc
import threading
import weakref

import pytest

from common import gc_tuning
from tests.unit import waiting


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


@pytest.fixture
def tuned(unfrozen):
    saved = gc.get_threshold()
    # NOTE: a pass that an earlier test's cache fill scheduled in this
    # process must not run in the middle of these tests.
    _cancel_pending()
    yield
    gc.set_threshold(*saved)
    _cancel_pending()


def _cancel_pending():
    timer = gc_tuning._state['timer']
    if timer is not None:
        timer.cancel()
    gc_tuning._state.update(timer=None, last=None, passes=0)


def test_settle_widens_the_young_generation(tuned):
    gc_tuning.settle()

    assert gc.get_threshold()[0] == gc_tuning.YOUNG_THRESHOLD


def test_resettle_frees_what_died_after_being_frozen(tuned):
    node = _cycle()
    ref = weakref.ref(node)
    gc_tuning.settle()
    del node
    gc.collect()
    # Frozen: an ordinary collection leaves it alone.
    assert ref() is not None

    gc_tuning.resettle()
    # A young pass leaves the frozen objects alone...
    assert ref() is not None

    gc_tuning.resettle(full=True)

    # ...a full one frees what died among them.
    assert ref() is None
    assert gc.get_freeze_count() > 0


def test_settle_soon_runs_one_pass_then_waits(tuned):
    frozen = threading.Event()
    real = gc_tuning.resettle

    def resettle(full=False):
        real(full)
        frozen.set()

    gc_tuning.resettle = resettle
    try:
        assert gc_tuning.settle_soon(delay=0.01)
        assert not gc_tuning.settle_soon(delay=0.01)
        assert frozen.wait(10)
    finally:
        gc_tuning.resettle = real
    assert waiting.wait_for(lambda: gc_tuning._state['timer'] is None)
    # Within RESETTLE_INTERVAL of the pass: nothing more is scheduled.
    assert not gc_tuning.settle_soon(delay=0.01)


def test_every_sixth_scheduled_pass_is_full(tuned, monkeypatch):
    passes = []
    monkeypatch.setattr(gc_tuning, 'resettle',
                        lambda full=False: passes.append(full))
    for _ in range(2 * gc_tuning.FULL_EVERY):
        gc_tuning._run_scheduled()
    assert passes.count(True) == 2
    assert passes[gc_tuning.FULL_EVERY - 1] is True
