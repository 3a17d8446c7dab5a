# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateIoOpsFilter: per-aggregate caps on concurrent I/O operations."""

from common.conf import CONF
from services.scheduler import aggregate_values
from services.scheduler.filters import io_ops_filter


class AggregateIoOpsFilter(io_ops_filter.IoOpsFilter):
    """IoOpsFilter reading ``max_io_ops_per_host`` from aggregate metadata.

    Several aggregate values: the minimum wins. None, or an undecodable
    one: ``[filter_scheduler] max_io_ops_per_host``.
    """

    def _get_max_io_ops_per_host(self, host_state, spec_obj):
        """The smallest aggregate cap, else the configured one."""
        return aggregate_values.aggregate_value(
            host_state, 'max_io_ops_per_host',
            CONF.filter_scheduler.max_io_ops_per_host, cast_to=int)
