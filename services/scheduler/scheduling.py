# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The scheduling pipeline: one ``select_destinations`` from end to end.

    request filters -> placement query -> allocation candidates
    -> host states (cache) -> host filters -> weighers
    -> pick among the best -> claim in placement -> consume the host state
    -> next instance -> alternates

A multi-instance request is all-or-nothing: when an instance finds no host
the claims already made are rolled back. Every decision fills an
:class:`~services.scheduler.explanation.Explanation`.
"""

import json
import logging
import random
import threading

from common.conf import CONF
from common import exception
from common.objects import selection as selection_obj
from common.pci import stats as pci_stats
from common import service
from services.scheduler.client import placement as placement_client
from services.scheduler import explanation as explanation_mod
from services.scheduler import filters as filters_mod
from services.scheduler import host_manager as host_manager_mod
from services.scheduler import numa_consume
from services.scheduler import request_filter
from services.scheduler import shared_queries
from services.scheduler import weighers as weighers_mod

LOG = logging.getLogger(__name__)


# NOTE: the exception lives in common.exception so that it crosses RPC;
# the pipeline's callers know it by this name too.
NoValidHost = exception.NoValidHost


_SHARING = 'MISC_SHARES_VIA_AGGREGATE'
# NOTE: seconds an answer's view is kept at least, so that the requests
# that shared a query in flight also share its copies.
VIEW_MIN_AGE = 1.0


def _roots(allocation_requests, summaries):
    """Compute node (root provider) uuid -> its allocation requests.

    NOTE: a request may also allocate from a sharing provider (a storage
    pool), which is a root of its own; the compute node is the root of the
    providers that are not sharing ones.
    """
    by_root = {}
    empty = {}
    for request in allocation_requests:
        allocations = request['allocations']
        if len(allocations) == 1:
            # NOTE: the common case, one provider: the same rule without
            # building a set per request.
            (rp,) = allocations
            summary = summaries.get(rp, empty)
            if _SHARING in summary.get('traits', ()):
                LOG.debug('Skipping allocation request spanning roots %s',
                          set())
                continue
            root = summary.get('root_provider_uuid', rp)
            if root in by_root:
                by_root[root].append(request)
            else:
                by_root[root] = [request]
            continue
        roots = set()
        for rp in allocations:
            summary = summaries.get(rp, empty)
            if _SHARING not in summary.get('traits', ()):
                roots.add(summary.get('root_provider_uuid', rp))
        if len(roots) != 1:
            LOG.debug('Skipping allocation request spanning roots %s', roots)
            continue
        by_root.setdefault(roots.pop(), []).append(request)
    return by_root


def _worker_shares(compute_uuids):
    """Which scheduler worker prefers which of equally good hosts.

    Workers of one scheduler do not see each other's claims in flight, and
    picking at random among equal hosts still makes concurrent requests
    land on the same ones. Each worker prefers its own equal share of the
    candidates (every n-th by uuid), so that a burst over many workers
    lands on different hosts.

    :returns: (this worker's slot, {uuid: slot of the worker it belongs
        to}), or None with a single worker.
    """
    slot, workers = service.worker_slot()
    if workers < 2:
        return None
    return slot, {uuid: index % workers
                  for index, uuid in enumerate(sorted(compute_uuids))}


def _prefer_own_share(pool, shares):
    """The part of ``pool`` (equally good weighed hosts) to pick from.

    This worker's own share when it has some; else the share with the
    most hosts left, where this worker's pick is the least likely to meet
    the owner's picks still in flight.
    """
    slot, owner = shares
    by_share = {}
    for weighed in pool:
        by_share.setdefault(owner.get(weighed.obj.uuid), []).append(weighed)
    own = by_share.get(slot)
    if own:
        return own
    return max(by_share.values(), key=len)


class Scheduler(object):
    """Selects destinations; thread-safe, one per scheduler process."""

    def __init__(self, host_manager, placement, filters, weighers,
                 notifier=None):
        """
        :param host_manager: the :class:`HostManager` cache.
        :param placement: a SchedulerPlacementClient.
        :param filters: loaded filter objects, in order.
        :param weighers: loaded weigher objects.
        :param notifier: an oslo.messaging Notifier, or None.
        """
        self.host_manager = host_manager
        self.placement = placement
        self.queries = shared_queries.SharedQueries(
            placement.get_allocation_candidates, host_manager.now,
            enabled=CONF.scheduler.share_placement_queries,
            max_age=CONF.scheduler.placement_answer_max_age)
        # id(answer) -> _AnswerView, for the answers still handed out.
        self._views = {}
        self._views_lock = threading.Lock()
        self.filters = filters
        self.weighers = weighers
        self.notifier = notifier
        # NOTE: one request at a time goes from host state copies to a
        # reserved choice; the placement query and the claim stay outside.
        # Two requests that copied the host states before either had
        # chosen would both see the same best host free, and a burst then
        # stacks on it. The section is CPU work that the interpreter runs
        # one thread at a time anyway, so holding it costs no throughput.
        self._deciding = threading.Lock()

    def _notify(self, context, event, spec):
        if self.notifier is not None:
            self.notifier.info(context, 'scheduler.select_destinations.%s'
                               % event, {'request_spec': spec.to_primitive()})

    def select_destinations(self, context, spec, instance_uuids,
                            return_alternates=True, dry_run=False):
        """Choose (and claim) a host for each instance.

        :param spec: the RequestSpec.
        :param instance_uuids: one uuid per instance (the consumers).
        :param return_alternates: add up to max_attempts - 1 alternates.
        :param dry_run: choose but claim nothing (``explain``).
        :returns: (selections, explanation dict); selections is a list per
            instance of Selection objects, the chosen one first.
        :raises NoValidHost: with the explanation.
        """
        self._notify(context, 'start', spec)
        LOG.debug('Starting to schedule for instances: %s', instance_uuids)
        record = explanation_mod.Explanation()
        try:
            try:
                selections = self._schedule(context, spec, instance_uuids,
                                            return_alternates, dry_run,
                                            record)
            except NoValidHost:
                if not record.placement_answer_shared:
                    raise
                # NOTE: a shared answer may predate capacity that came
                # since (a new host, a deleted server): a request does not
                # fail on it, but on an answer of its own.
                LOG.debug('No host in a shared placement answer; asking '
                          'placement again')
                record = explanation_mod.Explanation()
                selections = self._schedule(context, spec, instance_uuids,
                                            return_alternates, dry_run,
                                            record, reuse=False)
        finally:
            self._notify(context, 'end', spec)
        return selections, record.to_dict()

    def _schedule(self, context, spec, instance_uuids, return_alternates,
                  dry_run, record, reuse=True):
        with record.timed('request_filters'):
            query = request_filter.build_query(context, spec,
                                               self.host_manager)
        if query.impossible:
            # NOTE: placement is not asked at all; the explanation says why.
            record.notes.append(query.impossible)
            raise NoValidHost(reason=query.impossible,
                              explanation=record.to_dict())
        record.placement_query = query.describe()
        with record.timed('placement_query'):
            snapshot_at, answer, shared = self.queries.get(
                context, query.to_params(), reuse=reuse)
        alloc_reqs, summaries, ar_version = answer
        record.candidates = len(alloc_reqs)
        record.placement_answer_shared = shared
        if not alloc_reqs:
            LOG.info('Got no allocation candidates from the Placement API. '
                     'This could be due to insufficient resources or a '
                     'temporary occurrence as compute nodes start up.')
            raise NoValidHost(reason=record.summary(),
                              explanation=record.to_dict())
        with record.timed('host_states'):
            view = self._view(answer, snapshot_at)
            by_root = view.by_root
            self.host_manager.refresh(context, view.compute_uuids)
        # NOTE: see _deciding in __init__; a dry run reserves nothing, and
        # has copies of its own: it consumes where others cannot see it.
        claiming = bool(instance_uuids) and not dry_run
        pool = view.pool if claiming else None
        num = len(instance_uuids) or spec.num_instances
        group_hosts = list(spec.instance_group.hosts) \
            if spec.instance_group is not None else None
        claimed = []
        tokens = []
        hosts = weighed = []
        for index in range(num):
            if claiming:
                with record.timed('decision_wait'):
                    self._deciding.acquire()
            try:
                if index == 0:
                    with record.timed('host_states'):
                        hosts = self.host_manager.copies(
                            view.compute_uuids, summaries, snapshot_at,
                            pool=pool)
                        hosts = self._restrict(hosts, spec, record)
                    record.hosts = len(hosts)
                with record.timed('filters'):
                    hosts = self._filter(hosts, spec, index, record)
                with record.timed('weighers'):
                    weighed = weighers_mod.weigh(self.weighers, hosts, spec)
                if index == 0:
                    record.add_weighed(weighed)
                candidates = self._claimable(weighed, by_root, claiming)
                first = next(candidates, None)
                token = self.host_manager.reserve(first[0].uuid, spec) \
                    if first is not None and claiming else None
            finally:
                if claiming:
                    self._deciding.release()
            with record.timed('claim'):
                chosen = self._claim_one(context, spec, instance_uuids,
                                         index, first, token, candidates,
                                         claiming, record)
            if chosen is None:
                break
            host, alloc_req, token = chosen
            claimed.append((host, alloc_req))
            tokens.append(token)
            with record.timed('consume'):
                if claiming:
                    # NOTE: the copy may be one that other requests on the
                    # same answer filter: they do so under this lock.
                    with self._deciding:
                        self._consume(host, spec, dry_run)
                else:
                    self._consume(host, spec, dry_run)
        if len(claimed) < num:
            self._rollback(context, instance_uuids, claimed, tokens, dry_run)
            if group_hosts is not None:
                spec.instance_group.hosts[:] = group_hosts
            if claimed or hosts:
                record.notes.append(
                    'only %d of %d instances could be placed' % (
                        len(claimed), num) if claimed else
                    'no host could be claimed')
            raise NoValidHost(reason=record.summary(),
                              explanation=record.to_dict())
        record.selected = [[h.host, h.nodename] for h, _r in claimed]
        return self._selections(claimed, weighed, by_root, ar_version,
                                return_alternates)

    def _view(self, answer, snapshot_at):
        """The :class:`_AnswerView` of ``answer``, made on first use.

        Views older than the answers that may still be handed out are
        dropped here: each holds a copy of up to every host state.
        """
        with self._views_lock:
            view = self._views.get(id(answer))
            if view is not None and view.answer is answer:
                return view
            now = self.host_manager.now()
            keep_for = max(self.queries.max_age, VIEW_MIN_AGE)
            for key in [k for k, v in self._views.items()
                        if now - v.snapshot_at >= keep_for]:
                del self._views[key]
            view = self._views[id(answer)] = _AnswerView(answer, snapshot_at)
            return view

    def _restrict(self, hosts, spec, record):
        """Apply ignore/force hosts and nodes and a requested cell."""
        if spec.ignore_hosts:
            hosts = [h for h in hosts if h.host not in spec.ignore_hosts]
        if spec.force_hosts:
            hosts = [h for h in hosts if h.host in spec.force_hosts]
            record.notes.append('forced hosts %s' % spec.force_hosts)
        if spec.force_nodes:
            hosts = [h for h in hosts if h.nodename in spec.force_nodes]
            record.notes.append('forced nodes %s' % spec.force_nodes)
        dest = spec.requested_destination
        if dest is not None and dest.cell:
            hosts = [h for h in hosts if h.cell_uuid == dest.cell]
        return hosts

    def _filter(self, hosts, spec, index, record):
        """Run the filters; forced hosts skip them, as upstream."""
        if spec.force_hosts or spec.force_nodes:
            return hosts
        LOG.debug('Starting with %d host(s)', len(hosts))
        with filters_mod.Rejections() as rejections:
            for host_filter in self.filters:
                if index > 0 and host_filter.run_filter_once_per_request:
                    continue
                before = hosts
                if host_filter.run_filter_for_request(spec):
                    hosts = list(host_filter.filter_all(before, spec))
                LOG.debug('Filter %s returned %d host(s)', host_filter.name,
                          len(hosts))
                if index == 0:
                    record.add_filter(host_filter.name, len(before),
                                      len(hosts), _removed(before, hosts))
                if not hosts:
                    LOG.info('Filter %s returned 0 hosts', host_filter.name)
                    break
        record.add_rejections(rejections)
        return hosts

    def _candidates_in_order(self, weighed, candidates=None):
        """Weighed hosts, the first chosen at random among the best.

        :param candidates: every candidate's uuid; when given, this
            worker's share of them (:func:`_worker_shares`) is preferred
            among the best.
        """
        if not weighed:
            return []
        pool = weighed[:CONF.filter_scheduler.host_subset_size]
        # NOTE: equal hosts are common (a rack of identical nodes); picking
        # at random among all the equally best keeps concurrent schedulers,
        # which do not see each other's in-flight claims, from all choosing
        # the same one.
        ties = [w for w in weighed if w.weight == weighed[0].weight]
        if len(ties) > len(pool):
            pool = ties
        shares = _worker_shares(candidates) \
            if candidates is not None and len(pool) > 1 else None
        if shares is not None:
            pool = _prefer_own_share(pool, shares)
        first = random.choice(pool)
        return [first] + [w for w in weighed if w is not first]

    def _claimable(self, weighed, by_root, claiming):
        """(host, allocation request) to try, in order, lazily."""
        for candidate in self._candidates_in_order(
                weighed, by_root if claiming else None):
            host = candidate.obj
            requests = by_root.get(host.uuid)
            if not requests:
                LOG.debug("A host state with uuid = '%s' that did not have "
                          "a matching allocation_request was encountered "
                          "while scheduling. This host was skipped.",
                          host.uuid)
                continue
            yield host, requests[0]

    def _claim_one(self, context, spec, instance_uuids, index, first, token,
                   rest, claiming, record):
        """Claim ``first`` (already reserved by ``token``), else the next of
        ``rest`` that accepts.

        :returns: (host, alloc_req, reservation token or None), or None.
        """
        candidate = first
        while candidate is not None:
            host, alloc_req = candidate
            if not claiming:
                return host, alloc_req, None
            try:
                claimed = self.placement.claim_resources(
                    context, instance_uuids[index], alloc_req,
                    spec.project_id, spec.user_id)
            except placement_client.ClaimRefused as exc:
                self.host_manager.release(token)
                LOG.warning('Claim for %s refused: %s', instance_uuids[index],
                            exc)
                record.notes.append('placement refused the claim: %s' % exc)
                return None
            except Exception:
                self.host_manager.release(token)
                raise
            if claimed:
                self.host_manager.committed(token)
                return host, alloc_req, token
            self.host_manager.release(token)
            candidate = next(rest, None)
            if candidate is not None:
                # NOTE: reserved before the claim, so that this worker's
                # other requests already see the host as taken.
                token = self.host_manager.reserve(candidate[0].uuid, spec)
        LOG.info('Unable to successfully claim against any host.')
        return None

    def _consume(self, host, spec, dry_run):
        """Account the selection in the cached host state and the group.

        A dry run leaves the shared host state alone (nothing was claimed)
        but still updates the request's own group copy, so that the later
        instances of the same request are placed as they would be.
        """
        if not dry_run:
            host.consume_from_request(
                spec, numa_fit=numa_consume.numa_fit,
                pci_consume=pci_stats.consume_from_request)
        LOG.debug('Selected host: %s', host)
        group = spec.instance_group
        if group is not None:
            # NOTE: later instances of the same request must see this one
            # for (anti-)affinity, before any compute reports it.
            group.hosts.append(host.host)

    def _rollback(self, context, instance_uuids, claimed, tokens, dry_run):
        for token in tokens:
            if token is not None:
                self.host_manager.release(token)
        if dry_run:
            return
        for index in range(len(claimed)):
            self.placement.delete_allocation_for_instance(
                context, instance_uuids[index])

    def _selections(self, claimed, weighed, by_root, ar_version,
                    return_alternates):
        num_alts = CONF.scheduler.max_attempts - 1 if return_alternates \
            else 0
        chosen_hosts = {(h.host, h.nodename) for h, _r in claimed}
        result = []
        for host, alloc_req in claimed:
            selections = [_selection(host, alloc_req, ar_version)]
            for candidate in weighed:
                if len(selections) > num_alts:
                    break
                alt = candidate.obj
                if (alt.host, alt.nodename) in chosen_hosts or \
                        alt.cell_uuid != host.cell_uuid or \
                        not by_root.get(alt.uuid):
                    continue
                selections.append(_selection(alt, by_root[alt.uuid][0],
                                             ar_version))
            result.append(selections)
        return result


class _AnswerView(object):
    """What the requests on one placement answer share: its candidates by
    compute node (:func:`_roots`) and the host-state copies
    (:class:`~services.scheduler.host_manager.CopyPool`).
    """

    __slots__ = ('answer', 'snapshot_at', 'by_root', 'compute_uuids',
                 'pool')

    def __init__(self, answer, snapshot_at):
        alloc_reqs, summaries, _version = answer
        self.answer = answer
        self.snapshot_at = snapshot_at
        self.by_root = _roots(alloc_reqs, summaries)
        self.compute_uuids = list(self.by_root)
        self.pool = host_manager_mod.CopyPool(answer)


def _removed(before, after):
    """(host, node) keys in ``before`` but not in ``after``."""
    if len(before) == len(after):
        return []
    kept = {id(h) for h in after}
    return [(h.host, h.nodename) for h in before if id(h) not in kept]


def _selection(host, alloc_req, version):
    return selection_obj.Selection(
        service_host=host.host, nodename=host.nodename,
        compute_node_uuid=host.uuid, cell_uuid=host.cell_uuid,
        limits=dict(host.limits),
        allocation_request=json.dumps(alloc_req),
        allocation_request_version=version,
        availability_zone=host.availability_zone())
