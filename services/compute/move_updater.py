# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The move steps' writes, sent to the conductor in batches.

Each step of a resize or cold migration (services/compute/resize.py)
writes its instance, migration and action events together, once when it
starts in a task state and once when it ends, and must be answered
before it goes on: the guards are how it learns that the server was
deleted, or the move ended, meanwhile. The writes of ``[compute]
record_save_delay`` seconds go in one ``move_updates`` call
(services/compute/batched_calls.py); each step still gets its own
answer.
"""

from common import context as context_mod
from services.compute import batched_calls

# NOTE: updates per call (see batched_calls.BATCH).
BATCH = batched_calls.BATCH
# NOTE: calls in flight at once; more writes wait for one of them.
IN_FLIGHT = 2


class MoveUpdater(object):
    """Sends move_update writes, batched.

    :param conductor: a ConductorAPI.
    :param delay: seconds to collect writes before a call; 0 sends each
        at once in the caller's thread.
    """

    def __init__(self, conductor, delay):
        self.conductor = conductor
        self.calls = batched_calls.BatchedCalls(
            'move-updates', self._send_many, self._send_one, delay,
            batch=BATCH, eager=IN_FLIGHT)

    def update(self, ctxt, instance_uuid, migration_uuid, **changes):
        """As ``ConductorAPI.move_update``.

        :param changes: its optional arguments (``migration_values``,
            ``expected_status``, ``instance_values``,
            ``expected_task_state``, ``action_events``, ``brief``).
        :returns: {'instance': primitive or None, 'migration': primitive
            or None}, once written.
        :raises: what ``ConductorAPI.move_update`` raises, or what the
            batch's call raised (a timeout, say).
        """
        item = dict(changes, instance_uuid=instance_uuid,
                    migration_uuid=migration_uuid)
        if 'action_events' in item:
            item['action_events'] = list(item['action_events'] or ())
        return self.calls.call((ctxt, item))

    def stop(self):
        """Send what is queued; later writes are sent one by one."""
        self.calls.stop()

    def _send_one(self, queued):
        ctxt, item = queued
        return self.conductor.move_update(ctxt, **item)

    def _send_many(self, queued):
        return self.conductor.move_updates(
            context_mod.get_admin_context(), [item for _ctxt, item in queued])
