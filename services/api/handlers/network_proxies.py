# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The network proxy APIs below 2.36, answered without a network service.

Nova proxied os-security-groups, os-networks, os-tenant-networks and
os-floating-ips to Neutron before 2.36 and removed them from 2.36 (404).
Berth has no network service: below 2.36 the reads answer what a
deployment without networking has (each project's implicit ``default``
security group with no rules, no networks, no floating IPs) and every
write is refused with a 400 that says why; nothing is recorded.
"""

import uuid

from services.api import errors
from services.api.handlers import servers as server_handlers
from services.api import policies
from services.api import util

REMOVED_VERSION = (2, 36)
_NAMESPACE = uuid.UUID('5d1b9a3e-8a4f-4f0e-9c57-3f0c1d2b6e11')
NO_NETWORK = ('Berth has no network service: security groups, networks '
              'and floating IPs cannot be created or changed.')


def _before_2_36(req):
    if util.at_least(req, REMOVED_VERSION):
        raise errors.NotFound('The resource could not be found.')


def default_group(project_id):
    """The implicit ``default`` security group of ``project_id``."""
    return {'id': str(uuid.uuid5(_NAMESPACE, project_id or '')),
            'name': 'default', 'description': 'Default security group',
            'tenant_id': project_id, 'rules': []}


def list_security_groups(req):
    """GET /os-security-groups: the caller's ``default`` group."""
    _before_2_36(req)
    policies.authorize(req, 'os_compute_api:os-security-groups:get')
    return util.json_response({'security_groups': [
        default_group(util.context(req).project_id)]})


def show_security_group(req):
    """GET /os-security-groups/{group_id}."""
    _before_2_36(req)
    policies.authorize(req, 'os_compute_api:os-security-groups:show')
    group = default_group(util.context(req).project_id)
    if req.urlvars['security_group_id'] != group['id']:
        raise errors.NotFound('Security group %s not found.'
                              % req.urlvars['security_group_id'])
    return util.json_response({'security_group': group})


def _refusal(rule):
    def refuse(req):
        """A write to a network proxy: 404 from 2.36, else a 400 (after
        the policy check, so that a caller denied the write learns no
        more).
        """
        _before_2_36(req)
        policies.authorize(req, rule)
        raise errors.BadRequest(NO_NETWORK)
    return refuse


refuse_security_groups = _refusal('os_compute_api:os-security-groups:create')
refuse_networks = _refusal('os_compute_api:os-networks:manage')
refuse_tenant_networks = _refusal('os_compute_api:os-tenant-networks:create')
refuse_floating_ips = _refusal('os_compute_api:os-floating-ips:create')


def list_server_security_groups(req):
    """GET /servers/{server_id}/os-security-groups: ``default``."""
    _before_2_36(req)
    instance, _cell = server_handlers.find_authorized(
        req, 'os_compute_api:os-security-groups:list')
    return util.json_response({'security_groups': [
        default_group(instance.project_id)]})


def list_networks(req):
    """GET /os-networks: none."""
    _before_2_36(req)
    policies.authorize(req, 'os_compute_api:os-networks:list')
    return util.json_response({'networks': []})


def list_tenant_networks(req):
    """GET /os-tenant-networks: none."""
    _before_2_36(req)
    policies.authorize(req, 'os_compute_api:os-tenant-networks:list')
    return util.json_response({'networks': []})


def list_floating_ips(req):
    """GET /os-floating-ips: none."""
    _before_2_36(req)
    policies.authorize(req, 'os_compute_api:os-floating-ips:list')
    return util.json_response({'floating_ips': []})
