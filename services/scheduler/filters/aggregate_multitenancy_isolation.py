# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateMultiTenancyIsolation: tenant-isolated host aggregates."""

from services.scheduler import filters

KEY_PREFIX = 'filter_tenant_id'


class AggregateMultiTenancyIsolation(filters.BaseHostFilter):
    """Pass only the listed projects onto hosts of tenant-isolated aggregates.

    An aggregate whose metadata has ``filter_tenant_id`` (a project id or a
    comma-separated list) or any key starting with it (``filter_tenant_id2``,
    ``filter_tenant_id_b``, for more projects than one value holds) admits
    only those projects to its hosts. A host in no such aggregate takes
    every project. The listed projects may still use other hosts: see
    ``[scheduler] limit_tenants_to_placement_aggregate`` for the converse.
    """

    # NOTE: the project and the host's aggregates do not change within a
    # request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        """True when the host is not isolated or isolated for the project."""
        allowed = set()
        for key, values in host_state.aggregate_metadata(split=True).items():
            if key.startswith(KEY_PREFIX):
                allowed.update(value for value in values if value)
        if not allowed or spec_obj.project_id in allowed:
            return True
        return self.reject(
            host_state, 'project %s is not among the projects its '
            'aggregates are isolated to (%s)', spec_obj.project_id,
            ', '.join(sorted(allowed)))
