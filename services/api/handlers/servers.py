# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /servers: list, detail, show, create, rename, delete.

Creation validates and records (:mod:`services.api.boot`), lists merge
build requests and every cell (:mod:`services.api.server_lookup`),
deletion picks the RPC or the local path (:mod:`services.api.deletion`).
"""

import random

from oslo_utils import strutils

from common.db import instance_records
from services.api import boot
from services.api import cell_hosts
from services.api import deletion
from services.api import down_cells
from services.api import errors
from services.api import hostnames
from services.api import policies
from services.api.records import aggregates as agg_records
from services.api.records import keypairs as keypair_records
from services.api.records import server_groups as group_records
from services.api.schemas import servers as schema
from services.api.schemas import types
from services.api import server_filters
from services.api import server_lookup
from services.api import server_view
from services.api import util

REQUESTED_DESTINATION_VERSION = (2, 74)
CHANGES_BEFORE_VERSION = (2, 66)
SERVER_GROUPS_VERSION = (2, 71)
# NOTE: digits, upper and lower case without the characters people
# mistake for one another (0/O, 1/I/l), as Nova's generated passwords.
PASSWORD_GROUPS = ('23456789', 'ABCDEFGHJKLMNPQRSTUVWXYZ',
                   'abcdefghijkmnopqrstuvwxyz')


def _all_tenants(req):
    """Whether the query asks for every project's servers, as Nova reads it.

    NOTE: as Nova, ``all_tenants`` with no value means yes, and a value
    that is no boolean is a 400 rather than a silent no.
    """
    if 'all_tenants' not in req.GET:
        return False
    value = req.GET['all_tenants']
    if not value:
        return True
    try:
        return strutils.bool_from_string(value, strict=True)
    except ValueError as exc:
        raise errors.BadRequest('Invalid input received: %s' % exc)


# The server statuses Nova knows; from 2.38 filtering on another is a 400.
KNOWN_STATUSES = frozenset((
    'ACTIVE', 'BUILD', 'DELETED', 'ERROR', 'HARD_REBOOT', 'MIGRATING',
    'PASSWORD', 'PAUSED', 'REBOOT', 'REBUILD', 'RESCUE', 'RESIZE',
    'REVERT_RESIZE', 'SHELVED', 'SHELVED_OFFLOADED', 'SHUTOFF',
    'SOFT_DELETED', 'SUSPENDED', 'UNKNOWN', 'VERIFY_RESIZE'))
INVALID_STATUS_VERSION = (2, 38)


def _check_status_filter(req, status):
    """400 for an unknown ``status`` filter from 2.38 (below it such a
    filter matches nothing, as in Nova).
    """
    if status is None or status.upper() in KNOWN_STATUSES:
        return
    if util.at_least(req, INVALID_STATUS_VERSION):
        raise errors.BadRequest('Invalid status value')


# The query parameters Nova's server lists take; from 2.75 another one is a
# 400 (below it, it is ignored).
KNOWN_QUERY = frozenset((
    'user_id', 'project_id', 'tenant_id', 'launch_index', 'image_ref',
    'image', 'kernel_id', 'ramdisk_id', 'hostname', 'key_name',
    'power_state', 'vm_state', 'task_state', 'host', 'node', 'flavor',
    'reservation_id', 'launched_at', 'terminated_at', 'availability_zone',
    'name', 'display_name', 'description', 'display_description',
    'locked_by', 'locked', 'uuid', 'root_device_name', 'config_drive',
    'access_ip_v4', 'access_ip_v6', 'auto_disk_config', 'progress',
    'sort_key', 'sort_dir', 'all_tenants', 'soft_deleted', 'deleted',
    'status', 'changes-since', 'changes-before', 'ip', 'ip6',
    'created_at', 'block_device_mapping', 'services', 'metadata',
    'system_metadata', 'info_cache', 'security_groups', 'pci_devices',
    'limit', 'marker', 'tags', 'tags-any', 'not-tags', 'not-tags-any'))
STRICT_QUERY_VERSION = (2, 75)


def _check_query_names(req):
    """400 for a query parameter no server list takes, from 2.75."""
    if not util.at_least(req, STRICT_QUERY_VERSION):
        return
    for name in req.GET:
        if name not in KNOWN_QUERY:
            raise errors.BadRequest(
                "Invalid input for query parameters %s. Value: %s. "
                "Additional properties are not allowed ('%s' was "
                "unexpected)" % (name, req.GET[name], name))


def _project_scope(req, action):
    """The project to list (None: all) for the caller and its query.

    :raises errors.Forbidden: ``all_tenants`` from a caller the
        ``...:get_all_tenants`` rule denies (Nova refuses, it does not
        quietly list the caller's own servers).
    """
    if _all_tenants(req):
        policies.authorize(req, action + ':get_all_tenants')
        return req.GET.get('project_id') or req.GET.get('tenant_id')
    return util.context(req).project_id


def _query_time(req, name):
    """A date-time query parameter as a naive UTC datetime, or None.

    :raises errors.BadRequest: not an ISO 8601 date-time (Nova's
        message).
    """
    value = req.GET.get(name)
    if value is None:
        return None
    try:
        return util.to_naive(value)
    except ValueError:
        raise errors.BadRequest(
            "Invalid input for query parameters %s. Value: %s. '%s' is not "
            "a 'date-time'" % (name, value, value))


def _change_filters(req):
    """``changes-since`` and (2.66) ``changes-before``, parsed.

    NOTE: as Nova, either of them lists deleted servers too (a client
    polling for changes learns of deletions).
    """
    filters = {'changes-since': _query_time(req, 'changes-since')}
    if util.at_least(req, CHANGES_BEFORE_VERSION):
        filters['changes-before'] = _query_time(req, 'changes-before')
    filters = {k: v for k, v in filters.items() if v is not None}
    if len(filters) == 2 and (
            filters['changes-since'] > filters['changes-before']):
        raise errors.BadRequest('The value of changes-since must be less '
                                'than or equal to changes-before.')
    return filters


def _tag_filters(req):
    """The tag filters (2.26) of the query: name -> list of tags."""
    if not util.at_least(req, server_view.TAGS_VERSION):
        return {}
    return {name: [t for t in req.GET[name].split(',') if t]
            for name in server_lookup.TAG_FILTERS if req.GET.get(name)}


def _deleted(req):
    """Whether to list deleted servers: ``deleted=true`` from a caller
    ``...:servers:allow_all_filters`` allows; as Nova, anybody else's
    ``deleted`` is dropped, and a value that is no boolean means no.
    """
    if 'deleted' not in req.GET or not policies.authorize(
            req, 'os_compute_api:servers:allow_all_filters', fatal=False):
        return False
    return strutils.bool_from_string(req.GET['deleted'], default=False)


def _list(req, action, detail):
    policies.authorize(req, action)
    ctx = util.context(req)
    project_id = _project_scope(req, action)
    max_limit = util.conf(req).api.max_limit
    limit = min(util.query_int(req, 'limit', max_limit), max_limit)
    filters = server_filters.from_request(req)
    _check_status_filter(req, filters.get('status'))
    _check_query_names(req)
    changes = _change_filters(req)
    filters.update(changes)
    host = None
    if 'host' in req.GET and policies.authorize(
            req, 'os_compute_api:os-extended-server-attributes',
            fatal=False):
        host = req.GET['host']
    down = []
    servers = server_lookup.list_servers(
        ctx, project_id=project_id, host=host, filters=filters, limit=limit,
        marker=req.GET.get('marker'),
        deleted=None if changes else _deleted(req),
        tag_filters=_tag_filters(req),
        with_tags=detail and util.at_least(req, server_view.TAGS_VERSION),
        down=down)
    if detail:
        viewer = server_view.Viewer(req)
        viewer.prefetch(servers)
        bodies = [viewer.detail(i, c) for i, c in servers]
    else:
        bodies = [server_view.index_view(req, i) for i, _c in servers]
    if down and util.at_least(req, down_cells.DOWN_CELL_VERSION):
        # NOTE: 2.69: the servers of a cell that does not answer, as
        # minimal records after the others (doc/api.md).
        room = None if limit is None else max(0, limit - len(bodies))
        bodies += down_cells.list_records(req, down, project_id)[:room]
    body = {'servers': bodies}
    if limit and len(servers) == limit:
        body['servers_links'] = [{'rel': 'next', 'href': '%s?limit=%d&'
                                  'marker=%s' % (
                                      util.self_link(req, 'servers'), limit,
                                      servers[-1][0].uuid)}]
    return util.json_response(body)


def list_servers(req):
    """GET /servers: ids, names and links, newest first."""
    return _list(req, 'os_compute_api:servers:index', detail=False)


def list_servers_detail(req):
    """GET /servers/detail: every field, newest first."""
    return _list(req, 'os_compute_api:servers:detail', detail=True)


def find_authorized(req, action, read_deleted=False, fault=True):
    """(Instance, cell) of ``server_id`` if the caller may ``action`` it.

    ``read_deleted`` also finds a deleted server; ``fault`` reads its
    latest fault (for a view of it).

    NOTE: as Nova, whose database reads are limited to the caller's
    project unless the caller is an admin: another project's server is
    "not found", so that its id is not confirmed to exist.

    :raises errors.NotFound: no such server, or another project's and the
        caller is no admin.
    :raises errors.Forbidden: the policy denies it.
    """
    ctx = util.context(req)
    server_id = req.urlvars['server_id']
    instance, cell = server_lookup.find(ctx, server_id,
                                        read_deleted=read_deleted,
                                        fault=fault)
    if not ctx.is_admin and instance.project_id != ctx.project_id:
        raise errors.NotFound('Instance %s could not be found.' % server_id)
    policies.authorize(req, action, {'project_id': instance.project_id,
                                     'user_id': instance.user_id})
    return instance, cell


def show_server(req):
    """GET /servers/{server_id}.

    :raises down_cells.CellDown: (503) the server's cell does not answer
        and the microversion is below 2.69.
    """
    try:
        instance, cell = find_authorized(req, 'os_compute_api:servers:show')
    except down_cells.CellDown as down:
        if not util.at_least(req, down_cells.DOWN_CELL_VERSION):
            raise
        return _show_down(req, down)
    body = server_view.Viewer(req).detail(instance, cell)
    if util.at_least(req, SERVER_GROUPS_VERSION):
        body['server_groups'] = group_records.groups_of_instance(
            util.context(req), instance.uuid)
    return util.json_response({'server': body})


def _show_down(req, down):
    """2.69: the minimal record of a server whose cell does not answer."""
    ctx = util.context(req)
    if not ctx.is_admin and down.mapping['project_id'] != ctx.project_id:
        raise errors.NotFound('Instance %s could not be found.' % down.uuid)
    policies.authorize(req, 'os_compute_api:servers:show',
                       {'project_id': down.mapping['project_id'],
                        'user_id': down.mapping['user_id']})
    body = down_cells.show_record(req, down)
    if util.at_least(req, SERVER_GROUPS_VERSION):
        body['server_groups'] = group_records.groups_of_instance(
            ctx, down.uuid)
    return util.json_response({'server': body})


def _requested_destination(req, data, place):
    """Set ``place``'s requested host/node (2.74) after checking them."""
    if not (data.get('host') or data.get('hypervisor_hostname')):
        return
    policies.authorize(
        req, 'os_compute_api:servers:create:requested_destination')
    place.requested_host = data.get('host')
    place.requested_node = data.get('hypervisor_hostname')
    if place.requested_host and not cell_hosts.host_exists(
            util.context(req), place.requested_host, place.requested_node):
        raise errors.BadRequest('Compute host %s could not be found.'
                                % place.requested_host)


def _check_zone(req, zone):
    """400 unless ``zone`` is a zone some host is in (or the default)."""
    conf = util.conf(req)
    known = {z for zones in agg_records.zones_by_host(
        util.context(req)).values() for z in zones}
    known.add(conf.default_availability_zone)
    if zone not in known:
        raise errors.BadRequest('The requested availability zone is not '
                                'available')


def _placement(req, data):
    """The zone / forced host / requested destination of a create body."""
    zone, host, node = boot.parse_zone(data.get('availability_zone'))
    forced = bool(host or node)
    if forced:
        policies.authorize(req, 'os_compute_api:servers:create:forced_host')
    elif not zone:
        zone = util.conf(req).default_schedule_zone
    place = boot.Placement(zone=zone, force_host=host, force_node=node)
    _requested_destination(req, data, place)
    if place.zone and not forced:
        _check_zone(req, place.zone)
    return place


def _create_schema(req):
    for minimum, body_schema in schema.CREATE_BY_VERSION:
        if util.at_least(req, minimum):
            return body_schema
    return schema.CREATE


def _counts(req, data):
    """(min_count, max_count) of a create body, within
    ``[api] max_servers_per_request`` (400 before anything is built).
    """
    min_count = types.to_int(data.get('min_count', 1))
    max_count = types.to_int(data.get('max_count', min_count))
    if min_count < 1 or max_count < 1:
        raise errors.BadRequest('min_count and max_count must be >= 1.')
    if min_count > max_count:
        raise errors.BadRequest("min_count must be <= max_count")
    most = util.conf(req).api.max_servers_per_request
    if max_count > most:
        raise errors.BadRequest(
            'max_count %d is more than the %d servers one request may '
            'create ([api] max_servers_per_request).' % (max_count, most))
    return min_count, max_count


def _check_networks(data):
    """400 for a network uuid that is none (Nova's message).

    NOTE: as Nova, a bridge-prefixed id (``br-<uuid>``) passes.
    """
    networks = data.get('networks')
    if not isinstance(networks, list):
        return
    for network in networks:
        net_id = network.get('uuid')
        if net_id is None or util.is_uuid_like(net_id) or (
                util.is_uuid_like(net_id.split('-', 1)[-1])):
            continue
        raise errors.BadRequest('Bad networks format: network uuid is not '
                                'in proper format (%s)' % net_id)


def _unsupported(data):
    if data.get('block_device_mapping'):
        raise errors.BadRequest('Legacy block device mappings are not '
                                'supported: Berth has no volumes.')
    for bdm in data.get('block_device_mapping_v2') or []:
        # NOTE: clients describe a plain image boot as an image-to-local
        # mapping; only mappings that need a volume are refused.
        if not isinstance(bdm, dict) or bdm.get('destination_type') == (
                'volume') or bdm.get('source_type') not in ('image',
                                                            'blank'):
            raise errors.BadRequest('Block device mappings to volumes are '
                                    'not supported: Berth has no volumes.')


def _boot_request(req, body):
    ctx = util.context(req)
    conf = util.conf(req)
    data = body['server']
    _unsupported(data)
    _check_networks(data)
    min_count, max_count = _counts(req, data)
    hostnames.check_count(data.get('hostname'), max_count)
    hints = boot.normalize_hints(body.get('os:scheduler_hints') or
                                 body.get('OS-SCH-HNT:scheduler_hints'))
    place = _placement(req, data)
    flavor, image, limits = boot.records_for_boot(
        ctx, conf, data['flavorRef'], data.get('imageRef'))
    metadata = data.get('metadata') or {}
    meta_limit = limits['metadata_items']
    if 0 <= meta_limit < len(metadata):
        raise errors.Forbidden('Maximum number of metadata items exceeds %d'
                               % meta_limit)
    key_name, key_data = _key_pair(ctx, data.get('key_name'))
    return boot.BootRequest(
        name=data['name'], flavor=flavor, image=image, placement=place,
        hints=hints, metadata=metadata, key_name=key_name,
        key_data=key_data, description=data.get('description'),
        hostname=data.get('hostname'), tags=list(data.get('tags') or []),
        group=boot.group_for_boot(ctx, conf, hints, ctx.project_id,
                                  min_count, project_limits=limits),
        min_count=min_count, max_count=max_count,
        numa_topology=boot.numa_for_boot(flavor, image),
        pci_requests=boot.pci_for_boot(conf, flavor), limits=limits,
        access_ip_v4=data.get('accessIPv4'),
        access_ip_v6=data.get('accessIPv6'))


def _key_pair(ctx, key_name):
    """(key_name, public key) of the caller's key pair ``key_name``.

    :raises errors.BadRequest: the caller has no such key pair (Nova's
        message).
    """
    if key_name is None:
        return None, None
    try:
        keypair = keypair_records.get_keypair(ctx, ctx.user_id, key_name)
    except keypair_records.KeypairNotFound:
        raise errors.BadRequest('Invalid key_name provided.')
    return keypair['name'], keypair['public_key']


def generate_password(length):
    """A random password of ``length`` characters of PASSWORD_GROUPS.

    One character of each group comes first (while ``length`` allows),
    then any; the order is shuffled. The system's CSPRNG draws them all.
    """
    rng = random.SystemRandom()
    chars = [rng.choice(group) for group in PASSWORD_GROUPS][:length]
    alphabet = ''.join(PASSWORD_GROUPS)
    chars += [rng.choice(alphabet) for _ in range(length - len(chars))]
    rng.shuffle(chars)
    return ''.join(chars)


def _admin_password(conf, server):
    """The request's adminPass, else a generated one (as Nova)."""
    if 'adminPass' in server:
        return server['adminPass']
    return generate_password(conf.password_length)


def create_server(req):
    """POST /servers: validate, record, cast to the conductor; 202.

    :raises errors.BadRequest: anything wrong with the request (schema,
        flavor, image, NUMA constraints, zone, group, hints).
    :raises errors.Forbidden: over quota, or forcing a host without the
        right.
    """
    policies.authorize(req, 'os_compute_api:servers:create')
    body = util.extract_json(req, _create_schema(req))
    request = _boot_request(req, body)
    instances, reservation = boot.create(util.context(req), util.conf(req),
                                         request)
    if types.to_bool(body['server'].get('return_reservation_id', False)):
        return util.json_response({'reservation_id': reservation},
                                  status=202)
    first = instances[0]
    server = {
        'id': first.uuid,
        'links': util.links(req, 'servers', first.uuid),
        'OS-DCF:diskConfig': 'MANUAL',
        'security_groups': [{'name': 'default'}],
    }
    conf = util.conf(req)
    if conf.api.enable_instance_password:
        server['adminPass'] = _admin_password(conf, body['server'])
    resp = util.json_response({'server': server}, status=202)
    resp.headers['Location'] = util.self_link(req, 'servers', first.uuid)
    return resp


# The update body's keys and the instance columns they set.
_UPDATABLE = {'name': 'display_name', 'description': 'display_description',
              'accessIPv4': 'access_ip_v4', 'accessIPv6': 'access_ip_v6',
              'hostname': 'hostname'}


def update_server(req):
    """PUT /servers/{server_id}: rename, describe (2.19), set the access
    addresses or the hostname (2.90).

    :raises errors.Conflict: the server is still a build request.
    """
    instance, cell = find_authorized(req, 'os_compute_api:servers:update')
    body_schema = next(found for version, found in schema.UPDATE_BY_VERSION
                       if util.at_least(req, version))
    data = util.extract_json(req, body_schema)['server']
    values = {column: data[key] for key, column in _UPDATABLE.items()
              if key in data}
    if values:
        if cell is None:
            raise errors.Conflict('Server %s is still being scheduled; '
                                  'update it once it is built.'
                                  % instance.uuid)
        instance = instance_records.update_instance(
            util.context(req), cell_hosts.database(cell), instance.uuid,
            values)
    body = server_view.Viewer(req).update_view(instance, cell)
    if util.at_least(req, SERVER_GROUPS_VERSION):
        body['server_groups'] = group_records.groups_of_instance(
            util.context(req), instance.uuid)
    return util.json_response({'server': body})


def delete_server(req):
    """DELETE /servers/{server_id}: 204 (see :mod:`services.api.deletion`).
    """
    instance, cell = find_authorized(req, 'os_compute_api:servers:delete')
    deletion.delete(util.context(req), util.conf(req), instance, cell)
    return util.no_content(204)
