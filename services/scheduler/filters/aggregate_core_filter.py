# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateCoreFilter: CoreFilter with per-aggregate CPU ratios."""

from services.scheduler import aggregate_values
from services.scheduler.filters import core_filter


class AggregateCoreFilter(core_filter.CoreFilter):
    """CoreFilter reading ``cpu_allocation_ratio`` from aggregate metadata.

    When several aggregates of a host set the ratio the minimum wins
    (doc/behaviours.md A22: 4.0 and 2.0 give 2.0); a host in no such
    aggregate, or with an undecodable value, keeps its own
    ``cpu_allocation_ratio``.
    """

    def _get_cpu_allocation_ratio(self, host_state, spec_obj):
        """The smallest aggregate ratio, else the host's own."""
        return aggregate_values.aggregate_value(
            host_state, 'cpu_allocation_ratio',
            host_state.cpu_allocation_ratio, cast_to=float)
