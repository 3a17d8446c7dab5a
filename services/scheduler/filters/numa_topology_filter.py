# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""NUMATopologyFilter: NUMA nodes, CPU pinning and huge pages must fit."""

import logging

from common.numa import fit
from common.numa import topology
from services.scheduler import filters

LOG = logging.getLogger(__name__)


def host_limits(host_state):
    """The NUMA overcommit limits of ``host_state`` (its ratios)."""
    return topology.Limits(
        cpu_allocation_ratio=host_state.cpu_allocation_ratio,
        ram_allocation_ratio=host_state.ram_allocation_ratio)


class NUMATopologyFilter(filters.BaseHostFilter):
    """Pass hosts on which the requested guest NUMA topology fits.

    A request without ``numa_topology`` passes everywhere; one with it
    needs a host that reports a topology and has, on some ordering of its
    cells, room for every guest node: CPUs (pinned per the thread policy,
    or floating within ``cpu_allocation_ratio``), memory and pages. The
    limits used are recorded as the request's ``numa_topology`` limit for
    the host (:meth:`set_limit`), for the compute claim.
    """

    # NOTE: a rebuild with a new image can change the image's NUMA and
    # page-size properties, so the host must be checked again.
    RUN_ON_REBUILD = True

    def _satisfies_cpu_policy(self, host, requested):
        """False when 'require' is asked of a host without SMT."""
        if topology.REQUIRE not in requested.thread_policies:
            return True
        return host.has_threads

    def host_passes(self, host_state, spec_obj):
        """True when the requested NUMA topology fits on the host."""
        requested = topology.load_instance(spec_obj.numa_topology)
        if requested is None:
            return True
        host = topology.load_host(host_state.numa_topology)
        if host is None:
            return self.reject(
                host_state, '%s, %s fails NUMA topology requirements. No '
                'host NUMA topology while the instance specified one.',
                host_state.host, host_state.nodename)
        if not self._satisfies_cpu_policy(host, requested):
            return self.reject(
                host_state, '%s, %s fails CPU policy requirements. Host '
                "does not support requested 'require' cpu thread policy: it "
                'does not have hyperthreading or hyperthreading is disabled.',
                host_state.host, host_state.nodename)
        limits = host_limits(host_state)
        # NOTE: the fit works on copies; the spec's primitive is shared by
        # every host and every instance of the request.
        fitted = fit.fit_instance_to_host(
            host, requested, limits,
            pci_requests=spec_obj.pci_requests,
            pci_stats=host_state.pci_stats)
        if fitted is None:
            return self.reject(
                host_state, '%s, %s fails NUMA topology requirements. The '
                'instance does not fit on this host.',
                host_state.host, host_state.nodename)
        self.set_limit(host_state, 'numa_topology', limits.to_primitive())
        return True
