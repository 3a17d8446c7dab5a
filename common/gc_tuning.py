# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Keep the cyclic garbage collector off what start-up built.

A started service holds a few hundred thousand long-lived objects (modules,
SQLAlchemy metadata and compiled statements, option trees, policy rules)
that never become garbage. Every full collection walks them all, and a
request that builds a thousand allocation candidates or host states
allocates enough to trigger collections several times: measured on
placement at 1000 providers, a third of an ``allocation_candidates``
request went to the collector. Moving the start-up objects into the
permanent generation once the service is ready removes that cost; objects
made afterwards are collected as before.
"""

import gc
import logging
import threading

LOG = logging.getLogger(__name__)

_LOCK = threading.Lock()


def settle():
    """Collect once, then exempt every surviving object from collection.

    Called when a service has finished starting (and before a launcher
    forks its workers, so that the frozen pages stay shared). Safe to call
    more than once: each call freezes what was made since.
    """
    with _LOCK:
        gc.collect()
        gc.freeze()
    LOG.debug('Garbage collector: %d objects frozen', gc.get_freeze_count())
