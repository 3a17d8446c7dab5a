# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateDiskFilter: DiskFilter with per-aggregate disk ratios."""

from services.scheduler import aggregate_values
from services.scheduler.filters import disk_filter


class AggregateDiskFilter(disk_filter.DiskFilter):
    """DiskFilter reading ``disk_allocation_ratio`` from aggregate metadata.

    Several aggregate values: the minimum wins. None, or an undecodable
    one: the host's own ``disk_allocation_ratio``.
    """

    def _get_disk_allocation_ratio(self, host_state, spec_obj):
        """The smallest aggregate ratio, else the host's own."""
        return aggregate_values.aggregate_value(
            host_state, 'disk_allocation_ratio',
            host_state.disk_allocation_ratio, cast_to=float)
