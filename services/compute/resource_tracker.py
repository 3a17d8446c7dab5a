# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The resource tracker of one host: its nodes' usage, records and trees.

Per update and node (doc/behaviours.md §periodic): the driver's view, the
usage rebuilt from the instances on the node (plus builds in flight; the
rows are kept in step with the cell database by :mod:`.instance_sync`),
the compute node record saved through the conductor when it changed, the
provider tree pushed to placement, and allocations of instances that left
the node removed. Claims for builds change the same in-memory view under
the same lock, so a build and an update never see half of each other.

The record is saved before placement is touched, so a placement outage
never leaves stale pinned CPUs in the record (doc/behaviours.md B4).
"""

import logging
import threading
import time

from services.compute import claims as claims_mod
from services.compute import instance_sync
from services.compute import move_usage
from services.compute import pci_tracker
from services.compute import provider_tree
from services.compute import report as report_mod
from services.compute import usage as usage_mod

LOG = logging.getLogger(__name__)

# NOTE: how long a removed instance stays excluded from updates that
# started before its removal (longer than any one update takes).
_REMOVED_MEMORY = 600


class NodeState(object):
    """One node's resources and the usage counted on them.

    :ivar usages: instance uuid -> InstanceUsage of everything counted.
    :ivar claims: instance uuid -> Claim of builds in flight; migration
        uuid -> Claim of moves claimed here and not finished yet.
    :ivar move_consumers: the migration and instance uuids of the moves
        counted on the node (their usages are keyed by migration uuid,
        see :mod:`.move_usage`).
    :ivar known_numa, known_pci: placements this agent claimed, used
        until the instance's row carries them.
    """

    def __init__(self, nodename, uuid=None):
        self.nodename = nodename
        self.uuid = uuid
        self.resources = None
        self.topology = None
        self.pci = pci_tracker.PciTracker()
        self.usages = {}
        self.claims = {}
        self.move_consumers = set()
        self.move_keys = set()
        self.known_numa = {}
        self.known_pci = {}
        self.numa_cache = {}
        self.record = None
        self.saved_at = 0.0
        self.instance_info = None

    def recompute(self):
        """Rebuild the topology and device owners from ``usages``."""
        resources = self.resources
        host = (resources.numa_topology.copy()
                if resources.numa_topology is not None else None)
        self.pci.set_devices(resources.pci_devices)
        self.pci.reset()
        ordered = sorted(self.usages.values(),
                         key=lambda u: (u.uuid not in self.known_pci, u.uuid))
        for usage in ordered:
            if usage.numa_topology is not None and host is not None:
                usage_mod.apply_numa(host, usage)
            self._recount_pci(usage)
        self.topology = host

    def _recount_pci(self, usage):
        known = self.known_pci.get(usage.uuid)
        if known and self.pci.assign(usage.uuid, known):
            return
        if not usage.pci_requests:
            return
        cells = ([c.id for c in usage.numa_topology.cells]
                 if usage.numa_topology is not None else None)
        try:
            self.known_pci[usage.uuid] = self.pci.claim(
                usage.uuid, usage.pci_requests, cells)
        except pci_tracker.PciDeviceRequestFailed:
            LOG.warning('Instance %s on %s: its PCI devices are no longer '
                        'available on the node', usage.uuid, self.nodename)


class ResourceTracker(object):
    """Tracks one host's nodes. Thread-safe.

    :param host: the host (service) name.
    :param driver: the virt driver.
    :param conductor: the ConductorAPI.
    :param report: the agent's ReportClient.
    :param auditor: the agent's AllocationAuditor.
    :param scheduler: a SchedulerAPI for instance-info casts, or None.
    """

    def __init__(self, host, driver, conductor, report, auditor, conf,
                 scheduler=None, clock=time.monotonic):
        self.host = host
        self.driver = driver
        self.conductor = conductor
        self.report = report
        self.auditor = auditor
        self.conf = conf
        self.scheduler = scheduler
        self.clock = clock
        self.lock = threading.Lock()
        self.nodes = {}
        self.disabled = False
        self._removed = {}
        self.instances = instance_sync.HostInstances(conductor, host)

    # ----------------------------------------------------------- start-up

    def init_nodes(self, ctxt):
        """Learn the host's compute node records; drop orphaned ones.

        A record whose node the driver no longer reports is deleted with
        its provider tree, as Nova deletes orphan compute nodes.
        """
        wanted = set(self.driver.get_available_nodes(self.host))
        for row in self.conductor.compute_nodes_get_by_host(ctxt, self.host):
            name = row['hypervisor_hostname']
            if name in wanted:
                with self.lock:
                    self.nodes.setdefault(name, NodeState(name))
                    self.nodes[name].uuid = row['uuid']
                continue
            LOG.warning('Deleting orphan compute node %s (%s) of host %s',
                        name, row['uuid'], self.host)
            self.conductor.compute_node_delete(ctxt, self.host, name)
            try:
                self.report.delete_tree(ctxt, row['uuid'])
                if self.scheduler is not None:
                    self.scheduler.delete_instance_info(ctxt, row['uuid'])
            except Exception as exc:
                LOG.warning('Could not delete the resource providers of '
                            'orphan node %s: %s', name, exc)

    def node_uuids(self):
        """{node name: compute node uuid} of the nodes with a record."""
        with self.lock:
            return {n.nodename: n.uuid for n in self.nodes.values()
                    if n.uuid}

    # ------------------------------------------------------------ updates

    def update(self, ctxt, seen_by_root=None, placement=True,
               synced=None, defer_saves=False, started=None):
        """One periodic update of every node of the host.

        :param seen_by_root: the agent's generations read ({root uuid:
            providers}); None reads this host's trees here.
        :param placement: False skips placement (it is known down).
        :param synced: the conductor's instance sync reply for this host,
            read by the agent for many hosts at once; None reads it here.
        :param started: this tracker's :attr:`clock` before ``synced`` was
            read (claims made since then are not judged by it).
        :param defer_saves: leave the records of nodes already known to
            the caller, which saves them for many hosts at once
            (``'saved'`` is None for those).
        :returns: {node name: {'saved': bool or None, 'wrote': bool,
            'removed': [consumers]}}.
        """
        if synced is None or started is None:
            started = self.clock()
        instances = self.instances.fetch(ctxt, prefetched=synced)
        migrations, moving = self.instances.moves
        # NOTE: an accepted migration's claim (a live migration's
        # destination check) stands until the move starts or ends.
        standing = {m['uuid'] for m in migrations} | self.instances.accepted
        rows = dict(moving)
        rows.update((i['uuid'], i) for i in instances)
        nodenames = self.driver.get_available_nodes(self.host)
        results = {}
        for nodename in nodenames:
            mine = [i for i in instances if i.get('node') in (
                nodename, None) or len(nodenames) == 1]
            moves = move_usage.usages_for_node(self.host, nodename,
                                               migrations, rows) + (
                standing,)
            results[nodename] = self._update_node(
                ctxt, nodename, mine, started, seen_by_root, placement,
                moves, defer_saves)
        return results

    def _update_node(self, ctxt, nodename, instances, started, seen_by_root,
                     placement, moves=({}, set(), set()), defer_save=False):
        resources = self.driver.get_available_resource(self.host, nodename)
        if not resources.host_ip:
            # NOTE: the node's address is the host's, as in Nova; the
            # scheduler's SimpleCIDRAffinityFilter reads it.
            resources.host_ip = self.conf.my_ip
        with self.lock:
            node = self.nodes.setdefault(nodename, NodeState(nodename))
            self._rebuild(node, resources, instances, started, moves)
        # NOTE: a new node's record is saved here all the same: its
        # provider's uuid comes from it.
        saved = (None if defer_save and node.uuid else
                 self.save_record(ctxt, nodename))
        result = {'saved': saved, 'wrote': False, 'removed': []}
        if placement and node.uuid:
            result.update(self._sync_placement(ctxt, node, seen_by_root))
        self._notify_schedulers(ctxt, node)
        return result

    def _rebuild(self, node, resources, instances, started, moves):
        """Recount ``node``'s usage from what this update read.

        Counted are the instances on the node, the moves counted on it
        (:mod:`.move_usage`) and the claims still held here, which stand
        in for their instance or migration until they are finished.

        :param moves: (migration uuid -> InstanceUsage of the moves
            counted here, every consumer uuid of those moves, the uuids
            of the migrations whose claims still stand).
        """
        node.resources = resources
        move_usages, node.move_consumers, in_progress = moves
        self._drop_ended_move_claims(node, in_progress, started)
        usages = self._instance_usages(node, instances, started)
        for uuid, usage in move_usages.items():
            if not self._removed_since(uuid, started):
                usages[uuid] = usage
        for uuid, claim in node.claims.items():
            usages[uuid] = claim.usage
        node.move_keys = set(move_usages) | {
            u for u, c in node.claims.items() if c.migration_uuid}
        self._forget_uncounted_placements(node, usages)
        node.usages = usages
        node.recompute()
        self._forget_old_removals()

    def _removed_since(self, uuid, started):
        """True when ``uuid`` was released at or after ``started``.

        NOTE: the rows an update read before a release may still show
        the consumer; such an update must not count it again.
        """
        return self._removed.get(uuid, -1) >= started

    def _forget_old_removals(self):
        """Forget releases older than :data:`_REMOVED_MEMORY` seconds
        (no update still running started before them).
        """
        horizon = self.clock() - _REMOVED_MEMORY
        self._removed = {u: t for u, t in self._removed.items()
                         if t > horizon}

    def _instance_usages(self, node, instances, started):
        """uuid -> InstanceUsage of the instance rows counted on the node.

        Rows released since the update started are left out. The NUMA
        topology is the one this agent claimed while the row does not
        carry it yet, else the row's (parsed once, see
        :meth:`_parse_numa`); the parse cache keeps only the rows parsed.
        """
        usages = {}
        parsed = {}
        for instance in instances:
            uuid = instance['uuid']
            if not usage_mod.counted(instance) or (
                    self._removed_since(uuid, started)):
                continue
            numa = node.known_numa.get(uuid)
            if numa is None:
                numa = parsed[uuid] = self._parse_numa(node, instance)
            usages[uuid] = usage_mod.from_instance(instance, numa=numa)
        node.numa_cache = {u: node.numa_cache[u] for u in parsed
                           if u in node.numa_cache}
        return usages

    @staticmethod
    def _forget_uncounted_placements(node, usages):
        """Drop the claimed NUMA and PCI placements of consumers no
        longer counted on the node (deleted, moved away, released).
        """
        for known in (node.known_numa, node.known_pci):
            for uuid in [u for u in known if u not in usages]:
                known.pop(uuid)

    @staticmethod
    def _drop_ended_move_claims(node, in_progress, started):
        """Forget move claims whose migration is no longer in progress
        (ended, reverted, or ended by the conductor's bound on stuck
        moves) and was made before this update read the migrations.
        """
        for uuid, claim in list(node.claims.items()):
            if claim.migration_uuid and uuid not in in_progress and (
                    claim.claimed_at is not None and
                    claim.claimed_at < started):
                LOG.info('Dropping the claim of migration %s on %s: the '
                         'move is no longer in progress', uuid,
                         node.nodename)
                node.claims.pop(uuid)
                node.pci.release(uuid)

    @staticmethod
    def _parse_numa(node, instance):
        """The row's fitted topology, parsed once per change of the row.

        NOTE: the rows come back every update; parsing 500 topologies
        each time would be most of a big node's update.
        """
        primitive = instance.get('numa_topology')
        cached = node.numa_cache.get(instance['uuid'])
        if cached is not None and cached[0] == primitive:
            return cached[1]
        numa = usage_mod.fitted(primitive)
        node.numa_cache[instance['uuid']] = (primitive, numa)
        return numa

    def _values(self, node):
        return usage_mod.record_values(
            node.resources, list(node.usages.values()), node.topology,
            node.pci.pools(), usage_mod.effective_ratios(self.conf),
            self.conf)

    def save_record(self, ctxt, nodename, force=False):
        """Save the node's record through the conductor if it changed.

        Also saved, changed or not, every
        ``resource_provider_association_refresh`` seconds.

        :returns: True when saved.
        """
        values = self.record_to_save(nodename, force)
        if values is None:
            return False
        row = self.conductor.compute_node_save(ctxt, self.host, nodename,
                                               values, brief=True)
        self.record_saved(nodename, values, row)
        return True

    def record_to_save(self, nodename, force=False):
        """The values to save for the node's record, or None when it is
        unchanged (and not due, see :meth:`save_record`).
        """
        with self.lock:
            node = self.nodes[nodename]
            if node.resources is None:
                return None
            values = self._values(node)
            if node.uuid:
                values['uuid'] = node.uuid
            refresh = self.conf.compute.resource_provider_association_refresh
            due = not refresh or self.clock() - node.saved_at >= refresh
            if values == node.record and not (force or due):
                return None
            return values

    def record_saved(self, nodename, values, row):
        """Note that ``values`` were saved as ``row`` ({'id', 'uuid'})."""
        with self.lock:
            node = self.nodes[nodename]
            if node.uuid != row['uuid']:
                LOG.info('Compute node record of %s on %s is %s', nodename,
                         self.host, row['uuid'])
            node.uuid = row['uuid']
            values['uuid'] = row['uuid']
            node.record = values
            node.saved_at = self.clock()
        LOG.debug('Final resource view: name=%s phys_ram=%sMB used_ram=%sMB '
                  'phys_disk=%sGB used_disk=%sGB total_vcpus=%s '
                  'used_vcpus=%s', nodename, values['memory_mb'],
                  values['memory_mb_used'], values['local_gb'],
                  values['local_gb_used'], values['vcpus'],
                  values['vcpus_used'])

    def desired_tree(self, node):
        """The provider tree ``node`` should have in placement."""
        return provider_tree.build(
            node.uuid, node.nodename, node.resources, self.conf,
            usage_mod.configured_ratios(self.conf),
            usage_mod.initial_ratios(self.conf), disabled=self.disabled)

    def _sync_placement(self, ctxt, node, seen_by_root):
        result = {'wrote': False, 'removed': []}
        try:
            if seen_by_root is None or node.uuid not in seen_by_root:
                seen = self.report.read_generations(
                    ctxt, [node.uuid])[node.uuid]
            else:
                seen = seen_by_root[node.uuid]
            result['wrote'] = self.report.sync_tree(
                ctxt, node.uuid, self.desired_tree(node), seen,
                replace_stale=self.conf.compute.
                replace_stale_resource_provider)
            with self.lock:
                known = (set(node.usages) | set(node.claims) |
                         node.move_consumers)
            if self.auditor.needed(node.uuid, seen, known,
                                   force=result['wrote']):
                result['removed'] = self.auditor.audit(
                    ctxt, self.host, node.uuid, seen, known)
        except report_mod.PlacementUnavailable as exc:
            LOG.error('Placement is unreachable; the providers of node %s '
                      'are not updated this time (will retry): %s',
                      node.nodename, exc)
            self.report.forget(node.uuid)
        except report_mod.ResourceProviderCreationFailed as exc:
            LOG.error('Error updating resources for node %s: %s',
                      node.nodename, exc)
        except report_mod.PlacementError as exc:
            LOG.error('Placement refused an update of node %s (will '
                      'retry): %s', node.nodename, exc)
            self.report.forget(node.uuid)
        return result

    def _notify_schedulers(self, ctxt, node):
        if self.scheduler is None or not node.uuid or not (
                self.conf.filter_scheduler.track_instance_changes):
            return
        with self.lock:
            # NOTE: a move's usage is no instance of the node's: the
            # schedulers' view of instances per host (affinity) keeps to
            # the rows.
            infos = [node.usages[u].info() for u in sorted(node.usages)
                     if u not in node.move_keys]
            if infos == node.instance_info:
                return
            node.instance_info = infos
        try:
            self.scheduler.update_instance_info(ctxt, node.uuid, infos)
        except Exception as exc:
            LOG.warning('Could not tell the schedulers about the instances '
                        'of %s: %s', node.nodename, exc)

    def notify_schedulers(self, ctxt, nodename):
        """Tell the schedulers the node's instances if they changed."""
        with self.lock:
            node = self.nodes.get(nodename)
        if node is not None:
            self._notify_schedulers(ctxt, node)

    # ------------------------------------------------------------- claims

    def default_node(self):
        """The node builds go to when none is named (one-node hosts)."""
        names = self.driver.get_available_nodes(self.host)
        return names[0] if names else None

    def claim(self, instance, request_spec, nodename, selection_limits,
              mappings=None):
        """Claim NUMA cells and PCI devices for a build on ``nodename``.

        :param mappings: the claimed allocation request's ``mappings``
            (see :func:`claims.make_claim`).

        :raises claims.ComputeResourcesUnavailable: it does not fit, or
            the node has not been reported yet.
        """
        uuid = instance['uuid']
        with self.lock:
            node = self.nodes.get(nodename)
            if node is None or node.resources is None:
                raise claims_mod.ComputeResourcesUnavailable(
                    reason='node %s of host %s is not reported yet'
                           % (nodename, self.host))
            limits = claims_mod.limits_for(
                selection_limits, usage_mod.effective_ratios(self.conf))
            claim = claims_mod.make_claim(node, instance, request_spec,
                                          limits, mappings=mappings)
            node.claims[uuid] = claim
            node.usages[uuid] = claim.usage
            if claim.numa_topology is not None:
                node.known_numa[uuid] = claim.numa_topology
            if claim.pci_devices:
                node.known_pci[uuid] = claim.pci_devices
            self._removed.pop(uuid, None)
        return claim

    def move_claim(self, instance, migration_uuid, flavor, request_spec,
                   nodename, selection_limits, mappings=None):
        """Claim what a server moving to ``nodename`` needs there.

        The claim is the new flavor's (the same one but for a resize),
        fitted as a build's is (NUMA cells, pinned CPUs, pages, PCI
        devices), and is keyed by the migration: on a same-host resize
        the instance keeps counting with its old flavor beside it.

        :param instance: the Instance primitive.
        :param flavor: the flavor primitive the server will have here.
        :param request_spec: the move's RequestSpec primitive (its
            ``numa_topology`` and ``pci_requests`` are the new flavor's).
        :returns: the :class:`~.claims.Claim`.
        :raises claims.ComputeResourcesUnavailable: it does not fit.
        """
        moving = dict(instance, uuid=migration_uuid, flavor=flavor,
                      numa_topology=None,
                      pci_requests=(request_spec or {}).get('pci_requests')
                      or instance.get('pci_requests') or [])
        claim = self.claim(moving, request_spec, nodename, selection_limits,
                           mappings=mappings)
        with self.lock:
            claim.instance_uuid = instance['uuid']
            claim.migration_uuid = migration_uuid
            claim.claimed_at = self.clock()
            self.nodes[nodename].move_keys.add(migration_uuid)
        return claim

    def holds_claim(self, key):
        """True while a claim keyed ``key`` (an instance or migration
        uuid) is held on one of the nodes.
        """
        with self.lock:
            return any(key in node.claims for node in self.nodes.values())

    def finish_move_claim(self, migration_uuid):
        """The instance's row now names the claim's node, with the
        claimed topology: it counts by its row from here on.
        """
        with self.lock:
            for node in self.nodes.values():
                claim = node.claims.pop(migration_uuid, None)
                if claim is None:
                    continue
                if claim.numa_topology is not None:
                    node.known_numa[claim.instance_uuid] = \
                        claim.numa_topology
                if claim.pci_devices:
                    node.known_pci[claim.instance_uuid] = claim.pci_devices

    def finish_build(self, instance):
        """The build of ``instance`` (a primitive) succeeded."""
        with self.lock:
            for node in self.nodes.values():
                claim = node.claims.pop(instance['uuid'], None)
                if claim is not None:
                    claim.usage = usage_mod.from_instance(
                        instance, numa=claim.numa_topology)
                    node.usages[instance['uuid']] = claim.usage

    def release(self, instance_uuid):
        """Stop counting an instance (aborted build or delete), or a
        move claim by its migration uuid (the move failed or was reverted).

        :returns: the names of the nodes it was counted on.
        """
        found = []
        with self.lock:
            self._removed[instance_uuid] = self.clock()
            for node in self.nodes.values():
                held = node.usages.pop(instance_uuid, None)
                node.claims.pop(instance_uuid, None)
                node.known_numa.pop(instance_uuid, None)
                node.known_pci.pop(instance_uuid, None)
                if held is not None and node.resources is not None:
                    node.recompute()
                    found.append(node.nodename)
        return found
