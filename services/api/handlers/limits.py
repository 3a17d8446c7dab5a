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
    if not util.at_least(req, (2, 57)):
        # NOTE: retired limits Nova still shows before 2.57, as defaults.
        absolute.update(maxPersonality=5, maxPersonalitySize=10240)
    return util.json_response({'limits': {'rate': [],
                                          'absolute': absolute}})
