# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /os-services: list, enable/disable, force down, delete.

Services of every cell are listed; ids are the services' uuids (2.53).
Deleting a compute service also removes what a dead compute cannot
remove itself (doc/behaviours.md B2): its host mapping, its membership of
host aggregates and its resource providers in placement.
"""

import logging

from common.db import boot_records
from common.db import compute_records
from common.db import instance_records
from services.api import binary_names
from services.api import cell_hosts
from services.api import errors
from services.api.handlers import aggregates as agg_handlers
from services.api import placement_sync
from services.api import policies
from services.api.records import aggregates as agg_records
from services.api.schemas import services as schema
from services.api import util

LOG = logging.getLogger(__name__)

UUID_VERSION = (2, 53)
FORCED_DOWN_VERSION = (2, 11)


def zone_of(service, zones_by_host, conf):
    """The availability zone a service is listed in."""
    if service['binary'] != cell_hosts.COMPUTE_BINARY:
        return agg_handlers.INTERNAL_ZONE
    zones = zones_by_host.get(service['host'])
    return zones[0] if zones else conf.default_availability_zone


def updated_at(service):
    """The latest of a service's heartbeat, update and creation times."""
    times = [t for t in (service['last_seen_up'], service['updated_at'],
                         service['created_at']) if t]
    return max(times) if times else None


def view(req, service, zones_by_host):
    """A service as the request's microversion shows it."""
    body = {
        'id': (service['uuid'] if util.at_least(req, UUID_VERSION)
               else service['id']),
        'binary': binary_names.shown(util.conf(req), service['binary']),
        'host': service['host'],
        'zone': zone_of(service, zones_by_host, util.conf(req)),
        'status': 'disabled' if service['disabled'] else 'enabled',
        'state': 'up' if cell_hosts.is_up(service) else 'down',
        'updated_at': util.iso_micro(updated_at(service)),
        'disabled_reason': service['disabled_reason'],
    }
    if util.at_least(req, FORCED_DOWN_VERSION):
        body['forced_down'] = bool(service['forced_down'])
    return body


def list_services(req):
    """GET /os-services (admin); ``host`` and ``binary`` filter.

    ``binary`` takes Nova's names or Berth's (:mod:`binary_names`).
    """
    policies.authorize(req, 'os_compute_api:os-services:list')
    ctx = util.context(req)
    binary = binary_names.internal(req.GET.get('binary'))
    found = cell_hosts.list_services(ctx, binary=binary,
                                     host=req.GET.get('host'))
    zones = agg_records.zones_by_host(ctx)
    return util.json_response(
        {'services': [view(req, s, zones) for _c, s in found]})


def _find(req):
    util.require_version(req, UUID_VERSION)
    service_id = req.urlvars['service_id']
    if not util.is_uuid_like(service_id):
        raise errors.BadRequest('Invalid uuid %s' % service_id)
    found = cell_hosts.find_service(util.context(req), service_id)
    if found is None:
        raise errors.NotFound('Service %s could not be found.' % service_id)
    return found


def _update_values(body):
    values = {}
    if 'status' in body:
        values['disabled'] = body['status'] == 'disabled'
        values['disabled_reason'] = (body.get('disabled_reason')
                                     if values['disabled'] else None)
    elif 'disabled_reason' in body:
        raise errors.BadRequest('Specifying a disabled_reason is only '
                                'supported when the status is disabled.')
    if 'forced_down' in body:
        values['forced_down'] = body['forced_down']
    return values


def update_service(req):
    """PUT /os-services/{service_id}: status, reason, forced_down (admin).

    :raises errors.BadRequest: a reason without ``status: disabled``.
    """
    policies.authorize(req, 'os_compute_api:os-services:update')
    body = util.extract_json(req, schema.UPDATE_V253)
    if body.get('disabled_reason') and body.get('status') != 'disabled':
        raise errors.BadRequest('Specifying a disabled_reason is only '
                                'supported when the status is disabled.')
    ctx = util.context(req)
    cell, service = _find(req)
    values = _update_values(body)
    updated = compute_records.update_service(
        ctx, cell_hosts.database(cell), service['id'], values)
    if updated is None:
        raise errors.NotFound('Service %s could not be found.'
                              % service['uuid'])
    if 'disabled' in values and (
            service['binary'] == cell_hosts.COMPUTE_BINARY):
        nodes = [n['uuid'] for _c, n in cell_hosts.list_compute_nodes(
            ctx, host=service['host'])]
        placement_sync.set_disabled(ctx, util.conf(req), nodes,
                                    values['disabled'])
    zones = agg_records.zones_by_host(ctx)
    return util.json_response({'service': view(req, updated, zones)})


def _forget_compute_host(ctx, conf, service, node_uuids):
    """What a deleted compute service leaves behind, removed."""
    host = service['host']
    boot_records.delete_host_mapping(ctx, host)
    if agg_records.remove_host_everywhere(ctx, host):
        placement_sync.tell_schedulers(ctx)
    placement_sync.delete_providers(ctx, conf, node_uuids)
    from services.scheduler import rpcapi as scheduler_rpcapi
    for uuid in node_uuids:
        try:
            scheduler_rpcapi.SchedulerAPI().delete_instance_info(ctx, uuid)
        except Exception:
            LOG.exception('Could not tell the schedulers that node %s is '
                          'gone', uuid)


def delete_service(req):
    """DELETE /os-services/{service_id} (admin).

    A compute service goes with its compute nodes, host mapping,
    aggregate memberships and resource providers.

    :raises errors.Conflict: the compute host still has instances.
    """
    policies.authorize(req, 'os_compute_api:os-services:delete')
    ctx = util.context(req)
    cell, service = _find(req)
    database = cell_hosts.database(cell)
    is_compute = service['binary'] == cell_hosts.COMPUTE_BINARY
    if is_compute and instance_records.list_instances(
            ctx, database, host=service['host'], limit=1):
        raise errors.Conflict(
            'Unable to delete compute service that is hosting instances. '
            'Migrate or delete the instances first.')
    deleted = compute_records.delete_service(ctx, database, service['id'])
    if deleted is None:
        raise errors.NotFound('Service %s could not be found.'
                              % service['uuid'])
    if is_compute:
        _forget_compute_host(ctx, util.conf(req), service,
                             deleted.get('deleted_nodes') or [])
    LOG.info('Deleted service %s (%s on %s)', service['uuid'],
             service['binary'], service['host'])
    return util.no_content(204)
