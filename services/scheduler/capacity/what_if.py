# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""What-if: could the servers of lost hosts be placed on the rest?

Each server is scheduled as a move would schedule it: its stored request
spec (flavor, image, zone, hints, server group), the lost hosts ignored,
the real request filters, placement query and host filters, then the
NUMA and PCI fit. The answer is a plan, server -> destination, in which
every placement consumes the destination as a claim would, so the later
servers of the plan see the earlier ones.

The plan is deterministic for a given cloud, so that a drain can follow
it: the biggest servers go first (memory, vCPUs, disk, then name), and
equally weighed hosts are broken by host name, not at random.
"""

import copy
import dataclasses

from services.scheduler.capacity import fill
from services.scheduler.capacity import pipeline
from services.scheduler import host_copy
from services.scheduler import weighers as weighers_mod


@dataclasses.dataclass
class Server(object):
    """A server on a lost host, with its stored request spec."""

    uuid: str
    name: str
    host: str
    spec: object
    node: str = None


@dataclasses.dataclass
class Move(object):
    """One line of the plan.

    :ivar destination: the host it would go to, or None (it stays).
    :ivar why: the explanation.
    """

    server: str
    name: str
    source: str
    destination: str = None
    node: str = None
    why: str = ''


@dataclasses.dataclass
class Plan(object):
    """The answer: a move per server that fits, and those that do not."""

    lost: list = dataclasses.field(default_factory=list)
    moves: list = dataclasses.field(default_factory=list)
    unplaced: list = dataclasses.field(default_factory=list)

    @property
    def complete(self):
        """True when every server of the lost hosts can be re-placed."""
        return not self.unplaced

    def to_dict(self):
        """A JSON-ready dict."""
        return {'lost': list(self.lost), 'complete': self.complete,
                'moves': [dataclasses.asdict(m) for m in self.moves],
                'unplaced': [dataclasses.asdict(m) for m in self.unplaced]}


def order(servers):
    """Biggest first; ties by name then uuid (the plan's order)."""
    def size(server):
        spec = server.spec
        return (-spec.memory_mb, -spec.vcpus, -spec.disk_gb,
                server.name or '', server.uuid)
    return sorted(servers, key=size)


class _World(object):
    """The cloud as the plan has changed it so far: placement's free
    amounts, the host states, the answers and the filter passes that
    depend only on what does not change.
    """

    def __init__(self, scheduler, ctxt, lost):
        self.scheduler = scheduler
        self.ctxt = ctxt
        self.lost = set(lost)
        self.ledger = fill.Ledger({})
        self.states = {}
        self.answers = {}
        self.static = {}

    def answer(self, params):
        """The snapshot of ``params``, asked once per plan."""
        key = tuple(params)
        snapshot = self.answers.get(key)
        if snapshot is None:
            snapshot = self.answers[key] = pipeline.candidates(
                self.scheduler, self.ctxt, params)
            for rp, summary in snapshot.summaries.items():
                self.ledger.add(rp, summary)
            self._load(snapshot)
        return snapshot

    def _load(self, snapshot):
        new = [u for u in snapshot.compute_uuids if u not in self.states]
        if not new:
            return
        manager = self.scheduler.host_manager
        manager.refresh(self.ctxt, new)
        with manager.reading() as (cached, _c, _e):
            for uuid in new:
                state = cached.get(uuid)
                if state is not None:
                    self.states[uuid] = host_copy.private_copy(
                        state, snapshot.summaries.get(uuid))

    def hosts(self, snapshot):
        return [self.states[u] for u in snapshot.compute_uuids
                if u in self.states]


def _static_key(params, spec):
    image = spec.image
    return (tuple(params), spec.flavor.flavorid if spec.flavor else None,
            image.id if image else None, spec.project_id,
            repr(sorted((spec.scheduler_hints or {}).items())))


def plan(scheduler, ctxt, servers, lost):
    """Plan the re-placement of ``servers`` off the ``lost`` hosts.

    :param servers: :class:`Server` objects (on the lost hosts); their
        specs' server groups name the members' current hosts.
    :param lost: host names that go away.
    :returns: a :class:`Plan`.
    """
    result = Plan(lost=sorted(set(lost)))
    world = _World(scheduler, ctxt, lost)
    groups = {}
    specs = {}
    for server in servers:
        spec = copy.copy(server.spec)
        spec.instance_uuid = server.uuid
        spec.ignore_hosts = sorted(set(spec.ignore_hosts or ()) | world.lost)
        spec.force_hosts, spec.force_nodes = [], []
        spec.requested_destination = None
        spec.num_instances = 1
        group = spec.instance_group
        if group is not None:
            # NOTE: one group object per group, shared by its members'
            # specs, so that each placement counts for the next member;
            # a copy, so that the caller's specs are left as they were.
            if group.uuid not in groups:
                groups[group.uuid] = copy.deepcopy(group)
            group = spec.instance_group = groups[group.uuid]
            if server.host in group.hosts:
                group.hosts.remove(server.host)
        specs[server.uuid] = spec
    for server in order(servers):
        move = _place(world, server, specs[server.uuid])
        (result.moves if move.destination else result.unplaced).append(
            move)
    return result


def _place(world, server, spec):
    move = Move(server=server.uuid, name=server.name, source=server.host)
    query = pipeline.query_of(world.scheduler, world.ctxt, spec)
    if query.impossible:
        move.why = query.impossible
        return move
    params = query.to_params()
    snapshot = world.answer(params)
    hosts = pipeline.restrict(world.hosts(snapshot), spec,
                              ignore=world.lost)
    if not hosts:
        move.why = 'placement offered no host outside the lost ones (%s)' \
            % query.describe()
        return move
    filler = fill.Filler(world.scheduler.filters, spec)
    passing, rejected = _filtered(world, params, spec, hosts, filler)
    fitting, requests = _fitting(world, snapshot, filler, passing, rejected)
    if not fitting:
        move.why = _summary(len(hosts), rejected)
        return move
    weighed = weighers_mod.weigh(world.scheduler.weighers, fitting, spec)
    # NOTE: equal weights go to the first host by name, not at random:
    # the plan must be the same every time for the same cloud.
    top = weighed[0].weight
    best = min((w for w in weighed if w.weight == top),
               key=lambda w: (w.obj.host, w.obj.nodename))
    host = best.obj
    world.ledger.take(requests[host.uuid])
    filler.consume(host)
    move.destination, move.node = host.host, host.nodename
    move.why = 'best of %d host(s) that fit (weight %.3f)%s' % (
        len(fitting), best.weight,
        '; %s' % _summary(len(hosts), rejected) if rejected else '')
    return move


def _fitting(world, snapshot, filler, passing, rejected):
    """(hosts that can take the server now, {uuid: its allocation
    request}); the others' reasons go into ``rejected``.
    """
    fitting, requests = [], {}
    fits = world.ledger.fits
    for host in passing:
        candidates = snapshot.by_root.get(host.uuid, ())
        request = next((r for r in candidates if fits(r)), None)
        reason = filler.placement_reason(world.ledger, candidates) \
            if request is None else filler.fits(host)
        if reason:
            rejected[pipeline.host_key(host)] = reason
        else:
            fitting.append(host)
            requests[host.uuid] = request
    return fitting, requests


def _filtered(world, params, spec, hosts, filler):
    """(passing, rejected) of the host filters: the ones whose answer
    cannot change are run once per kind of request and remembered.
    """
    key = _static_key(params, spec)
    static = world.static.get(key)
    if static is None:
        filters = [f for f in world.scheduler.filters
                   if f.name in fill.STATIC_FILTERS]
        passing, rejected = pipeline.filter_pass(filters, hosts, spec)
        static = world.static[key] = (
            {h.uuid for h in passing},
            {h.uuid: rejected[pipeline.host_key(h)] for h in hosts
             if pipeline.host_key(h) in rejected})
    passing_uuids, reasons = static
    rejected = {pipeline.host_key(h): reasons[h.uuid] for h in hosts
                if h.uuid in reasons}
    passing = [h for h in hosts if h.uuid in passing_uuids]
    if filler.stateful and passing:
        passing, more = pipeline.filter_pass(filler.stateful, passing, spec)
        rejected.update(more)
    return passing, rejected


def _summary(count, rejected):
    """'12 host(s): ServerGroupAntiAffinityFilter 3, NUMA 2, ...'."""
    kinds = {}
    for reason in rejected.values():
        kind = reason.split(':', 1)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    return '%d host(s), rejected: %s' % (count, ', '.join(
        '%s %d' % item for item in sorted(kinds.items(),
                                          key=lambda i: (-i[1], i[0]))))
