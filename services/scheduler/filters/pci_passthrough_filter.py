# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""PciPassthroughFilter: pass hosts that have the requested PCI devices."""

from common.pci import stats as pci_stats
from services.scheduler import filters


def describe_requests(requests):
    """A short, readable summary of PCI requests for a rejection reason."""
    parts = []
    for request in requests:
        what = request.get('alias_name') or request.get('spec')
        parts.append('%s x %s' % (request.get('count', 1), what))
    return ', '.join(parts)


class PciPassthroughFilter(filters.BaseHostFilter):
    """Fail hosts whose PCI pools cannot serve the request's PCI requests.

    Only device counts and attributes are checked here; NUMA locality of
    the devices is the NUMATopologyFilter's part, since it alone knows
    which host cells the instance would use.
    """

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        """True when the request has no PCI requests or the host fits them."""
        requests = spec_obj.pci_requests
        if not requests:
            return True
        # NOTE: pools shrink with every selection of a multi-create, so
        # this runs for each instance rather than once per request.
        if not pci_stats.support_requests(host_state.pci_stats, requests):
            return self.reject(
                host_state, "doesn't have the required PCI devices (%s)",
                describe_requests(requests))
        return True
