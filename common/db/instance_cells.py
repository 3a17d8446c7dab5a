# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The cell of each instance a process has found, remembered.

An instance never changes cell once its mapping names one (moves stay in
their cell), so the conductor and the API remember the cells they found
rather than read the api database's mapping again for every lookup.
"""

import collections
import threading


class InstanceCells(object):
    """instance uuid -> cell uuid, thread-safe; beyond ``size`` entries
    the least recently remembered are forgotten first.
    """

    def __init__(self, size):
        self._cells = collections.OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, instance_uuid):
        """The cell uuid remembered for ``instance_uuid``, or None."""
        with self._lock:
            return self._cells.get(instance_uuid)

    def remember(self, instance_uuid, cell_uuid):
        """Record that ``instance_uuid`` lives in ``cell_uuid``."""
        self.remember_many([(instance_uuid, cell_uuid)])

    def remember_many(self, pairs):
        """Record each (instance uuid, cell uuid) of ``pairs``."""
        with self._lock:
            for instance_uuid, cell_uuid in pairs:
                self._cells[instance_uuid] = cell_uuid
                self._cells.move_to_end(instance_uuid)
            while len(self._cells) > self._size:
                self._cells.popitem(last=False)

    def forget(self, instance_uuid):
        """Drop what is remembered of ``instance_uuid`` (it is gone)."""
        with self._lock:
            self._cells.pop(instance_uuid, None)
