# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ServerGroupSoftAffinityWeigher: prefer hosts already running the group."""

from common.conf import CONF
from common.objects import instance_group
from services.scheduler import weighers


def group_members_on_host(host_state, spec_obj, policy):
    """How many members of the request's ``policy`` group run on the host.

    0 when the request has no server group or its group has another policy.
    Shared by the soft-affinity and soft-anti-affinity weighers.
    """
    group = spec_obj.instance_group
    if group is None or group.policy != policy:
        return 0
    # NOTE: ``hosts`` holds one entry per member, so a host repeats once
    # for each member it runs; the scheduler appends each host it picks for
    # a multi-create, so later instances of one request see earlier ones.
    return sum(1 for host in group.hosts if host == host_state.host)


def in_group(spec_obj, policy):
    """True when the request belongs to a ``policy`` server group."""
    group = spec_obj.instance_group
    return group is not None and group.policy == policy


class ServerGroupSoftAffinityWeigher(weighers.BaseHostWeigher):
    """Weigh hosts by the members of a soft-affinity group they run.

    Soft affinity never rejects a host: it only prefers the hosts that
    already run members of the group. ``soft_affinity_weight_multiplier``
    (default 1.0) sets how strongly.
    """

    def weight_multiplier(self, host_state):
        """``soft_affinity_weight_multiplier`` or the aggregate override."""
        return weighers.aggregate_multiplier(
            host_state, 'soft_affinity_weight_multiplier',
            CONF.filter_scheduler.soft_affinity_weight_multiplier)

    def weigh_objects(self, weighed_hosts, spec_obj):
        """Raw weights; all 0 at once outside a soft-affinity group."""
        if not in_group(spec_obj, instance_group.SOFT_AFFINITY):
            return [0] * len(weighed_hosts)
        return super().weigh_objects(weighed_hosts, spec_obj)

    def _weigh_object(self, host_state, spec_obj):
        """Members of the request's soft-affinity group on the host."""
        return group_members_on_host(host_state, spec_obj,
                                     instance_group.SOFT_AFFINITY)
