# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Compute node records changed by builds and deletes, saved in batches.

Every claim and release changes its node's usage, and the node's record
(what ``os-hypervisors`` shows) follows. Saved at once, as upstream does,
that is a conductor call and a database transaction per build. The saver
instead collects the changed nodes for ``[compute] record_save_delay``
seconds and saves them with one ``compute_nodes_save`` call: an agent
simulating a thousand hosts, or one host taking a burst, pays one call
per batch. Scheduling is not delayed by it: usage comes from placement.

A save that fails is only logged; the periodic resource update saves
every changed record again, as it did before.
"""

import logging
import threading

from common import context as context_mod

LOG = logging.getLogger(__name__)

# NOTE: nodes per compute_nodes_save call: one transaction of this many
# small updates stays short, and one message small.
BATCH = 100


class RecordSaver(object):
    """Saves the records of the nodes marked changed, batched.

    :param trackers: host -> ResourceTracker (the agent's).
    :param conductor: a ConductorAPI.
    :param delay: seconds to collect changes before a save; 0 saves each
        change at once in the caller's thread.
    """

    def __init__(self, trackers, conductor, delay):
        self.trackers = trackers
        self.conductor = conductor
        self.delay = delay
        self._changed = threading.Condition()
        self._nodes = set()
        self._thread = None
        self._stopping = False
        self._stopped = threading.Event()
        # NOTE: one flush at a time, so that an older batch never lands
        # after a newer one of the same node.
        self._flushing = threading.Lock()

    def changed(self, ctxt, host, nodename):
        """The record of ``nodename`` on ``host`` needs saving; never
        raises.
        """
        if self.delay <= 0:
            self._save(ctxt, [(host, nodename)])
            return
        with self._changed:
            self._nodes.add((host, nodename))
            if self._thread is None and not self._stopping:
                self._thread = threading.Thread(
                    target=self._run, name='berth-compute-record-saver',
                    daemon=True)
                self._thread.start()
            self._changed.notify()

    def flush(self, ctxt=None):
        """Save every node marked so far, now."""
        with self._changed:
            nodes, self._nodes = sorted(self._nodes), set()
        if nodes:
            self._save(ctxt or context_mod.get_admin_context(), nodes)

    def save_now(self, ctxt, nodes):
        """Save the records of ``nodes`` ((host, node name) pairs) that
        changed, now, in batches.

        :returns: how many were saved.
        """
        return self._save(ctxt, sorted(nodes)) if nodes else 0

    def stop(self):
        """Save what is pending and end the saving thread."""
        with self._changed:
            self._stopping = True
            thread, self._thread = self._thread, None
            self._changed.notify()
        self._stopped.set()
        if thread is not None:
            thread.join(timeout=10.0)
        self.flush()

    def _run(self):
        while True:
            with self._changed:
                while not self._nodes and not self._stopping:
                    self._changed.wait()
                if self._stopping:
                    return
            # NOTE: the changes of the next moment join this batch.
            if self._stopped.wait(self.delay):
                return
            try:
                self.flush()
            except Exception:
                LOG.exception('Could not save compute node records (the '
                              'periodic update will)')

    def _save(self, ctxt, nodes):
        with self._flushing:
            pending = []
            for host, nodename in nodes:
                tracker = self.trackers.get(host)
                if tracker is None:
                    continue
                try:
                    values = tracker.record_to_save(nodename)
                except KeyError:
                    # NOTE: the node left its host meanwhile.
                    continue
                if values is not None:
                    pending.append((tracker, nodename, values))
            return sum(self._save_batch(ctxt, pending[start:start + BATCH])
                       for start in range(0, len(pending), BATCH))

    def _save_batch(self, ctxt, batch):
        """Save one batch in one call.

        :returns: how many records were saved (0 when the call failed).
        """
        try:
            rows = self.conductor.compute_nodes_save(ctxt, [
                {'host': tracker.host, 'nodename': nodename,
                 'values': values} for tracker, nodename, values in batch])
        except Exception as exc:
            LOG.warning('Could not save the records of %d node(s): %s (the '
                        'periodic update will)', len(batch), exc)
            return 0
        for (tracker, nodename, values), row in zip(batch, rows):
            tracker.record_saved(nodename, values, row)
        return len(batch)
