# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The placement URL map and the dispatcher that serves it.

``ROUTE_DECLARATIONS`` is the whole API at a glance: a path template and,
for each method, the handler function. A path that matches no template is a
404; a known path with another method is a 405 naming the allowed ones.
"""

import logging

import webob

from common.wsgi import router
from services.placement import errors
from services.placement.handlers import aggregate
from services.placement.handlers import allocation
from services.placement.handlers import allocation_candidate
from services.placement.handlers import inventory
from services.placement.handlers import reshaper
from services.placement.handlers import resource_class
from services.placement.handlers import resource_provider
from services.placement.handlers import root
from services.placement.handlers import trait
from services.placement.handlers import usage

LOG = logging.getLogger(__name__)

ROUTE_DECLARATIONS = {
    '/': {
        'GET': root.home,
    },
    '/resource_providers': {
        'GET': resource_provider.list_resource_providers,
        'POST': resource_provider.create_resource_provider,
    },
    '/resource_providers/{uuid}': {
        'GET': resource_provider.get_resource_provider,
        'PUT': resource_provider.update_resource_provider,
        'DELETE': resource_provider.delete_resource_provider,
    },
    '/resource_providers/{uuid}/inventories': {
        'GET': inventory.get_inventories,
        'POST': inventory.create_inventory,
        'PUT': inventory.set_inventories,
        'DELETE': inventory.delete_inventories,
    },
    '/resource_providers/{uuid}/inventories/{resource_class}': {
        'GET': inventory.get_inventory,
        'PUT': inventory.update_inventory,
        'DELETE': inventory.delete_inventory,
    },
    '/resource_providers/{uuid}/usages': {
        'GET': usage.list_usages,
    },
    '/resource_providers/{uuid}/aggregates': {
        'GET': aggregate.get_aggregates,
        'PUT': aggregate.set_aggregates,
    },
    '/resource_providers/{uuid}/allocations': {
        'GET': allocation.list_for_resource_provider,
    },
    '/resource_providers/{uuid}/traits': {
        'GET': trait.list_traits_for_resource_provider,
        'PUT': trait.update_traits_for_resource_provider,
        'DELETE': trait.delete_traits_for_resource_provider,
    },
    '/resource_classes': {
        'GET': resource_class.list_resource_classes,
        'POST': resource_class.create_resource_class,
    },
    '/resource_classes/{name}': {
        'GET': resource_class.get_resource_class,
        'PUT': resource_class.update_resource_class,
        'DELETE': resource_class.delete_resource_class,
    },
    '/traits': {
        'GET': trait.list_traits,
    },
    '/traits/{name}': {
        'GET': trait.get_trait,
        'PUT': trait.put_trait,
        'DELETE': trait.delete_trait,
    },
    '/allocations': {
        'POST': allocation.set_allocations,
    },
    '/allocations/{consumer_uuid}': {
        'GET': allocation.list_for_consumer,
        'PUT': allocation.set_allocations_for_consumer,
        'DELETE': allocation.delete_allocations,
    },
    '/allocation_candidates': {
        'GET': allocation_candidate.list_allocation_candidates,
    },
    '/usages': {
        'GET': usage.get_total_usages,
    },
    '/reshaper': {
        'POST': reshaper.reshape,
    },
}


def _not_found():
    return errors.NotFound('The resource could not be found.')


def _not_allowed(allowed):
    return errors.PlacementError(status=405, headers={'allow': allowed})


class Router(object):
    """A WSGI app dispatching on ``ROUTE_DECLARATIONS``."""

    def __init__(self, declarations=None):
        self._routes = router.Router(declarations or ROUTE_DECLARATIONS,
                                     _not_found, _not_allowed)

    def __call__(self, environ, start_response):
        req = webob.Request(environ)
        handler, urlvars = self._routes.handler_for(req.method,
                                                    req.path_info)
        if req.method == 'GET':
            _check_accept(req)
        req.urlvars = urlvars
        resp = handler(req)
        return resp(environ, start_response)


def _check_accept(req):
    # NOTE: only JSON is provided; a client that names types but none that
    # covers JSON is told so rather than sent something it cannot read.
    if req.accept and not req.accept.acceptable_offers(['application/json']):
        raise errors.NotAcceptable('Only application/json is provided')
