# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /resource_providers/{uuid}/inventories[/{resource_class}].

Every body is validated completely (schema, resource classes, reserved
against total) before anything is written; each write is one transaction
that also bumps the provider generation once.
"""

from services.placement import errors
from services.placement.objects import catalog
from services.placement.objects import inventory as inv_obj
from services.placement.objects import resource_provider as rp_obj
from services.placement import policies
from services.placement.schemas import inventory as schema
from services.placement import util


def _record_view(record, generation=None):
    view = dict(record)
    if generation is not None:
        view['resource_provider_generation'] = generation
    return view


def _location(req, uuid, rc_name):
    # NOTE: an absolute URL, as upstream answers POST with.
    return '%s/resource_providers/%s/inventories/%s' % (
        req.application_url, uuid, rc_name)


def _check_capacity(req, provider, rc_name, record, action):
    problem = inv_obj.capacity_problem(
        record, reserved_may_equal_total=util.version(req) >= (1, 26))
    if problem:
        raise errors.BadRequest(
            "Unable to %s inventory for resource provider %s: Invalid "
            "inventory for '%s' on resource provider '%s'. %s"
            % (action, provider['uuid'], rc_name, provider['uuid'], problem))


def _inventories_response(req, provider, status=200, read=None):
    """:param read: (records, newest) of ``inv_obj.get_all`` if read
    already.
    """
    records, newest = read or inv_obj.get_all(util.context(req),
                                              provider['id'])
    data = {'resource_provider_generation': provider['generation'],
            'inventories': records}
    return util.json_response(req, data, status=status, last_modified=newest)


def get_inventories(req):
    """GET .../inventories: every inventory of the provider.

    :raises errors.NotFound: no such provider.
    """
    policies.authorize(req, 'placement:resource_providers:inventories:list')
    provider, read = rp_obj.read_with(util.context(req), req.urlvars['uuid'],
                                      inv_obj.get_all)
    return _inventories_response(req, provider, read=read)


def create_inventory(req):
    """POST .../inventories: add one class; 201 with a Location.

    :raises errors.BadRequest: bad body, unknown class, reserved too big.
    :raises errors.Conflict: the class is already in the inventory.
    """
    policies.authorize(req,
                       'placement:resource_providers:inventories:create')
    ctx = util.context(req)
    provider = rp_obj.get_or_404(ctx, req.urlvars['uuid'])
    data = util.extract_json(req, schema.POST)
    rc_name = data['resource_class']
    rc_id = catalog.RESOURCE_CLASSES.id_for(ctx, rc_name)
    if rc_id is None:
        raise errors.BadRequest('No such resource class %s' % rc_name)
    record = inv_obj.with_defaults(data)
    _check_capacity(req, provider, rc_name, record, 'create')
    inv_obj.add(ctx, provider, rc_id, record)
    return util.json_response(
        req, _record_view(record, provider['generation']), status=201,
        headers={'location': _location(req, provider['uuid'], rc_name)})


def set_inventories(req):
    """PUT .../inventories: replace the whole inventory set.

    :raises errors.BadRequest: bad body, unknown class, reserved too big.
    :raises errors.Conflict: stale generation, or a class to be removed
        still has allocations.
    """
    policies.authorize(req,
                       'placement:resource_providers:inventories:update')
    ctx = util.context(req)
    provider = rp_obj.get_or_404(ctx, req.urlvars['uuid'])
    data = util.extract_json(req, schema.PUT_ALL)
    records = {}
    for rc_name, body in data['inventories'].items():
        rc_id = catalog.RESOURCE_CLASSES.id_for(ctx, rc_name)
        if rc_id is None:
            raise errors.BadRequest(
                'Unknown resource class in inventory for resource provider '
                '%s: %s' % (provider['uuid'], rc_name))
        record = inv_obj.with_defaults(body)
        _check_capacity(req, provider, rc_name, record, 'update')
        records[rc_id] = record
    inv_obj.replace_all(ctx, provider, data['resource_provider_generation'],
                        records)
    return _inventories_response(req, provider)


def delete_inventories(req):
    """DELETE .../inventories (1.5): remove every inventory record.

    :raises errors.Conflict: some class still has allocations.
    """
    if util.version(req) < (1, 5):
        # NOTE: before 1.5 the method does not exist on this URL at all.
        raise errors.PlacementError(status=405,
                                    headers={'allow': 'GET, POST, PUT'})
    policies.authorize(req,
                       'placement:resource_providers:inventories:delete')
    ctx = util.context(req)
    provider = rp_obj.get_or_404(ctx, req.urlvars['uuid'])
    inv_obj.delete_all(ctx, provider)
    return util.no_content(req)


def _provider_and_class(req):
    ctx = util.context(req)
    provider = rp_obj.get_or_404(ctx, req.urlvars['uuid'])
    rc_name = req.urlvars['resource_class']
    return ctx, provider, rc_name, catalog.RESOURCE_CLASSES.id_for(
        ctx, rc_name)


def get_inventory(req):
    """GET .../inventories/{resource_class}.

    :raises errors.NotFound: no provider, or no inventory of the class.
    """
    policies.authorize(req, 'placement:resource_providers:inventories:show')
    ctx, provider, rc_name, rc_id = _provider_and_class(req)
    record = newest = None
    if rc_id is not None:
        record, newest = inv_obj.get_one(ctx, provider['id'], rc_id)
    if record is None:
        raise errors.NotFound('No inventory of class %s for %s'
                              % (rc_name, provider['uuid']))
    return util.json_response(
        req, _record_view(record, provider['generation']),
        last_modified=newest)


def update_inventory(req):
    """PUT .../inventories/{resource_class}: replace one record.

    :raises errors.BadRequest: bad body, reserved too big, or no inventory
        of that class to update.
    :raises errors.Conflict: stale generation.
    """
    policies.authorize(req,
                       'placement:resource_providers:inventories:update')
    ctx, provider, rc_name, rc_id = _provider_and_class(req)
    data = util.extract_json(req, schema.PUT_ONE)
    record = inv_obj.with_defaults(data)
    _check_capacity(req, provider, rc_name, record, 'update')
    if rc_id is None:
        raise errors.BadRequest(
            'No inventory record with resource class for resource provider '
            '%s: No such resource class %s.' % (provider['uuid'], rc_name))
    inv_obj.update_one(ctx, provider, data['resource_provider_generation'],
                       rc_id, record)
    return util.json_response(
        req, _record_view(record, provider['generation']))


def delete_inventory(req):
    """DELETE .../inventories/{resource_class}.

    :raises errors.NotFound: no provider, or no inventory of the class.
    :raises errors.Conflict: the class has allocations.
    """
    policies.authorize(req,
                       'placement:resource_providers:inventories:delete')
    ctx, provider, rc_name, rc_id = _provider_and_class(req)
    if rc_id is None:
        raise errors.NotFound(
            'No inventory of class %s found for delete' % rc_name)
    inv_obj.delete_one(ctx, provider, rc_id)
    return util.no_content(req)
