# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""One agent process: the driver, its hosts' trackers, shared clients.

An agent serves every host its driver reports (one for ``local``, up to
``[fake_driver] host_count`` for ``fake``). The hosts share one driver,
one conductor client, one placement client and one pool of update
threads, so simulating a thousand hosts costs a thousand trackers, not a
thousand agents. A periodic update of the whole agent reads placement's
provider generations once for all its trees and then updates the hosts
in parallel; heartbeats of all hosts go in one conductor call.
"""

import collections
import concurrent.futures
import contextlib
import dataclasses
import logging
import threading
import time

from oslo_messaging import exceptions as messaging_exc

from common import context as context_mod
from services.compute import allocations
from services.compute import delete
from services.compute import instance_sync
from services.compute import instance_updater
from services.compute import live_migration_queue
from services.compute import move_updater
from services.compute import record_saver
from services.compute import report as report_mod
from services.compute import resize
from services.compute import resource_tracker
from services.compute import stuck_builds
from services.compute import utils

LOG = logging.getLogger(__name__)

BINARY = 'berth-compute'
# NOTE: failures of a peer, logged without a traceback: the message says
# it all, and a conductor outage would otherwise log one per host.
_EXPECTED_FAILURES = (messaging_exc.MessagingException,
                      report_mod.PlacementUnavailable)
TOPIC = 'compute'
# NOTE: a ping sent before the conductor's queue exists is dropped by the
# broker and only its timeout tells: the first pings wait briefly (one
# started alongside the conductor joins in seconds, not after a whole
# timeout), later ones up to CONDUCTOR_PING_TIMEOUT.
CONDUCTOR_PING_TIMEOUTS = (1, 2, 4, 8)
CONDUCTOR_PING_TIMEOUT = 10
CONDUCTOR_WAIT_INTERVAL = 1


@dataclasses.dataclass
class CycleResult(object):
    """What one periodic update of the agent did.

    :ivar placement_calls: {HTTP method: count} during the update.
    """

    seconds: float = 0.0
    hosts: int = 0
    nodes: int = 0
    records_saved: int = 0
    trees_written: int = 0
    allocations_removed: int = 0
    failed_hosts: int = 0
    placement_ok: bool = True
    placement_calls: dict = dataclasses.field(default_factory=dict)


class ComputeAgent(object):
    """The machinery behind every ComputeService of one process.

    :param conf: the ConfigOpts.
    :param driver: the virt driver.
    :param conductor: a ConductorAPI (records and heartbeats).
    :param report: a ReportClient (placement).
    :param scheduler: a SchedulerAPI for instance-info casts, or None.
    :param servicegroup: the servicegroup.API heartbeats go through.
    :param wait_for_conductor: ping the conductor until it answers
        before starting (as Nova's compute waits for its conductor).
    """

    def __init__(self, conf, driver, conductor, report, scheduler=None,
                 servicegroup=None, wait_for_conductor=True):
        self.conf = conf
        self.driver = driver
        self.conductor = conductor
        self.report = report
        self.scheduler = scheduler
        self.servicegroup = servicegroup
        self.wait_for_conductor = wait_for_conductor
        self.hosts = driver.hosts()
        self.auditor = allocations.AllocationAuditor(
            report, conductor, conf.compute.orphan_allocation_grace_period)
        self.trackers = collections.OrderedDict(
            (host, resource_tracker.ResourceTracker(
                host, driver, conductor, report, self.auditor, conf,
                scheduler=scheduler)) for host in self.hosts)
        self.records = record_saver.RecordSaver(
            self.trackers, conductor, conf.compute.record_save_delay)
        self.instance_updates = instance_updater.InstanceUpdater(
            conductor, conf.compute.record_save_delay)
        self.move_updates = move_updater.MoveUpdater(
            conductor, conf.compute.record_save_delay)
        self.instance_locks = utils.KeyedLocks()
        self.dropped_sends = resize.DroppedSends()
        self.pending_builds = stuck_builds.PendingBuilds(
            conf.compute.restart_build_grace)
        builds = conf.compute.max_concurrent_builds
        # NOTE: per host, as each simulated host stands for a machine.
        self._build_slots = {
            host: (threading.BoundedSemaphore(builds) if builds
                   else contextlib.nullcontext()) for host in self.hosts}
        self.joined = set()
        self._joined_lock = threading.Lock()
        self.live_migrations = live_migration_queue.LiveMigrationQueue(
            conf.max_concurrent_live_migrations)
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=conf.compute.resource_update_workers,
            thread_name_prefix='berth-compute-update')
        self._start_lock = threading.Lock()
        self._started = False
        self._cycle_lock = threading.Lock()
        self._records_at = time.monotonic()

    def build_slot(self, host):
        """The semaphore capping ``host``'s concurrent builds."""
        return self._build_slots[host]

    def tracker(self, host):
        """The ResourceTracker of ``host``.

        :raises KeyError: not a host of this agent.
        """
        return self.trackers[host]

    # ----------------------------------------------------------- start-up

    def _wait_for_conductor(self, ctxt):
        from common import baserpc
        api = baserpc.BaseAPI('conductor')
        attempt = 0
        while True:
            timeout = (CONDUCTOR_PING_TIMEOUTS[attempt]
                       if attempt < len(CONDUCTOR_PING_TIMEOUTS)
                       else CONDUCTOR_PING_TIMEOUT)
            try:
                api.ping(ctxt, 'berth-compute', timeout=timeout)
                return
            except messaging_exc.MessagingTimeout:
                attempt += 1
                LOG.warning('Waiting for the conductor to answer (no answer '
                            'within %ds); is berth-conductor running?',
                            timeout)
                time.sleep(CONDUCTOR_WAIT_INTERVAL)

    def start(self, ctxt=None):
        """Prepare every host once: records, recovery, first update.

        Later calls return at once, so each service may call it.
        """
        with self._start_lock:
            if self._started:
                return
            ctxt = ctxt or context_mod.get_admin_context()
            if self.wait_for_conductor:
                self._wait_for_conductor(ctxt)
            list(self._pool.map(lambda h: self._init_host(ctxt, h),
                                self.hosts))
            self._started = True
        self.update_all(ctxt)

    def _init_host(self, ctxt, host):
        tracker = self.trackers[host]
        try:
            self.driver.init_host(host)
            tracker.init_nodes(ctxt)
            delete.recover_host(self, ctxt, host)
        except Exception:
            LOG.exception('Could not prepare host %s; the periodic update '
                          'will try again', host)

    def stop(self):
        """Stop the update threads (waiting for a running update) and
        save the records still pending.
        """
        self._pool.shutdown(wait=True)
        # NOTE: a migration still copying ends (and rolls back or
        # completes) before the records are saved; queued ones never start
        # and are ended by a conductor's periodic check.
        self.live_migrations.shutdown(wait=True)
        self.instance_updates.stop()
        self.move_updates.stop()
        self.records.stop()

    # ------------------------------------------------------------ updates

    def update_all(self, ctxt=None):
        """One periodic resource update of every host.

        :returns: a :class:`CycleResult`.
        """
        ctxt = ctxt or context_mod.get_admin_context()
        with self._cycle_lock:
            return self._update_all(ctxt)

    def _update_all(self, ctxt):
        started = time.monotonic()
        before = self.report.snapshot()
        result = CycleResult(hosts=len(self.trackers))
        roots = [u for t in self.trackers.values()
                 for u in t.node_uuids().values()]
        seen = None
        try:
            seen = self.report.read_generations(ctxt, roots) if roots else {}
        except report_mod.PlacementUnavailable as exc:
            result.placement_ok = False
            LOG.error('Placement is unreachable: resource providers of %d '
                      'nodes are not updated this time (will retry): %s',
                      len(roots), exc)
        except report_mod.PlacementError as exc:
            LOG.error('Reading resource providers failed: %s', exc)
        self._refresh_services(ctxt)
        many = len(self.trackers) > 1
        read_at, synced = {}, {}
        if many:
            # NOTE: taken before the read: a claim made after it is not
            # the read's to judge (see ResourceTracker.update).
            read_at = {t.host: t.clock() for t in self.trackers.values()}
            synced = instance_sync.sync_many(
                self.conductor, ctxt,
                [t.instances for t in self.trackers.values()])
        futures = [self._pool.submit(self._update_host, ctxt, tracker, seen,
                                     result.placement_ok, many,
                                     synced.get(tracker.host),
                                     read_at.get(tracker.host))
                   for tracker in self.trackers.values()]
        failures = []
        unsaved = []
        for tracker, future in zip(self.trackers.values(), futures):
            nodes = future.result()
            if isinstance(nodes, Exception):
                failures.append((tracker.host, nodes))
                continue
            for nodename, node in nodes.items():
                result.nodes += 1
                if node['saved'] is None:
                    unsaved.append((tracker.host, nodename))
                result.records_saved += bool(node['saved'])
                result.trees_written += bool(node['wrote'])
                result.allocations_removed += len(node['removed'])
        # NOTE: the known nodes' records in a few batched calls, as the
        # record saver does for claims, rather than one call per node.
        result.records_saved += self.records.save_now(ctxt, unsaved)
        result.failed_hosts = len(failures)
        if failures:
            self._log_failures(failures)
        result.placement_calls = dict(self.report.snapshot() - before)
        result.seconds = time.monotonic() - started
        LOG.debug('Resource update of %d nodes took %.3fs: %s',
                  result.nodes, result.seconds, result)
        return result

    def _update_host(self, ctxt, tracker, seen, placement_ok,
                     defer_saves=False, synced=None, read_at=None):
        """The host's update results, or the exception that stopped it."""
        try:
            return tracker.update(ctxt, seen, placement=placement_ok,
                                  synced=synced, defer_saves=defer_saves,
                                  started=read_at)
        except Exception as exc:
            if not isinstance(exc, _EXPECTED_FAILURES):
                LOG.exception('Error updating resources of host %s',
                              tracker.host)
            return exc

    def _log_failures(self, failures):
        """One line for the hosts whose update failed (the conductor was
        unreachable, say), not one per simulated host.
        """
        host, exc = failures[0]
        LOG.error('Error updating resources of %d of %d hosts (will retry '
                  'at the next update); %s: %s: %s', len(failures),
                  len(self.trackers), host, type(exc).__name__, exc)

    def _refresh_services(self, ctxt):
        """Re-read the service records (disabled flags) now and then."""
        refresh = self.conf.compute.resource_provider_association_refresh
        hosts = self._joined_hosts()
        if self.servicegroup is None or len(hosts) < 2 or (
                time.monotonic() - self._records_at < refresh):
            return
        self._records_at = time.monotonic()
        for host in hosts:
            try:
                record = self.servicegroup.get(host, BINARY)
            except Exception as exc:
                LOG.warning('Could not read the service record of %s: %s',
                            host, exc)
                continue
            if record is not None:
                self.trackers[host].disabled = bool(record.disabled)

    def joined_service(self, host):
        """``host``'s service has joined; heartbeat it from now on."""
        with self._joined_lock:
            self.joined.add(host)

    def _joined_hosts(self):
        with self._joined_lock:
            return sorted(self.joined)

    def report_services(self):
        """Heartbeat every joined host; returns seconds to the next."""
        hosts = self._joined_hosts()
        if len(hosts) == 1:
            record = self.servicegroup.report(hosts[0], BINARY)
            self.trackers[hosts[0]].disabled = bool(record.disabled)
        elif hosts:
            report_many = getattr(self.servicegroup.driver, 'report_many',
                                  None)
            if report_many is not None:
                report_many(hosts, BINARY)
            else:
                for host in hosts:
                    self.servicegroup.report(host, BINARY)
        return self.conf.report_interval

    def end_unclaimed_builds(self, ctxt=None):
        """End the builds found at start whose cast never came (see
        :mod:`services.compute.stuck_builds`); the uuids set to ERROR.
        """
        if not len(self.pending_builds):
            return []
        return stuck_builds.end_unclaimed(
            self, ctxt or context_mod.get_admin_context())

    def check_build_timeouts(self, ctxt=None):
        """End the builds older than ``[compute] instance_build_timeout``
        (see :mod:`services.compute.stuck_builds`); the uuids set to ERROR.
        """
        timeout = self.conf.compute.instance_build_timeout
        if not timeout:
            return []
        return stuck_builds.check_build_timeouts(
            self, ctxt or context_mod.get_admin_context(), timeout)

    # ---------------------------------------------- helpers for workflows

    def save_record(self, ctxt, host, nodename):
        """Save a node's record after a claim or release, soon (see
        :mod:`services.compute.record_saver`); never raises.
        """
        try:
            self.records.changed(ctxt, host, nodename)
        except Exception as exc:
            LOG.warning('Could not save the record of node %s: %s (the '
                        'periodic update will)', nodename, exc)

    def notify_schedulers(self, ctxt, host, nodename):
        """Tell the schedulers a node's instances; never raises."""
        self.trackers[host].notify_schedulers(ctxt, nodename)

    def delete_allocation(self, ctxt, instance_uuid):
        """Delete an instance's allocation; an outage is only logged.

        NOTE: the allocation audit of the next updates removes it once
        placement is back (the instance is then deleted or rescheduled).
        """
        try:
            return self.report.delete_allocation(ctxt, instance_uuid)
        except (report_mod.PlacementUnavailable,
                report_mod.PlacementError) as exc:
            LOG.error('Could not delete the allocation of instance %s: %s',
                      instance_uuid, exc)
            return False
