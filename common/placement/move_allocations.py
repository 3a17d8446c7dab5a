# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A move's placement bookkeeping: the migration consumer (Nova's).

When a move claims its destination, the instance's allocation on the
source is handed to the migration's uuid (consumer type ``MIGRATION``),
so that the instance's consumer holds the destination and the source
stays held until the move ends. Nova hands the source over first (one
``POST /allocations`` leaving the instance's consumer empty), then the
scheduler claims the destination. Where the scheduler claims, Berth does
both in the scheduler's claim of a resize, a cold migration or a lone
live migration instead: the conductor reads what the instance holds
(:func:`read_hand_over`) and the scheduler writes the migration's source
and the instance's destination in one ``POST`` (:func:`hand_over_body`),
which saves placement a write per move and leaves nothing to undo when
no host fits. :func:`to_migration` does the hand-over alone for an
evacuation, a forced live migration and a live migration off a host
that another is leaving. NOTE: a burst of moves off one host queues its
writes on that host's provider
(services/placement/objects/provider_locks.py), and the combined write
holds it longer: a hundred live migrations off one host at once took 40%
longer to empty it that way (services/conductor/busy_sources.py).
Either way the move ends so:

* confirmed (or a live migration or evacuation done): the migration's
  allocation is deleted (:func:`drop_migration`);
* reverted, or failed before the server left its source: the source
  allocation goes back to the instance and whatever it held on the
  destination is dropped, again in one call (:func:`back_to_instance`).

Every write names the consumer generations it read, so a concurrent
writer of the consumers (a delete) makes it fail rather than be
overwritten; a concurrent write on one of the providers (another
server's claim there) makes it read again and try again.

Shared by the conductor (which hands the allocation over before it
schedules, or has the scheduler's claim do it) and the source compute
of a live migration (which ends the move once the conductor has cast
it), each with its own placement client.
"""

import logging
import random
import time

from common import exception
from common.placement import client as placement_client
from common.placement import microversions

LOG = logging.getLogger(__name__)

VERSION = microversions.MOVE_ALLOCATIONS
MIGRATION_TYPE = 'MIGRATION'
INSTANCE_TYPE = 'INSTANCE'


class MoveAllocationFailed(Exception):
    """Placement refused to hand an allocation over (with its answer)."""


class ProvidersBusy(MoveAllocationFailed):
    """Other writes on the providers won every try."""


def _read(placement, ctxt, consumer_uuid):
    """(provider -> resources, generation) of a consumer (empty, None
    when placement does not know it).
    """
    resp = placement.get_allocations(ctxt, consumer_uuid, version=VERSION)
    if not resp.ok:
        raise MoveAllocationFailed('GET /allocations/%s answered %d: %s' % (
            consumer_uuid, resp.status, resp.error_detail()))
    body = resp.body or {}
    return ({rp: alloc['resources']
             for rp, alloc in (body.get('allocations') or {}).items()},
            body.get('consumer_generation'))


def _entry(allocations, generation, project_id, user_id, consumer_type):
    return {'allocations': {rp: {'resources': res}
                            for rp, res in allocations.items()},
            'consumer_generation': generation, 'project_id': project_id,
            'user_id': user_id, 'consumer_type': consumer_type}


#: Tries of one hand-over when another write changed a provider of it.
ATTEMPTS = 4
#: Seconds: the longest random pause before the second try (then twice,
#: three times that).
BACKOFF = 0.05


def _provider_conflict(resp):
    """A 409 from another write on one of the providers (worth a fresh
    read and another try), not from a consumer someone else changed (a
    delete, another move: the caller must know).
    """
    return (resp.status == 409 and
            resp.error_code() == placement_client.CONCURRENT_UPDATE and
            'consumer generation conflict' not in str(resp.error_detail()))


def _post(placement, ctxt, build, what):
    """POST /allocations with the body ``build()`` makes from fresh
    reads, again after a provider generation conflict, as Nova does.

    :param build: () -> (body, result); body None writes nothing.
    :returns: the result of the ``build()`` whose body was written.
    """
    tries = []

    def attempt():
        if tries:
            # NOTE: a burst of moves off one host all write its provider:
            # a random pause spreads the next tries apart.
            time.sleep(random.uniform(0, BACKOFF * len(tries)))
        tries.append(1)
        body, result = build()
        if body is None:
            return result
        resp = placement.post('/allocations', body, VERSION, ctxt)
        if resp.ok:
            return result
        if _provider_conflict(resp):
            return resp
        raise MoveAllocationFailed('%s: %d %s' % (what, resp.status,
                                                  resp.error_detail()))
    try:
        return placement_client.retry_conflicts(attempt, ATTEMPTS, what)
    except placement_client.GenerationConflict as exc:
        raise ProvidersBusy(str(exc))


def read_hand_over(placement, ctxt, instance_uuid, migration_uuid):
    """What the scheduler's claim hands over to the migration: a dict
    (``migration_uuid``, ``allocations``: provider -> resources the
    instance holds, ``consumer_generation``: the instance's), or None
    when the instance holds nothing (logged: nothing is handed over).

    :raises MoveAllocationFailed: placement refused the read.
    :raises common.placement.client.PlacementUnavailable: placement down.
    """
    held, generation = _read(placement, ctxt, instance_uuid)
    if not held:
        LOG.warning('Instance %s holds no allocation to hand over to '
                    'migration %s', instance_uuid, migration_uuid)
        return None
    return {'migration_uuid': migration_uuid, 'allocations': held,
            'consumer_generation': generation}


def hand_over_body(instance_uuid, destination, hand_over, project_id,
                   user_id):
    """The ``POST /allocations`` body that claims ``destination`` (a
    claim's provider -> {'resources'}) for the instance and gives its
    source to the migration, as :func:`read_hand_over` read them.
    """
    source = _entry(hand_over['allocations'], None, project_id, user_id,
                    MIGRATION_TYPE)
    claim = {'allocations': destination,
             'consumer_generation': hand_over['consumer_generation'],
             'project_id': project_id, 'user_id': user_id,
             'consumer_type': INSTANCE_TYPE}
    return {hand_over['migration_uuid']: source, instance_uuid: claim}


def to_migration(placement, ctxt, instance_uuid, migration_uuid, project_id,
                 user_id):
    """Hand the instance's allocation to the migration's consumer.

    :returns: the allocations moved (provider -> resources); empty when
        the instance held none (nothing is written then).
    :raises MoveAllocationFailed: placement refused (a concurrent write
        of the instance's consumer).
    :raises common.exception.NoValidHost: other writes on the providers
        won every try.
    :raises common.placement.client.PlacementUnavailable: placement down.
    """
    def build():
        held, generation = _read(placement, ctxt, instance_uuid)
        if not held:
            return None, {}
        return {migration_uuid: _entry(held, None, project_id, user_id,
                                       MIGRATION_TYPE),
                instance_uuid: _entry({}, generation, project_id, user_id,
                                      INSTANCE_TYPE)}, held
    try:
        held = _post(placement, ctxt, build,
                     'moving the allocation of %s to migration %s' % (
                         instance_uuid, migration_uuid))
    except ProvidersBusy as exc:
        # NOTE: as Nova: nothing was written, the server stays as it was
        # and the move is refused as one no host could take.
        LOG.warning('%s', exc)
        raise exception.NoValidHost(
            reason='Unable to replace instance claim on source')
    if not held:
        LOG.warning('Instance %s holds no allocation to move to migration '
                    '%s', instance_uuid, migration_uuid)
        return {}
    LOG.info('Moved the allocation of instance %s to migration %s',
             instance_uuid, migration_uuid)
    return held


def back_to_instance(placement, ctxt, instance_uuid, migration_uuid,
                     project_id, user_id):
    """Give the migration's (source) allocation back to the instance and
    drop what the instance held elsewhere (its destination claim).

    A migration holding nothing (already handed back, or never moved)
    leaves the instance's allocation alone.

    :returns: True when the source allocation went back.
    :raises MoveAllocationFailed: placement refused (a concurrent write).
    """
    def build():
        held, mig_generation = _read(placement, ctxt, migration_uuid)
        if not held:
            return None, False
        _dest, generation = _read(placement, ctxt, instance_uuid)
        return {instance_uuid: _entry(held, generation, project_id, user_id,
                                      INSTANCE_TYPE),
                migration_uuid: _entry({}, mig_generation, project_id,
                                       user_id, MIGRATION_TYPE)}, True
    if not _post(placement, ctxt, build,
                 'giving the allocation of migration %s back to %s' % (
                     migration_uuid, instance_uuid)):
        LOG.info('Migration %s holds no allocation to give back to %s',
                 migration_uuid, instance_uuid)
        return False
    LOG.info('Gave the allocation of migration %s back to instance %s',
             migration_uuid, instance_uuid)
    return True


def drop_migration(placement, ctxt, migration_uuid):
    """Delete the migration consumer's allocation (the move is over).

    :returns: True when none is left (placement down is logged: the
        audit removes what stays behind).
    """
    try:
        resp = placement.delete_allocations(ctxt, migration_uuid,
                                            version=VERSION)
    except placement_client.PlacementUnavailable as exc:
        LOG.warning('Could not delete the allocations of migration %s: %s',
                    migration_uuid, exc)
        return False
    if resp.ok or resp.status == 404:
        return True
    LOG.warning('Could not delete the allocations of migration %s: %d %s',
                migration_uuid, resp.status, resp.error_detail())
    return False
