# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /os-aggregates: host aggregates and availability zones.

A zone is an aggregate with ``availability_zone`` metadata. A host may be
in many aggregates but in one zone only: adding it to an aggregate of
another zone is a 409, and giving an aggregate a zone its hosts'
other aggregates contradict is a 400, as in Nova. Every change is
mirrored into placement and announced to the schedulers
(:mod:`services.api.placement_sync`).
"""

from services.api import cell_hosts
from services.api import errors
from services.api import placement_sync
from services.api import policies
from services.api.records import aggregates as agg_records
from services.api.schemas import aggregates as schema
from services.api import util

# NOTE: Nova's [DEFAULT] internal_service_availability_zone default; the
# zone the control services are listed under, never a compute zone.
INTERNAL_ZONE = 'internal'
UUID_VERSION = (2, 41)


def view(req, agg, with_members=True):
    """An aggregate as the request's microversion shows it."""
    body = {
        'id': agg['id'],
        'name': agg['name'],
        'availability_zone': agg['availability_zone'],
        'created_at': util.iso_micro(agg['created_at']),
        'updated_at': util.iso_micro(agg['updated_at']),
        'deleted_at': None,
        'deleted': False,
    }
    if with_members:
        body['hosts'] = list(agg['hosts'])
        body['metadata'] = dict(agg['metadata'])
    if util.at_least(req, UUID_VERSION):
        body['uuid'] = agg['uuid']
    return body


def get_aggregate(req, aggregate_id):
    """The aggregate of that id (or uuid).

    :raises errors.NotFound: there is none.
    """
    try:
        return agg_records.get_aggregate(util.context(req), aggregate_id)
    except agg_records.AggregateNotFound as exc:
        raise errors.NotFound(str(exc))


def _check_zone_name(zone):
    if zone == INTERNAL_ZONE:
        raise errors.BadRequest(
            'Aggregates cannot use the internal availability zone %r.'
            % INTERNAL_ZONE)


def _zones_elsewhere(ctx, hosts, agg_id):
    """The zones of other aggregates that ``hosts`` are in."""
    zones = set()
    for other in agg_records.list_aggregates(ctx):
        if other['id'] != agg_id and other['availability_zone'] and (
                set(other['hosts']) & set(hosts)):
            zones.add(other['availability_zone'])
    return zones


def _check_zone_change(ctx, agg, zone):
    """400 when ``agg``'s hosts are in another zone than ``zone``."""
    _check_zone_name(zone)
    conflicting = _zones_elsewhere(ctx, agg['hosts'], agg['id']) - {zone}
    if zone and conflicting:
        raise errors.BadRequest(
            'Cannot update aggregate %s. Reason: One or more hosts '
            'contained in the aggregate are already in availability zone(s) '
            '%s.' % (agg['id'], ', '.join(sorted(conflicting))))


def list_aggregates(req):
    """GET /os-aggregates (admin)."""
    policies.authorize(req, 'os_compute_api:os-aggregates:index')
    aggregates = agg_records.list_aggregates(util.context(req))
    return util.json_response(
        {'aggregates': [view(req, a) for a in aggregates]})


def show_aggregate(req):
    """GET /os-aggregates/{aggregate_id} (admin)."""
    policies.authorize(req, 'os_compute_api:os-aggregates:show')
    agg = get_aggregate(req, req.urlvars['aggregate_id'])
    return util.json_response({'aggregate': view(req, agg)})


def create_aggregate(req):
    """POST /os-aggregates (admin): a name and optionally a zone.

    :raises errors.Conflict: the name is taken.
    """
    policies.authorize(req, 'os_compute_api:os-aggregates:create')
    data = util.extract_json(req, schema.CREATE)['aggregate']
    zone = data.get('availability_zone')
    _check_zone_name(zone)
    ctx = util.context(req)
    try:
        agg = agg_records.create_aggregate(ctx, data['name'].strip(), zone)
    except agg_records.AggregateNameExists as exc:
        raise errors.Conflict(str(exc))
    placement_sync.tell_schedulers(ctx)
    return util.json_response(
        {'aggregate': view(req, agg, with_members=False)})


def update_aggregate(req):
    """PUT /os-aggregates/{aggregate_id}: rename, or change the zone.

    :raises errors.Conflict: the new name is taken.
    :raises errors.BadRequest: the hosts are in another zone already.
    """
    policies.authorize(req, 'os_compute_api:os-aggregates:update')
    data = util.extract_json(req, schema.UPDATE)['aggregate']
    ctx = util.context(req)
    agg = get_aggregate(req, req.urlvars['aggregate_id'])
    clear_zone = 'availability_zone' in data and not data[
        'availability_zone']
    if data.get('availability_zone'):
        _check_zone_change(ctx, agg, data['availability_zone'])
    try:
        agg = agg_records.update_aggregate(
            ctx, agg['id'], name=data.get('name'),
            availability_zone=data.get('availability_zone'),
            clear_zone=clear_zone)
    except agg_records.AggregateNameExists as exc:
        raise errors.Conflict(str(exc))
    placement_sync.tell_schedulers(ctx)
    return util.json_response({'aggregate': view(req, agg)})


def delete_aggregate(req):
    """DELETE /os-aggregates/{aggregate_id}: only an empty one.

    :raises errors.BadRequest: the aggregate still has hosts.
    """
    policies.authorize(req, 'os_compute_api:os-aggregates:delete')
    ctx = util.context(req)
    agg = get_aggregate(req, req.urlvars['aggregate_id'])
    if agg['hosts']:
        raise errors.BadRequest(
            'Cannot remove aggregate %s. Reason: Host aggregate is not '
            'empty.' % agg['id'])
    agg_records.delete_aggregate(ctx, agg['id'])
    placement_sync.tell_schedulers(ctx)
    return util.no_content(200)


def _add_host(req, ctx, agg, host):
    policies.authorize(req, 'os_compute_api:os-aggregates:add_host')
    if cell_hosts.compute_service(ctx, host) is None and not (
            cell_hosts.host_exists(ctx, host)):
        raise errors.NotFound('Compute host %s could not be found.' % host)
    zone = agg['availability_zone']
    if zone:
        conflicting = _zones_elsewhere(ctx, [host], agg['id']) - {zone}
        if conflicting:
            raise errors.Conflict(
                'Cannot add host to aggregate %s. Reason: One or more hosts '
                'already in availability zone(s) %s.'
                % (agg['id'], ', '.join(sorted(conflicting))))
    try:
        agg = agg_records.add_host(ctx, agg['id'], host)
    except agg_records.AggregateHostExists as exc:
        raise errors.Conflict(str(exc))
    nodes = [n['uuid'] for _c, n in cell_hosts.list_compute_nodes(
        ctx, host=host)]
    placement_sync.mirror_host(ctx, util.conf(req), nodes, agg['uuid'],
                               add=True)
    return agg


def _remove_host(req, ctx, agg, host):
    policies.authorize(req, 'os_compute_api:os-aggregates:remove_host')
    try:
        agg = agg_records.remove_host(ctx, agg['id'], host)
    except agg_records.AggregateHostNotFound as exc:
        raise errors.NotFound(str(exc))
    nodes = [n['uuid'] for _c, n in cell_hosts.list_compute_nodes(
        ctx, host=host)]
    placement_sync.mirror_host(ctx, util.conf(req), nodes, agg['uuid'],
                               add=False)
    return agg


def _set_metadata(req, ctx, agg, metadata):
    policies.authorize(req, 'os_compute_api:os-aggregates:set_metadata')
    if agg_records.AZ_KEY in metadata and metadata[agg_records.AZ_KEY]:
        _check_zone_change(ctx, agg, metadata[agg_records.AZ_KEY])
    return agg_records.set_metadata(ctx, agg['id'], metadata)


def aggregate_action(req):
    """POST /os-aggregates/{aggregate_id}/action.

    ``add_host`` and ``remove_host`` change the members (mirrored on the
    hosts' placement providers); ``set_metadata`` sets keys, a null value
    deleting one (``availability_zone`` makes the aggregate a zone).

    :raises errors.NotFound: unknown aggregate or host.
    :raises errors.Conflict: the host is there already, or in another
        zone.
    """
    body = util.extract_json(req, schema.ACTION)
    ctx = util.context(req)
    agg = get_aggregate(req, req.urlvars['aggregate_id'])
    if 'add_host' in body:
        agg = _add_host(req, ctx, agg, body['add_host']['host'])
    elif 'remove_host' in body:
        agg = _remove_host(req, ctx, agg, body['remove_host']['host'])
    else:
        agg = _set_metadata(req, ctx, agg,
                            body['set_metadata']['metadata'])
    placement_sync.tell_schedulers(ctx)
    return util.json_response({'aggregate': view(req, agg)})
