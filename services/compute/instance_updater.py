# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The builds' instance updates, sent to the conductor in batches.

A build updates its instance twice on the way to ACTIVE (spawning, then
active), each a guarded update carrying the build's action event, and
each must be answered before the build goes on. The updates of
``[compute] record_save_delay`` seconds go in one ``instance_updates``
call (services/compute/batched_calls.py); every build still gets its own
answer.
"""

from common import context as context_mod
from services.compute import batched_calls

# NOTE: updates per call (see batched_calls.BATCH).
BATCH = batched_calls.BATCH


class InstanceUpdater(object):
    """Sends brief, guarded instance updates, batched.

    :param conductor: a ConductorAPI.
    :param delay: seconds to collect updates before a call; 0 sends each
        update at once in the caller's thread.
    """

    def __init__(self, conductor, delay):
        self.conductor = conductor
        self.calls = batched_calls.BatchedCalls(
            'instance-updates', self._send_many, self._send_one, delay,
            batch=BATCH)

    def update(self, ctxt, instance_uuid, values, expected_task_state=None,
               action_event=None):
        """As ``ConductorAPI.instance_update`` with ``brief``.

        :returns: None, once the update is done.
        :raises common.exception.InstanceNotFound: no live instance.
        :raises common.exception.UnexpectedTaskStateError: the guard
            failed (e.g. the server was deleted meanwhile).
        :raises: what the conductor call raised (a timeout, say).
        """
        self.calls.call((ctxt, {
            'instance_uuid': instance_uuid, 'values': values,
            'expected_task_state': expected_task_state,
            'action_event': action_event}))

    def stop(self):
        """Send what is queued; later updates are sent one by one."""
        self.calls.stop()

    def _send_one(self, queued):
        ctxt, item = queued
        self.conductor.instance_update(ctxt, brief=True, **item)

    def _send_many(self, queued):
        return self.conductor.instance_updates(
            context_mod.get_admin_context(), [item for _ctxt, item in queued])
