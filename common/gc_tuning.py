# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Keep the cyclic garbage collector off what lives as long as the service.

A started service holds a few hundred thousand long-lived objects (modules,
SQLAlchemy metadata and compiled statements, option trees, policy rules),
and its caches add as many once warm (the scheduler's host states,
placement's provider copies). They never become garbage, yet every full
collection walks them all, and a request that handles a thousand
allocation candidates or host states allocates enough to trigger
collections often: measured at 1000 hosts, the scheduler spent 3.4 ms of
each ``select_destinations`` in the collector, most of it in full passes
over its host-state cache.

Three things keep that cost down:

* :func:`settle` at start-up: one collection, then every survivor moves to
  the permanent generation, which collections do not walk;
* a young generation of :data:`YOUNG_THRESHOLD` allocations instead of
  700, so that a request builds its temporaries without a collection every
  few hundred of them (young passes cost about the same in total; the
  older generations are examined ten times less often);
* :func:`settle_soon`, called by a cache that has just filled: shortly
  after, off the request path, what was made since the last freeze is
  collected and the survivors are frozen too. Such passes are spaced at
  least :data:`RESETTLE_INTERVAL` apart, and every :data:`FULL_EVERY`-th
  one examines the permanent generation as well, so that whatever was
  frozen and has since become cyclic garbage is freed within the hour
  (a full pass over a started placement takes about 70 ms).

Objects made afterwards are collected as before.
"""

import gc
import logging
import threading
import time

LOG = logging.getLogger(__name__)

# Allocations (net of frees) between two young collections; CPython's
# default is 700.
YOUNG_THRESHOLD = 10000
# The least time between two passes asked for by settle_soon (seconds).
RESETTLE_INTERVAL = 600.0
# How long settle_soon waits, so that the pass follows the request that
# filled the cache rather than pausing it.
SETTLE_DELAY = 1.0
# Every this many settle_soon passes, the permanent generation is examined.
FULL_EVERY = 6

_LOCK = threading.Lock()
_state = {'timer': None, 'last': None, 'passes': 0}


def settle():
    """Collect once, then exempt every surviving object from collection.

    Called when a service has finished starting (and before a launcher
    forks its workers, so that the frozen pages stay shared). Safe to call
    more than once: each call freezes what was made since.
    """
    with _LOCK:
        _young_threshold()
        gc.collect()
        gc.freeze()
    LOG.debug('Garbage collector: %d objects frozen', gc.get_freeze_count())


def _young_threshold():
    _young, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)


def resettle(full=False):
    """Collect, then freeze the survivors.

    :param full: examine the frozen objects too (unfreeze first).
    """
    started = time.monotonic()
    with _LOCK:
        if full:
            gc.unfreeze()
        gc.collect()
        gc.freeze()
        _state['last'] = time.monotonic()
    LOG.debug('Garbage collector: %d objects frozen (%s pass, %.0f ms)',
              gc.get_freeze_count(), 'full' if full else 'young',
              (time.monotonic() - started) * 1000)


def settle_soon(delay=SETTLE_DELAY):
    """A cache has just filled: freeze it shortly, on another thread.

    Several calls while one pass is pending make one pass; after a pass,
    calls are ignored for :data:`RESETTLE_INTERVAL` seconds.

    :returns: True when a pass was scheduled.
    """
    with _LOCK:
        last = _state['last']
        if _state['timer'] is not None or (
                last is not None and
                time.monotonic() - last < RESETTLE_INTERVAL):
            return False
        timer = threading.Timer(delay, _run_scheduled)
        timer.daemon = True
        _state['timer'] = timer
    timer.start()
    return True


def _run_scheduled():
    with _LOCK:
        _state['passes'] += 1
        full = _state['passes'] % FULL_EVERY == 0
    try:
        resettle(full=full)
    finally:
        with _LOCK:
            _state['timer'] = None
