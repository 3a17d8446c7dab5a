# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""HypervisorVersionWeigher: prefer hosts with a newer hypervisor."""

from common.conf import CONF
from services.scheduler import weighers


class HypervisorVersionWeigher(weighers.BaseHostWeigher):
    """Weigh hosts by their hypervisor version (an integer, e.g. 8002000).

    A positive ``hypervisor_version_weight_multiplier`` (the default, 1.0)
    prefers newer hypervisors, a negative one older ones.
    """

    def weight_multiplier(self, host_state):
        """``hypervisor_version_weight_multiplier`` or the override."""
        return weighers.aggregate_multiplier(
            host_state, 'hypervisor_version_weight_multiplier',
            CONF.filter_scheduler.hypervisor_version_weight_multiplier)

    def weigh_objects(self, weighed_hosts, spec_obj):
        """Hypervisor versions of every host (no call per host)."""
        return [w.obj.hypervisor_version or 0 for w in weighed_hosts]

    def _weigh_object(self, host_state, spec_obj):
        """The hypervisor version; 0 for a host that reports none."""
        # NOTE: a host that does not report its version ranks as the oldest
        # rather than breaking the weighing of every other host.
        return host_state.hypervisor_version or 0
