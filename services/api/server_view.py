# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Servers as the compute API shows them, up to microversion 2.95.

The detailed body has Nova's keys: the embedded flavor (2.47), the
``OS-EXT-STS`` states, ``OS-EXT-AZ:availability_zone``, timestamps and,
for admins, ``OS-EXT-SRV-ATTR:*`` (host, node, reservation...) and
``host_status``; from 2.90 everybody sees ``OS-EXT-SRV-ATTR:hostname``.
A server in ERROR carries its latest ``fault``: the message for
everybody, the ``details`` (the scheduler's explanation for NoValidHost)
for admins or when the fault is not a server error, as Nova decides.
"""

import hashlib

from common.db import compute_records
from common.db import instance_tags
from services.api import cell_hosts
from services.api import hostnames
from services.api import policies
from services.api import util

DESCRIPTION_VERSION = (2, 19)
EXTENDED_MORE_VERSION = (2, 3)
LOCKED_VERSION = (2, 9)
HOST_STATUS_VERSION = (2, 16)
TAGS_VERSION = (2, 26)
EMBEDDED_FLAVOR_VERSION = (2, 47)
TRUSTED_CERTS_VERSION = (2, 63)
LOCKED_REASON_VERSION = (2, 73)
CONSISTENT_UPDATE_VERSION = (2, 75)

# NOTE: what Nova's update (and rebuild) view leaves out before 2.75: the
# keys its show view adds from the former extensions (zone, config drive,
# key pair, usage times, extended status and attributes, volumes,
# security groups, host status).
_NOT_IN_UPDATE = ('OS-EXT-AZ:availability_zone', 'config_drive',
                  'key_name', 'OS-SRV-USG:launched_at',
                  'OS-SRV-USG:terminated_at', 'OS-EXT-STS:task_state',
                  'OS-EXT-STS:vm_state', 'OS-EXT-STS:power_state',
                  'os-extended-volumes:volumes_attached', 'security_groups',
                  'host_status')

_POWER_STATES = {0: 0, 1: 1, 3: 3, 4: 4, 6: 6, 7: 7}


def host_id(project_id, host):
    """Nova's opaque hostId: the same for servers of a project on a host.
    """
    if not host:
        return ''
    return hashlib.sha224(('%s%s' % (project_id, host)).encode(
        'utf-8')).hexdigest()


def index_view(req, instance):
    """The short form: id, name, links."""
    return {'id': instance.uuid, 'name': instance.display_name,
            'links': util.links(req, 'servers', instance.uuid)}


def _flavor(req, instance, show_specs):
    flavor = instance.flavor
    if flavor is None:
        return {}
    if not util.at_least(req, EMBEDDED_FLAVOR_VERSION):
        return {'id': flavor.flavorid,
                'links': [{'rel': 'bookmark', 'href': '%s/flavors/%s' % (
                    req.application_url.rstrip('/'), flavor.flavorid)}]}
    body = {'vcpus': flavor.vcpus, 'ram': flavor.memory_mb,
            'disk': flavor.root_gb, 'ephemeral': flavor.ephemeral_gb,
            'swap': flavor.swap, 'original_name': flavor.name}
    if show_specs:
        body['extra_specs'] = dict(flavor.extra_specs)
    return body


def _image(req, instance):
    if not instance.image_ref:
        return ''
    return {'id': instance.image_ref,
            'links': [{'rel': 'bookmark', 'href': '%s/images/%s' % (
                req.application_url.rstrip('/'), instance.image_ref)}]}


def _fault(instance, is_admin):
    fault = instance.fault
    if not fault or instance.status not in ('ERROR', 'DELETED'):
        return None
    body = {'code': fault.get('code'), 'message': fault.get('message'),
            'created': util.iso(fault.get('created_at'))}
    if is_admin or fault.get('code') != 500:
        body['details'] = fault.get('details') or ''
    return body


def _service_status(service):
    """The host_status a compute service record (or None) gives."""
    if service is None:
        return 'UNKNOWN'
    if service['forced_down'] or not cell_hosts.is_up(service):
        return 'DOWN'
    if service['disabled']:
        return 'MAINTENANCE'
    return 'UP'


class Viewer(object):
    """Builds detailed views for one request (caching per-host lookups).
    """

    def __init__(self, req):
        self.req = req
        self.ctx = util.context(req)
        self.is_admin = policies.authorize(
            req, 'os_compute_api:os-extended-server-attributes',
            fatal=False)
        self.show_host_status = util.at_least(
            req, HOST_STATUS_VERSION) and policies.authorize(
            req, 'os_compute_api:servers:show:host_status', fatal=False)
        self.show_specs = policies.authorize(
            req, 'os_compute_api:os-flavor-extra-specs:index', fatal=False)
        self._host_status = {}

    def host_status(self, instance, cell):
        """UP, DOWN, MAINTENANCE (disabled) or '' (no host)."""
        if not instance.host or cell is None:
            return ''
        key = (cell.uuid, instance.host)
        if key not in self._host_status:
            self._host_status[key] = _service_status(
                cell_hosts.compute_service(self.ctx, instance.host, cell))
        return self._host_status[key]

    def prefetch(self, servers):
        """Read the host status of a list's servers with one query per
        cell (of their hosts only), rather than one per host (a list of a
        thousand servers on a thousand hosts made a thousand queries).

        :param servers: [(Instance, CellMapping or None)].
        """
        if not self.show_host_status:
            return
        by_cell = {}
        for instance, cell in servers:
            if instance.host and cell is not None:
                by_cell.setdefault(cell.uuid, (cell, set()))[1].add(
                    instance.host)
        for cell, hosts in by_cell.values():
            if len(hosts) < 2:
                continue
            services = {s['host']: s for s in compute_records.list_services(
                self.ctx, cell_hosts.database(cell),
                binary=cell_hosts.COMPUTE_BINARY, hosts=hosts)}
            for host in hosts:
                self._host_status[(cell.uuid, host)] = _service_status(
                    services.get(host))

    def tags(self, instance, cell):
        """The server's tags: those it carries (a build request's, or
        read with a list), else its cell's.
        """
        if instance.tags is None and cell is not None:
            instance.tags = instance_tags.get_tags(
                self.ctx, cell_hosts.database(cell), instance.uuid)
        return list(instance.tags or [])

    def _extended(self, body, instance):
        req = self.req
        body['OS-EXT-SRV-ATTR:host'] = instance.host
        body['OS-EXT-SRV-ATTR:hypervisor_hostname'] = instance.node
        body['OS-EXT-SRV-ATTR:instance_name'] = 'instance-%s' % instance.uuid
        if util.at_least(req, EXTENDED_MORE_VERSION):
            body.update({
                'OS-EXT-SRV-ATTR:hostname': hostnames.of(instance),
                'OS-EXT-SRV-ATTR:reservation_id': instance.reservation_id,
                'OS-EXT-SRV-ATTR:launch_index': instance.launch_index,
                'OS-EXT-SRV-ATTR:kernel_id': '',
                'OS-EXT-SRV-ATTR:ramdisk_id': '',
                'OS-EXT-SRV-ATTR:root_device_name': None,
                'OS-EXT-SRV-ATTR:user_data': None,
            })

    def detail(self, instance, cell):
        """The detailed body of one server."""
        req = self.req
        status = instance.status
        body = {
            'id': instance.uuid,
            'name': instance.display_name,
            'status': status,
            'tenant_id': instance.project_id,
            'user_id': instance.user_id,
            'metadata': dict(instance.metadata or {}),
            'hostId': host_id(instance.project_id, instance.host),
            'image': _image(req, instance),
            'flavor': _flavor(req, instance, self.show_specs),
            'created': util.iso(instance.created_at),
            'updated': util.iso(instance.updated_at or instance.created_at),
            'addresses': {},
            'accessIPv4': instance.access_ip_v4 or '',
            'accessIPv6': instance.access_ip_v6 or '',
            'links': util.links(req, 'servers', instance.uuid),
            'OS-DCF:diskConfig': 'MANUAL',
            'OS-EXT-AZ:availability_zone': instance.availability_zone or '',
            'config_drive': '',
            'key_name': instance.key_name,
            'OS-SRV-USG:launched_at': util.iso_micro(instance.launched_at),
            'OS-SRV-USG:terminated_at': util.iso_micro(
                instance.terminated_at),
            'OS-EXT-STS:task_state': instance.task_state,
            'OS-EXT-STS:vm_state': instance.vm_state,
            'OS-EXT-STS:power_state': instance.power_state or 0,
            'os-extended-volumes:volumes_attached': [],
            'security_groups': [{'name': 'default'}],
        }
        if status in ('BUILD', 'ACTIVE'):
            body['progress'] = 0
        fault = _fault(instance, self.is_admin)
        if fault is not None:
            body['fault'] = fault
        if self.is_admin:
            self._extended(body, instance)
        elif util.at_least(req, hostnames.HOSTNAME_VERSION):
            body['OS-EXT-SRV-ATTR:hostname'] = hostnames.of(instance)
        self._user_fields(body, instance, cell)
        if self.show_host_status:
            body['host_status'] = self.host_status(instance, cell)
        return body

    def _user_fields(self, body, instance, cell):
        """What later microversions add of what users set: the lock and
        its reason, the description, tags, certificates.
        """
        req = self.req
        if util.at_least(req, LOCKED_VERSION):
            body['locked'] = bool(instance.locked)
        if util.at_least(req, LOCKED_REASON_VERSION):
            body['locked_reason'] = (instance.system_metadata or {}).get(
                'locked_reason')
        if util.at_least(req, DESCRIPTION_VERSION):
            body['description'] = instance.display_description
        if util.at_least(req, TAGS_VERSION):
            body['tags'] = self.tags(instance, cell)
        if util.at_least(req, TRUSTED_CERTS_VERSION):
            body['trusted_image_certificates'] = None

    def update_view(self, instance, cell):
        """The body of an update answer: Nova's smaller view before 2.75,
        the detailed one from 2.75 (``server_groups`` is the caller's to
        add, from 2.71 as in show).
        """
        body = self.detail(instance, cell)
        if util.at_least(self.req, CONSISTENT_UPDATE_VERSION):
            return body
        for key in list(body):
            if key in _NOT_IN_UPDATE or key.startswith('OS-EXT-SRV-ATTR:'):
                del body[key]
        return body
