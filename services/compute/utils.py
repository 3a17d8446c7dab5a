# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Small helpers the agent's workflows share."""

import contextlib
import threading

import oslo_messaging as messaging
from oslo_utils import timeutils

INSTANCE_NOT_FOUND = 'InstanceNotFound'
UNEXPECTED_TASK_STATE = 'UnexpectedTaskStateError'


def exception_named(exc, *names):
    """True when ``exc`` is (or stands for) an exception class of ``names``.

    NOTE: a conductor's exception arrives as its own class when its module
    is allowed over RPC, as ``<Name>_Remote`` subclasses, or wrapped in a
    RemoteError naming it; the agent treats all three alike.
    """
    if isinstance(exc, messaging.RemoteError):
        return exc.exc_type in names
    for cls in type(exc).__mro__:
        if cls.__name__ in names or cls.__name__.replace(
                '_Remote', '') in names:
            return True
    return False


def not_found(exc):
    """True for InstanceNotFound from the conductor."""
    return exception_named(exc, INSTANCE_NOT_FOUND)


def unexpected_task_state(exc):
    """True for UnexpectedTaskStateError from the conductor."""
    return exception_named(exc, UNEXPECTED_TASK_STATE)


def utcnow_iso():
    """Now (UTC) as the ISO 8601 string Instance timestamps use."""
    return timeutils.utcnow().isoformat()


class KeyedLocks(object):
    """One lock per key (an instance uuid), dropped when nobody holds it.

    Builds and deletes of one instance run one after the other, as Nova
    serialises them on the instance uuid.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._locks = {}

    @contextlib.contextmanager
    def __call__(self, key):
        with self._lock:
            entry = self._locks.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._lock:
                entry[1] -= 1
                if not entry[1]:
                    self._locks.pop(key, None)
