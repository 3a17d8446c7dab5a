# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The record of one scheduling decision, and its short summary.

Every ``select_destinations`` produces one: what placement was asked and
how many candidates it gave, which hosts each filter removed and why, the
top weighed hosts with each weigher's contribution, and what was claimed.
It goes to the logs, into NoValidHost (and so into the instance fault), and
is the answer of the ``explain`` dry run.
"""

import collections
import contextlib
import time

#: How many hosts of a random draw's pool a record names.
PICK_POOL_SHOWN = 10


class Explanation(object):
    """Mutable record filled in by the scheduling pipeline."""

    def __init__(self):
        self.placement_query = None
        # NOTE: True when the candidates came from a concurrent identical
        # query (see shared_queries).
        self.placement_answer_shared = False
        self.candidates = 0
        self.hosts = 0
        self.filters = []
        self.rejections = {}
        self.weighed = []
        # How many hosts share the best weight (the first is chosen at
        # random among them; see placing.candidates_in_order).
        self.tied_best = 0
        self.selected = []
        self.notes = []
        # NOTE: the hints no enabled filter reads (see hints.unread) and,
        # per instance, how its host was drawn among the best (see
        # add_pick): the "why here" record names both.
        self.ignored_hints = []
        self.picks = []
        # NOTE: what was placed: 'boot', or the kind of move (the
        # request spec's move_type: resize, migrate, live-migrate,
        # evacuate, unshelve).
        self.request_kind = 'boot'
        self.timings = collections.OrderedDict()

    @contextlib.contextmanager
    def timed(self, stage):
        """Add the wall time of the block to ``timings[stage]`` (ms)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            self.timings[stage] = self.timings.get(stage, 0.0) + elapsed

    def add_filter(self, name, hosts_in, hosts_out, removed):
        """Record a filter's pass.

        :param removed: list of (host, node) keys it removed.
        """
        self.filters.append({'filter': name, 'hosts_in': hosts_in,
                             'hosts_out': hosts_out,
                             'removed': [list(k) for k in removed]})

    def add_rejections(self, rejections):
        """Merge a :class:`~services.scheduler.filters.Rejections` record."""
        for (host, node), (name, reason) in rejections.by_host.items():
            self.rejections.setdefault('%s:%s' % (host, node),
                                       {'filter': name, 'reason': reason})

    def add_weighed(self, weighed_hosts, top=5):
        """Record the best weighed hosts and each weigher's share."""
        self.weighed = [{'host': w.obj.host, 'node': w.obj.nodename,
                         'weight': round(w.weight, 6),
                         'weighers': {k: round(v, 6)
                                      for k, v in w.contributions.items()}}
                        for w in weighed_hosts[:top]]
        self.tied_best = sum(1 for w in weighed_hosts
                             if weighed_hosts[0].weight == w.weight)

    def add_pick(self, index, draw, claimed):
        """Record how instance ``index``'s host was drawn, when it was a
        random pick among several (or the claim went to another host).

        :param draw: (first weighed host, pool drawn from, number of
            hosts of the best weight), as placing drew them; or None.
        :param claimed: the host state claimed.
        """
        if draw is None:
            return
        first, pool, ties = draw
        host = first.obj
        if len(pool) < 2 and claimed is host:
            return
        entry = {'instance': index, 'host': host.host,
                 'node': host.nodename, 'weight': round(first.weight, 6),
                 'drawn_among': len(pool), 'equal_best': ties,
                 'equal_weight': all(w.weight == first.weight
                                     for w in pool),
                 'pool': [[w.obj.host, w.obj.nodename]
                          for w in pool[:PICK_POOL_SHOWN]]}
        if claimed is not host:
            entry['claimed'] = [claimed.host, claimed.nodename]
        self.picks.append(entry)

    def summary(self):
        """A one-line human summary of why hosts were rejected.

        e.g. "3 hosts: 2 rejected by AvailabilityZoneFilter (zone az1
        requested), 1 by NUMATopologyFilter (does not fit)".
        """
        if self.placement_query is not None and not self.candidates:
            # NOTE: the notes name the likely cause (see diagnosis).
            return '; '.join(['placement found no candidate for %s'
                              % self.placement_query] + self.notes)
        by_filter = collections.OrderedDict()
        for item in self.rejections.values():
            by_filter.setdefault(item['filter'], []).append(item['reason'])
        parts = []
        for index, (name, reasons) in enumerate(by_filter.items()):
            common = collections.Counter(reasons).most_common(1)[0][0]
            parts.append('%d %s %s (%s)' % (
                len(reasons), 'rejected by' if index == 0 else 'by', name,
                common))
        if self.placement_query is None and self.notes:
            return '; '.join(self.notes)
        text = '%d host%s' % (self.hosts, '' if self.hosts == 1 else 's')
        if parts:
            text += ': ' + ', '.join(parts)
        for note in self.notes:
            text += '; ' + note
        return text

    def to_dict(self):
        """The full record as JSON primitives."""
        return {'request_kind': self.request_kind,
                'placement_query': self.placement_query,
                'placement_answer_shared': self.placement_answer_shared,
                'candidates': self.candidates, 'hosts': self.hosts,
                'filters': self.filters, 'rejections': self.rejections,
                'weighed': self.weighed, 'tied_best': self.tied_best,
                'selected': self.selected,
                'notes': self.notes,
                'ignored_hints': self.ignored_hints, 'picks': self.picks,
                'timings_ms': {k: round(v, 3) for k, v in
                               self.timings.items()},
                'summary': self.summary()}
