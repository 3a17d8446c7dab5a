# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""What a driver's live migration copy is given and may raise.

The agent (services/compute/live_migration.py) hands the driver a
:class:`Control`, through which an operator's abort (2.24) or
force-complete (2.22) reaches the copy in progress, and a progress
callback taking :class:`Progress`; the driver raises
:class:`LiveMigrationAborted` when it stopped on an abort and
:class:`LiveMigrationFailed` when the copy failed. Both leave the guest
running on its source.
"""

import dataclasses
import threading

from common import exception


class LiveMigrationAborted(exception.BerthException):
    msg_fmt = 'Live migration of instance %(uuid)s was aborted'


class LiveMigrationFailed(exception.BerthException):
    msg_fmt = 'Live migration of instance %(uuid)s failed: %(reason)s'


@dataclasses.dataclass
class Progress(object):
    """Bytes of a copy: total, done and left, of memory and of disk (0
    for disk unless it is a block migration).
    """

    memory_total: int = 0
    memory_processed: int = 0
    memory_remaining: int = 0
    disk_total: int = 0
    disk_processed: int = 0
    disk_remaining: int = 0

    @classmethod
    def at(cls, fraction, memory_bytes, disk_bytes):
        """The progress ``fraction`` (0..1) of the way through."""
        memory = int(memory_bytes * fraction)
        disk = int(disk_bytes * fraction)
        return cls(memory_total=memory_bytes, memory_processed=memory,
                   memory_remaining=memory_bytes - memory,
                   disk_total=disk_bytes, disk_processed=disk,
                   disk_remaining=disk_bytes - disk)

    def values(self):
        """The migration record's fields."""
        return dataclasses.asdict(self)


class Control(object):
    """An operator's requests to one copy in progress (thread-safe).

    The RPC thread of ``live_migration_abort`` or
    ``live_migration_force_complete`` sets a request; the copy waits on
    :meth:`wait` between its steps and is woken at once.
    """

    def __init__(self):
        self._changed = threading.Event()
        self._lock = threading.Lock()
        self._abort = False
        self._force = False

    def abort(self):
        """Ask the copy to stop; the migration is rolled back."""
        with self._lock:
            self._abort = True
        self._changed.set()

    def force_complete(self):
        """Ask the copy to finish now (the guest is paused for the rest
        of the copy on a real hypervisor).
        """
        with self._lock:
            self._force = True
        self._changed.set()

    @property
    def aborted(self):
        with self._lock:
            return self._abort

    @property
    def forced(self):
        with self._lock:
            return self._force

    def wait(self, seconds):
        """Sleep up to ``seconds``; return early on a request."""
        if seconds > 0:
            self._changed.wait(seconds)
