# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ServerGroupAffinityFilter: keep an affinity group on one host."""

import logging

from common.objects import instance_group
from services.scheduler import filters

LOG = logging.getLogger(__name__)


class ServerGroupAffinityFilter(filters.BaseHostFilter):
    """For an ``affinity`` group, pass only the hosts it already uses.

    The group's first member may go anywhere; every later one must join a
    host in ``instance_group.hosts``, so a full host means NoValidHost for
    the next member (doc/behaviours.md A6). ``soft-affinity`` is a
    weigher's business (ServerGroupSoftAffinityWeigher), never a reason to
    reject.
    """

    RUN_ON_REBUILD = False

    def run_filter_for_request(self, spec_obj):
        """Only a request in an affinity group can lose hosts here."""
        group = spec_obj.instance_group
        return group is not None and group.policy == instance_group.AFFINITY

    def host_passes(self, host_state, spec_obj):
        """True unless the request's affinity group lives elsewhere."""
        group = spec_obj.instance_group
        if group is None or group.policy != instance_group.AFFINITY:
            return True

        group_hosts = set(group.hosts)
        LOG.debug('Group affinity: check if %(host)s in %(configured)s',
                  {'host': host_state.host, 'configured': sorted(group_hosts)})
        # NOTE: no hosts yet means no member placed yet; the first one
        # chooses the host for the whole group.
        if group_hosts and host_state.host not in group_hosts:
            return self.reject(
                host_state, "is not among the affinity group's hosts %s",
                ', '.join(sorted(group_hosts)))
        return True
