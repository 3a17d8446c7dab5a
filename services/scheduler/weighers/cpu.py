# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""CPUWeigher: prefer hosts with more free (overcommitted) vCPUs."""

from common.conf import CONF
from services.scheduler import weighers


class CPUWeigher(weighers.BaseHostWeigher):
    """Weigh hosts by their free vCPUs after the allocation ratio.

    Free vCPUs are ``vcpus_total * cpu_allocation_ratio - vcpus_used``. A
    positive ``cpu_weight_multiplier`` (the default, 1.0) spreads; a
    negative one stacks.
    """

    # NOTE: normalised from 0, like the RAM weigher: the score stays
    # proportional to the free vCPUs rather than to the spread among the
    # candidates.
    minval = 0

    def weight_multiplier(self, host_state):
        """``cpu_weight_multiplier``, or the host's aggregate override."""
        return weighers.aggregate_multiplier(
            host_state, 'cpu_weight_multiplier',
            CONF.filter_scheduler.cpu_weight_multiplier)

    def weigh_objects(self, weighed_hosts, spec_obj):
        """Free vCPUs of every host (no call per host)."""
        return [w.obj.vcpus_total * w.obj.cpu_allocation_ratio -
                w.obj.vcpus_used for w in weighed_hosts]

    def _weigh_object(self, host_state, spec_obj):
        """Free vCPUs, counting the overcommit the ratio allows."""
        # NOTE: the host state carries the ratio already resolved (config,
        # compute report or aggregate), so it is used as is here.
        total = host_state.vcpus_total * host_state.cpu_allocation_ratio
        return total - host_state.vcpus_used
