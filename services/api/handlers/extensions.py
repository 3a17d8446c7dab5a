# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /extensions: the v2.1 extension descriptors.

Nova's v2.1 answers a fixed list of descriptors for old clients that
still probe for an extension before using it. Berth lists the ones of
the resources it serves, so that a probe finds exactly what works.
"""

from services.api import errors
from services.api import policies
from services.api import util

_UPDATED = '2014-12-03T00:00:00Z'
# alias -> (name, description)
EXTENSIONS = {
    'os-aggregates': ('Aggregates', 'Admin-only aggregate administration.'),
    'os-availability-zone': ('AvailabilityZone',
                             '1. Add availability_zone to the Create Server '
                             'API. 2. Add availability zones describing.'),
    'os-extended-server-attributes': ('ExtendedServerAttributes',
                                      'Extended Server Attributes support.'),
    'os-flavor-access': ('FlavorAccess', 'Flavor access support.'),
    'os-flavor-extra-specs': ('FlavorExtraSpecs',
                              'Flavors extra specs support.'),
    'os-flavor-manage': ('FlavorManage', 'Flavor create/delete API support.'),
    'flavors': ('Flavors', 'Flavors Extension.'),
    'os-hosts': ('Hosts', 'Admin-only host administration.'),
    'os-hypervisors': ('Hypervisors', 'Admin-only hypervisor '
                                      'administration.'),
    'images': ('Images', 'Images.'),
    'image-metadata': ('ImageMetadata', 'Image Metadata.'),
    'os-instance-actions': ('InstanceActions', 'View a log of actions and '
                                               'events taken on an '
                                               'instance.'),
    'os-instance-usage-audit-log': ('OSInstanceUsageAuditLog',
                                    'Admin-only Task Log Monitoring.'),
    'ips': ('Ips', 'Server addresses.'),
    'limits': ('Limits', 'Limits support.'),
    'os-quota-class-sets': ('QuotaClasses',
                            'Quota classes management support.'),
    'os-quota-sets': ('Quotas', 'Quotas management support.'),
    'os-server-external-events': ('ServerExternalEvents',
                                  'Server External Event Triggers.'),
    'os-server-groups': ('ServerGroups', 'Server group support.'),
    'os-server-password': ('ServerPassword', 'Server password support.'),
    'servers': ('Servers', 'Servers.'),
    'os-services': ('Services', 'Services support.'),
    'extensions': ('Extensions', 'Extension information.'),
}


def _view(alias):
    name, description = EXTENSIONS[alias]
    return {'alias': alias, 'name': name, 'description': description,
            'namespace': 'http://docs.openstack.org/compute/ext/fake_xml',
            'updated': _UPDATED, 'links': []}


def list_extensions(req):
    """GET /extensions."""
    policies.authorize(req, 'os_compute_api:extensions')
    return util.json_response({'extensions': [
        _view(alias) for alias in sorted(EXTENSIONS)]})


def show_extension(req):
    """GET /extensions/{alias}."""
    policies.authorize(req, 'os_compute_api:extensions')
    alias = req.urlvars['alias']
    if alias not in EXTENSIONS:
        raise errors.NotFound('The resource could not be found.')
    return util.json_response({'extension': _view(alias)})
