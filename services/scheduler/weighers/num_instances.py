# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""NumInstancesWeigher: weigh hosts by how many instances they run."""

from common.conf import CONF
from services.scheduler import weighers


class NumInstancesWeigher(weighers.BaseHostWeigher):
    """Weigh hosts by their number of instances.

    The default ``num_instances_weight_multiplier`` is 0.0 (off). A
    positive value packs instances onto the busiest hosts, a negative one
    spreads them over the hosts running the fewest.
    """

    def weight_multiplier(self, host_state):
        """``num_instances_weight_multiplier`` or the aggregate override."""
        return weighers.aggregate_multiplier(
            host_state, 'num_instances_weight_multiplier',
            CONF.filter_scheduler.num_instances_weight_multiplier)

    def weigh_objects(self, weighed_hosts, spec_obj):
        """Instances on every host (no call per host)."""
        return [w.obj.num_instances for w in weighed_hosts]

    def _weigh_object(self, host_state, spec_obj):
        """The number of instances on the host."""
        return host_state.num_instances
