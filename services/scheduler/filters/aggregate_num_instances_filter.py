# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateNumInstancesFilter: per-aggregate instance caps."""

from common.conf import CONF
from services.scheduler import aggregate_values
from services.scheduler.filters import num_instances_filter


class AggregateNumInstancesFilter(num_instances_filter.NumInstancesFilter):
    """NumInstancesFilter reading ``max_instances_per_host`` from aggregates.

    Several aggregate values: the minimum wins. None, or an undecodable
    one: ``[filter_scheduler] max_instances_per_host``.
    """

    def _get_max_instances_per_host(self, host_state, spec_obj):
        """The smallest aggregate cap, else the configured one."""
        return aggregate_values.aggregate_value(
            host_state, 'max_instances_per_host',
            CONF.filter_scheduler.max_instances_per_host, cast_to=int)
