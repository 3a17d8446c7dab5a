# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handler for POST /reshaper (1.30): move inventory and allocations.

Used by a compute service that re-models its resources (say, VCPU moving
from the host provider to NUMA child providers) while instances hold
allocations: the whole move happens in one transaction or not at all.
"""

from services.placement import errors
from services.placement.handlers import allocation as allocation_handler
from services.placement.objects import catalog
from services.placement.objects import inventory as inventory_obj
from services.placement.objects import reshaper as reshaper_obj
from services.placement import policies
from services.placement.schemas import reshaper as schema
from services.placement import util


def _inventories(ctx, data):
    """ProviderInventory objects from the body, with classes resolved.

    :raises errors.BadRequest: an unknown class or an impossible record.
    """
    result = []
    for rp_uuid, entry in sorted(data.items()):
        records = {}
        for name, record in sorted(entry['inventories'].items()):
            rc_id = catalog.RESOURCE_CLASSES.id_for(ctx, name)
            if rc_id is None:
                raise errors.BadRequest(
                    'Unknown resource class in inventory for resource '
                    'provider %s: No such resource class %s.'
                    % (rp_uuid, name))
            full = inventory_obj.with_defaults(record)
            # NOTE: reshaping is 1.30+, where a fully reserved inventory
            # (reserved == total, since 1.26) is allowed.
            problem = inventory_obj.capacity_problem(full, True)
            if problem:
                raise errors.BadRequest(
                    "Unable to update inventory for resource provider %s: "
                    "Invalid inventory for '%s'. %s"
                    % (rp_uuid, name, problem))
            records[rc_id] = full
        result.append(reshaper_obj.ProviderInventory(
            util.normalize_uuid(rp_uuid) if util.is_uuid_like(rp_uuid)
            else rp_uuid, entry['resource_provider_generation'], records))
    return result


def reshape(req):
    """POST /reshaper

    :returns: 204 once every inventory and allocation is replaced.
    """
    util.require_version(req, (1, 30))
    policies.authorize(req, 'placement:reshaper:reshape')
    ctx = util.context(req)
    version = util.version(req)
    data = util.extract_json(req, schema.post_schema(version))
    inventories = _inventories(ctx, data['inventories'])
    requests = [allocation_handler.consumer_request(
        version, util.normalize_uuid(uuid), entry)
        for uuid, entry in sorted(data['allocations'].items())]
    reshaper_obj.reshape(ctx, inventories, requests)
    return util.no_content(req)
