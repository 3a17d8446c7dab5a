# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""PCIWeigher: keep hosts with PCI devices for the requests that need them."""

from common.conf import CONF
from services.scheduler import weighers


def free_pci_devices(host_state):
    """The number of free devices over all of the host's PCI pools."""
    return sum(int(pool.get('count', 0) or 0)
               for pool in host_state.pci_stats or [])


class PCIWeigher(weighers.BaseHostWeigher):
    """Weigh hosts by their free PCI devices, in the request's direction.

    For a request with ``pci_requests``, hosts with more free devices
    weigh more. For any other request the sign flips: hosts without PCI
    devices weigh most and those with many weigh least, so that scarce
    (and costly) passthrough hosts stay free for the instances that need
    them. ``pci_weight_multiplier`` (default 1.0) should be positive: a
    negative value would send plain instances to the PCI hosts first.
    """

    def weight_multiplier(self, host_state):
        """``pci_weight_multiplier``, or the host's aggregate override."""
        return weighers.aggregate_multiplier(
            host_state, 'pci_weight_multiplier',
            CONF.filter_scheduler.pci_weight_multiplier)

    def weigh_objects(self, weighed_hosts, spec_obj):
        """Signed free devices of every host (no call for hosts without)."""
        sign = 1 if spec_obj.pci_requests else -1
        return [sign * free_pci_devices(w.obj) if w.obj.pci_stats else 0
                for w in weighed_hosts]

    def _weigh_object(self, host_state, spec_obj):
        """Free PCI devices, negated when the request asks for none."""
        free = free_pci_devices(host_state)
        if spec_obj.pci_requests:
            # NOTE: PciPassthroughFilter already removed the hosts that
            # cannot satisfy the request; among the rest, more free devices
            # leave room for the next PCI instance too.
            return free
        return -free
