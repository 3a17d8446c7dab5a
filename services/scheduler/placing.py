# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Choose, claim, consume, roll back, add alternates: the placing step.

The scheduling pipeline (:mod:`scheduling`) ends, for each instance of a
request, in this step: pick one of the best weighed hosts, reserve it in
this worker's ledger (:mod:`reservations`), claim it in placement (the
claim decides: a refused claim tries the next host), and consume the
instance in the request's host-state copy. A multi-instance request is all
or nothing: when an instance finds no host, the claims made are rolled
back. The selections end with up to ``max_attempts - 1`` alternates.

Safety: one request at a time goes from its host-state copies to a
reserved choice, and consumes into a copy, under :attr:`Placer.deciding`
(the decision lock); the placement query, the database loads and the
claim stay outside it. Two requests that copied the host states before
either had chosen would both see the same best host free, and a burst
then stacks on it; and the copies are shared by the requests on one
placement answer (:mod:`answer_snapshot`), so their filtering, weighing
and consumption must not overlap. The section is CPU work that the
interpreter runs one thread at a time anyway, so holding it costs no
throughput. A request that claims nothing (a dry run) works on copies of
its own and takes no lock.
"""

import contextlib
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
from services.scheduler import filters as filters_mod
from services.scheduler import numa_consume

LOG = logging.getLogger(__name__)


class Request(object):
    """One ``select_destinations`` call as the placing step sees it.

    :ivar claiming: True when claims are made (instances given, not a
        dry run); only then are choices reserved and copies shared.
    :ivar num: how many instances to place.
    :ivar claimed: [(host state, allocation request)] so far.
    :ivar tokens: the reservation token of each claimed instance.
    :ivar limits: the limits filters set for this request's hosts.
    :ivar hand_over: for a moving instance, what its claim hands to the
        migration (common/placement/move_allocations.py), or None.
    """

    def __init__(self, spec, instance_uuids, return_alternates=True,
                 dry_run=False, hand_over=None):
        if hand_over is not None and len(instance_uuids) != 1:
            raise ValueError('a hand-over moves one instance, not %d'
                             % len(instance_uuids))
        self.spec = spec
        self.hand_over = hand_over
        self.instance_uuids = instance_uuids
        self.return_alternates = return_alternates
        self.dry_run = dry_run
        self.claiming = bool(instance_uuids) and not dry_run
        self.num = len(instance_uuids) or spec.num_instances
        # NOTE: the group's hosts as they came; restored when the request
        # fails, as the instances placed meanwhile were rolled back.
        group = spec.instance_group
        self.group_hosts = list(group.hosts) if group is not None else None
        self.claimed = []
        self.tokens = []
        self.limits = filters_mod.Limits()


class Choice(object):
    """The first candidate of one instance (reserved) and the rest.

    :ivar first: (host state, allocation request), or None: no host.
    :ivar token: the reservation of ``first``, or None.
    :ivar rest: an iterator of the other candidates, in order.
    :ivar draw: how the first weighed host was drawn (see
        :func:`candidates_in_order`), or None when nothing was weighed.
    """

    __slots__ = ('first', 'token', 'rest', 'draw')

    def __init__(self, first, token, rest, draw=None):
        self.first = first
        self.token = token
        self.rest = rest
        self.draw = draw


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


def candidates_in_order(weighed, candidates=None, drawn=None):
    """Weighed hosts, the first chosen at random among the best.

    :param candidates: every candidate's uuid; when given, this worker's
        share of them (:func:`_worker_shares`) is preferred among the best.
    :param drawn: a list; (first, pool drawn from, number of hosts of the
        best weight) is appended to it, for the decision record.
    """
    if not weighed:
        return []
    pool = weighed[:CONF.filter_scheduler.host_subset_size]
    # NOTE: equal hosts are common (a rack of identical nodes); picking at
    # random among all the equally best keeps concurrent schedulers, which
    # do not see each other's in-flight claims, from all choosing the
    # same one.
    ties = [w for w in weighed if w.weight == weighed[0].weight]
    if len(ties) > len(pool):
        pool = ties
    shares = _worker_shares(candidates) \
        if candidates is not None and len(pool) > 1 else None
    if shares is not None:
        pool = _prefer_own_share(pool, shares)
    first = random.choice(pool)
    if drawn is not None:
        drawn.append((first, pool, len(ties)))
    return [first] + [w for w in weighed if w is not first]


def _claimable(weighed, by_root, claiming, drawn):
    """(host, allocation request) to try, in order, lazily."""
    for candidate in candidates_in_order(
            weighed, by_root if claiming else None, drawn):
        host = candidate.obj
        requests = by_root.get(host.uuid)
        if not requests:
            LOG.debug("A host state with uuid = '%s' that did not have a "
                      "matching allocation_request was encountered while "
                      "scheduling. This host was skipped.", host.uuid)
            continue
        yield host, requests[0]


class Placer(object):
    """The placing step of one scheduler process; thread-safe."""

    def __init__(self, placement, reservations):
        """
        :param placement: a SchedulerPlacementClient.
        :param reservations: the worker's :class:`Reservations` ledger.
        """
        self.placement = placement
        self.reservations = reservations
        # NOTE: see the module docstring.
        self.deciding = threading.Lock()

    @contextlib.contextmanager
    def decision(self, request, record):
        """Hold the decision lock for a claiming ``request``; the wait is
        timed as ``decision_wait``.
        """
        if not request.claiming:
            yield
            return
        with record.timed('decision_wait'):
            self.deciding.acquire()
        try:
            yield
        finally:
            self.deciding.release()

    def choose(self, request, weighed, snapshot):
        """The first candidate, reserved when claiming; the rest lazily.

        Called under :meth:`decision`: the reservation is what the next
        request's copies see.
        """
        drawn = []
        rest = _claimable(weighed, snapshot.by_root, request.claiming,
                          drawn)
        first = next(rest, None)
        token = None
        if first is not None and request.claiming:
            token = self.reservations.reserve(first[0].uuid, request.spec)
        return Choice(first, token, rest, drawn[0] if drawn else None)

    def claim(self, context, request, index, choice, record):
        """Claim the choice for instance ``index``, else the next
        candidate that placement accepts.

        :returns: the host state claimed (added to ``request.claimed``),
            or None.
        """
        chosen = self._claim_one(context, request, index, choice, record)
        if chosen is None:
            return None
        host, alloc_req, token = chosen
        record.add_pick(index, choice.draw, host)
        request.claimed.append((host, alloc_req))
        request.tokens.append(token)
        return host

    def _claim_one(self, context, request, index, choice, record):
        candidate, token = choice.first, choice.token
        while candidate is not None:
            host, alloc_req = candidate
            if not request.claiming:
                return host, alloc_req, None
            try:
                claimed = self._write_claim(context, request, index,
                                            alloc_req)
            except placement_client.ClaimRefused as exc:
                self.reservations.release(token)
                LOG.warning('Claim for %s refused: %s',
                            request.instance_uuids[index], exc)
                record.notes.append('placement refused the claim: %s' % exc)
                return None
            except Exception:
                self.reservations.release(token)
                raise
            if claimed:
                self.reservations.committed(token)
                return host, alloc_req, token
            self.reservations.release(token)
            candidate = next(choice.rest, None)
            if candidate is not None:
                # NOTE: reserved before the claim, so that this worker's
                # other requests already see the host as taken.
                token = self.reservations.reserve(candidate[0].uuid,
                                                  request.spec)
        LOG.info('Unable to successfully claim against any host.')
        return None

    def _write_claim(self, context, request, index, alloc_req):
        """Write one candidate's claim; False when the host lost it.

        A moving instance's claim hands its source to the migration in
        the same write (``request.hand_over``).
        """
        uuid = request.instance_uuids[index]
        spec = request.spec
        if request.hand_over is not None:
            return self.placement.claim_move(
                context, uuid, alloc_req, spec.project_id, spec.user_id,
                request.hand_over)
        return self.placement.claim_resources(
            context, uuid, alloc_req, spec.project_id, spec.user_id)

    def consume(self, request, host, record):
        """Account the selection in the request's host state and group.

        A dry run leaves the host state alone (nothing was claimed) but
        still updates the request's own group copy, so that the later
        instances of the same request are placed as they would be.
        """
        # NOTE: the copy may be one that other requests on the same answer
        # filter: they do so under the decision lock.
        lock = self.deciding if request.claiming else \
            contextlib.nullcontext()
        with record.timed('consume'), lock:
            if not request.dry_run:
                host.consume_from_request(
                    request.spec, numa_fit=numa_consume.numa_fit,
                    pci_consume=pci_stats.consume_from_request)
            LOG.debug('Selected host: %s', host)
            group = request.spec.instance_group
            if group is not None:
                # NOTE: later instances of the same request must see this
                # one for (anti-)affinity, before any compute reports it.
                group.hosts.append(host.host)

    def give_up(self, context, request, hosts, record):
        """Roll back what ``request`` claimed and raise NoValidHost.

        :param hosts: the hosts the last filtering pass left; a note says
            what failed when some were left or some instances placed.
        """
        for token in request.tokens:
            self.reservations.release(token)
        if not request.dry_run:
            for index in range(len(request.claimed)):
                self.placement.delete_allocation_for_instance(
                    context, request.instance_uuids[index])
        if request.group_hosts is not None:
            request.spec.instance_group.hosts[:] = request.group_hosts
        placed = len(request.claimed)
        if placed:
            record.notes.append('only %d of %d instances could be placed'
                                % (placed, request.num))
        elif hosts:
            record.notes.append('no host could be claimed')
        raise exception.NoValidHost(reason=record.summary(),
                                    explanation=record.to_dict())

    def selections(self, request, weighed, snapshot):
        """Per instance, its Selection and up to ``max_attempts - 1``
        alternates from ``weighed`` in the same cell.
        """
        num_alts = CONF.scheduler.max_attempts - 1 \
            if request.return_alternates else 0
        chosen_hosts = {(h.host, h.nodename) for h, _r in request.claimed}
        by_root = snapshot.by_root
        result = []
        for host, alloc_req in request.claimed:
            selections = [_selection(host, alloc_req, snapshot.version,
                                     request.limits)]
            for candidate in weighed:
                if len(selections) > num_alts:
                    break
                alt = candidate.obj
                if (alt.host, alt.nodename) in chosen_hosts or \
                        alt.cell_uuid != host.cell_uuid or \
                        not by_root.get(alt.uuid):
                    continue
                selections.append(_selection(alt, by_root[alt.uuid][0],
                                             snapshot.version,
                                             request.limits))
            result.append(selections)
        return result


def _selection(host, alloc_req, version, limits):
    return selection_obj.Selection(
        service_host=host.host, nodename=host.nodename,
        compute_node_uuid=host.uuid, cell_uuid=host.cell_uuid,
        limits=limits.of(host),
        allocation_request=json.dumps(alloc_req),
        allocation_request_version=version,
        availability_zone=host.availability_zone())
