# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The scheduling pipeline: one ``select_destinations`` from end to end.

    request filters -> placement query -> allocation candidates
    -> host states (cache) -> host filters -> weighers
    -> pick among the best -> claim in placement -> consume the host state
    -> next instance -> alternates

:meth:`Scheduler._schedule` reads these stages in this order; each
mechanism behind them has one home: the host-state cache
(:mod:`host_manager`), one placement answer with the host-state copies
its requests share (:mod:`answer_snapshot`), this worker's selections
not yet in placement's figures (:mod:`reservations`), and the choose,
claim, consume, roll back and alternates step with the decision lock
(:mod:`placing`).

A multi-instance request is all-or-nothing: when an instance finds no host
the claims already made are rolled back. Every decision fills an
:class:`~services.scheduler.explanation.Explanation`.
"""

import logging

from common.conf import CONF
from common import exception
from services.scheduler import answer_snapshot
from services.scheduler import diagnosis
from services.scheduler import explanation as explanation_mod
from services.scheduler import filters as filters_mod
from services.scheduler import hints as hints_mod
from services.scheduler import placing
from services.scheduler import rebuild_check
from services.scheduler import request_filter
from services.scheduler import reservations as reservations_mod
from services.scheduler import shared_queries
from services.scheduler import weighers as weighers_mod

LOG = logging.getLogger(__name__)


# NOTE: the exception lives in common.exception so that it crosses RPC;
# the pipeline's callers know it by this name too.
NoValidHost = exception.NoValidHost


class Scheduler(object):
    """Selects destinations; thread-safe, one per scheduler process.

    Where each mechanism lives: the host-state cache in
    :mod:`host_manager` (loads in :mod:`host_loads`), one placement
    answer and its shared copies in :mod:`answer_snapshot`, this worker's
    selections in flight in :mod:`reservations`, and the choose / claim /
    consume / roll back / alternates step with its decision lock in
    :mod:`placing`.
    """

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
        self.snapshots = answer_snapshot.Snapshots(host_manager.now,
                                                   self.queries.max_age)
        self.reservations = reservations_mod.Reservations(host_manager.now)
        self.placer = placing.Placer(placement, self.reservations)
        self.filters = filters
        self.weighers = weighers
        # NOTE: what reads the hints (see hints); fixed for the process.
        self.enabled = {type(obj).__name__ for obj in
                        list(filters) + list(weighers)}
        self.notifier = notifier

    def _notify(self, context, event, spec):
        if self.notifier is not None:
            self.notifier.info(context, 'scheduler.select_destinations.%s'
                               % event, {'request_spec': spec.to_primitive()})

    def select_destinations(self, context, spec, instance_uuids,
                            return_alternates=True, dry_run=False,
                            hand_over=None):
        """Choose (and claim) a host for each instance.

        :param spec: the RequestSpec.
        :param instance_uuids: one uuid per instance (the consumers).
        :param return_alternates: add up to max_attempts - 1 alternates.
        :param dry_run: choose but claim nothing (``explain``).
        :param hand_over: a moving instance's source allocation, handed to
            its migration by the claim (see placing.Request).
        :returns: (selections, explanation dict); selections is a list per
            instance of Selection objects, the chosen one first.
        :raises NoValidHost: with the explanation.
        """
        self._notify(context, 'start', spec)
        LOG.debug('Starting to schedule for instances: %s', instance_uuids)
        if rebuild_check.is_rebuild(spec):
            # NOTE: a rebuild's host check claims nothing (see
            # rebuild_check).
            try:
                selections, record = rebuild_check.check(
                    self.host_manager, self.filters, context, spec)
            finally:
                self._notify(context, 'end', spec)
            return selections, record.to_dict()
        try:
            selections, record = self._select(
                context, spec, instance_uuids, return_alternates, dry_run,
                hand_over)
        finally:
            self._notify(context, 'end', spec)
        return selections, record.to_dict()

    def _select(self, context, spec, instance_uuids, return_alternates,
                dry_run, hand_over=None):
        """(selections, Explanation): the pipeline, run a second time on
        an answer of its own when a shared answer found no host.
        """
        unread = hints_mod.unread(spec, self.enabled)
        hints_mod.log_ignored(unread)
        record = _new_record(unread, spec)
        try:
            return self._schedule(context, placing.Request(
                spec, instance_uuids, return_alternates, dry_run,
                hand_over), record, reuse=True), record
        except NoValidHost:
            if not record.placement_answer_shared:
                raise
        # NOTE: a shared answer may predate capacity that came since (a
        # new host, a deleted server): a request does not fail on it, but
        # on an answer of its own.
        LOG.debug('No host in a shared placement answer; asking placement '
                  'again')
        record = _new_record(unread, spec)
        return self._schedule(context, placing.Request(
            spec, instance_uuids, return_alternates, dry_run, hand_over),
            record, reuse=False), record

    def _schedule(self, context, request, record, reuse):
        """The pipeline of the module docstring, one stage a line.

        :param reuse: False: ask placement, whatever answer is shared.
        :raises NoValidHost: with the explanation, after rolling back
            the claims made.
        """
        query = self._request_filters(context, request.spec, record)
        snapshot_at, answer = self._placement_query(context, query, record,
                                                    reuse, request.spec)
        with record.timed('host_states'):
            snapshot = self.snapshots.of(answer, snapshot_at)
            self.host_manager.refresh(context, snapshot.compute_uuids)
        hosts = weighed = None
        for index in range(request.num):
            with self.placer.decision(request, record):
                if hosts is None:
                    # NOTE: copied once per request, with its first choice
                    # under the same lock (see placing).
                    hosts = self._host_states(snapshot, request, record)
                hosts = self._filter(hosts, request, index, record)
                weighed = self._weigh(hosts, request.spec, index, record)
                choice = self.placer.choose(request, weighed, snapshot)
            with record.timed('claim'):
                host = self.placer.claim(context, request, index, choice,
                                         record)
            if host is None:
                break
            self.placer.consume(request, host, record)
        if len(request.claimed) < request.num:
            if not record.hosts:
                # NOTE: outside the decision lock: it reads placement.
                self._forced_missing(context, query, snapshot,
                                     request.spec, record)
            self.placer.give_up(context, request, hosts, record)
        record.selected = [[h.host, h.nodename] for h, _r in request.claimed]
        return self.placer.selections(request, weighed, snapshot)

    def _request_filters(self, context, spec, record):
        """The placement query of ``spec``; NoValidHost when the request
        filters find it cannot be met (placement is then not asked).
        """
        with record.timed('request_filters'):
            query = request_filter.build_query(context, spec,
                                               self.host_manager)
        if query.impossible:
            record.notes.append(query.impossible)
            raise NoValidHost(reason=query.impossible,
                              explanation=record.to_dict())
        record.placement_query = query.describe()
        return query

    def _placement_query(self, context, query, record, reuse, spec):
        """(snapshot time, answer) of ``query``, shared when possible;
        NoValidHost when placement has no candidate, with the likely cause
        (see diagnosis; read only then).
        """
        with record.timed('placement_query'):
            snapshot_at, answer, shared = self.queries.get(
                context, query.to_params(), reuse=reuse)
        record.candidates = len(answer[0])
        record.placement_answer_shared = shared
        if not answer[0]:
            LOG.info('Got no allocation candidates from the Placement API. '
                     'This could be due to insufficient resources or a '
                     'temporary occurrence as compute nodes start up.')
            if not shared:
                # NOTE: an empty shared answer is asked again (see
                # _select); the cause is read for that answer.
                with record.timed('diagnosis'):
                    record.notes.extend(diagnosis.no_candidates(
                        self.placement, context, query, spec))
            raise NoValidHost(reason=record.summary(),
                              explanation=record.to_dict())
        return snapshot_at, answer

    def _host_states(self, snapshot, request, record):
        """The request's host states: the snapshot's copies (shared when
        it claims), restricted to the requested hosts and cell.
        """
        with record.timed('host_states'):
            hosts = snapshot.host_states(self.host_manager,
                                         self.reservations,
                                         shared=request.claiming)
            hosts = self._restrict(hosts, request.spec, record)
        record.hosts = len(hosts)
        return hosts

    def _forced_missing(self, context, query, snapshot, spec, record):
        """Say why forced hosts placement did not offer are missing
        (only when none is left; see diagnosis).
        """
        if not spec.force_hosts:
            return
        with record.timed('diagnosis'):
            record.notes.extend(diagnosis.forced_hosts_missing(
                self.placement, context, query, spec, self.host_manager,
                set(snapshot.compute_uuids)))

    def _restrict(self, hosts, spec, record):
        """Apply ignore/force hosts and nodes and a requested cell."""
        if spec.ignore_hosts:
            hosts = _ignore(hosts, spec.ignore_hosts, record)
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

    def _filter(self, hosts, request, index, record):
        """Run the filters; forced hosts skip them, as upstream.

        Limits the filters set go into ``request.limits``.
        """
        with record.timed('filters'):
            spec = request.spec
            if spec.force_hosts or spec.force_nodes:
                return hosts
            return self._filter_pass(hosts, request, index, record)

    def _filter_pass(self, hosts, request, index, record):
        spec = request.spec
        LOG.debug('Starting with %d host(s)', len(hosts))
        with filters_mod.Rejections() as rejections, request.limits:
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

    def _weigh(self, hosts, spec, index, record):
        """The weighed hosts, best first; the first instance's are
        recorded.
        """
        with record.timed('weighers'):
            weighed = weighers_mod.weigh(self.weighers, hosts, spec)
        if index == 0:
            record.add_weighed(weighed)
        return weighed


def _new_record(unread, spec):
    """A fresh Explanation naming the hints nothing reads (see hints)
    and the kind of request (a boot or which move).
    """
    record = explanation_mod.Explanation()
    record.request_kind = spec.move_type or 'boot'
    record.ignored_hints = unread
    record.notes.extend(hints_mod.note(item) for item in unread)
    return record


def _removed(before, after):
    """(host, node) keys in ``before`` but not in ``after``."""
    if len(before) == len(after):
        return []
    kept = {id(h) for h in after}
    return [(h.host, h.nodename) for h in before if id(h) not in kept]


def _ignore(hosts, ignored, record):
    """``hosts`` without the ``ignored`` ones, which the record names.

    NOTE: a move ignores its source host: the record says why a candidate
    placement offered was never filtered.
    """
    kept = [h for h in hosts if h.host not in ignored]
    if len(kept) < len(hosts):
        record.notes.append('ignored hosts %s' % sorted(
            {h.host for h in hosts} - {h.host for h in kept}))
    return kept
