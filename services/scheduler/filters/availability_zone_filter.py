# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AvailabilityZoneFilter: keep a request inside its availability zone."""

import common.conf
from services.scheduler import filters

CONF = common.conf.CONF

AZ_KEY = 'availability_zone'


class AvailabilityZoneFilter(filters.BaseHostFilter):
    """Pass hosts in the availability zone the request names.

    A host's zones are the ``availability_zone`` metadata values of its
    aggregates; a host in no zone aggregate is in
    ``[DEFAULT] default_availability_zone`` ('nova'). A request naming no
    zone passes everywhere.

    With ``[scheduler] query_placement_for_availability_zone`` (the
    default) placement already narrows the candidates to the zone, and
    this filter is a cheap double check.
    """

    # NOTE: zones and aggregates do not change within a request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        """True when the host is in the requested zone (or none is asked)."""
        zone = spec_obj.availability_zone
        if not zone:
            return True
        # NOTE: a host could in theory sit in two zone aggregates; it then
        # serves either zone. Values are comma-split as everywhere else.
        host_zones = host_state.aggregate_metadata(
            AZ_KEY, split=True).get(AZ_KEY)
        if host_zones:
            if zone in host_zones:
                return True
            return self.reject(
                host_state, "availability zone '%s' requested, host has "
                "AZs: %s", zone, ', '.join(sorted(host_zones)))
        default_zone = CONF.default_availability_zone
        if zone == default_zone:
            return True
        return self.reject(
            host_state, "availability zone '%s' requested, host is in no "
            "zone aggregate (default zone '%s')", zone, default_zone)
