# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The conductor's placement writes: claim, read and remove allocations.

Used by the reschedule (claim an alternate), by the build flow (remove the
allocation of a server deleted while it was scheduled) and by the
allocation auditor and ``berth-manage placement`` (heal, audit). Every
call goes through :class:`common.placement.client.PlacementClient`, which
puts a timeout on each request.
"""

import json
import logging

from common.placement import client as placement_client
from common.placement import microversions

LOG = logging.getLogger(__name__)

VERSION = microversions.CONDUCTOR_ALLOCATIONS
_CONFLICT = 'consumer generation conflict'


class ClaimFailed(Exception):
    """Placement refused an allocation (capacity, a race, a bad request)."""


def allocation_request(selection):
    """The allocation request dict of a Selection (JSON text in it)."""
    text = selection.allocation_request
    if not text:
        return None
    return json.loads(text) if isinstance(text, str) else text


def get_allocations(placement, ctxt, consumer_uuid):
    """(provider uuid -> resources, consumer generation or None).

    :raises common.placement.client.PlacementUnavailable: placement down.
    """
    resp = placement.get_allocations(ctxt, consumer_uuid, version=VERSION)
    if not resp.ok:
        raise ClaimFailed('GET /allocations/%s answered %d: %s' % (
            consumer_uuid, resp.status, resp.error_detail()))
    body = resp.body or {}
    return ({rp: alloc['resources']
             for rp, alloc in body.get('allocations', {}).items()},
            body.get('consumer_generation'))


def put_allocations(placement, ctxt, consumer_uuid, allocations, project_id,
                    user_id, consumer_generation=None):
    """Write (replace) the allocations of a consumer.

    :param allocations: provider uuid -> {resource class: amount}.
    :raises ClaimFailed: with placement's answer.
    """
    resp = placement.put_allocations(
        ctxt, consumer_uuid, {rp: {'resources': resources}
                              for rp, resources in allocations.items()},
        project_id, user_id, consumer_generation, version=VERSION)
    if not resp.ok:
        raise ClaimFailed('%d %s' % (resp.status, resp.error_detail()))


def claim(placement, ctxt, consumer_uuid, alloc_request, project_id,
          user_id):
    """Claim an allocation request for a consumer that holds nothing.

    A consumer that still exists in placement with no allocations (its
    generation moved on) is claimed with its current generation, as
    upstream does; one that holds allocations elsewhere is refused.

    :returns: True when claimed, False when placement refused it.
    :raises common.placement.client.PlacementUnavailable: placement down.
    """
    wanted = {rp: alloc['resources']
              for rp, alloc in alloc_request['allocations'].items()}
    try:
        put_allocations(placement, ctxt, consumer_uuid, wanted, project_id,
                        user_id)
        return True
    except ClaimFailed as exc:
        if _CONFLICT not in str(exc):
            LOG.info('Claim for %s refused: %s', consumer_uuid, exc)
            return False
    try:
        current, generation = get_allocations(placement, ctxt,
                                              consumer_uuid)
        if current == wanted:
            return True
        if current:
            LOG.warning('Consumer %s still holds allocations %s; not '
                        'claiming another host', consumer_uuid, current)
            return False
        put_allocations(placement, ctxt, consumer_uuid, wanted, project_id,
                        user_id, consumer_generation=generation)
        return True
    except ClaimFailed as exc:
        LOG.info('Claim for %s refused: %s', consumer_uuid, exc)
        return False


def delete_allocations(placement, ctxt, consumer_uuid):
    """Remove every allocation of a consumer; True when none is left.

    Placement being down is logged, not raised: the auditor removes what
    is left behind later.
    """
    try:
        resp = placement.delete_allocations(ctxt, consumer_uuid,
                                            version=VERSION)
    except placement_client.PlacementUnavailable as exc:
        LOG.warning('Could not delete the allocations of %s: %s',
                    consumer_uuid, exc)
        return False
    if resp.ok or resp.status == 404:
        if resp.ok:
            LOG.info('Deleted allocation for instance %s', consumer_uuid)
        return True
    LOG.warning('Could not delete the allocations of %s: %d %s',
                consumer_uuid, resp.status, resp.error_detail())
    return False
