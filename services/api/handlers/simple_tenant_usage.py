# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /os-simple-tenant-usage: what projects used in a period.

For a period [``start``, ``end``) (both default to now) each project's
usage sums, over its servers active in the period (deleted ones
included, from every cell), the hours each ran within the period and
those hours times the server's vCPUs, RAM and disk: Nova's
``total_hours``, ``total_vcpus_usage``, ``total_memory_mb_usage`` and
``total_local_gb_usage``. ``server_usages`` details each server (always
for one project, with ``detailed=1`` for the list). From 2.40 the
servers are paged (``limit``, ``marker``: a server uuid) and a full page
links to the next; a project's usage may then span pages, as in Nova.
"""

import datetime
import urllib.parse

from oslo_utils import timeutils

from common.db import usage_records
from common import exception
from services.api import cell_hosts
from services.api import errors
from services.api import policies
from services.api import util

PAGING_VERSION = (2, 40)
_FORMATS = ('%Y-%m-%dT%H:%M:%S', '%Y-%m-%dT%H:%M:%S.%f',
            '%Y-%m-%d %H:%M:%S.%f')


def _parse_time(text):
    """A naive UTC datetime from a query value; now when absent.

    :raises errors.BadRequest: none of Nova's accepted formats.
    """
    if not text:
        return timeutils.utcnow()
    for fmt in _FORMATS:
        try:
            return datetime.datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise errors.BadRequest('Invalid datetime string: Datetime is in '
                            'invalid format')


def _period(req):
    start = _parse_time(req.GET.get('start'))
    end = _parse_time(req.GET.get('end'))
    if start > end:
        raise errors.BadRequest('Invalid start time. The start time cannot '
                                'occur after the end time.')
    return start, end


def _detailed(req):
    # NOTE: Nova's reference documents ``detailed=1``; openstacksdk sends
    # ``detailed=True``: any boolean spelling is taken.
    return util.query_bool(req, 'detailed')


def _page(req):
    """(limit, marker) of the request; (None, None) before 2.40."""
    if not util.at_least(req, PAGING_VERSION):
        return None, None
    max_limit = util.conf(req).api.max_limit
    limit = min(util.query_int(req, 'limit', max_limit), max_limit)
    return limit, req.GET.get('marker')


def _instances(ctx, start, end, project_id, limit, marker):
    """The instances active in the period, every cell in turn.

    NOTE: as Nova, cells before the one holding ``marker`` are skipped and
    the page fills from the following cells.

    :raises errors.BadRequest: ``marker`` is in no cell.
    """
    found = []
    for cell in cell_hosts.all_cells(ctx):
        if limit is not None and len(found) >= limit:
            break
        try:
            found.extend(usage_records.active_by_window(
                ctx, cell_hosts.database(cell), start, end,
                project_id=project_id,
                limit=None if limit is None else limit - len(found),
                marker=marker))
        except exception.InstanceNotFound:
            continue
        marker = None
    if marker is not None:
        raise errors.BadRequest('Marker %s could not be found.' % marker)
    return found


def _time(value):
    return None if value is None else util.to_naive(value)


def _hours(launched, terminated, start, end):
    """Hours of [launched, terminated) within [start, end)."""
    begin = max(launched, start)
    stop = min(end, terminated) if terminated else end
    return max((stop - begin).total_seconds(), 0) / 3600.0


def _server_usage(instance, start, end, now):
    launched = _time(instance.launched_at)
    terminated = _time(instance.terminated_at)
    flavor = instance.flavor
    sizes = {'memory_mb': 0, 'vcpus': 0, 'local_gb': 0, 'flavor': ''}
    if flavor is not None:
        sizes = {'memory_mb': flavor.memory_mb, 'vcpus': flavor.vcpus,
                 'local_gb': flavor.root_gb + flavor.ephemeral_gb,
                 'flavor': flavor.name}
    usage = dict(sizes, **{
        'instance_id': instance.uuid,
        'name': instance.display_name,
        'tenant_id': instance.project_id,
        'hours': _hours(launched, terminated, start, end),
        'started_at': launched.isoformat(),
        'ended_at': terminated.isoformat() if terminated else None,
        'state': 'terminated' if terminated else instance.vm_state,
        'uptime': int(((terminated or now) - launched).total_seconds()),
    })
    return usage


def _usages(instances, start, end, detailed):
    """Nova's per-project usage summaries, in the instances' order."""
    now = timeutils.utcnow()
    by_project = {}
    for instance in instances:
        usage = _server_usage(instance, start, end, now)
        summary = by_project.get(instance.project_id)
        if summary is None:
            summary = by_project[instance.project_id] = {
                'tenant_id': instance.project_id,
                'start': start.isoformat(), 'stop': end.isoformat(),
                'total_hours': 0, 'total_vcpus_usage': 0,
                'total_memory_mb_usage': 0, 'total_local_gb_usage': 0}
            if detailed:
                summary['server_usages'] = []
        hours = usage['hours']
        summary['total_hours'] += hours
        summary['total_vcpus_usage'] += usage['vcpus'] * hours
        summary['total_memory_mb_usage'] += usage['memory_mb'] * hours
        summary['total_local_gb_usage'] += usage['local_gb'] * hours
        if detailed:
            summary['server_usages'].append(usage)
    return list(by_project.values())


def _next_links(req, instances, limit, *path):
    """A next link after a full page (2.40), marker the last server."""
    if not limit or len(instances) != limit:
        return None
    query = [(k, v) for k, v in req.GET.items() if k != 'marker']
    query.append(('marker', instances[-1].uuid))
    return [{'rel': 'next', 'href': '%s?%s' % (
        util.self_link(req, *path), urllib.parse.urlencode(query))}]


def list_usage(req):
    """GET /os-simple-tenant-usage (admin): every project's usage."""
    policies.authorize(req, 'os_compute_api:os-simple-tenant-usage:list')
    start, end = _period(req)
    detailed = _detailed(req)
    limit, marker = _page(req)
    instances = _instances(util.context(req), start, end, None, limit,
                           marker)
    body = {'tenant_usages': _usages(instances, start, end, detailed)}
    links = _next_links(req, instances, limit, 'os-simple-tenant-usage')
    if links:
        body['tenant_usages_links'] = links
    return util.json_response(body)


def show_usage(req):
    """GET /os-simple-tenant-usage/{tenant_id}: one project's usage, with
    each server's; ``{}`` when nothing ran in the period.
    """
    tenant_id = req.urlvars['tenant_id']
    policies.authorize(req, 'os_compute_api:os-simple-tenant-usage:show',
                       {'project_id': tenant_id})
    start, end = _period(req)
    limit, marker = _page(req)
    instances = _instances(util.context(req), start, end, tenant_id, limit,
                           marker)
    usages = _usages(instances, start, end, detailed=True)
    body = {'tenant_usage': usages[0] if usages else {}}
    links = _next_links(req, instances, limit, 'os-simple-tenant-usage',
                        tenant_id)
    if links:
        body['tenant_usage_links'] = links
    return util.json_response(body)
