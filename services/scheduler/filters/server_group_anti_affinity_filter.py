# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ServerGroupAntiAffinityFilter: spread an anti-affinity group's members."""

import logging

from common.objects import instance_group
from services.scheduler import filters

LOG = logging.getLogger(__name__)


class ServerGroupAntiAffinityFilter(filters.BaseHostFilter):
    """For an ``anti-affinity`` group, fail hosts that hold enough members.

    A host may hold up to the group rule ``max_server_per_host`` members
    (1 unless the rule says more). With more members than hosts, the extra
    members get NoValidHost (doc/behaviours.md A5, B14);
    ``soft-anti-affinity`` and its weigher are the alternative, so soft
    policies never reject here.
    """

    RUN_ON_REBUILD = False

    def run_filter_for_request(self, spec_obj):
        """Only a request in an anti-affinity group can lose hosts here."""
        group = spec_obj.instance_group
        return (group is not None and
                group.policy == instance_group.ANTI_AFFINITY)

    def host_passes(self, host_state, spec_obj):
        """True unless the host is full of the request's group members."""
        group = spec_obj.instance_group
        if group is None or group.policy != instance_group.ANTI_AFFINITY:
            return True

        # NOTE: a move (resize, migrate) of a member that runs on this host
        # must be able to keep its source host when allowed.
        if spec_obj.instance_uuid in host_state.instances:
            return True

        # NOTE: ``hosts`` has one entry per placed member, so a host repeats
        # once for every member on it.
        members_here = group.hosts.count(host_state.host)
        max_per_host = group.max_server_per_host
        LOG.debug('Group anti affinity: check if %(host)s holds fewer than '
                  '%(max)d of the members on %(configured)s',
                  {'host': host_state.host, 'max': max_per_host,
                   'configured': group.hosts})
        if members_here >= max_per_host:
            return self.reject(
                host_state,
                'already runs %d member(s) of the anti-affinity group, '
                'max_server_per_host is %d', members_here, max_per_host)
        return True
