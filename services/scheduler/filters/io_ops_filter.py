# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""IoOpsFilter: keep new builds off hosts busy with I/O-heavy work."""

from common.conf import CONF
from services.scheduler import filters


class IoOpsFilter(filters.BaseHostFilter):
    """Fail hosts with ``max_io_ops_per_host`` or more I/O operations.

    ``num_io_ops`` counts instances being built, resized, snapshotted...
    on the host (and each selection adds one), so it is checked for every
    instance of a multi-create.
    """

    RUN_ON_REBUILD = False

    def _get_max_io_ops_per_host(self, host_state, spec_obj):
        """The I/O operation cap in force for ``host_state``."""
        return CONF.filter_scheduler.max_io_ops_per_host

    def host_passes(self, host_state, spec_obj):
        """True while the host has fewer I/O operations than the cap."""
        max_io_ops = self._get_max_io_ops_per_host(host_state, spec_obj)
        # NOTE: a new build is itself one more I/O operation, so a host
        # already at the cap is full.
        if host_state.num_io_ops >= max_io_ops:
            return self.reject(
                host_state,
                'has %d I/O operations; max I/O ops per host is set to %d',
                host_state.num_io_ops, max_io_ops)
        return True
