# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handler for /limits: the caller's absolute limits and usage."""

from services.api import policies
from services.api import quota
from services.api import util

# Nova's names for each quota resource, and for its usage.
_MAX = {'instances': 'maxTotalInstances', 'cores': 'maxTotalCores',
        'ram': 'maxTotalRAMSize', 'metadata_items': 'maxServerMeta',
        'key_pairs': 'maxTotalKeypairs', 'server_groups': 'maxServerGroups',
        'server_group_members': 'maxServerGroupMembers'}
_USED = {'instances': 'totalInstancesUsed', 'cores': 'totalCoresUsed',
         'ram': 'totalRAMUsed', 'server_groups': 'totalServerGroupsUsed'}

# NOTE: the nova-network proxies Nova still shows before 2.36. Without a
# network service Nova reports its default limits and nothing used.
_BEFORE_2_36 = {'maxSecurityGroups': 10, 'maxSecurityGroupRules': 20,
                'maxTotalFloatingIps': 10, 'totalFloatingIpsUsed': 0,
                'totalSecurityGroupsUsed': 0}


def _legacy(req, project_limits):
    """The retired limits the request's microversion still shows."""
    legacy = {}
    if not util.at_least(req, (2, 57)):
        # NOTE: file injection, retired at 2.57, as Nova's defaults.
        legacy.update(maxPersonality=5, maxPersonalitySize=10240)
    if not util.at_least(req, (2, 39)):
        # NOTE: the image metadata limit (the glance proxy's) is the
        # metadata_items quota, shown until 2.39.
        legacy['maxImageMeta'] = project_limits['metadata_items']
    if not util.at_least(req, (2, 36)):
        legacy.update(_BEFORE_2_36)
    return legacy


def show_limits(req):
    """GET /limits: ``tenant_id`` (admins) names another project."""
    policies.authorize(req, 'os_compute_api:limits')
    ctx = util.context(req)
    project_id = ctx.project_id
    other = req.GET.get('tenant_id')
    if other and other != project_id:
        policies.authorize(req, 'os_compute_api:limits:other_project',
                           {'project_id': other})
        project_id = other
    project_limits = quota.limits(ctx, util.conf(req), project_id)
    used = quota.usage(ctx, project_id)
    absolute = {_MAX[name]: limit for name, limit in project_limits.items()}
    absolute.update({key: used[name] for name, key in _USED.items()})
    absolute.update(_legacy(req, project_limits))
    return util.json_response({'limits': {'rate': [],
                                          'absolute': absolute}})
