# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Record calls of many threads sent to the conductor together.

A compute agent's builds and moves each wait on small guarded writes
(an instance going spawning, a migration going post-migrating): the
guard is how a step learns that its server was deleted meanwhile, so
every write must be answered before the step goes on. One conductor call
per write is two messages, a conductor thread and a transaction each; an
agent running many builds or moves at once (many nodes, or one node
taking a burst) instead collects the writes of ``[compute]
record_save_delay`` seconds and sends them in one call. Each caller
still waits for, and gets, its own answer.

:class:`BatchedCalls` is the collecting and answering; its users
(services/compute/instance_updater.py, services/compute/move_updater.py)
say what one write is and which conductor calls send one or many.
"""

import concurrent.futures
import logging
import threading
import time

LOG = logging.getLogger(__name__)

# NOTE: writes per call: one transaction of this many small writes stays
# short, and one message small. A full batch goes without waiting out
# the delay.
BATCH = 100
# Calls in flight at once: the next batch is collected while the last
# one waits for a busy conductor, so that a write waits about the delay
# and one call, not for the calls queued before its own.
SENDERS = 4


class _Pending(object):
    """One write waiting for its batch's answer."""

    __slots__ = ('item', 'done', 'answer')

    def __init__(self, item):
        self.item = item
        self.done = threading.Event()
        self.answer = None


class BatchedCalls(object):
    """Sends items one call per batch; answers each caller.

    :param name: what the items are, for thread names and logs.
    :param send_many: ([item]) -> [answer], one per item in order; an
        answer that is an exception is raised to its caller, any other is
        returned. What it raises reaches every caller of the batch.
    :param send_one: (item) -> answer (or raises), used when ``delay`` is
        0 and after :meth:`stop`.
    :param delay: seconds to collect items before a call.
    :param batch: items per call at most.
    :param eager: instead of waiting out ``delay``, send what is queued
        as soon as fewer than this many calls are in flight (group
        commit): a lone item goes at once, and items pile up into the
        next call only while the conductor is busy with the last ones.
        For writes made one after another by a sequence that must not
        wait (a host's queue of live migrations).
    """

    def __init__(self, name, send_many, send_one, delay, batch=BATCH,
                 eager=None):
        self.name = name
        self.send_many = send_many
        self.send_one = send_one
        self.delay = delay
        self.batch = batch
        self.eager = eager
        self._queued = threading.Condition()
        self._queue = []
        self._in_flight = 0
        self._thread = None
        self._stopping = False
        self._senders = concurrent.futures.ThreadPoolExecutor(
            max_workers=SENDERS,
            thread_name_prefix='berth-compute-%s' % name)

    def call(self, item):
        """Send ``item`` with the others of its moment; its answer.

        :raises: the exception answered for it, or what its batch's call
            raised (a timeout, say).
        """
        pending = None
        if self.delay > 0:
            pending = _Pending(item)
            with self._queued:
                if self._stopping:
                    pending = None
                else:
                    self._queue.append(pending)
                    self._start()
                    self._queued.notify()
        if pending is None:
            return self.send_one(item)
        pending.done.wait()
        if isinstance(pending.answer, BaseException):
            raise pending.answer
        return pending.answer

    def queued(self):
        """How many items wait for their call."""
        with self._queued:
            return len(self._queue)

    def stop(self):
        """Send what is queued and end the collecting thread; later items
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
                target=self._run if self.eager is None else self._run_eager,
                name='berth-compute-%s' % self.name, daemon=True)
            self._thread.start()

    def _run_eager(self):
        while True:
            with self._queued:
                while not self._stopping and (
                        not self._queue or self._in_flight >= self.eager):
                    self._queued.wait()
                if self._stopping:
                    return
                batch = self._queue[:self.batch]
                del self._queue[:self.batch]
                self._in_flight += 1
            self._senders.submit(self._send_in_flight, batch)

    def _send_in_flight(self, batch):
        try:
            self._send(batch)
        finally:
            with self._queued:
                self._in_flight -= 1
                self._queued.notify()

    def _run(self):
        while True:
            with self._queued:
                while not self._queue and not self._stopping:
                    self._queued.wait()
                if self._stopping:
                    return
                # NOTE: the items of the next moment join this batch.
                deadline = time.monotonic() + self.delay
                while len(self._queue) < self.batch and not self._stopping:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._queued.wait(left)
            self._send_queued(self._senders.submit)

    def _send_queued(self, run=None):
        """Send everything queued, a batch per call.

        :param run: how to run a call (a pool's ``submit``); in this
            thread when not given.
        """
        while True:
            with self._queued:
                batch = self._queue[:self.batch]
                del self._queue[:self.batch]
            if not batch:
                return
            if run is None:
                self._send(batch)
            else:
                run(self._send, batch)

    def _send(self, batch):
        try:
            answers = self.send_many([pending.item for pending in batch])
        except Exception as exc:
            LOG.warning('Could not send %d %s: %s', len(batch), self.name,
                        exc)
            answers = [exc] * len(batch)
        if len(answers) != len(batch):
            # NOTE: never leave a caller waiting for an answer.
            LOG.error('The conductor answered %d of %d %s', len(answers),
                      len(batch), self.name)
            answers = [RuntimeError('no answer from the conductor')] * len(
                batch)
        for pending, answer in zip(batch, answers):
            pending.answer = answer
            pending.done.set()
