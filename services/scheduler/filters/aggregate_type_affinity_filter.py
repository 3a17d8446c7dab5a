# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateTypeAffinityFilter: aggregates reserved for some flavors."""

from services.scheduler import filters

KEY = 'instance_type'


class AggregateTypeAffinityFilter(filters.BaseHostFilter):
    """Pass only the listed flavors onto hosts of flavor-bound aggregates.

    An aggregate whose metadata has ``instance_type`` (a flavor name or a
    comma-separated list of names) takes only those flavors on its hosts.
    A host in several such aggregates takes the flavors any of them lists;
    a host in none takes every flavor. Other flavors' hosts are not
    reserved by this: see ``AggregateInstanceExtraSpecsFilter`` for that.
    """

    # NOTE: the flavor and the host's aggregates do not change within a
    # request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        """True when the host is not flavor-bound or bound to the flavor."""
        allowed = host_state.aggregate_metadata(KEY, split=True).get(KEY)
        if not allowed:
            return True
        allowed.discard('')
        name = spec_obj.flavor.name
        if name in allowed:
            return True
        return self.reject(
            host_state, 'flavor %s is not among the flavors its aggregates '
            'take (instance_type %s)', name, ', '.join(sorted(allowed)))
