# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Allocation candidates: which providers could satisfy a request.

Two paths answer the same question:

* the flat path, when the request is one unsuffixed group and the database
  holds neither nested providers nor sharing providers of a requested
  class: every matching provider is exactly one candidate, so a single SQL
  statement finds them (capacity, traits, aggregates) in provider id order;
* the general path: per request group, the providers with capacity (one
  SQL statement per requested class), filtered by traits and aggregates,
  grouped by the trees (roots) they can serve, then combined lazily by
  :mod:`candidate_combine`.

Only the candidates that are returned are summarised.
"""

import random

from services.placement.db.api import placement_db
from services.placement.objects import candidate_combine as combine
from services.placement.objects import candidate_memory as memory
from services.placement.objects import candidate_query as cq
from services.placement.objects import candidate_render as render
from services.placement.objects import catalog
from services.placement.objects import provider_cache
from services.placement import query


class _Settings(object):
    """How many candidates to produce and in which order."""

    def __init__(self, limit, randomize, max_candidates, strategy):
        self.limit = limit
        self.randomize = randomize
        self.cap = max_candidates if max_candidates and (
            max_candidates > 0) else None
        self.strategy = strategy

    def bound(self):
        """How many candidates to generate at most (None: all)."""
        bound = self.cap
        if not self.randomize and self.limit is not None:
            bound = self.limit if bound is None else min(bound, self.limit)
        return bound

    def take(self, stream):
        """The candidates to return from the iterable ``stream``.

        Without randomisation, generation stops at min(limit, cap); with
        it, up to the cap is generated, shuffled, then the limit applied.
        """
        bound = self.bound()
        taken = []
        if bound is None:
            taken = list(stream)
        else:
            for item in stream:
                taken.append(item)
                if len(taken) >= bound:
                    break
        if self.randomize:
            random.shuffle(taken)
            if self.limit is not None:
                taken = taken[:self.limit]
        return taken


def _trait_ids(ctx, traits):
    def ids(names):
        return frozenset(catalog.TRAITS.id_for(ctx, n) for n in names)
    return (ids(traits.all_of), tuple(ids(s) for s in traits.any_of),
            ids(traits.forbidden))


def _has_traits(names, traits):
    """True when a set of trait names meets a RequiredTraits."""
    return (traits.all_of <= names and
            all(names & wanted for wanted in traits.any_of) and
            not (traits.forbidden & names))


def _in_aggregates(aggs, member_of):
    return (all(aggs & wanted for wanted in member_of.any_of) and
            not (member_of.forbidden & aggs))


@placement_db.reader
def get_candidates(ctx, creq, version, randomize=False, max_candidates=-1,
                   strategy='breadth-first', use_cache=False):
    """The response body of ``GET /allocation_candidates``.

    :param creq: a :class:`request_groups.CandidateRequest`.
    :param version: the request's microversion.
    :param randomize: [placement] randomize_allocation_candidates.
    :param max_candidates: [placement] max_allocation_candidates.
    :param strategy: [placement] allocation_candidates_generation_strategy.
    :param use_cache: [placement] provider_cache: answer a flat request
        from the provider cache.
    :returns: {'allocation_requests': [...], 'provider_summaries': {...}}.
    """
    conn = ctx.session
    settings = _Settings(creq.limit, randomize, max_candidates, strategy)
    rc_ids = {}
    for group in creq.groups:
        for name in group.resources:
            rc_ids[name] = catalog.RESOURCE_CLASSES.id_for(ctx, name)
    in_tree_roots = {}
    for group in creq.groups:
        if group.in_tree is not None:
            found = cq.provider_by_uuid(conn, group.in_tree)
            if found is None:
                return _empty()
            in_tree_roots[group.suffix] = found[1]
    shares_id = catalog.TRAITS.id_for(ctx, cq.SHARES_TRAIT)
    one_group = len(creq.groups) == 1 and not creq.groups[0].suffix
    if one_group and use_cache:
        view = provider_cache.CACHE.view(conn, shares_id)
        if not view.nested and not view.shares(rc_ids.values()):
            return _flat(ctx, conn, creq, version, rc_ids, in_tree_roots,
                         settings, view)
    elif (one_group and
            not cq.sharing_providers(conn, shares_id, set(rc_ids.values()))
            and not cq.has_nested_providers(conn)):
        return _flat(ctx, conn, creq, version, rc_ids, in_tree_roots,
                     settings)
    candidates, tree = _general(ctx, conn, creq, version, rc_ids,
                                in_tree_roots, shares_id, settings)
    return _respond(ctx, conn, creq, version, rc_ids, candidates, tree)


def _empty():
    return {'allocation_requests': [], 'provider_summaries': {}}


def _aggregate_uuids(member_of):
    """Every aggregate uuid a MemberOf names (wanted or forbidden)."""
    uuids = set(member_of.forbidden)
    for wanted in member_of.any_of:
        uuids |= wanted
    return uuids


def _flat(ctx, conn, creq, version, rc_ids, in_tree_roots, settings,
          view=None):
    """The response when each provider stands alone (the common case).

    NOTE: this path skips the general engine's representation of a
    candidate (sets of provider and class ids) and renders the answer
    directly: on a flat cloud every candidate is one provider with the
    requested amounts, and there may be a thousand of them.

    :param view: a provider_cache View: answer from it rather than SQL.
    """
    group = creq.groups[0]
    agg_ids = cq.aggregate_ids(conn, _aggregate_uuids(group.member_of))
    if view is not None:
        return memory.respond(
            ctx, conn, view, group, version, rc_ids,
            _trait_ids(ctx, group.traits), _trait_ids(ctx, creq.root_required),
            agg_ids, in_tree_roots.get(''), settings) or _empty()
    resources = {rc_ids[n]: amount for n, amount in group.resources.items()}
    any_of = tuple(frozenset(agg_ids[u] for u in wanted if u in agg_ids)
                   for wanted in group.member_of.any_of)
    # NOTE: a member_of naming only unknown aggregates matches nothing.
    if any(not wanted for wanted in any_of):
        return _empty()
    forbidden = frozenset(agg_ids[u] for u in group.member_of.forbidden
                          if u in agg_ids)
    rows, inventories = cq.flat_candidates(
        conn, resources, traits=_trait_ids(ctx, group.traits),
        aggregates=(any_of, forbidden),
        root_traits=_trait_ids(ctx, creq.root_required),
        in_tree_root=in_tree_roots.get(''), bound=settings.bound())
    chosen = settings.take(rows)
    if not chosen:
        return _empty()
    return _flat_body(ctx, conn, version, chosen, inventories, resources,
                      {rc: name for name, rc in rc_ids.items()})


def _flat_body(ctx, conn, version, chosen, inventories, resources, names):
    """Render the flat SQL path's chosen (provider id, uuid) rows.

    :param inventories: {provider id: [(class id, capacity, used)]} of the
        requested classes, as read with the candidates.
    :param names: {class id: name} of the requested classes; grows.
    """
    pids = [pid for pid, _uuid in chosen]
    tree = {pid: (uuid, None, pid) for pid, uuid in chosen}
    # NOTE: the requested classes were read with the candidates; from
    # 1.27 the summaries show every class of the provider.
    inventories = {pid: inventories[pid] for pid in pids}
    if version >= (1, 27):
        others = cq.inventories(conn, pids, other_than=set(resources))
        for pid, entries in others.items():
            inventories[pid] = sorted(inventories[pid] + entries)
    _name_classes(ctx, inventories, names)
    traits = {}
    if version >= (1, 17):
        traits = render.traits_in_id_order(ctx, cq.trait_names(conn, pids))
    return {
        'allocation_requests': render.single_provider_requests(
            version, chosen, {names[rc]: n for rc, n in resources.items()}),
        'provider_summaries': render.provider_summaries(
            version, sorted(pids), {p: u for p, u in chosen}, inventories,
            traits, tree, names),
    }


def _name_classes(ctx, inventories, names):
    """Add to ``names`` the name of every class id in ``inventories``."""
    for rows in inventories.values():
        for rc, _cap, _used in rows:
            if rc not in names:
                names[rc] = catalog.RESOURCE_CLASSES.name_for(ctx, rc)


class _LazyOptions(object):
    """{root: options} computed on first use (many roots, few used)."""

    def __init__(self, compute):
        self._compute = compute
        self._cache = {}

    def get(self, root):
        if root not in self._cache:
            self._cache[root] = self._compute(root)
        return self._cache[root]


def _general(ctx, conn, creq, version, rc_ids, in_tree_roots, shares_id,
             settings):
    """Candidates over trees and sharing providers, lazily combined."""
    groups = creq.groups
    per_group, capacity, root_of = _with_capacity(conn, groups, rc_ids)
    with_capacity = set(root_of)
    sharing = cq.sharing_providers(conn, shares_id) & with_capacity
    anchors = {pid: {root_of[pid]} for pid in with_capacity}
    for pid, roots in cq.sharing_anchors(conn, sharing).items():
        anchors[pid] |= roots
    traits, aggs = _traits_and_aggregates(
        conn, groups, with_capacity | set(root_of.values()))

    # Filter each group's providers and find the roots it can serve.
    filtered, group_roots = _filter_groups(
        groups, per_group, in_tree_roots, root_of, anchors, traits, aggs)
    roots = _common_roots(conn, creq, group_roots)
    if not roots:
        return [], {}

    # Trees are needed for resourceless groups and same_subtree.
    tree = {}
    if creq.same_subtree or any(not g.resources for g in groups):
        tree = cq.providers(conn, root_ids=roots)
        _fill_resourceless(conn, groups, in_tree_roots, tree, filtered,
                           anchors)

    plans = [_group_plan(group, filtered[i], anchors, rc_ids, traits)
             for i, group in enumerate(groups)]
    parent_of = {pid: parent for pid, (_u, parent, _r) in tree.items()}
    plan = combine.Plan(
        plans, sorted(roots), capacity, root_of, parent_of=parent_of,
        isolate=creq.group_policy == 'isolate',
        same_subtree=creq.same_subtree, nested_aware=version >= (1, 29),
        distinct_mappings=version >= (1, 34), shared=sharing)
    candidates = settings.take(combine.generate(plan, settings.strategy))
    return candidates, tree


def _with_capacity(conn, groups, rc_ids):
    """The providers with capacity for each group's classes.

    :returns: (per_group, capacity, root_of): per_group is a list, aligned
        with ``groups``, of {class id: set of provider ids};
        capacity is {(provider id, class id): (capacity, used, max_unit)};
        root_of is {provider id: root id}.
    """
    capacity, root_of = {}, {}
    per_group = []
    # NOTE: groups often repeat a request (eight ports of one VF each);
    # each (class, amount) is asked of the database once.
    asked = {}
    for group in groups:
        per_rc = {}
        for name, amount in sorted(group.resources.items(),
                                   key=lambda item: rc_ids[item[0]]):
            rc = rc_ids[name]
            found = asked.get((rc, amount))
            if found is None:
                found = asked[(rc, amount)] = set()
                for pid, root, cap, used, max_unit in cq.capacity_rows(
                        conn, rc, amount):
                    capacity[(pid, rc)] = (cap, used, max_unit)
                    root_of[pid] = root
                    found.add(pid)
            per_rc[rc] = found
        per_group.append(per_rc)
    return per_group, capacity, root_of


def _traits_and_aggregates(conn, groups, looked_up):
    """({pid: trait names}, {pid: aggregate uuids}) of ``looked_up``."""
    # NOTE: each is only read from the database when some group filters
    # on it; otherwise it is an empty dict.
    need_traits = any(g.traits != query.NO_TRAITS
                      for g in groups)
    need_aggs = any(g.member_of != query.NO_AGGREGATES
                    for g in groups)
    traits = cq.trait_names(conn, looked_up) if need_traits else {}
    aggs = cq.aggregate_uuids(conn, looked_up) if need_aggs else {}
    return traits, aggs


def _filter_groups(groups, per_group, in_tree_roots, root_of, anchors,
                   traits, aggs):
    """Filter each group's providers and find the roots each can serve.

    :returns: (filtered, group_roots): filtered is aligned with ``groups``
        (a set of provider ids for a granular group, {class id: set of
        provider ids} for the unsuffixed group); group_roots is a list of
        sets of root ids, one per granular group with resources and one
        per class of the unsuffixed group.
    """
    filtered = []
    group_roots = []
    for group, per_rc in zip(groups, per_group):
        tree_root = in_tree_roots.get(group.suffix)
        if group.suffix:
            pids = _filter_granular(group, per_rc, tree_root, root_of,
                                    traits, aggs)
            filtered.append(pids)
            if per_rc:
                group_roots.append(set().union(*(anchors[p] for p in pids)))
            continue
        kept = _filter_unsuffixed(group, per_rc, tree_root, root_of,
                                  traits, aggs)
        for pids in kept.values():
            group_roots.append(set().union(*(anchors[p] for p in pids)))
        filtered.append(kept)
    return filtered, group_roots


def _filter_granular(group, per_rc, tree_root, root_of, traits, aggs):
    """The providers that alone satisfy a granular group.

    One provider must have capacity for every class and itself carry the
    group's traits and aggregates.
    """
    empty = frozenset()
    pids = set.intersection(*per_rc.values()) if per_rc else set()
    return {p for p in pids
            if (tree_root is None or root_of[p] == tree_root) and
            _has_traits(traits.get(p, empty), group.traits) and
            _in_aggregates(aggs.get(p, empty), group.member_of)}


def _filter_unsuffixed(group, per_rc, tree_root, root_of, traits, aggs):
    """{class id: providers} that may serve that class of the unsuffixed group.

    A provider's aggregates include its root's.
    """
    # NOTE: only forbidden traits are checked per provider here; required
    # traits may be spread over the chosen providers, so they are checked
    # per option (see _group_plan).
    empty = frozenset()
    kept = {}
    for rc, pids in per_rc.items():
        kept[rc] = {
            p for p in pids
            if (tree_root is None or root_of[p] == tree_root) and
            not (traits.get(p, empty) & group.traits.forbidden) and
            _in_aggregates(aggs.get(p, empty) |
                           aggs.get(root_of[p], empty), group.member_of)}
    return kept


def _common_roots(conn, creq, group_roots):
    """The roots every group can serve that carry the root_required traits."""
    empty = frozenset()
    roots = set.intersection(*group_roots) if group_roots else set()
    if creq.root_required != query.NO_TRAITS and roots:
        root_traits = cq.trait_names(conn, roots)
        roots = {r for r in roots
                 if _has_traits(root_traits.get(r, empty),
                                creq.root_required)}
    return roots


def _fill_resourceless(conn, groups, in_tree_roots, tree, filtered,
                       anchors):
    """Set ``filtered`` for the groups without resources, from ``tree``.

    Such a group may be served by any provider of the candidate trees
    carrying its traits and aggregates; those providers are anchored to
    their own root in ``anchors`` (unless already there).
    """
    if all(group.resources for group in groups):
        return
    empty = frozenset()
    tree_traits = cq.trait_names(conn, set(tree))
    tree_aggs = cq.aggregate_uuids(conn, set(tree))
    for i, group in enumerate(groups):
        if group.resources:
            continue
        tree_root = in_tree_roots.get(group.suffix)
        filtered[i] = {
            p for p, (_u, _parent, root) in tree.items()
            if (tree_root is None or root == tree_root) and
            _has_traits(tree_traits.get(p, empty), group.traits) and
            _in_aggregates(tree_aggs.get(p, empty), group.member_of)}
        for p in filtered[i]:
            anchors.setdefault(p, {tree[p][2]})


def _group_plan(group, chosen, anchors, rc_ids, traits):
    """The GroupPlan of one group from its filtered providers."""
    resources = tuple(sorted((rc_ids[n], amount)
                             for n, amount in group.resources.items()))
    if group.suffix:
        by_root = {}
        for pid in sorted(chosen):
            for root in anchors[pid]:
                by_root.setdefault(root, []).append(pid)
        signature = (resources, group.traits, group.member_of,
                     group.in_tree)
        return combine.GroupPlan(group.suffix, resources, False, by_root,
                                 signature)
    per_rc_by_root = []
    for rc, _amount in resources:
        by_root = {}
        for pid in sorted(chosen[rc]):
            for root in anchors[pid]:
                by_root.setdefault(root, []).append(pid)
        per_rc_by_root.append(by_root)
    wanted = group.traits
    empty = frozenset()

    def has_traits(pids):
        names = set()
        for pid in pids:
            names |= traits.get(pid, empty)
        return _has_traits(names, wanted)

    check = has_traits if (wanted.all_of or wanted.any_of) else None

    def compute(root):
        lists = [by_root.get(root) for by_root in per_rc_by_root]
        if not all(lists):
            return []
        return combine.spread_options(lists, check)

    return combine.GroupPlan('', resources, True, _LazyOptions(compute))


def _providers_of(candidates):
    """(providers allocated from, providers named by the mappings)."""
    used = set()
    mapped = set()
    # NOTE: many candidates share their allocations or mappings (the same
    # providers in another group order); each distinct one is read once.
    for allocations in {allocations for allocations, _m in candidates}:
        used.update(pid for (pid, _rc), _amount in allocations)
    for mappings in {mappings for _a, mappings in candidates}:
        for _suffix, pids in mappings:
            mapped.update(pids)
    return used, mapped


def _summarised(conn, version, used, tree):
    """The sorted ids of the providers the summaries show.

    From 1.29 every provider of each tree a candidate uses is summarised
    (``tree`` is completed with the trees it lacks); before, only the
    providers allocated from.
    """
    if version < (1, 29):
        return sorted(used)
    roots = {tree[p][2] for p in used if p in tree}
    missing = used - set(tree)
    if missing:
        extra = cq.providers(conn, ids=missing)
        roots |= {root for _u, _p, root in extra.values()}
    known_roots = {r for _u, _p, r in tree.values()}
    if roots - known_roots:
        tree.update(cq.providers(conn, root_ids=roots - known_roots))
    return sorted(p for p, info in tree.items() if info[2] in roots)


def _respond(ctx, conn, creq, version, rc_ids, candidates, tree):
    """Render the candidates and summarise their providers."""
    used, mapped = _providers_of(candidates)
    summarised = _summarised(conn, version, used, tree)
    missing = (used | mapped | set(summarised)) - set(tree)
    if missing:
        tree.update(cq.providers(conn, ids=missing))
    uuid_of = {pid: info[0] for pid, info in tree.items()}
    rc_filter = None
    if version < (1, 27):
        rc_filter = set(rc_ids.values())
    inventories = cq.inventories(conn, summarised, rc_filter)
    names = {}
    _name_classes(ctx, inventories, names)
    for name, rc in rc_ids.items():
        names[rc] = name
    traits = {}
    if version >= (1, 17):
        traits = render.traits_in_id_order(
            ctx, cq.trait_names(conn, summarised))
    return {
        'allocation_requests': render.allocation_requests(
            version, candidates, uuid_of, names),
        'provider_summaries': render.provider_summaries(
            version, summarised, uuid_of, inventories, traits, tree, names),
    }
