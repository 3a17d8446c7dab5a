# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A per-process copy of every provider's inventory, usage and traits.

A scheduler asks for allocation candidates before every placement decision,
and on a flat cloud the answer covers every provider with room: reading
the inventory and usage (sums over the allocations) of a thousand providers
took most of a request. Between two such requests only a few providers
change, the ones the last claims landed on, so this cache keeps a copy of
each provider and reads again only what changed.

Freshness does not depend on time or on messages between processes. Every
request reads, in its own transaction, one small row per provider: id,
uuid, generation, usage_serial, parent and root. The generation moves with
every change of the provider's inventory or traits and with every new
allocation on it; ``usage_serial`` moves when allocations are deleted from
it (objects/allocation.py), which leaves the generation alone as upstream
does. A copy whose row matches is used as it is, the others are read again
in the same transaction, so the answer is the database's in that
transaction, as it would be without the cache.

Aggregates are not copied: their membership may change without a new
generation (before microversion 1.19), and only ``member_of`` queries need
them, which read them each time.

Changes made behind placement's back (SQL on its database) are not seen
until the provider changes again or the service restarts;
``[placement] provider_cache = False`` turns the cache off.
"""

import operator
import threading

import sqlalchemy as sa

from common import gc_tuning
from services.placement.db import tables
from services.placement.objects import candidate_query as cq
from services.placement.objects import inventory as inventory_obj

_RP = tables.resource_providers
_INV = tables.inventories
_RPT = tables.resource_provider_traits

# A request that copies this many providers asks for a garbage collector
# settle (common/gc_tuning.py).
SETTLE_AFTER_LOADING = 100


class Provider(object):
    """One provider as the candidates see it; never changed once built.

    :ivar inventory: {class id: (capacity, used, min_unit, max_unit,
        step_size)}.
    :ivar traits: frozenset of trait ids.
    """

    __slots__ = ('key', 'id', 'uuid', 'generation', 'usage_serial',
                 'parent_id', 'root_id', 'inventory', 'traits', 'rendered')

    def __init__(self, row, inventory, traits):
        # NOTE: the scanned row, as a tuple; a later scan's row equal to it
        # means this copy is still right.
        self.key = row
        (self.id, self.uuid, self.generation, self.usage_serial,
         self.parent_id, self.root_id) = row
        self.inventory = inventory
        self.traits = traits
        # NOTE: (names epoch, summary dict) once a response has shown it;
        # see candidate_memory.
        self.rendered = None

    def newer_than(self, other):
        """True when this copy may replace ``other`` in the cache.

        Generations and serials only grow, so a copy read in an older
        transaction never overwrites one read in a newer transaction.
        """
        return (other.uuid != self.uuid or
                (self.generation >= other.generation and
                 self.usage_serial >= other.usage_serial))


class View(object):
    """The providers as one transaction sees them, in id order."""

    def __init__(self, providers, nested, sharing):
        """
        :param providers: every Provider, in id order.
        :param nested: True when some provider has a parent.
        :param sharing: the providers with MISC_SHARES_VIA_AGGREGATE.
        """
        self.providers = providers
        self.nested = nested
        self.sharing = sharing

    def shares(self, rc_ids):
        """True when a sharing provider has inventory of one of ``rc_ids``.

        Such a provider may join any candidate of its aggregates, which the
        flat path does not handle.
        """
        return any(rc in p.inventory for p in self.sharing for rc in rc_ids)


_FIRST = operator.itemgetter(0)

# One row per provider: what says whether a copy is still right.
_SCAN = sa.select(_RP.c.id, _RP.c.uuid, _RP.c.generation,
                  _RP.c.usage_serial, _RP.c.parent_provider_id,
                  _RP.c.root_provider_id)


class ProviderCache(object):
    """The copies of one placement database's providers; thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self._providers = {}

    def clear(self):
        """Forget every copy (tests that rewrite the database under us)."""
        with self._lock:
            self._providers = {}

    def view(self, conn, shares_trait_id):
        """Every provider as seen by ``conn``'s transaction.

        :param shares_trait_id: the id of MISC_SHARES_VIA_AGGREGATE (None
            when the trait is unknown).
        :returns: a :class:`View`.
        """
        # NOTE: fetched at once (iterating a result fetches row by row, at
        # several times the cost) and as plain tuples, which compare
        # several times faster than rows.
        rows = sorted(map(tuple, conn.execute(_SCAN).all()), key=_FIRST)
        cached = self._providers
        providers = []
        stale = []
        nested = False
        for row in rows:
            if row[4] is not None:
                nested = True
            copy = cached.get(row[0])
            if copy is not None and copy.key == row:
                providers.append(copy)
            else:
                stale.append((len(providers), row))
                providers.append(None)
        if stale:
            fresh = _load(conn, [row for _i, row in stale])
            for index, row in stale:
                providers[index] = fresh[row[0]]
            self._keep(fresh.values())
            if len(fresh) >= SETTLE_AFTER_LOADING:
                # NOTE: a cold fill: copies that will live for a while, out
                # of the collector's way once this request is done.
                gc_tuning.settle_soon()
        if len(cached) > len(rows) + len(rows) // 8 + 16:
            self._prune({row[0] for row in rows})
        sharing = [p for p in providers if shares_trait_id in p.traits] \
            if shares_trait_id is not None else []
        return View(providers, nested, sharing)

    def _keep(self, fresh):
        with self._lock:
            # NOTE: copy on write: readers iterate no dict that changes.
            providers = dict(self._providers)
            for copy in fresh:
                known = providers.get(copy.id)
                if known is None or copy.newer_than(known):
                    providers[copy.id] = copy
            self._providers = providers

    def _prune(self, live_ids):
        # NOTE: deleted providers; a reader of an older transaction may
        # bring one back, to be pruned again later.
        with self._lock:
            self._providers = {pid: copy for pid, copy in
                               self._providers.items() if pid in live_ids}


# NOTE: built once, with the ids as an expanding parameter: usually one
# or two providers changed since the last request, and composing a
# statement for them cost more than running it.
_INVENTORY = (sa.select(_INV.c.resource_provider_id,
                        _INV.c.resource_class_id, _INV.c.total,
                        _INV.c.reserved, _INV.c.min_unit, _INV.c.max_unit,
                        _INV.c.step_size, _INV.c.allocation_ratio,
                        cq.INVENTORY_USED)
              .where(_INV.c.resource_provider_id.in_(
                  sa.bindparam('ids', expanding=True))))
_TRAITS = (sa.select(_RPT.c.resource_provider_id, _RPT.c.trait_id)
           .where(_RPT.c.resource_provider_id.in_(
               sa.bindparam('ids', expanding=True))))


def _load(conn, rows):
    """Fresh copies of the providers of the scanned ``rows``.

    :returns: {provider id: Provider}.
    """
    inventories = {}
    traits = {}
    capacity = inventory_obj.capacity
    for part in cq.chunks({row[0] for row in rows}):
        for (rp_id, rc_id, total, reserved, min_unit, max_unit, step,
             ratio, used) in conn.execute(_INVENTORY, {'ids': part}).all():
            inventories.setdefault(rp_id, {})[rc_id] = (
                capacity(total, reserved, ratio), int(used or 0), min_unit,
                max_unit, step)
        for rp_id, trait_id in conn.execute(_TRAITS, {'ids': part}).all():
            traits.setdefault(rp_id, set()).add(trait_id)
    empty = frozenset()
    return {row[0]: Provider(row, inventories.get(row[0], {}),
                             frozenset(traits[row[0]]) if row[0] in traits
                             else empty)
            for row in rows}


# NOTE: one placement process serves one database.
CACHE = ProviderCache()
