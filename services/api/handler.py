# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The compute API URL map and the dispatcher that serves it.

``ROUTE_DECLARATIONS`` is the v2.1 API at a glance, paths relative to
``/v2.1``. As in Nova, every path may also carry the project id after
``/v2.1`` (``/v2.1/{project_id}/servers``), the form of keystone catalogs
that still name it. ``IMAGE_ROUTE_DECLARATIONS`` is the built-in image
catalog under ``/image`` (Glance v2 paths).
"""

import webob

from services.api import errors
from services.api.handlers import aggregate_images
from services.api.handlers import aggregates
from services.api.handlers import availability_zones
from services.api.handlers import capacity
from services.api.handlers import capacity_report
from services.api.handlers import extensions
from services.api.handlers import external_events
from services.api.handlers import flavor_access
from services.api.handlers import flavor_extra_specs
from services.api.handlers import flavors
from services.api.handlers import hypervisors
from services.api.handlers import identity
from services.api.handlers import image_proxy
from services.api.handlers import images
from services.api.handlers import instance_actions
from services.api.handlers import keypairs
from services.api.handlers import legacy_hosts
from services.api.handlers import limits
from services.api.handlers import migrations
from services.api.handlers import network_proxies
from services.api.handlers import quota_classes
from services.api.handlers import quota_sets
from services.api.handlers import root
from services.api.handlers import scheduler_decisions
from services.api.handlers import server_actions
from services.api.handlers import server_diagnostics
from services.api.handlers import server_extras
from services.api.handlers import server_groups
from services.api.handlers import server_metadata
from services.api.handlers import server_migration_actions
from services.api.handlers import server_migrations
from services.api.handlers import server_tags
from services.api.handlers import servers
from services.api.handlers import services
from services.api.handlers import simple_tenant_usage
from services.api.handlers import usage_audit_log
from services.api import router
from services.api import util

V21 = '/v2.1'

ROUTE_DECLARATIONS = {
    '/': {'GET': root.version_v21},
    '/servers': {
        'GET': servers.list_servers,
        'POST': servers.create_server,
    },
    '/servers/detail': {'GET': servers.list_servers_detail},
    '/servers/{server_id}': {
        'GET': servers.show_server,
        'PUT': servers.update_server,
        'DELETE': servers.delete_server,
    },
    '/servers/{server_id}/action': {'POST': server_actions.server_action},
    '/servers/{server_id}/migrations/{migration_id}': {
        'DELETE': server_migration_actions.abort,
    },
    '/servers/{server_id}/migrations/{migration_id}/action': {
        'POST': server_migration_actions.force_complete,
    },
    '/servers/{server_id}/os-instance-actions': {
        'GET': instance_actions.list_actions,
    },
    '/servers/{server_id}/os-instance-actions/{request_id}': {
        'GET': instance_actions.show_action,
    },
    '/servers/{server_id}/metadata': {
        'GET': server_metadata.list_metadata,
        'POST': server_metadata.create_metadata,
        'PUT': server_metadata.update_metadata,
    },
    '/servers/{server_id}/metadata/{key}': {
        'GET': server_metadata.show_metadata_item,
        'PUT': server_metadata.update_metadata_item,
        'DELETE': server_metadata.delete_metadata_item,
    },
    '/servers/{server_id}/tags': {
        'GET': server_tags.list_tags,
        'PUT': server_tags.update_tags,
        'DELETE': server_tags.delete_tags,
    },
    '/servers/{server_id}/tags/{tag}': {
        'GET': server_tags.show_tag,
        'PUT': server_tags.update_tag,
        'DELETE': server_tags.delete_tag,
    },
    '/os-keypairs': {
        'GET': keypairs.list_keypairs,
        'POST': keypairs.create_keypair,
    },
    '/os-keypairs/{keypair_name}': {
        'GET': keypairs.show_keypair,
        'DELETE': keypairs.delete_keypair,
    },
    '/flavors': {
        'GET': flavors.list_flavors,
        'POST': flavors.create_flavor,
    },
    '/flavors/detail': {'GET': flavors.list_flavors_detail},
    '/flavors/{flavor_id}': {
        'GET': flavors.show_flavor,
        'PUT': flavors.update_flavor,
        'DELETE': flavors.delete_flavor,
    },
    '/flavors/{flavor_id}/action': {'POST': flavor_access.flavor_action},
    '/flavors/{flavor_id}/os-flavor-access': {
        'GET': flavor_access.list_access,
    },
    '/flavors/{flavor_id}/os-extra_specs': {
        'GET': flavor_extra_specs.list_extra_specs,
        'POST': flavor_extra_specs.create_extra_specs,
    },
    '/flavors/{flavor_id}/os-extra_specs/{key}': {
        'GET': flavor_extra_specs.show_extra_spec,
        'PUT': flavor_extra_specs.update_extra_spec,
        'DELETE': flavor_extra_specs.delete_extra_spec,
    },
    '/os-aggregates': {
        'GET': aggregates.list_aggregates,
        'POST': aggregates.create_aggregate,
    },
    '/os-aggregates/{aggregate_id}': {
        'GET': aggregates.show_aggregate,
        'PUT': aggregates.update_aggregate,
        'DELETE': aggregates.delete_aggregate,
    },
    '/os-aggregates/{aggregate_id}/action': {
        'POST': aggregates.aggregate_action,
    },
    '/os-aggregates/{aggregate_id}/images': {
        'POST': aggregate_images.cache_images,
    },
    '/os-availability-zone': {'GET': availability_zones.list_zones},
    '/os-availability-zone/detail': {
        'GET': availability_zones.list_zones_detail,
    },
    '/os-server-groups': {
        'GET': server_groups.list_groups,
        'POST': server_groups.create_group,
    },
    '/os-server-groups/{group_id}': {
        'GET': server_groups.show_group,
        'DELETE': server_groups.delete_group,
    },
    '/os-services': {'GET': services.list_services},
    '/os-services/{service_id}': {
        'PUT': services.update_service,
        'DELETE': services.delete_service,
    },
    '/os-hypervisors': {'GET': hypervisors.list_hypervisors},
    '/os-hypervisors/detail': {'GET': hypervisors.list_hypervisors_detail},
    '/os-hypervisors/statistics': {
        'GET': hypervisors.hypervisor_statistics,
    },
    '/os-hypervisors/{hypervisor_id}': {
        'GET': hypervisors.show_hypervisor,
    },
    '/os-hypervisors/{hypervisor_id}/uptime': {
        'GET': hypervisors.hypervisor_uptime,
    },
    '/os-hypervisors/{pattern}/search': {
        'GET': hypervisors.search_hypervisors,
    },
    '/os-hypervisors/{pattern}/servers': {
        'GET': hypervisors.hypervisor_servers,
    },
    '/os-quota-sets/{project_id}': {
        'GET': quota_sets.show_quota,
        'PUT': quota_sets.update_quota,
        'DELETE': quota_sets.delete_quota,
    },
    '/os-quota-sets/{project_id}/defaults': {
        'GET': quota_sets.show_defaults,
    },
    '/os-quota-sets/{project_id}/detail': {
        'GET': quota_sets.show_quota_detail,
    },
    '/limits': {'GET': limits.show_limits},
    '/os-simple-tenant-usage': {'GET': simple_tenant_usage.list_usage},
    '/os-simple-tenant-usage/{tenant_id}': {
        'GET': simple_tenant_usage.show_usage,
    },
    # Berth extensions (doc/api.md), under paths of their own.
    '/os-berth-capacity/report': {'GET': capacity_report.show_report},
    '/os-berth-scheduler/decisions/{server_id}': {
        'GET': scheduler_decisions.show_decisions,
    },
    '/os-berth-capacity/headroom': {'GET': capacity.headroom},
}

# Small resources Nova has and Berth answers without the services behind
# them (doc/api.md, "Small and legacy resources").
ROUTE_DECLARATIONS.update({
    '/os-quota-class-sets/{class_name}': {
        'GET': quota_classes.show_quota_class,
        'PUT': quota_classes.update_quota_class,
    },
    '/servers/{server_id}/ips': {'GET': server_extras.list_ips},
    '/servers/{server_id}/ips/{network_label}': {
        'GET': server_extras.show_ips,
    },
    '/servers/{server_id}/os-server-password': {
        'GET': server_extras.show_password,
        'DELETE': server_extras.clear_password,
    },
    '/servers/{server_id}/topology': {'GET': server_extras.show_topology},
    '/servers/{server_id}/diagnostics': {
        'GET': server_diagnostics.show_diagnostics,
    },
    '/servers/{server_id}/os-security-groups': {
        'GET': network_proxies.list_server_security_groups,
    },
    '/os-security-groups': {
        'GET': network_proxies.list_security_groups,
        'POST': network_proxies.refuse_security_groups,
    },
    '/os-security-groups/{security_group_id}': {
        'GET': network_proxies.show_security_group,
        'PUT': network_proxies.refuse_security_groups,
        'DELETE': network_proxies.refuse_security_groups,
    },
    '/os-security-group-rules': {
        'POST': network_proxies.refuse_security_groups,
    },
    '/os-networks': {
        'GET': network_proxies.list_networks,
        'POST': network_proxies.refuse_networks,
    },
    '/os-tenant-networks': {
        'GET': network_proxies.list_tenant_networks,
        'POST': network_proxies.refuse_tenant_networks,
    },
    '/os-floating-ips': {
        'GET': network_proxies.list_floating_ips,
        'POST': network_proxies.refuse_floating_ips,
    },
    '/os-instance_usage_audit_log': {
        'GET': usage_audit_log.list_audit_logs,
    },
    '/os-instance_usage_audit_log/{before_timestamp}': {
        'GET': usage_audit_log.show_audit_log,
    },
    '/os-hosts': {'GET': legacy_hosts.list_hosts},
    '/os-hosts/{host_name}': {
        'GET': legacy_hosts.show_host,
        'PUT': legacy_hosts.update_host,
    },
    '/os-hosts/{host_name}/reboot': {'GET': legacy_hosts.reboot_host},
    '/os-hosts/{host_name}/shutdown': {'GET': legacy_hosts.shutdown_host},
    '/os-hosts/{host_name}/startup': {'GET': legacy_hosts.startup_host},
    '/images': {'GET': image_proxy.list_images},
    '/images/detail': {'GET': image_proxy.list_images_detail},
    '/images/{image_id}': {
        'GET': image_proxy.show_image,
        'DELETE': image_proxy.delete_image,
    },
    '/images/{image_id}/metadata': {
        'GET': image_proxy.list_metadata,
        'PUT': image_proxy.replace_metadata,
        'POST': image_proxy.update_metadata,
    },
    '/images/{image_id}/metadata/{meta_key}': {
        'GET': image_proxy.show_metadata,
        'PUT': image_proxy.set_metadata_item,
        'DELETE': image_proxy.delete_metadata_item,
    },
    '/os-server-external-events': {
        'POST': external_events.create_events,
    },
    '/extensions': {'GET': extensions.list_extensions},
    '/extensions/{alias}': {'GET': extensions.show_extension},
})


def add_routes(routes):
    """Merge a module's ``ROUTES`` (path -> method -> handler) in: modules
    serving different methods of one path sit side by side.
    """
    for path, methods in routes.items():
        ROUTE_DECLARATIONS.setdefault(path, {}).update(methods)


# Server moves: os-migrations and the GETs of /servers/{id}/migrations.
add_routes(migrations.ROUTES)
add_routes(server_migrations.ROUTES)


IMAGE_ROUTE_DECLARATIONS = {
    '/image': {'GET': images.versions},
    '/image/v2/images': {
        'GET': images.list_images,
        'POST': images.create_image,
    },
    '/image/v2/images/{image_id}': {
        'GET': images.show_image,
        'PATCH': images.update_image,
        'DELETE': images.delete_image,
    },
    '/image/v2/images/{image_id}/file': {
        'GET': images.download_image,
        'PUT': images.upload_image,
    },
    '/image/v2/images/{image_id}/tags/{tag}': {
        'PUT': images.add_tag,
        'DELETE': images.delete_tag,
    },
}

# The noauth2 stand-in for Keystone (see handlers/identity.py).
IDENTITY_ROUTE_DECLARATIONS = {
    '/identity': {'GET': identity.versions},
    '/identity/v3': {'GET': identity.version_v3},
    '/identity/v3/auth/tokens': {'POST': identity.create_token,
                                 'GET': identity.show_token},
    '/identity/v3/projects': {'GET': identity.list_projects},
    '/identity/v3/projects/{project_id}': {'GET': identity.show_project},
}

# The first path segments under /v2.1 that are resources, not a project.
TOP_LEVEL = frozenset(t.split('/')[1] for t in ROUTE_DECLARATIONS if t != '/')


def _not_found():
    return errors.NotFound('The resource could not be found.')


def _not_allowed(allowed):
    return errors.MethodNotAllowed(
        'The method is not allowed for this resource.',
        headers={'Allow': allowed})


def split_project(path):
    """The project id a path under /v2.1 names, and its route path.

    :returns: ``(project_id or None, path relative to /v2.1)``, or
        ``(None, None)`` when ``path`` is not under /v2.1.
    """
    if path != V21 and not path.startswith(V21 + '/'):
        return None, None
    rest = path[len(V21):] or '/'
    segments = rest.strip('/').split('/')
    if segments[0] and segments[0] not in TOP_LEVEL and len(segments) > 1:
        return segments[0], '/' + '/'.join(segments[1:])
    return None, rest


def compute_path(path):
    """The route path of a request under /v2.1, project id removed.

    :returns: the path relative to /v2.1, or None when ``path`` is not
        under /v2.1.
    """
    return split_project(path)[1]


def check_url_project(req, project_id):
    """Refuse a path naming a project other than the caller's, as Nova.

    NOTE: Nova compares the two for every caller, admins included: an
    admin scoped to one project reaches another's resources through
    query parameters (``all_tenants``, ``tenant_id``), never the URL.

    :raises errors.BadRequest: the path's project is not the token's.
    """
    ctx = req.environ.get(util.CONTEXT_KEY)
    if ctx is None or not project_id or not ctx.project_id:
        return
    if project_id != ctx.project_id:
        raise errors.BadRequest(
            "Malformed request URL: URL's project_id '%s' doesn't match "
            "Context's project_id '%s'" % (project_id, ctx.project_id))


class Dispatcher(object):
    """The WSGI app at the bottom of the stack: route and call a handler.
    """

    def __init__(self, conf):
        self.conf = conf
        self.compute = router.Router(ROUTE_DECLARATIONS, _not_found,
                                     _not_allowed)
        self.image = router.Router(IMAGE_ROUTE_DECLARATIONS, _not_found,
                                   _not_allowed)
        self.identity = router.Router(IDENTITY_ROUTE_DECLARATIONS,
                                      _not_found, _not_allowed)

    def _handler(self, req):
        path = req.path_info or '/'
        if path == '/':
            return root.versions, {}
        if path in ('/v2', '/v2/') and req.method == 'GET':
            return root.version_v20, {}
        if path == '/image' or path.startswith('/image/'):
            return self.image.handler_for(req.method, path)
        if path == '/identity' or path.startswith('/identity/'):
            return self.identity.handler_for(req.method, path)
        project_id, relative = split_project(path)
        if relative is None:
            raise _not_found()
        found = self.compute.handler_for(req.method, relative)
        # NOTE: after routing, as Nova: an unknown path stays a 404.
        check_url_project(req, project_id)
        return found

    def __call__(self, environ, start_response):
        req = webob.Request(environ)
        handler, urlvars = self._handler(req)
        req.urlvars = urlvars
        resp = handler(req)
        return resp(environ, start_response)
