# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The compute API's policy rules and their defaults.

Rule names are Nova's (``os_compute_api:...``) so that operators' policy
files carry over. The new defaults are project-scoped: a member of a
project manages that project's servers and server groups, a reader reads
them, an admin does everything and alone manages flavors, aggregates,
services, hypervisors and quotas, or forces a host. With
``[oslo_policy] enforce_new_defaults = False`` the project rules also admit
the legacy owner check (any role in the project), as Nova's do.
"""

from oslo_policy import policy

from common.wsgi import policy as wsgi_policy

ADMIN = 'rule:context_is_admin'
MEMBER = 'rule:project_member_or_admin'
READER = 'rule:project_reader_or_admin'
ANY = '@'
# Key pairs belong to a user: that user, or an admin.
ADMIN_OR_USER = 'rule:context_is_admin or user_id:%(user_id)s'
# A denial's message, worded as Nova's.
_DENIED = "Policy doesn't allow %s to be performed."

_LEGACY_OWNER = policy.DeprecatedRule(
    name='os_compute_api:legacy_admin_or_owner',
    check_str='is_admin:True or project_id:%(project_id)s',
    deprecated_reason='The compute API moved to project-scoped defaults '
                      'with member and reader roles.',
    deprecated_since='2023.1')

BASE_RULES = [
    policy.RuleDefault('context_is_admin', 'role:admin',
                       description='Decides what an admin is.'),
    policy.RuleDefault('project_member_api',
                       'role:member and project_id:%(project_id)s',
                       description='A member of the target project.'),
    policy.RuleDefault('project_reader_api',
                       'role:reader and project_id:%(project_id)s',
                       description='A reader of the target project.'),
    policy.RuleDefault('project_member_or_admin',
                       'rule:project_member_api or rule:context_is_admin',
                       description='A member of the project, or an admin.'),
    policy.RuleDefault('project_reader_or_admin',
                       'rule:project_reader_api or rule:context_is_admin',
                       description='A reader of the project, or an admin.'),
]

# (name, default, description, [(method, path)])
_OPERATIONS = [
    # servers
    ('os_compute_api:servers:index', READER, 'List servers.',
     [('GET', '/servers')]),
    ('os_compute_api:servers:detail', READER, 'List servers with details.',
     [('GET', '/servers/detail')]),
    ('os_compute_api:servers:index:get_all_tenants', ADMIN,
     'List the servers of every project.', [('GET', '/servers')]),
    ('os_compute_api:servers:detail:get_all_tenants', ADMIN,
     'List the servers of every project with details.',
     [('GET', '/servers/detail')]),
    ('os_compute_api:servers:show', READER, 'Show a server.',
     [('GET', '/servers/{server_id}')]),
    ('os_compute_api:servers:show:host_status', ADMIN,
     'Show the state of the server\'s host.',
     [('GET', '/servers/{server_id}')]),
    ('os_compute_api:os-extended-server-attributes', ADMIN,
     'Show the OS-EXT-SRV-ATTR attributes (host, node, instance name).',
     [('GET', '/servers/{server_id}')]),
    ('os_compute_api:servers:create', MEMBER, 'Create servers.',
     [('POST', '/servers')]),
    ('os_compute_api:servers:create:forced_host', ADMIN,
     'Create servers on a forced host (availability_zone zone:host:node).',
     [('POST', '/servers')]),
    ('os_compute_api:servers:create:requested_destination', ADMIN,
     'Create servers on a requested host or node (host, '
     'hypervisor_hostname).', [('POST', '/servers')]),
    ('os_compute_api:servers:update', MEMBER, 'Rename a server.',
     [('PUT', '/servers/{server_id}')]),
    ('os_compute_api:servers:delete', MEMBER, 'Delete a server.',
     [('DELETE', '/servers/{server_id}')]),
    ('os_compute_api:servers:rebuild', MEMBER,
     'Rebuild a server from an image.',
     [('POST', '/servers/{server_id}/action (rebuild)')]),
    ('os_compute_api:servers:create_image', MEMBER,
     'Snapshot a server into an image.',
     [('POST', '/servers/{server_id}/action (createImage)')]),
    ('os_compute_api:os-instance-actions:list', READER,
     'List the actions of a server.',
     [('GET', '/servers/{server_id}/os-instance-actions')]),
    ('os_compute_api:os-instance-actions:show', READER,
     'Show an action of a server.',
     [('GET', '/servers/{server_id}/os-instance-actions/{request_id}')]),
    ('os_compute_api:os-instance-actions:events', ADMIN,
     'Show the events of an action.',
     [('GET', '/servers/{server_id}/os-instance-actions/{request_id}')]),
    ('os_compute_api:servers:allow_all_filters', ADMIN,
     'List servers with the admin-only filters (deleted=true).',
     [('GET', '/servers'), ('GET', '/servers/detail')]),
    # server metadata and tags
    ('os_compute_api:server-metadata:index', READER,
     'List a server\'s metadata.',
     [('GET', '/servers/{server_id}/metadata')]),
    ('os_compute_api:server-metadata:show', READER,
     'Show a server metadata item.',
     [('GET', '/servers/{server_id}/metadata/{key}')]),
    ('os_compute_api:server-metadata:create', MEMBER,
     'Add or change server metadata items.',
     [('POST', '/servers/{server_id}/metadata')]),
    ('os_compute_api:server-metadata:update_all', MEMBER,
     'Replace a server\'s metadata.',
     [('PUT', '/servers/{server_id}/metadata')]),
    ('os_compute_api:server-metadata:update', MEMBER,
     'Set a server metadata item.',
     [('PUT', '/servers/{server_id}/metadata/{key}')]),
    ('os_compute_api:server-metadata:delete', MEMBER,
     'Delete a server metadata item.',
     [('DELETE', '/servers/{server_id}/metadata/{key}')]),
    ('os_compute_api:os-server-tags:index', READER,
     'List a server\'s tags.', [('GET', '/servers/{server_id}/tags')]),
    ('os_compute_api:os-server-tags:show', READER,
     'Check a server tag.', [('GET', '/servers/{server_id}/tags/{tag}')]),
    ('os_compute_api:os-server-tags:update_all', MEMBER,
     'Replace a server\'s tags.', [('PUT', '/servers/{server_id}/tags')]),
    ('os_compute_api:os-server-tags:update', MEMBER,
     'Add a server tag.', [('PUT', '/servers/{server_id}/tags/{tag}')]),
    ('os_compute_api:os-server-tags:delete_all', MEMBER,
     'Delete every server tag.',
     [('DELETE', '/servers/{server_id}/tags')]),
    ('os_compute_api:os-server-tags:delete', MEMBER,
     'Delete a server tag.',
     [('DELETE', '/servers/{server_id}/tags/{tag}')]),
    # key pairs
    ('os_compute_api:os-keypairs:index', ADMIN_OR_USER,
     'List a user\'s key pairs.', [('GET', '/os-keypairs')]),
    ('os_compute_api:os-keypairs:create', ADMIN_OR_USER,
     'Create or import a key pair.', [('POST', '/os-keypairs')]),
    ('os_compute_api:os-keypairs:show', ADMIN_OR_USER,
     'Show a key pair.', [('GET', '/os-keypairs/{keypair_name}')]),
    ('os_compute_api:os-keypairs:delete', ADMIN_OR_USER,
     'Delete a key pair.', [('DELETE', '/os-keypairs/{keypair_name}')]),
    # server actions: power, lock, reset state
] + [
    (name, MEMBER, description,
     [('POST', '/servers/{server_id}/action (%s)' % key)])
    for name, description, key in (
        ('os_compute_api:servers:stop', 'Stop a server.', 'os-stop'),
        ('os_compute_api:servers:start', 'Start a server.', 'os-start'),
        ('os_compute_api:servers:reboot', 'Reboot a server.', 'reboot'),
        ('os_compute_api:os-pause-server:pause', 'Pause a server.',
         'pause'),
        ('os_compute_api:os-pause-server:unpause', 'Unpause a server.',
         'unpause'),
        ('os_compute_api:os-suspend-server:suspend', 'Suspend a server.',
         'suspend'),
        ('os_compute_api:os-suspend-server:resume', 'Resume a server.',
         'resume'),
        ('os_compute_api:os-lock-server:lock', 'Lock a server.', 'lock'),
        ('os_compute_api:os-lock-server:unlock', 'Unlock a server.',
         'unlock'))
] + [
    ('os_compute_api:os-lock-server:unlock:unlock_override', ADMIN,
     'Unlock a server locked by somebody else (an admin).',
     [('POST', '/servers/{server_id}/action (unlock)')]),
    ('os_compute_api:os-admin-actions:reset_state', ADMIN,
     'Reset the state of a server.',
     [('POST', '/servers/{server_id}/action (os-resetState)')]),
    # resize and cold migration (services/api/actions/resize.py)
    ('os_compute_api:servers:resize', MEMBER, 'Resize a server.',
     [('POST', '/servers/{server_id}/action (resize)')]),
    ('os_compute_api:servers:confirm_resize', MEMBER,
     'Confirm a server resize or cold migration.',
     [('POST', '/servers/{server_id}/action (confirmResize)')]),
    ('os_compute_api:servers:revert_resize', MEMBER,
     'Revert a server resize or cold migration.',
     [('POST', '/servers/{server_id}/action (revertResize)')]),
    ('os_compute_api:os-migrate-server:migrate', ADMIN,
     'Cold migrate a server to a host the scheduler chooses.',
     [('POST', '/servers/{server_id}/action (migrate)')]),
    ('os_compute_api:os-migrate-server:migrate:host', ADMIN,
     'Cold migrate a server to a host of the caller\'s choice (2.56).',
     [('POST', '/servers/{server_id}/action (migrate)')]),
    # live migration and its migration's actions
    ('os_compute_api:os-migrate-server:migrate_live', ADMIN,
     'Live migrate a server to a new host without a reboot.',
     [('POST', '/servers/{server_id}/action (os-migrateLive)')]),
    ('os_compute_api:servers:migrations:force_complete', ADMIN,
     'Force an in-progress live migration of a server to complete.',
     [('POST', '/servers/{server_id}/migrations/{migration_id}/action')]),
    ('os_compute_api:servers:migrations:delete', ADMIN,
     'Abort an in-progress live migration of a server.',
     [('DELETE', '/servers/{server_id}/migrations/{migration_id}')]),
    # flavors
    ('os_compute_api:os-flavor-manage:create', ADMIN, 'Create a flavor.',
     [('POST', '/flavors')]),
    ('os_compute_api:os-flavor-manage:update', ADMIN,
     'Update a flavor\'s description.', [('PUT', '/flavors/{flavor_id}')]),
    ('os_compute_api:os-flavor-manage:delete', ADMIN, 'Delete a flavor.',
     [('DELETE', '/flavors/{flavor_id}')]),
    ('os_compute_api:os-flavor-extra-specs:index', READER,
     'List a flavor\'s extra specs.',
     [('GET', '/flavors/{flavor_id}/os-extra_specs')]),
    ('os_compute_api:os-flavor-extra-specs:show', READER,
     'Show one extra spec.',
     [('GET', '/flavors/{flavor_id}/os-extra_specs/{key}')]),
    ('os_compute_api:os-flavor-extra-specs:create', ADMIN,
     'Create extra specs.',
     [('POST', '/flavors/{flavor_id}/os-extra_specs')]),
    ('os_compute_api:os-flavor-extra-specs:update', ADMIN,
     'Update one extra spec.',
     [('PUT', '/flavors/{flavor_id}/os-extra_specs/{key}')]),
    ('os_compute_api:os-flavor-extra-specs:delete', ADMIN,
     'Delete one extra spec.',
     [('DELETE', '/flavors/{flavor_id}/os-extra_specs/{key}')]),
    ('os_compute_api:os-flavor-access', ADMIN,
     'List the projects of a private flavor.',
     [('GET', '/flavors/{flavor_id}/os-flavor-access')]),
    ('os_compute_api:os-flavor-access:add_tenant_access', ADMIN,
     'Give a project a private flavor.',
     [('POST', '/flavors/{flavor_id}/action (addTenantAccess)')]),
    ('os_compute_api:os-flavor-access:remove_tenant_access', ADMIN,
     'Take a private flavor from a project.',
     [('POST', '/flavors/{flavor_id}/action (removeTenantAccess)')]),
    # aggregates and zones
    ('os_compute_api:os-aggregates:index', ADMIN, 'List aggregates.',
     [('GET', '/os-aggregates')]),
    ('os_compute_api:os-aggregates:create', ADMIN, 'Create an aggregate.',
     [('POST', '/os-aggregates')]),
    ('os_compute_api:os-aggregates:show', ADMIN, 'Show an aggregate.',
     [('GET', '/os-aggregates/{aggregate_id}')]),
    ('os_compute_api:os-aggregates:update', ADMIN,
     'Rename an aggregate or change its zone.',
     [('PUT', '/os-aggregates/{aggregate_id}')]),
    ('os_compute_api:os-aggregates:delete', ADMIN, 'Delete an aggregate.',
     [('DELETE', '/os-aggregates/{aggregate_id}')]),
    ('os_compute_api:os-aggregates:add_host', ADMIN,
     'Add a host to an aggregate.',
     [('POST', '/os-aggregates/{aggregate_id}/action (add_host)')]),
    ('os_compute_api:os-aggregates:remove_host', ADMIN,
     'Remove a host from an aggregate.',
     [('POST', '/os-aggregates/{aggregate_id}/action (remove_host)')]),
    ('os_compute_api:os-aggregates:set_metadata', ADMIN,
     'Set aggregate metadata.',
     [('POST', '/os-aggregates/{aggregate_id}/action (set_metadata)')]),
    ('os_compute_api:os-availability-zone:list', ANY,
     'List availability zones.', [('GET', '/os-availability-zone')]),
    ('os_compute_api:os-availability-zone:detail', ADMIN,
     'List availability zones with their hosts and services.',
     [('GET', '/os-availability-zone/detail')]),
    # server groups
    ('os_compute_api:os-server-groups:create', MEMBER,
     'Create a server group.', [('POST', '/os-server-groups')]),
    ('os_compute_api:os-server-groups:delete', MEMBER,
     'Delete a server group.', [('DELETE', '/os-server-groups/{id}')]),
    ('os_compute_api:os-server-groups:index', READER,
     'List server groups.', [('GET', '/os-server-groups')]),
    ('os_compute_api:os-server-groups:index:all_projects', ADMIN,
     'List the server groups of every project.',
     [('GET', '/os-server-groups')]),
    ('os_compute_api:os-server-groups:show', READER,
     'Show a server group.', [('GET', '/os-server-groups/{id}')]),
    # services and hypervisors
    ('os_compute_api:os-services:list', ADMIN, 'List services.',
     [('GET', '/os-services')]),
    ('os_compute_api:os-services:update', ADMIN,
     'Enable, disable or force down a service.',
     [('PUT', '/os-services/{service_id}')]),
    ('os_compute_api:os-services:delete', ADMIN, 'Delete a service.',
     [('DELETE', '/os-services/{service_id}')]),
    ('os_compute_api:os-hypervisors:list', ADMIN, 'List hypervisors.',
     [('GET', '/os-hypervisors')]),
    ('os_compute_api:os-hypervisors:list-detail', ADMIN,
     'List hypervisors with details.', [('GET', '/os-hypervisors/detail')]),
    ('os_compute_api:os-hypervisors:show', ADMIN, 'Show a hypervisor.',
     [('GET', '/os-hypervisors/{hypervisor_id}')]),
    ('os_compute_api:os-hypervisors:statistics', ADMIN,
     'Show hypervisor totals.', [('GET', '/os-hypervisors/statistics')]),
    ('os_compute_api:os-hypervisors:uptime', ADMIN,
     'Show a hypervisor\'s uptime.',
     [('GET', '/os-hypervisors/{hypervisor_id}/uptime')]),
    ('os_compute_api:os-hypervisors:search', ADMIN,
     'Search hypervisors by name (before 2.53).',
     [('GET', '/os-hypervisors/{hypervisor_hostname_pattern}/search')]),
    ('os_compute_api:os-hypervisors:servers', ADMIN,
     'List the servers of hypervisors found by name (before 2.53).',
     [('GET', '/os-hypervisors/{hypervisor_hostname_pattern}/servers')]),
    # Berth extensions (doc/api.md)
    ('berth:capacity:headroom', ADMIN,
     'How many more servers of a flavor fit (a dry run of the scheduler).',
     [('GET', '/os-berth-capacity/headroom')]),
    # quotas and limits
    ('os_compute_api:os-quota-sets:show', READER, 'Show a project\'s quota.',
     [('GET', '/os-quota-sets/{project_id}')]),
    ('os_compute_api:os-quota-sets:detail', READER,
     'Show a project\'s quota with usage.',
     [('GET', '/os-quota-sets/{project_id}/detail')]),
    ('os_compute_api:os-quota-sets:defaults', ANY,
     'Show the default quota.',
     [('GET', '/os-quota-sets/{project_id}/defaults')]),
    ('os_compute_api:os-quota-sets:update', ADMIN,
     'Set a project\'s quota.', [('PUT', '/os-quota-sets/{project_id}')]),
    ('os_compute_api:os-quota-sets:delete', ADMIN,
     'Revert a project\'s quota to the defaults.',
     [('DELETE', '/os-quota-sets/{project_id}')]),
    ('os_compute_api:limits', ANY, 'Show the caller\'s limits and usage.',
     [('GET', '/limits')]),
    ('os_compute_api:limits:other_project', ADMIN,
     'Show another project\'s limits.', [('GET', '/limits')]),
    # usage
    ('os_compute_api:os-simple-tenant-usage:list', ADMIN,
     'List every project\'s usage.', [('GET', '/os-simple-tenant-usage')]),
    ('os_compute_api:os-simple-tenant-usage:show', READER,
     'Show a project\'s usage.',
     [('GET', '/os-simple-tenant-usage/{tenant_id}')]),
    # Berth extensions
    ('berth:capacity:report', ADMIN,
     'Show the capacity report page (utilization, headroom, stranded '
     'capacity, hosts by zone and aggregate).',
     [('GET', '/os-berth-capacity/report')]),
    ('berth:scheduler:why', ADMIN,
     'Show why a server is where it is: the decision records of its '
     'placements.',
     [('GET', '/os-berth-scheduler/decisions/{server_id}')]),
    # the built-in image catalog (Glance v2 paths)
    ('image:get_images', ANY, 'List images.',
     [('GET', '/image/v2/images')]),
    ('image:get_image', ANY, 'Show an image.',
     [('GET', '/image/v2/images/{image_id}')]),
    ('image:add_image', MEMBER, 'Create an image.',
     [('POST', '/image/v2/images')]),
    ('image:modify_image', MEMBER, 'Update an image.',
     [('PATCH', '/image/v2/images/{image_id}')]),
    ('image:upload_image', MEMBER, 'Upload image data.',
     [('PUT', '/image/v2/images/{image_id}/file')]),
    ('image:delete_image', MEMBER, 'Delete an image.',
     [('DELETE', '/image/v2/images/{image_id}')]),
    ('image:publicize_image', ADMIN, 'Make an image public.',
     [('POST', '/image/v2/images'), ('PATCH', '/image/v2/images/{id}')]),
]

# Small and legacy resources (doc/api.md, "Small and legacy resources").
_OPERATIONS += [
    ('os_compute_api:os-quota-class-sets:show', ADMIN,
     'Show a quota class.', [('GET', '/os-quota-class-sets/{id}')]),
    ('os_compute_api:os-quota-class-sets:update', ADMIN,
     'Set a quota class\'s limits (``default``: every project\'s).',
     [('PUT', '/os-quota-class-sets/{id}')]),
    ('os_compute_api:ips:index', READER, 'List a server\'s addresses.',
     [('GET', '/servers/{server_id}/ips')]),
    ('os_compute_api:ips:show', READER,
     'Show a server\'s addresses on one network.',
     [('GET', '/servers/{server_id}/ips/{network_label}')]),
    ('os_compute_api:os-server-password:show', READER,
     'Show a server\'s encrypted password.',
     [('GET', '/servers/{server_id}/os-server-password')]),
    ('os_compute_api:os-server-password:clear', MEMBER,
     'Clear a server\'s encrypted password.',
     [('DELETE', '/servers/{server_id}/os-server-password')]),
    ('os_compute_api:servers:topology:index', READER,
     'Show a server\'s NUMA topology.',
     [('GET', '/servers/{server_id}/topology')]),
    ('os_compute_api:servers:topology:host:index', ADMIN,
     'Show the host NUMA nodes and CPU pinning of a server\'s topology.',
     [('GET', '/servers/{server_id}/topology')]),
    ('os_compute_api:os-server-diagnostics', ADMIN,
     'Show a server\'s diagnostics (asks its compute agent).',
     [('GET', '/servers/{server_id}/diagnostics')]),
    ('os_compute_api:os-security-groups:get', READER,
     'List security groups (the implicit default one).',
     [('GET', '/os-security-groups')]),
    ('os_compute_api:os-security-groups:show', READER,
     'Show a security group.', [('GET', '/os-security-groups/{id}')]),
    ('os_compute_api:os-security-groups:list', READER,
     'List a server\'s security groups.',
     [('GET', '/servers/{server_id}/os-security-groups')]),
    ('os_compute_api:os-security-groups:create', MEMBER,
     'Change security groups or rules (refused: no network service).',
     [('POST', '/os-security-groups'),
      ('PUT', '/os-security-groups/{id}'),
      ('DELETE', '/os-security-groups/{id}'),
      ('POST', '/os-security-group-rules')]),
    ('os_compute_api:os-networks:list', READER, 'List networks (none).',
     [('GET', '/os-networks')]),
    ('os_compute_api:os-networks:manage', ADMIN,
     'Create a network (refused: no network service).',
     [('POST', '/os-networks')]),
    ('os_compute_api:os-tenant-networks:list', READER,
     'List project networks (none).', [('GET', '/os-tenant-networks')]),
    ('os_compute_api:os-tenant-networks:create', MEMBER,
     'Create a project network (refused: no network service).',
     [('POST', '/os-tenant-networks')]),
    ('os_compute_api:os-floating-ips:list', READER,
     'List floating IPs (none).', [('GET', '/os-floating-ips')]),
    ('os_compute_api:os-floating-ips:create', MEMBER,
     'Allocate a floating IP (refused: no network service).',
     [('POST', '/os-floating-ips')]),
    ('os_compute_api:os-instance-usage-audit-log:list', ADMIN,
     'Show the last usage audit period.',
     [('GET', '/os-instance_usage_audit_log')]),
    ('os_compute_api:os-instance-usage-audit-log:show', ADMIN,
     'Show the usage audit period before a time.',
     [('GET', '/os-instance_usage_audit_log/{before_timestamp}')]),
    ('os_compute_api:os-hosts:list', ADMIN, 'List hosts.',
     [('GET', '/os-hosts')]),
    ('os_compute_api:os-hosts:show', ADMIN,
     'Show a compute host\'s resources.', [('GET', '/os-hosts/{host}')]),
    ('os_compute_api:os-hosts:update', ADMIN,
     'Enable or disable a compute host.', [('PUT', '/os-hosts/{host}')]),
    ('os_compute_api:os-hosts:reboot', ADMIN, 'Reboot a host (501).',
     [('GET', '/os-hosts/{host}/reboot')]),
    ('os_compute_api:os-hosts:shutdown', ADMIN, 'Shut a host down (501).',
     [('GET', '/os-hosts/{host}/shutdown')]),
    ('os_compute_api:os-hosts:start', ADMIN, 'Start a host (501).',
     [('GET', '/os-hosts/{host}/startup')]),
    ('os_compute_api:os-server-external-events:create', ADMIN,
     'Send events about servers (network, volume, power changes).',
     [('POST', '/os-server-external-events')]),
    ('os_compute_api:os-migrations:index', ADMIN,
     'List the migrations (server moves) of every cell.',
     [('GET', '/os-migrations')]),
    ('os_compute_api:servers:migrations:index', ADMIN,
     'List a server\'s live migrations in progress.',
     [('GET', '/servers/{server_id}/migrations')]),
    ('os_compute_api:servers:migrations:show', ADMIN,
     'Show a server\'s live migration in progress.',
     [('GET', '/servers/{server_id}/migrations/{migration_id}')]),
    ('os_compute_api:extensions', ANY, 'List the API extensions.',
     [('GET', '/extensions'), ('GET', '/extensions/{alias}')]),
]


def _rule(name, check_str, description, operations):
    deprecated = _LEGACY_OWNER if check_str in (MEMBER, READER) else None
    return wsgi_policy.documented_rule(name, check_str, description,
                                       operations, deprecated_rule=deprecated)


def list_rules():
    """Every compute API rule, for the enforcer and oslopolicy-* tools."""
    return BASE_RULES + [_rule(*op) for op in _OPERATIONS]


_ENFORCER = wsgi_policy.EnforcerHolder(list_rules)
get_enforcer, reset = _ENFORCER.get, _ENFORCER.reset


def authorize(req, action, target=None, fatal=True):
    """Enforce ``action`` for the request's caller.

    :param req: the webob request (its context and config are used).
    :param action: the rule name.
    :param target: the policy target; defaults to the caller's project.
    :param fatal: raise on denial; otherwise return False.
    :raises errors.Forbidden: when denied and ``fatal``.
    """
    from services.api import errors
    from services.api import util
    return wsgi_policy.authorize(
        util.context(req), get_enforcer(util.conf(req)), action, target,
        denied=errors.Forbidden, message=_DENIED, fatal=fatal)
