# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The builds' instance updates, sent to the conductor in batches.

A build updates its instance twice on the way to ACTIVE (spawning, then
active), each a guarded update carrying the build's action event, and
each must be answered before the build goes on: the guard is how a build
learns that its server was deleted meanwhile. One conductor call per
update is two messages, a conductor thread and a transaction each; an
agent running many builds at once (many nodes, or one node taking a
burst) instead collects the updates of ``[compute] record_save_delay``
seconds and sends them in one ``instance_updates`` call. Every build
still waits for, and gets, its own answer.
"""

import concurrent.futures
import logging
import threading
import time

from common import context as context_mod

LOG = logging.getLogger(__name__)

# NOTE: updates per call: one transaction of this many small updates
# stays short, and one message small. A full batch goes without waiting
# out the delay.
BATCH = 100
# Calls in flight at once: the next batch is collected while the last
# one waits for a busy conductor, so that an update waits about the delay
# and one call, not for the calls queued before its own.
SENDERS = 4


class _Pending(object):
    """One update waiting for its batch's answer."""

    __slots__ = ('update', 'done', 'error')

    def __init__(self, update):
        self.update = update
        self.done = threading.Event()
        self.error = None


class InstanceUpdater(object):
    """Sends brief, guarded instance updates, batched.

    :param conductor: a ConductorAPI.
    :param delay: seconds to collect updates before a call; 0 sends each
        update at once in the caller's thread.
    """

    def __init__(self, conductor, delay):
        self.conductor = conductor
        self.delay = delay
        self._queued = threading.Condition()
        self._queue = []
        self._thread = None
        self._stopping = False
        self._senders = concurrent.futures.ThreadPoolExecutor(
            max_workers=SENDERS,
            thread_name_prefix='berth-compute-instance-updates')

    def update(self, ctxt, instance_uuid, values, expected_task_state=None,
               action_event=None):
        """As ``ConductorAPI.instance_update`` with ``brief``.

        :returns: None, once the update is done.
        :raises common.exception.InstanceNotFound: no live instance.
        :raises common.exception.UnexpectedTaskStateError: the guard
            failed (e.g. the server was deleted meanwhile).
        :raises: what the conductor call raised (a timeout, say).
        """
        pending = None
        if self.delay > 0:
            pending = _Pending({'instance_uuid': instance_uuid,
                                'values': values,
                                'expected_task_state': expected_task_state,
                                'action_event': action_event})
            with self._queued:
                if self._stopping:
                    pending = None
                else:
                    self._queue.append(pending)
                    self._start()
                    self._queued.notify()
        if pending is None:
            self.conductor.instance_update(
                ctxt, instance_uuid, values,
                expected_task_state=expected_task_state,
                action_event=action_event, brief=True)
            return
        pending.done.wait()
        if pending.error is not None:
            raise pending.error

    def stop(self):
        """Send what is queued and end the sending thread; later updates
        are sent one by one.
        """
        with self._queued:
            self._stopping = True
            thread, self._thread = self._thread, None
            self._queued.notify()
        if thread is not None:
            thread.join(timeout=60.0)
        self._senders.shutdown(wait=True)
        self._send_queued()

    def _start(self):
        # NOTE: called with self._queued held.
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name='berth-compute-instance-updater',
                daemon=True)
            self._thread.start()

    def _run(self):
        while True:
            with self._queued:
                while not self._queue and not self._stopping:
                    self._queued.wait()
                if self._stopping:
                    return
                # NOTE: the updates of the next moment join this batch.
                deadline = time.monotonic() + self.delay
                while len(self._queue) < BATCH and not self._stopping:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._queued.wait(left)
            self._send_queued(self._senders.submit)

    def _send_queued(self, run=None):
        """Send everything queued, a batch per call; answer each update.

        :param run: how to run a call (a pool's ``submit``); in this
            thread when not given.
        """
        while True:
            with self._queued:
                batch = self._queue[:BATCH]
                del self._queue[:BATCH]
            if not batch:
                return
            if run is None:
                self._send(batch)
            else:
                run(self._send, batch)

    def _send(self, batch):
        try:
            results = self.conductor.instance_updates(
                context_mod.get_admin_context(),
                [pending.update for pending in batch])
        except Exception as exc:
            LOG.warning('Could not send %d instance update(s): %s',
                        len(batch), exc)
            results = [exc] * len(batch)
        if len(results) != len(batch):
            # NOTE: never leave a build waiting for an answer.
            LOG.error('The conductor answered %d of %d instance updates',
                      len(results), len(batch))
            results = [RuntimeError('no answer from the conductor')] * len(
                batch)
        for pending, result in zip(batch, results):
            pending.error = result
            pending.done.set()
