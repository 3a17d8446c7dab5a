# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Placement's policy rules and their defaults.

The new defaults are project-scoped: an admin or a service user may do
everything; a reader of a project may read that project's usages; only a
service may reshape. With ``[oslo_policy] enforce_new_defaults = False``
each rule also admits the legacy ``role:admin``, as upstream.
"""

from oslo_policy import policy

from common.wsgi import policy as wsgi_policy

ADMIN = 'rule:admin_api'
SERVICE = 'rule:service_api'
ADMIN_OR_SERVICE = 'rule:admin_or_service_api'
ADMIN_OR_PROJECT_READER_OR_SERVICE = (
    'rule:admin_or_project_reader_or_service_api')
# A denial's message, worded as upstream's.
_DENIED = 'Policy does not allow %s to be performed.'

_LEGACY_ADMIN = policy.DeprecatedRule(
    name='placement:legacy_admin_api', check_str='role:admin',
    deprecated_reason='Placement moved to project-scoped defaults with a '
                      'service role.',
    deprecated_since='2023.1')

BASE_RULES = [
    policy.RuleDefault('admin_api', 'role:admin',
                       description='Default rule for most placement APIs.',
                       scope_types=['project']),
    policy.RuleDefault('service_api', 'role:service',
                       description='Default rule for service-to-service '
                                   'placement APIs.',
                       scope_types=['project']),
    policy.RuleDefault('admin_or_service_api',
                       'role:admin or role:service',
                       description='Default rule for most placement APIs.',
                       scope_types=['project']),
    policy.RuleDefault('project_reader_api',
                       'role:reader and project_id:%(project_id)s',
                       description='Default rule for project level reader '
                                   'APIs.'),
    policy.RuleDefault('admin_or_project_reader_or_service_api',
                       'role:admin or rule:project_reader_api or '
                       'role:service',
                       description='Default rule for project level reader '
                                   'APIs.',
                       scope_types=['project']),
]


def _rule(name, check_str, description, operations):
    return wsgi_policy.documented_rule(name, check_str, description,
                                       operations,
                                       deprecated_rule=_LEGACY_ADMIN)


# (name, default, description, [(method, path)])
_OPERATIONS = [
    ('placement:resource_providers:list', ADMIN_OR_SERVICE,
     'List resource providers.', [('GET', '/resource_providers')]),
    ('placement:resource_providers:create', ADMIN_OR_SERVICE,
     'Create resource provider.', [('POST', '/resource_providers')]),
    ('placement:resource_providers:show', ADMIN_OR_SERVICE,
     'Show resource provider.', [('GET', '/resource_providers/{uuid}')]),
    ('placement:resource_providers:update', ADMIN_OR_SERVICE,
     'Update resource provider.', [('PUT', '/resource_providers/{uuid}')]),
    ('placement:resource_providers:delete', ADMIN_OR_SERVICE,
     'Delete resource provider.', [('DELETE', '/resource_providers/{uuid}')]),
    ('placement:resource_classes:list', ADMIN_OR_SERVICE,
     'List resource classes.', [('GET', '/resource_classes')]),
    ('placement:resource_classes:create', ADMIN_OR_SERVICE,
     'Create resource class.', [('POST', '/resource_classes')]),
    ('placement:resource_classes:show', ADMIN_OR_SERVICE,
     'Show resource class.', [('GET', '/resource_classes/{name}')]),
    ('placement:resource_classes:update', ADMIN_OR_SERVICE,
     'Update resource class.', [('PUT', '/resource_classes/{name}')]),
    ('placement:resource_classes:delete', ADMIN_OR_SERVICE,
     'Delete resource class.', [('DELETE', '/resource_classes/{name}')]),
    ('placement:resource_providers:inventories:list', ADMIN_OR_SERVICE,
     'List resource provider inventories.',
     [('GET', '/resource_providers/{uuid}/inventories')]),
    ('placement:resource_providers:inventories:create', ADMIN_OR_SERVICE,
     'Create one resource provider inventory.',
     [('POST', '/resource_providers/{uuid}/inventories')]),
    ('placement:resource_providers:inventories:show', ADMIN_OR_SERVICE,
     'Show resource provider inventory.',
     [('GET', '/resource_providers/{uuid}/inventories/{resource_class}')]),
    ('placement:resource_providers:inventories:update', ADMIN_OR_SERVICE,
     'Update resource provider inventory.',
     [('PUT', '/resource_providers/{uuid}/inventories'),
      ('PUT', '/resource_providers/{uuid}/inventories/{resource_class}')]),
    ('placement:resource_providers:inventories:delete', ADMIN_OR_SERVICE,
     'Delete resource provider inventory.',
     [('DELETE', '/resource_providers/{uuid}/inventories'),
      ('DELETE',
       '/resource_providers/{uuid}/inventories/{resource_class}')]),
    ('placement:resource_providers:aggregates:list', ADMIN_OR_SERVICE,
     'List resource provider aggregates.',
     [('GET', '/resource_providers/{uuid}/aggregates')]),
    ('placement:resource_providers:aggregates:update', ADMIN_OR_SERVICE,
     'Update resource provider aggregates.',
     [('PUT', '/resource_providers/{uuid}/aggregates')]),
    ('placement:resource_providers:usages', ADMIN_OR_SERVICE,
     'List resource provider usages.',
     [('GET', '/resource_providers/{uuid}/usages')]),
    ('placement:usages', ADMIN_OR_PROJECT_READER_OR_SERVICE,
     'List total resource usages for a given project.',
     [('GET', '/usages')]),
    ('placement:traits:list', ADMIN_OR_SERVICE,
     'List traits.', [('GET', '/traits')]),
    ('placement:traits:show', ADMIN_OR_SERVICE,
     'Show trait.', [('GET', '/traits/{name}')]),
    ('placement:traits:update', ADMIN_OR_SERVICE,
     'Update trait.', [('PUT', '/traits/{name}')]),
    ('placement:traits:delete', ADMIN_OR_SERVICE,
     'Delete trait.', [('DELETE', '/traits/{name}')]),
    ('placement:resource_providers:traits:list', ADMIN_OR_SERVICE,
     'List resource provider traits.',
     [('GET', '/resource_providers/{uuid}/traits')]),
    ('placement:resource_providers:traits:update', ADMIN_OR_SERVICE,
     'Update resource provider traits.',
     [('PUT', '/resource_providers/{uuid}/traits')]),
    ('placement:resource_providers:traits:delete', ADMIN_OR_SERVICE,
     'Delete resource provider traits.',
     [('DELETE', '/resource_providers/{uuid}/traits')]),
    ('placement:allocations:manage', ADMIN_OR_SERVICE,
     'Manage allocations.', [('POST', '/allocations')]),
    ('placement:allocations:list', ADMIN_OR_SERVICE,
     'List allocations.', [('GET', '/allocations/{consumer_uuid}')]),
    ('placement:allocations:update', ADMIN_OR_SERVICE,
     'Update allocations.', [('PUT', '/allocations/{consumer_uuid}')]),
    ('placement:allocations:delete', ADMIN_OR_SERVICE,
     'Delete allocations.', [('DELETE', '/allocations/{consumer_uuid}')]),
    ('placement:resource_providers:allocations:list', ADMIN_OR_SERVICE,
     'List resource provider allocations.',
     [('GET', '/resource_providers/{uuid}/allocations')]),
    ('placement:allocation_candidates:list', ADMIN_OR_SERVICE,
     'List allocation candidates.', [('GET', '/allocation_candidates')]),
    ('placement:reshaper:reshape', SERVICE,
     'Reshape Inventory and Allocations.', [('POST', '/reshaper')]),
]


def list_rules():
    """Every placement rule, for the enforcer and oslopolicy-* tools."""
    return BASE_RULES + [_rule(*op) for op in _OPERATIONS]


_ENFORCER = wsgi_policy.EnforcerHolder(list_rules)
get_enforcer, reset = _ENFORCER.get, _ENFORCER.reset


def authorize(req, action, target=None):
    """Enforce ``action`` for the request's caller; raises 403 when denied.

    :param req: the webob request (its context is used).
    :param action: the rule name.
    :param target: the policy target; defaults to the caller's project.
    """
    from common.conf import CONF
    from services.placement import errors
    from services.placement import util
    wsgi_policy.authorize(util.context(req), get_enforcer(CONF), action,
                          target, denied=errors.Forbidden, message=_DENIED)
