# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""One instance at a time onto a host: what a burst of boots would get.

A boot asks placement for candidates (capacity minus usage), filters and
weighs them, claims, and the compute applies its NUMA and PCI claim. The
capacity answers replay that without claiming: a :class:`Ledger` holds
placement's free figures and takes each simulated allocation, and
:class:`Filler` re-runs, after each instance, the host filters whose
answer can change as a host fills (the others answered once already),
and the NUMA and PCI fit the compute claim would check.
"""

import dataclasses

from common.numa import fit
from common.numa import topology
from common.pci import stats as pci_stats
from services.scheduler import filters as filters_mod
from services.scheduler.filters import numa_topology_filter

# NOTE: filters whose answer for a host depends only on what does not
# change as instances land on it (zone, aggregates, image, capabilities,
# service state): run once per host, in the first pass. Any other filter,
# including an out-of-tree one, is re-run after every instance.
STATIC_FILTERS = frozenset([
    'AllHostsFilter', 'AvailabilityZoneFilter', 'ComputeFilter',
    'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
    'AggregateImagePropertiesIsolation', 'AggregateInstanceExtraSpecsFilter',
    'AggregateMultiTenancyIsolation', 'AggregateTypeAffinityFilter',
    'IsolatedHostsFilter', 'MetricsFilter', 'RetryFilter',
    'SameHostFilter', 'DifferentHostFilter', 'SimpleCIDRAffinityFilter',
])


class Ledger(object):
    """Placement's free amounts per provider, as simulated claims use them.

    :param summaries: the provider summaries of an allocation-candidates
        answer (capacity already includes the allocation ratio).
    """

    def __init__(self, summaries):
        self.free = {}
        self.roots = {}
        # NOTE: root -> its providers, so that a tree's free amounts cost
        # its own providers, not a walk over the cloud (10000 hosts).
        self.trees = {}
        for rp, summary in summaries.items():
            self.add(rp, summary)

    def add(self, rp, summary):
        """Know provider ``rp`` (kept as it is when already known)."""
        if rp in self.free:
            return
        self.free[rp] = {rc: r['capacity'] - r['used'] for rc, r in
                         summary.get('resources', {}).items()}
        root = self.roots[rp] = summary.get('root_provider_uuid', rp)
        self.trees.setdefault(root, []).append(rp)

    def fits(self, alloc_req):
        """True when every amount of ``alloc_req`` is free."""
        for rp, alloc in alloc_req['allocations'].items():
            free = self.free.get(rp)
            if free is None:
                return False
            for rc, amount in alloc['resources'].items():
                if free.get(rc, 0) < amount:
                    return False
        return True

    def take(self, alloc_req, times=1):
        """Subtract ``alloc_req`` ``times`` times (it fits)."""
        for rp, alloc in alloc_req['allocations'].items():
            free = self.free[rp]
            for rc, amount in alloc['resources'].items():
                free[rc] = free.get(rc, 0) - amount * times

    def short(self, alloc_req):
        """'PCPU (2 free, 4 needed)' for the first class ``alloc_req``
        lacks, or None.
        """
        for rp, alloc in alloc_req['allocations'].items():
            free = self.free.get(rp, {})
            for rc, amount in sorted(alloc['resources'].items()):
                if free.get(rc, 0) < amount:
                    return '%s (%d free, %d needed)' % (
                        rc, free.get(rc, 0), amount)
        return None

    def free_of_root(self, root):
        """{class: free} summed over the providers of tree ``root``."""
        total = {}
        for rp in self.trees.get(root, ()):
            for rc, amount in self.free[rp].items():
                total[rc] = total.get(rc, 0) + amount
        return total

    def max_fit(self, alloc_req):
        """How many more of ``alloc_req`` fit, arithmetically."""
        count = None
        for rp, alloc in alloc_req['allocations'].items():
            free = self.free.get(rp, {})
            for rc, amount in alloc['resources'].items():
                if amount <= 0:
                    continue
                n = max(free.get(rc, 0), 0) // amount
                count = n if count is None else min(count, n)
        return count or 0


@dataclasses.dataclass
class Outcome(object):
    """What filling one host gave.

    :ivar count: instances placed.
    :ivar reason: why one more does not fit.
    """

    count: int = 0
    reason: str = None


class Filler(object):
    """Places instances of one request onto host states, one at a time.

    :param filters: the scheduler's loaded filters.
    :param spec: the RequestSpec (its group's ``hosts`` grow as
        instances are placed, as the pipeline's consume does).
    """

    def __init__(self, filters, spec):
        self.spec = spec
        self.stateful = [f for f in filters
                         if f.name not in STATIC_FILTERS and
                         f.run_filter_for_request(spec)]
        self.numa = topology.load_instance(spec.numa_topology)
        self.pci = list(spec.pci_requests or [])
        # NOTE: nothing but placement's figures can change the answer:
        # the count is arithmetic (the common case, and the fast one).
        self.arithmetic = not (self.stateful or self.numa or self.pci)

    def why_not(self, host):
        """Why one more instance does not fit on ``host``, or None.

        Runs the changing filters, then the NUMA and PCI fit.
        """
        if self.stateful:
            with filters_mod.Rejections() as rejections, \
                    filters_mod.Limits():
                for host_filter in self.stateful:
                    if not host_filter.host_passes(host, self.spec):
                        found = rejections.by_host.get(
                            (host.host, host.nodename))
                        return '%s: %s' % (host_filter.name, found[1]
                                           if found else 'rejected')
        return self.fits(host)

    def fits(self, host):
        """None when NUMA and PCI fit one more on ``host``, else why not
        (the compute claim's checks; the filters ran already).
        """
        if self.numa is not None:
            if numa_fitted(host, self.spec, self.numa) is None:
                return 'NUMA: the instance topology does not fit'
        elif self.pci and not pci_stats.support_requests(host.pci_stats,
                                                         self.pci):
            return 'PCI: no device left for the request'
        return None

    def consume(self, host):
        """Apply one instance to ``host`` (it fits)."""
        fitted = numa_fitted(host, self.spec, self.numa) \
            if self.numa is not None else None
        host.consume_from_request(self.spec)
        # NOTE: steady state: a boot's I/O is over once it is ACTIVE, and
        # the next boot of a one-by-one burst does not see it.
        host.num_io_ops -= 1
        if fitted is not None:
            host.numa_topology = fitted[0]
            cells = fitted[1]
        else:
            cells = None
        if self.pci:
            pci_stats.apply_requests(host.pci_stats, self.pci, cells)
        group = self.spec.instance_group
        if group is not None:
            group.hosts.append(host.host)

    def fill(self, ledger, host, requests, limit=None):
        """Place as many instances as fit on ``host``.

        :param requests: the host's allocation requests, in order.
        :param limit: stop after this many (None: no limit).
        :returns: an :class:`Outcome`.
        """
        if self.arithmetic and len(requests) == 1:
            count = ledger.max_fit(requests[0])
            if limit is not None:
                count = min(count, limit)
            ledger.take(requests[0], count)
            return Outcome(count, self.placement_reason(ledger, requests))
        outcome = Outcome()
        while limit is None or outcome.count < limit:
            reason = self.place_one(ledger, host, requests)
            if reason is not None:
                outcome.reason = reason
                break
            outcome.count += 1
        return outcome

    def place_one(self, ledger, host, requests):
        """Place one instance; None, or why it does not fit."""
        chosen = next((r for r in requests if ledger.fits(r)), None)
        if chosen is None:
            return self.placement_reason(ledger, requests)
        reason = self.why_not(host)
        if reason is not None:
            return reason
        ledger.take(chosen)
        self.consume(host)
        return None

    @staticmethod
    def placement_reason(ledger, requests):
        short = ledger.short(requests[0]) if requests else None
        return 'placement: no %s' % short if short else \
            'placement: no allocation candidate left'


def numa_fitted(host, spec, requested):
    """(new host topology primitive, cells used) with one instance of
    ``spec`` on ``host``, or None when it does not fit (the compute
    claim's check; :mod:`services.scheduler.numa_consume`).
    """
    host_topology = topology.load_host(host.numa_topology)
    if host_topology is None:
        return None
    fitted = fit.fit_instance_to_host(
        host_topology, requested,
        numa_topology_filter.host_limits(host),
        pci_requests=spec.pci_requests, pci_stats=host.pci_stats)
    if fitted is None:
        return None
    cells = [cell.id for cell in getattr(fitted, 'cells', [])]
    return fit.apply_usage(host_topology, fitted).to_primitive(), cells
