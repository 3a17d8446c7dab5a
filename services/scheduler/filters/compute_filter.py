# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ComputeFilter: only hosts whose compute service is enabled and up."""

from services.scheduler import filters


class ComputeFilter(filters.BaseHostFilter):
    """Pass hosts whose compute service is enabled, not forced down, and up.

    ``host_state.service`` carries the service record (``disabled``,
    ``disabled_reason``, ``forced_down``) and ``up``, the heartbeat verdict
    (last report within ``service_down_time``). Always enable this filter:
    placement knows nothing of heartbeats, so without it a dead compute
    keeps receiving builds that then fail and reschedule.
    """

    # NOTE: service state is read once per request; a service going down
    # mid-request is caught by the claim or the build, not here.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        """True for an enabled compute service that is up."""
        service = host_state.service or {}
        if not service:
            # NOTE: a compute node without a service record cannot be
            # reached over RPC; Nova skips such nodes too.
            return self.reject(host_state, 'has no compute service record')
        if service.get('disabled'):
            return self.reject(
                host_state, 'compute service is disabled: %s',
                service.get('disabled_reason') or 'no reason given')
        if service.get('forced_down'):
            return self.reject(host_state, 'compute service is forced down')
        if not service.get('up'):
            return self.reject(
                host_state, 'compute service has not been heard from in a '
                'while (down)')
        return True
