# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The flat allocation-candidates path over the provider cache.

The same answer as ``allocation_candidate._flat`` (one unsuffixed group,
every provider a tree of its own, no sharing provider of a requested
class), computed from :mod:`provider_cache` copies instead of SQL: the
providers are walked in id order, and each one with room, the traits and
the aggregates asked for is a candidate. Capacity is upstream's formula
(:func:`inventory.fits`).
"""

import sqlalchemy as sa

from services.placement.db import tables
from services.placement.objects import candidate_render as render
from services.placement.objects import catalog

_RPA = tables.resource_provider_aggregates


def _members(conn, aggregate_ids):
    """Ids of the providers in any of ``aggregate_ids``."""
    if not aggregate_ids:
        return frozenset()
    return frozenset(conn.execute(
        sa.select(_RPA.c.resource_provider_id).distinct()
        .where(_RPA.c.aggregate_id.in_(sorted(aggregate_ids)))).scalars())


class _TraitVerdicts(dict):
    """{a provider's trait set: whether it meets the request}, filled lazily.

    NOTE: thousands of providers share a handful of trait sets (and the
    cached copies share the frozenset objects), so the set tests run once
    per distinct set and every other provider costs one dict lookup.
    """

    def __init__(self, traits, root_traits):
        super().__init__()
        self.all_of = traits[0] | root_traits[0]
        self.any_of = traits[1] + root_traits[1]
        self.forbidden = traits[2] | root_traits[2]

    def __missing__(self, has):
        verdict = (self.all_of <= has and has.isdisjoint(self.forbidden) and
                   not any(has.isdisjoint(one) for one in self.any_of))
        self[has] = verdict
        return verdict


def _allowed_ids(in_aggregates, in_tree_root):
    """The provider ids a candidate must be among, or None for any.

    NOTE: on the flat path every provider is its own root, so ``in_tree``
    admits exactly the provider of that id. One intersection per request
    replaces a test per aggregate set per provider.
    """
    allowed = None
    if in_tree_root is not None:
        allowed = frozenset((in_tree_root,))
    for members in in_aggregates:
        allowed = members if allowed is None else allowed & members
    return allowed


def matching(view, resources, traits, root_traits, in_aggregates,
             not_in_aggregates, in_tree_root, bound):
    """The providers of ``view`` that alone satisfy the group, in id order.

    :param view: a flat provider_cache View (no provider has a parent).
    :param resources: {class id: amount}.
    :param traits: (all_of ids, tuple of any_of id sets, forbidden ids).
    :param root_traits: the same for root_required; a flat provider is
        its own root, so both apply to the provider itself.
    :param in_aggregates: one frozenset of provider ids per member_of
        parameter; a candidate is in each.
    :param not_in_aggregates: provider ids a candidate must not be.
    :param in_tree_root: the root id a candidate must have, or None.
    :param bound: stop after this many (None: all).
    :returns: list of cached Provider objects.
    """
    wanted = sorted(resources.items())
    allowed = _allowed_ids(in_aggregates, in_tree_root)
    verdicts = _TraitVerdicts(traits, root_traits)
    # NOTE: -1 never equals a length, so "no bound" costs no extra test.
    stop_at = -1 if bound is None else bound
    found = []
    # NOTE: this loop visits every cached provider on every flat request
    # (thousands), so it calls nothing and allocates nothing per provider:
    # capacity is tested inline (upstream's formula, inventory.fits), the
    # aggregate and tree filters are one set, the traits a cached verdict.
    for provider in view.providers:
        inventory = provider.inventory
        for rc, amount in wanted:
            entry = inventory.get(rc)
            if entry is None:
                break
            capacity, used, min_unit, max_unit, step = entry
            if not (min_unit <= amount <= max_unit and
                    used + amount <= capacity) or amount % step:
                break
        else:
            pid = provider.id
            if pid in not_in_aggregates or (
                    allowed is not None and pid not in allowed):
                continue
            if not verdicts[provider.traits]:
                continue
            found.append(provider)
            if len(found) == stop_at:
                break
    return found


def respond(ctx, conn, view, group, version, rc_ids, traits, root_traits,
            agg_ids, in_tree_root, settings):
    """The ``GET /allocation_candidates`` body for a flat cloud.

    :param group: the unsuffixed RequestGroup.
    :param rc_ids: {class name: id} of the requested classes.
    :param traits: trait ids of the group (see :func:`matching`).
    :param root_traits: trait ids of root_required.
    :param agg_ids: {aggregate uuid: id} of the aggregates the group names.
    :param settings: the request's limit and randomisation.
    """
    resources = {rc_ids[n]: amount for n, amount in group.resources.items()}
    in_aggregates = []
    for wanted in group.member_of.any_of:
        ids = {agg_ids[u] for u in wanted if u in agg_ids}
        if not ids:
            return None
        in_aggregates.append(_members(conn, ids))
    not_in = _members(conn, {agg_ids[u] for u in group.member_of.forbidden
                             if u in agg_ids})
    found = matching(view, resources, traits, root_traits, in_aggregates,
                     not_in, in_tree_root, settings.bound())
    chosen = settings.take(found)
    if not chosen:
        return None
    names = {rc: name for name, rc in rc_ids.items()}
    requests = render.single_provider_requests(
        version, [(p.id, p.uuid) for p in chosen],
        {names[rc]: n for rc, n in resources.items()})
    return {'allocation_requests': requests,
            'provider_summaries': _summaries(ctx, version, chosen,
                                             set(resources), names)}


def _summaries(ctx, version, chosen, requested, names):
    """``provider_summaries`` of the chosen (flat) providers."""
    ordered = sorted(chosen, key=lambda p: p.id)
    if version < (1, 29):
        return _render(ctx, version, ordered, requested, names)
    # NOTE: the form every scheduler asks for, the same from 1.29 on and
    # whatever was requested (every class is shown): each provider's
    # summary is rendered once per copy (and names epoch) and shared by
    # the answers.
    epoch = (catalog.RESOURCE_CLASSES.epoch, catalog.TRAITS.epoch)
    result = {}
    for provider in ordered:
        rendered = provider.rendered
        if rendered is None or rendered[0] != epoch:
            rendered = (epoch, _render(ctx, version, [provider], requested,
                                       names)[provider.uuid])
            provider.rendered = rendered
        result[provider.uuid] = rendered[1]
    return result


def _render(ctx, version, providers, requested, names):
    """:func:`candidate_render.provider_summaries` of flat providers."""
    inventories = {}
    for provider in providers:
        inventories[provider.id] = [
            (rc, entry[0], entry[1])
            for rc, entry in sorted(provider.inventory.items())
            if version >= (1, 27) or rc in requested]
    for rows in inventories.values():
        for rc, _cap, _used in rows:
            if rc not in names:
                names[rc] = catalog.RESOURCE_CLASSES.name_for(ctx, rc)
    traits = {}
    if version >= (1, 17):
        # NOTE: trait id order, as render.traits_in_id_order explains.
        traits = {p.id: [catalog.TRAITS.name_for(ctx, t)
                         for t in sorted(p.traits)]
                  for p in providers}
    return render.provider_summaries(
        version, [p.id for p in providers], {p.id: p.uuid for p in providers},
        inventories, traits,
        {p.id: (p.uuid, None, p.id) for p in providers}, names)
