# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for the deprecated /os-hosts (below 2.43; 404 from 2.43).

* list: every service's host, its topic and zone (``?zone=`` filters);
* show: a compute host's resources: its total, what its resource
  tracker last reported in use, the sum of its instances' flavors, and
  that sum per project;
* update: ``status`` enables or disables the host's compute service
  exactly as PUT /os-services does (the scheduler stops picking it);
  ``maintenance_mode`` is a 501, as Nova with a driver (libvirt) that
  has no maintenance mode;
* reboot / shutdown / startup: a 501, as Nova with a driver that has no
  host power management (no Berth driver powers hosts).
"""

from common.db import compute_records
from common.db import instance_records
from services.api import cell_hosts
from services.api import errors
from services.api.handlers import services as service_handlers
from services.api import placement_sync
from services.api import policies
from services.api.records import aggregates as agg_records
from services.api.schemas import hosts as schema
from services.api import util

REMOVED_VERSION = (2, 43)


def _before_2_43(req):
    if util.at_least(req, REMOVED_VERSION):
        raise errors.NotFound('The resource could not be found.')


def list_hosts(req):
    """GET /os-hosts."""
    _before_2_43(req)
    policies.authorize(req, 'os_compute_api:os-hosts:list')
    ctx = util.context(req)
    zones = agg_records.zones_by_host(ctx)
    conf = util.conf(req)
    hosts = [{'host_name': s['host'], 'service': s['topic'],
              'zone': service_handlers.zone_of(s, zones, conf)}
             for _c, s in cell_hosts.list_services(ctx)]
    zone = req.GET.get('zone')
    if zone:
        hosts = [h for h in hosts if h['zone'] == zone]
    return util.json_response({'hosts': hosts})


def _compute(req):
    """(cell, compute service) of the path's host, else 404."""
    ctx = util.context(req)
    host = req.urlvars['host_name']
    for cell in cell_hosts.host_cells(ctx, host):
        service = cell_hosts.compute_service(ctx, host, cell)
        if service is not None:
            return cell, service
    raise errors.NotFound('Compute host %s could not be found.' % host)


def _resource(host, project, cpu, memory_mb, disk_gb):
    return {'resource': {'host': host, 'project': project, 'cpu': cpu,
                         'memory_mb': memory_mb, 'disk_gb': disk_gb}}


def _flavor_sums(instances):
    """project -> [vcpus, memory_mb, disk_gb] of ``instances``' flavors."""
    sums = {}
    for instance in instances:
        flavor = instance.flavor
        if flavor is None:
            continue
        used = sums.setdefault(instance.project_id, [0, 0, 0])
        used[0] += flavor.vcpus
        used[1] += flavor.memory_mb
        used[2] += flavor.root_gb + flavor.ephemeral_gb
    return sums


def show_host(req):
    """GET /os-hosts/{host_name}: the compute host's resources."""
    _before_2_43(req)
    policies.authorize(req, 'os_compute_api:os-hosts:show')
    ctx = util.context(req)
    cell, service = _compute(req)
    host = service['host']
    total = [0, 0, 0]
    now = [0, 0, 0]
    for _c, node in cell_hosts.list_compute_nodes(ctx, host=host):
        total = [a + b for a, b in zip(total, (
            node['vcpus'], node['memory_mb'], node['local_gb']))]
        now = [a + b for a, b in zip(now, (
            node['vcpus_used'], node['memory_mb_used'],
            node['local_gb_used']))]
    sums = _flavor_sums(instance_records.list_instances(
        ctx, cell_hosts.database(cell), host=host))
    used_max = [sum(v[i] for v in sums.values()) for i in range(3)]
    resources = [_resource(host, '(total)', *total),
                 _resource(host, '(used_now)', *now),
                 _resource(host, '(used_max)', *used_max)]
    resources += [_resource(host, project, *sums[project])
                  for project in sorted(sums)]
    return util.json_response({'host': resources})


def update_host(req):
    """PUT /os-hosts/{host_name}: ``status`` enable/disable.

    :raises errors.NotImplementedYet: ``maintenance_mode``.
    """
    _before_2_43(req)
    policies.authorize(req, 'os_compute_api:os-hosts:update')
    body = util.extract_json(req, schema.UPDATE)
    cell, service = _compute(req)
    if 'maintenance_mode' in body:
        raise errors.NotImplementedYet('Virt driver does not implement '
                                       'host maintenance mode.')
    disabled = body['status'].lower() == 'disable'
    ctx = util.context(req)
    compute_records.update_service(
        ctx, cell_hosts.database(cell), service['id'],
        {'disabled': disabled,
         'disabled_reason': 'disabled with os-hosts' if disabled else None})
    nodes = [n['uuid'] for _c, n in cell_hosts.list_compute_nodes(
        ctx, host=service['host'])]
    placement_sync.set_disabled(ctx, util.conf(req), nodes, disabled)
    return util.json_response({
        'host': service['host'],
        'status': 'disabled' if disabled else 'enabled'})


def _power(req, rule):
    _before_2_43(req)
    policies.authorize(req, rule)
    _compute(req)
    raise errors.NotImplementedYet('Virt driver does not implement host '
                                   'power management.')


def reboot_host(req):
    """GET /os-hosts/{host_name}/reboot: 501."""
    return _power(req, 'os_compute_api:os-hosts:reboot')


def shutdown_host(req):
    """GET /os-hosts/{host_name}/shutdown: 501."""
    return _power(req, 'os_compute_api:os-hosts:shutdown')


def startup_host(req):
    """GET /os-hosts/{host_name}/startup: 501."""
    return _power(req, 'os_compute_api:os-hosts:start')
