# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Reshaping: moving inventory and the allocations against it at once.

A reshape cannot simply write the new inventories and then the new
allocations: an inventory still in use cannot be removed, and an allocation
needs its inventory to exist. So, in one transaction:

1. each named provider gets an *interim* inventory, its current one
   overlaid with the new records (nothing removed);
2. the consumers' allocations are replaced, with the usual capacity checks;
3. each provider gets its final inventory, which now fails only if a class
   being removed is really still in use.

Each step bumps the generation of the providers it changes, as the same
calls made one by one would.
"""

import logging

from services.placement.db.api import placement_db
from services.placement import errors
from services.placement.objects import allocation as allocation_obj
from services.placement.objects import catalog
from services.placement.objects import inventory as inventory_obj
from services.placement.objects import resource_provider as rp_obj

LOG = logging.getLogger(__name__)


class ProviderInventory(object):
    """The inventory a provider should end up with.

    :param uuid: the provider uuid.
    :param generation: the provider generation the client saw.
    :param records: {resource class id: full inventory record}.
    """

    def __init__(self, uuid, generation, records):
        self.uuid = uuid
        self.generation = generation
        self.records = records


def _provider(ctx, uuid, generation):
    provider = rp_obj.get_by_uuid(ctx, uuid)
    if provider is None:
        raise errors.BadRequest(
            'Resource provider %s in inventories not found.' % uuid,
            code=errors.RESOURCE_PROVIDER_NOT_FOUND)
    if provider['generation'] != generation:
        raise errors.Conflict(
            'resource provider generation conflict for provider %s: '
            'actual: %s, given: %s' % (uuid, provider['generation'],
                                       generation),
            code=errors.CONCURRENT_UPDATE)
    return provider


def _current_records(ctx, provider):
    records, _newest = inventory_obj.get_all(ctx, provider['id'])
    return {catalog.RESOURCE_CLASSES.id_for(ctx, name): record
            for name, record in records.items()}


@placement_db.writer
def _reshape(ctx, inventories, requests, class_ids):
    providers = {}
    for inv in inventories:
        provider = _provider(ctx, inv.uuid, inv.generation)
        providers[inv.uuid] = provider
        interim = _current_records(ctx, provider)
        interim.update(inv.records)
        inventory_obj.replace_all(ctx, provider, provider['generation'],
                                  interim)
    allocation_obj.replace_all_in_transaction(ctx, requests, class_ids)
    for inv in inventories:
        # NOTE: re-read: the allocation step may have bumped it again.
        provider = rp_obj.get_by_uuid(ctx, inv.uuid)
        inventory_obj.replace_all(ctx, provider, provider['generation'],
                                  inv.records)


@allocation_obj.retry_transaction
def reshape(ctx, inventories, requests):
    """Replace providers' inventories and consumers' allocations atomically.

    :param inventories: a list of :class:`ProviderInventory`, in a stable
        order (it is the order providers are locked in).
    :param requests: a list of
        :class:`services.placement.objects.allocation.ConsumerRequest`.
    :raises errors.BadRequest: unknown provider or resource class.
    :raises errors.Conflict: a stale provider or consumer generation, an
        allocation that does not fit, or an inventory still in use.
    """
    class_ids = allocation_obj.resolve_classes(ctx, requests)
    _reshape(ctx, inventories, requests, class_ids)
