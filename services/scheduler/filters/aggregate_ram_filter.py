# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateRamFilter: RamFilter with per-aggregate RAM ratios."""

from services.scheduler import aggregate_values
from services.scheduler.filters import ram_filter


class AggregateRamFilter(ram_filter.RamFilter):
    """RamFilter reading ``ram_allocation_ratio`` from aggregate metadata.

    Several aggregate values: the minimum wins. None, or an undecodable
    one: the host's own ``ram_allocation_ratio``.
    """

    def _get_ram_allocation_ratio(self, host_state, spec_obj):
        """The smallest aggregate ratio, else the host's own."""
        return aggregate_values.aggregate_value(
            host_state, 'ram_allocation_ratio',
            host_state.ram_allocation_ratio, cast_to=float)
