# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Headroom: how many more servers of one request fit, and where.

The answer is what a burst of boots of that request would get, one after
the other: the real request filters and placement query (every
candidate, uncapped), one pass of the host filters, then each passing
host filled one instance at a time (:mod:`fill`: placement's free
amounts, the filters whose answer changes as a host fills, NUMA, PCPU,
hugepage and PCI fit). Nothing is claimed.

Stranded capacity is what stays free once the cloud is full of the
request: per resource class, the amount free on hosts that cannot take
one more, grouped by why not (doc/operations.md, "Capacity").
"""

import dataclasses
import re

from common.objects import instance_group
from services.scheduler.capacity import fill
from services.scheduler.capacity import pipeline
from services.scheduler import weighers as weighers_mod


@dataclasses.dataclass
class Headroom(object):
    """How many more servers of one request fit.

    :ivar total: servers that fit in all.
    :ivar per_host: host -> servers (hosts that take at least one).
    :ivar per_zone: availability zone -> servers.
    :ivar per_aggregate: aggregate name -> servers.
    :ivar stranded: resource class -> {'free': amount, 'hosts': count,
        'by_reason': {reason: amount}}: free on hosts that cannot take
        one more.
    :ivar full: host -> why it takes no more (every host considered).
    :ivar notes: remarks on the request (ignored hints, affinity).
    """

    flavor: str = None
    total: int = 0
    per_host: dict = dataclasses.field(default_factory=dict)
    per_zone: dict = dataclasses.field(default_factory=dict)
    per_aggregate: dict = dataclasses.field(default_factory=dict)
    stranded: dict = dataclasses.field(default_factory=dict)
    full: dict = dataclasses.field(default_factory=dict)
    notes: list = dataclasses.field(default_factory=list)
    placement_query: str = None

    def to_dict(self):
        """A JSON-ready dict (the API and ``--json`` answer)."""
        return dataclasses.asdict(self)

    def count(self, host, number):
        """Add ``number`` servers on host state ``host``."""
        if not number:
            return
        self.total += number
        key = pipeline.host_key(host)
        self.per_host[key] = self.per_host.get(key, 0) + number
        zone = host.availability_zone()
        self.per_zone[zone] = self.per_zone.get(zone, 0) + number
        for aggregate in host.aggregates:
            self.per_aggregate[aggregate.name] = \
                self.per_aggregate.get(aggregate.name, 0) + number


def headroom(scheduler, ctxt, spec, aggregate=None):
    """How many more servers of ``spec`` fit; a :class:`Headroom`.

    :param scheduler: a :class:`services.scheduler.scheduling.Scheduler`
        (the scheduler's own, or one of
        :mod:`services.scheduler.offline`).
    :param spec: the RequestSpec of one server (zone, hints and group
        as a boot would have them).
    :param aggregate: count only hosts in this aggregate (name or uuid).
    """
    result = Headroom(flavor=spec.flavor.name if spec.flavor else None)
    front = pipeline.front(scheduler, ctxt, spec, aggregate)
    result.notes.extend(front.notes)
    if front.impossible:
        result.notes.append(front.impossible)
        return result
    result.placement_query = front.query.describe()
    ledger = fill.Ledger(front.snapshot.summaries)
    filler = fill.Filler(scheduler.filters, spec)
    hosts = _affinity(scheduler, spec, front.hosts, result)
    group = spec.instance_group
    before = list(group.hosts) if group is not None else None
    for host in hosts:
        # NOTE: a host's count only depends on its own members of the
        # group: the group's hosts grow while it fills, then go back.
        saved = list(group.hosts) if group is not None else None
        outcome = filler.fill(ledger, host, front.snapshot.by_root.get(
            host.uuid, []))
        if group is not None and group.policy != instance_group.AFFINITY:
            group.hosts[:] = saved
        result.count(host, outcome.count)
        result.full[pipeline.host_key(host)] = outcome.reason
    if group is not None:
        # NOTE: the caller's spec is left as it came.
        group.hosts[:] = before
    for host in front.hosts:
        result.full.setdefault(pipeline.host_key(host),
                               'affinity: the group lives on another host')
    result.full.update(front.rejected)
    _stranded(scheduler, ctxt, spec, front, ledger, result, aggregate)
    return result


def _affinity(scheduler, spec, hosts, result):
    """The hosts to fill: all, but one for a new affinity group."""
    group = spec.instance_group
    if group is None or group.policy != instance_group.AFFINITY or \
            group.hosts or not hosts:
        return hosts
    # NOTE: the group's first boot picks the best weighed host and every
    # later one must follow it; ties go to the first host by name.
    weighed = weighers_mod.weigh(scheduler.weighers, hosts, spec)
    best = weighed[0].weight
    chosen = min((w.obj for w in weighed if w.weight == best),
                 key=lambda h: (h.host, h.nodename))
    result.notes.append('affinity group: every server on one host, the '
                        'first boot\'s choice (%s)' % chosen.host)
    return [chosen]


_FIGURES = re.compile(r'\s*\(.*\)$')


def _reason_kind(reason):
    """The reason without its host's figures, to group hosts by."""
    return _FIGURES.sub('', reason or 'unknown')


def _stranded(scheduler, ctxt, spec, front, ledger, result, aggregate):
    """Fill ``result.stranded``: free amounts on the hosts that are full.

    Hosts placement did not offer at all (no room, a trait or aggregate
    they lack) are read with one query per resource class the request
    asks for, in the same zone and aggregate scope.
    """
    names = {h.uuid: h for h in front.considered}
    others = _other_providers(scheduler, ctxt, front.query, ledger)
    scheduler.host_manager.refresh(ctxt, list(others))
    with scheduler.host_manager.reading() as (cached, _c, _e):
        for uuid in others:
            state = cached.get(uuid)
            if state is not None and uuid not in names and _in_scope(
                    state, spec, aggregate):
                names[uuid] = state
    wanted = front.query.unsuffixed.resources
    for uuid, state in sorted(names.items(), key=lambda i: i[1].host):
        key = pipeline.host_key(state)
        reason = result.full.get(key)
        if reason is None:
            reason = _not_offered(ledger, uuid, wanted)
            result.full[key] = reason
        kind = _reason_kind(reason)
        for rc, amount in sorted(ledger.free_of_root(uuid).items()):
            if amount <= 0:
                continue
            entry = result.stranded.setdefault(
                rc, {'free': 0, 'hosts': 0, 'by_reason': {}})
            entry['free'] += amount
            entry['hosts'] += 1
            entry['by_reason'][kind] = entry['by_reason'].get(kind, 0) + \
                amount


def _in_scope(state, spec, aggregate):
    if aggregate and not pipeline.in_aggregate(state, aggregate):
        return False
    if spec.availability_zone and \
            state.availability_zone() != spec.availability_zone:
        return False
    return True


def _other_providers(scheduler, ctxt, query, ledger):
    """Root uuids of providers with anything free of the requested
    classes that placement did not offer; added to ``ledger``.
    """
    scope = [(name, value) for name, value in
             query.unsuffixed.to_params()
             if name in ('member_of', 'in_tree')]
    found = set()
    for rc in sorted(query.unsuffixed.resources):
        answer = scheduler.placement.get_allocation_candidates(
            ctxt, [('resources', '%s:1' % rc)] + scope)
        for rp, summary in answer[1].items():
            if rp not in ledger.free:
                ledger.add(rp, summary)
                found.add(summary.get('root_provider_uuid', rp))
    return found


def _not_offered(ledger, root, wanted):
    """Why placement did not offer tree ``root``."""
    free = ledger.free_of_root(root)
    for rc, amount in sorted(wanted.items()):
        if free.get(rc, 0) < amount:
            return 'placement: no %s (%d free, %d needed)' % (
                rc, free.get(rc, 0), amount)
    return 'placement: not a candidate (traits, aggregates or max_unit)'
