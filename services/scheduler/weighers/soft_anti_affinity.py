# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ServerGroupSoftAntiAffinityWeigher: prefer hosts without group members."""

from common.conf import CONF
from common.objects import instance_group
from services.scheduler import weighers
from services.scheduler.weighers import soft_affinity


class ServerGroupSoftAntiAffinityWeigher(weighers.BaseHostWeigher):
    """Weigh hosts down by the members of a soft-anti-affinity group.

    Soft anti-affinity never rejects a host: when every host already runs a
    member (more members than hosts), the instance still lands on the host
    running the fewest. ``soft_anti_affinity_weight_multiplier`` (default
    1.0) sets how strongly.
    """

    def weight_multiplier(self, host_state):
        """``soft_anti_affinity_weight_multiplier`` or the override."""
        return weighers.aggregate_multiplier(
            host_state, 'soft_anti_affinity_weight_multiplier',
            CONF.filter_scheduler.soft_anti_affinity_weight_multiplier)

    def weigh_objects(self, weighed_hosts, spec_obj):
        """Raw weights; all 0 at once outside a soft-anti-affinity group."""
        if not soft_affinity.in_group(spec_obj,
                                      instance_group.SOFT_ANTI_AFFINITY):
            return [0] * len(weighed_hosts)
        return super().weigh_objects(weighed_hosts, spec_obj)

    def _weigh_object(self, host_state, spec_obj):
        """Minus the members of the soft-anti-affinity group on the host."""
        # NOTE: negated so that a positive multiplier means "spread", the
        # same sign convention as the soft-affinity weigher's "gather".
        return -soft_affinity.group_members_on_host(
            host_state, spec_obj, instance_group.SOFT_ANTI_AFFINITY)
