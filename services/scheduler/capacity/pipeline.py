# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The front of the scheduling pipeline, for the capacity answers.

The same stages as a boot (:mod:`services.scheduler.scheduling`): the
request filters, placement's allocation candidates (uncapped: every
candidate counts), the host states with placement's usage, and one pass
of every enabled host filter. Nothing is claimed or reserved.
"""

import dataclasses

from services.scheduler import answer_snapshot
from services.scheduler import filters as filters_mod
from services.scheduler import hints as hints_mod
from services.scheduler import request_filter


@dataclasses.dataclass
class Front(object):
    """What the front stages gave for one request.

    :ivar hosts: the host states that passed every filter, by name.
    :ivar rejected: host key -> 'Filter: reason' of the others.
    :ivar snapshot: the placement answer (candidates by compute node).
    :ivar impossible: why the request filters refused, or None.
    """

    hosts: list = dataclasses.field(default_factory=list)
    rejected: dict = dataclasses.field(default_factory=dict)
    snapshot: object = None
    query: object = None
    impossible: str = None
    notes: list = dataclasses.field(default_factory=list)
    considered: list = dataclasses.field(default_factory=list)


def host_key(host):
    """'host' or 'host:node' when a host has several nodes' names."""
    if host.nodename in (None, host.host):
        return host.host
    return '%s:%s' % (host.host, host.nodename)


def in_aggregate(host, aggregate):
    """True when ``host`` is in the aggregate named (or uuid) ``aggregate``.
    """
    return any(aggregate in (a.name, a.uuid, str(a.id))
               for a in host.aggregates)


def query_of(scheduler, ctxt, spec):
    """The request filters' PlacementQuery of ``spec``, uncapped."""
    query = request_filter.build_query(ctxt, spec, scheduler.host_manager)
    query.limit = None
    return query


def candidates(scheduler, ctxt, params):
    """An AnswerSnapshot of the allocation candidates of ``params``."""
    answer = scheduler.placement.get_allocation_candidates(ctxt, params)
    return answer_snapshot.AnswerSnapshot(answer,
                                          scheduler.host_manager.now())


def host_states(scheduler, ctxt, snapshot):
    """Private copies of the candidates' host states (placement usage)."""
    scheduler.host_manager.refresh(ctxt, snapshot.compute_uuids)
    return snapshot.host_states(scheduler.host_manager,
                                scheduler.reservations, shared=False)


def _without_ignored(hosts, spec, ignore):
    """The hosts neither the spec's ``ignore_hosts`` nor ``ignore`` name.
    """
    ignored = set(spec.ignore_hosts or ()) | set(ignore)
    return [h for h in hosts if h.host not in ignored]


def _forced(hosts, spec):
    """The hosts and nodes the spec forces (all when it forces none)."""
    if spec.force_hosts:
        hosts = [h for h in hosts if h.host in spec.force_hosts]
    if spec.force_nodes:
        hosts = [h for h in hosts if h.nodename in spec.force_nodes]
    return hosts


def _in_requested_cell(hosts, spec):
    """The hosts in the cell of the spec's requested destination (all
    when it names no cell).
    """
    dest = spec.requested_destination
    if dest is not None and dest.cell:
        hosts = [h for h in hosts if h.cell_uuid == dest.cell]
    return hosts


def restrict(hosts, spec, aggregate=None, ignore=()):
    """Apply ignore/force hosts and nodes, a cell and an aggregate.

    The same narrowing as a boot's (``Scheduler._restrict``), plus the
    capacity commands' own: an aggregate and the hosts a what-if loses.
    """
    hosts = _without_ignored(hosts, spec, ignore)
    hosts = _forced(hosts, spec)
    hosts = _in_requested_cell(hosts, spec)
    if aggregate:
        hosts = [h for h in hosts if in_aggregate(h, aggregate)]
    return hosts


def filter_pass(filters, hosts, spec):
    """(passing hosts, {host key: 'Filter: reason'}): every filter
    once, as the first instance of a boot sees them.
    """
    rejected = {}
    with filters_mod.Rejections() as rejections, filters_mod.Limits():
        for host_filter in filters:
            if not hosts:
                break
            if not host_filter.run_filter_for_request(spec):
                continue
            kept = list(host_filter.filter_all(hosts, spec))
            if len(kept) != len(hosts):
                ids = {id(h) for h in kept}
                for host in hosts:
                    if id(host) not in ids:
                        found = rejections.by_host.get(
                            (host.host, host.nodename))
                        rejected[host_key(host)] = '%s: %s' % (
                            host_filter.name,
                            found[1] if found else 'rejected')
            hosts = kept
    return hosts, rejected


def front(scheduler, ctxt, spec, aggregate=None, ignore=()):
    """Run the front stages for ``spec``; a :class:`Front`.

    :param aggregate: only hosts in this aggregate (name or uuid).
    :param ignore: host names to leave out (lost hosts).
    """
    result = Front()
    result.notes.extend(hints_mod.ignored(spec, scheduler.enabled))
    query = query_of(scheduler, ctxt, spec)
    result.query = query
    if query.impossible:
        result.impossible = query.impossible
        return result
    result.snapshot = candidates(scheduler, ctxt, query.to_params())
    hosts = restrict(host_states(scheduler, ctxt, result.snapshot), spec,
                     aggregate, ignore)
    hosts.sort(key=lambda h: (h.host, h.nodename))
    result.considered = hosts
    if spec.force_hosts or spec.force_nodes:
        # NOTE: forced hosts skip the filters, as in a boot.
        result.hosts = hosts
        return result
    result.hosts, result.rejected = filter_pass(scheduler.filters, hosts,
                                                spec)
    return result
