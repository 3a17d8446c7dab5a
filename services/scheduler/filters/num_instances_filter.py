# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""NumInstancesFilter: cap the number of instances on a host."""

from common.conf import CONF
from services.scheduler import filters


class NumInstancesFilter(filters.BaseHostFilter):
    """Fail hosts that already run ``max_instances_per_host`` instances.

    Runs for every instance of a multi-create: each selection raises the
    host's ``num_instances``.
    """

    RUN_ON_REBUILD = False

    def _get_max_instances_per_host(self, host_state, spec_obj):
        """The instance cap in force for ``host_state``."""
        return CONF.filter_scheduler.max_instances_per_host

    def host_passes(self, host_state, spec_obj):
        """True while the host runs fewer instances than the cap."""
        max_instances = self._get_max_instances_per_host(host_state,
                                                         spec_obj)
        # NOTE: the cap is the most a host may hold, so a host already at
        # the cap cannot take one more.
        if host_state.num_instances >= max_instances:
            return self.reject(
                host_state,
                'has %d instances; max instances per host is set to %d',
                host_state.num_instances, max_instances)
        return True
