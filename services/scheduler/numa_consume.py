# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Apply a selected instance's NUMA usage to the scheduler's host state.

Passed as ``numa_fit`` to :meth:`HostState.consume_from_request` so that
the next instance of the same request (and later requests, until the
compute reports) sees the pinned CPUs, memory and pages as taken.
"""

import logging

from common.numa import fit
from common.numa import topology
from services.scheduler.filters import numa_topology_filter

LOG = logging.getLogger(__name__)


def numa_fit(host_state, spec):
    """The host's NUMA topology primitive with one instance of ``spec`` on it.

    The fit is re-run with the host's current usage (it may have changed
    since filtering, e.g. by an earlier instance of the same request), as
    the compute claim will do.

    :param host_state: the selected HostState (its lock is held).
    :param spec: the RequestSpec being placed.
    :returns: the new host topology primitive, or None when the request
        has no NUMA topology or no longer fits (the host state is then
        left as it is; the compute claim has the final word).
    """
    requested = topology.load_instance(spec.numa_topology)
    host = topology.load_host(host_state.numa_topology)
    if requested is None or host is None:
        return None
    fitted = fit.fit_instance_to_host(
        host, requested, numa_topology_filter.host_limits(host_state),
        pci_requests=spec.pci_requests, pci_stats=host_state.pci_stats)
    if fitted is None:
        LOG.warning('Instance %s no longer fits the NUMA topology of '
                    '(%s, %s); its usage is not applied to the host state',
                    spec.instance_uuid, host_state.host, host_state.nodename)
        return None
    return fit.apply_usage(host, fitted).to_primitive()
