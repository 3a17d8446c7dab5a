# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The scheduler's own record of each decision, kept for the demo.

Every ``select_destinations`` produces an explanation (placement query,
hosts each filter removed and why, the weighers' ranking, the claim). A
NoValidHost carries it into the instance fault, where the API shows it;
a success keeps a bounded copy with the server (common.db
.decision_records). The demo wants the whole record of both, and the
all-in-one runs the scheduler in its own process, so it wraps the
pipeline and keeps the explanation of every real (not dry-run) decision
by instance uuid: the demo then tells *why* each server landed where it
did from the record of the decision itself, not from a re-run against a
cloud that has changed since.
"""

import collections
import threading

from common import exception

# NOTE: the newest decisions kept; the demo needs a handful, a long-running
# all-in-one must not grow without bound.
JOURNAL_SIZE = 1000


class DecisionJournal(object):
    """Explanations by instance uuid, newest kept; thread-safe."""

    def __init__(self, size=JOURNAL_SIZE):
        self._size = size
        self._lock = threading.Lock()
        self._by_uuid = collections.OrderedDict()

    def record(self, instance_uuids, explanation):
        """Remember ``explanation`` for each of ``instance_uuids``."""
        with self._lock:
            for uuid in instance_uuids:
                self._by_uuid.pop(uuid, None)
                self._by_uuid[uuid] = explanation
            while len(self._by_uuid) > self._size:
                self._by_uuid.popitem(last=False)

    def get(self, instance_uuid):
        """The latest explanation for the instance, or None."""
        with self._lock:
            return self._by_uuid.get(instance_uuid)


class RecordingScheduler(object):
    """A :class:`services.scheduler.scheduling.Scheduler` that remembers.

    Answers exactly as the wrapped scheduler does; everything but
    ``select_destinations`` goes straight to it.
    """

    def __init__(self, scheduler, journal):
        self._scheduler = scheduler
        self.journal = journal

    def select_destinations(self, context, spec, instance_uuids,
                            return_alternates=True, dry_run=False,
                            hand_over=None):
        """Schedule with the wrapped scheduler; record its explanation.

        :raises common.exception.NoValidHost: as the wrapped one does.
        """
        try:
            selections, explanation = self._scheduler.select_destinations(
                context, spec, instance_uuids,
                return_alternates=return_alternates, dry_run=dry_run,
                hand_over=hand_over)
        except exception.NoValidHost as exc:
            if not dry_run:
                self.journal.record(instance_uuids, exc.explanation)
            raise
        if not dry_run:
            self.journal.record(instance_uuids, explanation)
        return selections, explanation

    def __getattr__(self, name):
        return getattr(self._scheduler, name)
