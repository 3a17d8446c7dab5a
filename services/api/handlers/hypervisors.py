# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /os-hypervisors: the compute nodes of every cell.

A hypervisor's id is its compute node's uuid (2.53), which is also its
placement resource provider's; below 2.53 it is the node's integer id.
Up to 2.87 details carry the usage the node's resource tracker last
reported (vCPUs, RAM and disk, used and free, running VMs) and its
``cpu_info``, and ``/os-hypervisors/statistics`` sums them; 2.88 removes
those fields and that route (placement has the usage) and the
``{id}/uptime`` route, whose ``uptime`` joins the details instead: null
from Berth's drivers, which report none (Nova's answer for such a driver;
below 2.88 ``uptime`` is a 501). Below 2.53 the ``{pattern}/search`` and
``{pattern}/servers`` sub-resources find hypervisors by name; from 2.53
the list's ``hypervisor_hostname_pattern`` and ``with_servers`` replace
them.
"""

import urllib.parse

from common.db import compute_records
from common.db import instance_records
from services.api import cell_hosts
from services.api import errors
from services.api import policies
from services.api import util

UUID_VERSION = (2, 53)
# NOTE: from 2.33 the lists are pages: at most [api] max_limit
# hypervisors, and a ``hypervisors_links`` next link when a page is full.
PAGING_VERSION = (2, 33)
CPU_INFO_OBJECT_VERSION = (2, 28)
# NOTE: from 2.75 ``servers`` is there (maybe empty) whenever asked for;
# before, a hypervisor without servers had no ``servers`` key.
EMPTY_SERVERS_VERSION = (2, 75)
# NOTE: 2.88 drops the usage fields, cpu_info, statistics and the uptime
# route, and shows uptime in the details.
NO_USAGE_VERSION = (2, 88)
_USAGE_FIELDS = ('vcpus', 'memory_mb', 'local_gb', 'vcpus_used',
                 'memory_mb_used', 'local_gb_used')


def _service_for(ctx, cell, node, cache):
    """The compute service of ``node``; one query per cell, not per node.

    :param cache: {cell uuid: {host: service}}, filled as cells are seen.
    """
    services = cache.get(cell.uuid)
    if services is None:
        services = cache[cell.uuid] = {
            service['host']: service for service in
            compute_records.list_services(
                ctx, cell_hosts.database(cell),
                binary=cell_hosts.COMPUTE_BINARY)}
    return services.get(node['host'])


def _basic(req, node, service):
    return {
        'id': (node['uuid'] if util.at_least(req, UUID_VERSION)
               else node['id']),
        'hypervisor_hostname': node['hypervisor_hostname'],
        'state': 'up' if service and cell_hosts.is_up(service) else 'down',
        'status': ('disabled' if service is None or service['disabled']
                   else 'enabled'),
    }


def _usage(req, node):
    """The usage fields Nova shows below 2.88."""
    cpu_info = node['cpu_info']
    if not util.at_least(req, CPU_INFO_OBJECT_VERSION):
        cpu_info = util.json_text(cpu_info)
    body = {name: node[name] for name in _USAGE_FIELDS}
    body.update({
        'free_ram_mb': (node['free_ram_mb'] if node['free_ram_mb'] is not None
                        else node['memory_mb'] - node['memory_mb_used']),
        'free_disk_gb': (node['free_disk_gb']
                         if node['free_disk_gb'] is not None
                         else node['local_gb'] - node['local_gb_used']),
        'current_workload': node['current_workload'] or 0,
        'running_vms': node['running_vms'] or 0,
        'disk_available_least': node['free_disk_gb'],
        'cpu_info': cpu_info if cpu_info is not None else {},
    })
    return body


def _detail(req, node, service):
    body = _basic(req, node, service)
    body.update({
        'hypervisor_type': node['hypervisor_type'],
        'hypervisor_version': node['hypervisor_version'],
        'host_ip': node['host_ip'],
        'service': {
            'host': node['host'],
            'id': (service['uuid'] if util.at_least(req, UUID_VERSION)
                   else service['id']) if service else None,
            'disabled_reason': service['disabled_reason'] if service
            else None,
        },
    })
    if util.at_least(req, NO_USAGE_VERSION):
        # NOTE: Berth's agents report no uptime; Nova answers null for a
        # driver without one.
        body['uptime'] = None
    else:
        body.update(_usage(req, node))
    return body


def _servers(ctx, cell, node):
    instances = instance_records.list_instances(
        ctx, cell_hosts.database(cell), host=node['host'],
        node=node['hypervisor_hostname'])
    return [{'name': i.display_name, 'uuid': i.uuid} for i in instances]


def _add_servers(req, body, servers):
    if servers or util.at_least(req, EMPTY_SERVERS_VERSION):
        body['servers'] = servers


def _matching(ctx, pattern):
    """[(cell, node)] whose hypervisor_hostname contains ``pattern``.

    :raises errors.NotFound: none does (Nova's message).
    """
    found = [(c, n) for c, n in cell_hosts.list_compute_nodes(ctx)
             if pattern in (n['hypervisor_hostname'] or '')]
    if not found:
        raise errors.NotFound("No hypervisor matching '%s' could be found."
                              % pattern)
    return found


def _nodes(req):
    ctx = util.context(req)
    pattern = req.GET.get('hypervisor_hostname_pattern')
    if pattern is not None and util.at_least(req, UUID_VERSION):
        if 'limit' in req.GET or 'marker' in req.GET:
            raise errors.BadRequest(
                'Paging over hypervisors with the '
                'hypervisor_hostname_pattern query parameter is not '
                'supported.')
        return ctx, _matching(ctx, pattern), None
    found = cell_hosts.list_compute_nodes(ctx)
    marker = req.GET.get('marker')
    if marker is not None:
        ids = [str(n['uuid'] if util.at_least(req, UUID_VERSION)
                   else n['id']) for _c, n in found]
        if marker not in ids:
            raise errors.BadRequest('marker [%s] not found' % marker)
        found = found[ids.index(marker) + 1:]
    limit = _limit(req)
    if limit is not None:
        found = found[:limit]
    return ctx, found, limit


def _limit(req):
    """The most hypervisors a page holds; None: no bound (before 2.33)."""
    limit = util.query_int(req, 'limit')
    if not util.at_least(req, PAGING_VERSION):
        return limit
    max_limit = util.conf(req).api.max_limit
    return max_limit if limit is None else min(limit, max_limit)


def _next_links(req, bodies, limit, detail):
    """Nova's ``hypervisors_links``: a next link after a full page.

    The link repeats the request's query with ``marker`` set to the last
    hypervisor's id.
    """
    if not limit or len(bodies) != limit:
        return None
    query = [(k, v) for k, v in req.GET.items() if k != 'marker']
    query.append(('marker', str(bodies[-1]['id'])))
    path = ('os-hypervisors', 'detail') if detail else ('os-hypervisors',)
    return [{'rel': 'next', 'href': '%s?%s' % (
        util.self_link(req, *path), urllib.parse.urlencode(query))}]


def _list(req, detail):
    ctx, found, limit = _nodes(req)
    with_servers = util.query_bool(req, 'with_servers')
    cache = {}
    bodies = []
    for cell, node in found:
        service = _service_for(ctx, cell, node, cache)
        body = (_detail if detail else _basic)(req, node, service)
        if with_servers:
            _add_servers(req, body, _servers(ctx, cell, node))
        bodies.append(body)
    answer = {'hypervisors': bodies}
    if util.at_least(req, PAGING_VERSION):
        links = _next_links(req, bodies, limit, detail)
        if links:
            answer['hypervisors_links'] = links
    return util.json_response(answer)


def list_hypervisors(req):
    """GET /os-hypervisors (admin): id, name, state, status."""
    policies.authorize(req, 'os_compute_api:os-hypervisors:list')
    return _list(req, detail=False)


def list_hypervisors_detail(req):
    """GET /os-hypervisors/detail (admin): with usage."""
    policies.authorize(req, 'os_compute_api:os-hypervisors:list-detail')
    return _list(req, detail=True)


def _find(req):
    """(ctx, (cell, node)) of the path's hypervisor id.

    :raises errors.BadRequest: from 2.53, an id that is no uuid.
    :raises errors.NotFound: no such hypervisor.
    """
    ctx = util.context(req)
    ident = req.urlvars['hypervisor_id']
    found = None
    if util.at_least(req, UUID_VERSION):
        if not util.is_uuid_like(ident):
            raise errors.BadRequest('Invalid uuid %s' % ident)
        found = cell_hosts.find_compute_node(ctx, ident)
    elif ident.isdigit():
        found = cell_hosts.find_compute_node_by_id(ctx, int(ident))
    if found is None:
        raise errors.NotFound('Hypervisor with ID %s could not be found.'
                              % ident)
    return ctx, found


def show_hypervisor(req):
    """GET /os-hypervisors/{hypervisor_id} (admin): with usage.

    ``with_servers=true`` adds the instances on it.
    """
    policies.authorize(req, 'os_compute_api:os-hypervisors:show')
    ctx, (cell, node) = _find(req)
    service = cell_hosts.compute_service(ctx, node['host'], cell)
    body = _detail(req, node, service)
    if util.query_bool(req, 'with_servers'):
        _add_servers(req, body, _servers(ctx, cell, node))
    return util.json_response({'hypervisor': body})


def hypervisor_uptime(req):
    """GET /os-hypervisors/{hypervisor_id}/uptime (below 2.88): 501.

    Nova asks the compute agent's host; Berth's agents do not report an
    uptime, and clients (the ``openstack`` CLI) expect a 501 then.
    """
    util.require_version_below(req, NO_USAGE_VERSION)
    policies.authorize(req, 'os_compute_api:os-hypervisors:uptime')
    _find(req)
    raise errors.NotImplementedYet('Virt driver does not implement uptime '
                                   'function.')


def _by_pattern(req, with_servers):
    """The hypervisors whose name contains the path's pattern (< 2.53)."""
    util.require_version_below(req, UUID_VERSION)
    ctx = util.context(req)
    cache = {}
    bodies = []
    for cell, node in _matching(ctx, req.urlvars['pattern']):
        body = _basic(req, node, _service_for(ctx, cell, node, cache))
        if with_servers:
            _add_servers(req, body, _servers(ctx, cell, node))
        bodies.append(body)
    return util.json_response({'hypervisors': bodies})


def search_hypervisors(req):
    """GET /os-hypervisors/{pattern}/search (admin, before 2.53)."""
    policies.authorize(req, 'os_compute_api:os-hypervisors:search')
    return _by_pattern(req, with_servers=False)


def hypervisor_servers(req):
    """GET /os-hypervisors/{pattern}/servers (admin, before 2.53)."""
    policies.authorize(req, 'os_compute_api:os-hypervisors:servers')
    return _by_pattern(req, with_servers=True)


def hypervisor_statistics(req):
    """GET /os-hypervisors/statistics (admin, below 2.88): totals over
    every node.
    """
    util.require_version_below(req, NO_USAGE_VERSION)
    policies.authorize(req, 'os_compute_api:os-hypervisors:statistics')
    ctx = util.context(req)
    keys = ('vcpus', 'memory_mb', 'local_gb', 'vcpus_used',
            'memory_mb_used', 'local_gb_used', 'free_ram_mb',
            'free_disk_gb', 'current_workload', 'running_vms')
    totals = dict.fromkeys(keys, 0)
    totals['disk_available_least'] = 0
    found = cell_hosts.list_compute_nodes(ctx)
    for _cell, node in found:
        for key in keys:
            totals[key] += node[key] or 0
        totals['disk_available_least'] += node['free_disk_gb'] or 0
    totals['count'] = len(found)
    return util.json_response({'hypervisor_statistics': totals})
