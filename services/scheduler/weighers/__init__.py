# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Host weighers: normalised, multiplied and summed scores.

Each weigher turns a host into a raw number (``_weigh_object``). Over the
candidate hosts the numbers are normalised to 0..1 (min-max; all equal
gives 0), multiplied by the weigher's multiplier (from config, or from the
host's aggregate metadata when an aggregate overrides it) and summed. The
highest total wins. Weighers are entry points in ``berth.scheduler.weighers``.
"""

import logging
import operator

LOG = logging.getLogger(__name__)

_WEIGHT = operator.attrgetter('weight')


def normalize(values, minval=None, maxval=None):
    """Min-max normalise ``values`` to 0..1.

    :param minval: a fixed lower bound (else the smallest value).
    :param maxval: a fixed upper bound (else the largest value).
    """
    if not values:
        return []
    lower = min(values) if minval is None else minval
    upper = max(values) if maxval is None else maxval
    span = upper - lower
    if span == 0:
        return [0.0 for _ in values]
    return [(v - lower) / span for v in values]


def aggregate_multiplier(host_state, key, default):
    """The multiplier an aggregate sets for ``key``, else ``default``.

    NOTE: when several aggregates of the host set it, the smallest wins,
    the same rule as for allocation ratios; an unreadable value is ignored.
    """
    values = host_state.aggregate_metadata(key).get(key)
    if not values:
        return default
    parsed = []
    for value in values:
        try:
            parsed.append(float(value))
        except (TypeError, ValueError):
            LOG.warning('Could not decode %s: %r', key, value)
    return min(parsed) if parsed else default


class WeighedHost(object):
    """A host with its total weight and each weigher's contribution."""

    # NOTE: one per candidate host and request; slots make them cheaper.
    __slots__ = ('obj', 'weight', '_index', '_shares')

    def __init__(self, host_state, index=0, shares=()):
        """
        :param index: this host's position in the lists of ``shares``.
        :param shares: (weigher name, per-host contributions) pairs, shared
            by every host of one weighing.
        """
        self.obj = host_state
        self.weight = 0.0
        self._index = index
        self._shares = shares

    @property
    def contributions(self):
        """Weigher name -> what it added to this host's weight.

        NOTE: worked out on demand from the weighing's shared lists: only
        the explanation's top hosts are ever asked, and a dict per host and
        request was a good part of weighing a thousand hosts.
        """
        return {name: values[self._index] for name, values in self._shares}

    def __repr__(self):
        return 'WeighedHost [host: %s, weight: %s]' % (self.obj, self.weight)


class BaseHostWeigher(object):
    """Base of every weigher.

    :cvar minval: fixed lower bound for normalisation, or None.
    :cvar maxval: fixed upper bound for normalisation, or None.
    """

    minval = None
    maxval = None

    @property
    def name(self):
        """The weigher's class name, as configured and explained."""
        return type(self).__name__

    def weight_multiplier(self, host_state):
        """The multiplier for ``host_state`` (config or aggregate)."""
        return 1.0

    def _weigh_object(self, host_state, spec_obj):
        """The raw, un-normalised weight of one host."""
        raise NotImplementedError()

    def weigh_objects(self, weighed_hosts, spec_obj):
        """Raw weights of every host, in order.

        A weigher whose raw weight is a plain host attribute may override
        this with one list comprehension: a thousand candidates make the
        per-host call the cost of weighing.
        """
        weigh = self._weigh_object
        return [weigh(w.obj, spec_obj) for w in weighed_hosts]


class _NoAggregates(object):
    """Stands for any host whose aggregates override no multiplier."""

    aggregates = ()

    @staticmethod
    def aggregate_metadata(key=None, split=False):
        return {}


_NO_AGGREGATES = _NoAggregates()
_OVERRIDE_SUFFIX = '_weight_multiplier'


def _overrides_multipliers(host_states):
    """Per host, True when one of its aggregates sets a weight multiplier.

    NOTE: hosts share a few aggregates; each aggregate's metadata is
    read once per call, not once per member host.
    """
    by_aggregate = {}
    result = []
    for host_state in host_states:
        found = False
        for aggregate in host_state.aggregates:
            key = id(aggregate)
            sets = by_aggregate.get(key)
            if sets is None:
                sets = by_aggregate[key] = any(
                    name.endswith(_OVERRIDE_SUFFIX)
                    for name in aggregate.metadata)
            if sets:
                found = True
                break
        result.append(found)
    return result


def weigh(weighers, host_states, spec_obj):
    """Weigh ``host_states`` with ``weighers``; best first.

    NOTE: each weigher's configured multiplier is read once per request;
    only hosts in an aggregate that overrides a multiplier are asked for
    their own. A weigher whose multiplier is 0 everywhere is not run.
    With thirteen weighers and a thousand candidates this is the
    difference between reading the config 13000 times and 13 times.

    :returns: list of WeighedHost sorted by descending weight; each carries
        the per-weigher contributions for the explanation.
    """
    shares = []
    weighed = [WeighedHost(h, i, shares) for i, h in enumerate(host_states)]
    if not weighed:
        return []
    overridden = _overrides_multipliers(host_states)
    any_override = any(overridden)
    totals = [0.0] * len(weighed)
    for weigher in weighers:
        default = weigher.weight_multiplier(_NO_AGGREGATES)
        if default == 0 and not any_override:
            continue
        raw = weigher.weigh_objects(weighed, spec_obj)
        normalized = normalize(raw, weigher.minval, weigher.maxval)
        if not any(normalized):
            # Every host scores 0: nothing to add, whatever the multiplier.
            continue
        if any_override:
            added = [(weigher.weight_multiplier(host.obj) if own
                      else default) * norm
                     for host, norm, own in zip(weighed, normalized,
                                                overridden)]
        else:
            added = [default * norm for norm in normalized]
        shares.append((weigher.name, added))
        totals = list(map(operator.add, totals, added))
    for host, total in zip(weighed, totals):
        host.weight = total
    weighed.sort(key=_WEIGHT, reverse=True)
    return weighed
