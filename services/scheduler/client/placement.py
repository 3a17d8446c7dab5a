# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The scheduler's placement calls: candidates, claims and rollbacks."""

import logging
import random
import time

from common.placement import client as placement_client
from common.placement import microversions
from common.placement import move_allocations

LOG = logging.getLogger(__name__)

CANDIDATES_VERSION = microversions.CANDIDATES
CLAIM_VERSION = microversions.SCHEDULER_CLAIM
DIAGNOSIS_VERSION = microversions.SCHEDULER_DIAGNOSIS
MOVE_VERSION = microversions.MOVE_ALLOCATIONS
#: Tries of a moving instance's claim on one host while other writes on
#: its providers win, and the longest pause (seconds) before the second.
HAND_OVER_ATTEMPTS = 4
HAND_OVER_BACKOFF = 0.05


class ClaimRefused(Exception):
    """Placement refused a claim for a reason no other host would change.

    A consumer generation conflict (another actor wrote the instance's
    allocations) or a malformed request: trying the next host would only
    repeat the refusal on every candidate.
    """


def _claimed(resp):
    """Whether a claim's write was taken: True, or False when this host
    lost it (capacity, or a provider changed meanwhile).

    :raises ClaimRefused: any other answer (a consumer that changed, a
        malformed request), which every host would give.
    """
    if resp.ok:
        return True
    detail = resp.error_detail()
    if resp.status != 409 or 'consumer generation conflict' in str(detail):
        raise ClaimRefused('%d %s' % (resp.status, detail))
    return False


class SchedulerPlacementClient(object):
    """Placement as the scheduler uses it."""

    def __init__(self, client):
        """
        :param client: a :class:`common.placement.client.PlacementClient`.
        """
        self.client = client

    def get_allocation_candidates(self, context, query):
        """Ask placement which providers can hold the request.

        :param query: list of (name, value) query parameters.
        :returns: (allocation_requests, provider_summaries, version); empty
            lists when placement finds nothing.
        :raises common.placement.client.PlacementUnavailable: placement is
            down.
        """
        resp = self.client.get_allocation_candidates(
            context, query, version=CANDIDATES_VERSION)
        if not resp.ok:
            # NOTE: a 400 here is a request the scheduler built wrongly
            # (e.g. an unknown trait named in a flavor): no host can match.
            LOG.warning('GET %s answered %d: %s', resp.url, resp.status,
                        resp.error_detail())
            return [], {}, CANDIDATES_VERSION
        return (resp.body['allocation_requests'],
                resp.body['provider_summaries'], CANDIDATES_VERSION)

    def claim_resources(self, context, consumer_uuid, allocation_request,
                        project_id, user_id, consumer_generation=None,
                        consumer_type='INSTANCE'):
        """Write the allocation of one candidate; False when it lost a race.

        :param allocation_request: one entry of the candidates' answer.
        :returns: True on success; False when this host could not take it
            (capacity, or the provider changed meanwhile): the scheduler
            then tries the next host.
        :raises ClaimRefused: the refusal does not depend on the host.
        """
        LOG.debug('Attempting to claim resources in the placement API for '
                  'instance %s', consumer_uuid)
        resp = self.client.put_allocations(
            context, consumer_uuid, allocation_request['allocations'],
            project_id, user_id, consumer_generation, consumer_type,
            version=CLAIM_VERSION)
        if _claimed(resp):
            return True
        LOG.info('Unable to claim resources for %s: %d %s', consumer_uuid,
                 resp.status, resp.error_detail())
        return False

    def claim_move(self, context, consumer_uuid, allocation_request,
                   project_id, user_id, hand_over):
        """Claim one candidate for a moving instance and hand its source
        to the migration, in one ``POST /allocations``
        (common/placement/move_allocations.py); False when this host
        could not take it.

        NOTE: the write also touches the source's providers, which the
        other moves off the same host write at the same time: a
        concurrent update is tried again on the same host (a short random
        pause apart), not held against it.

        :param hand_over: what :func:`move_allocations.read_hand_over`
            read.
        :raises ClaimRefused: the refusal does not depend on the host
            (the instance's allocations changed since they were read).
        """
        body = move_allocations.hand_over_body(
            consumer_uuid, allocation_request['allocations'], hand_over,
            project_id, user_id)
        for attempt in range(HAND_OVER_ATTEMPTS):
            if attempt:
                time.sleep(random.uniform(0, HAND_OVER_BACKOFF * attempt))
            resp = self.client.post('/allocations', body, MOVE_VERSION,
                                    context)
            if _claimed(resp):
                return True
            if resp.error_code() != placement_client.CONCURRENT_UPDATE:
                break
        LOG.info('Unable to claim resources for %s (moving): %d %s',
                 consumer_uuid, resp.status, resp.error_detail())
        return False

    def delete_allocation_for_instance(self, context, consumer_uuid):
        """Remove every allocation of a consumer (a claim rollback)."""
        resp = self.client.delete_allocations(context, consumer_uuid,
                                              version=CLAIM_VERSION)
        if not resp.ok and resp.status != 404:
            LOG.warning('Could not delete allocations of %s: %d %s',
                        consumer_uuid, resp.status, resp.error_detail())
            return False
        return True

    # NOTE: the reads below run only when a request found no host, to say
    # why (see services/scheduler/diagnosis.py); None when placement did
    # not answer them.

    def _read(self, context, call, *args):
        resp = call(context, *args, version=DIAGNOSIS_VERSION)
        if not resp.ok:
            LOG.debug('GET %s answered %d: %s', resp.url, resp.status,
                      resp.error_detail())
            return None
        return resp.body

    def provider_traits(self, context, uuid):
        """The set of traits of provider ``uuid``, or None."""
        body = self._read(context, self.client.get_provider_traits, uuid)
        return None if body is None else set(body['traits'])

    def provider_inventories(self, context, uuid):
        """{class: inventory} of provider ``uuid``, or None."""
        body = self._read(context, self.client.get_inventories, uuid)
        return None if body is None else body['inventories']

    def provider_usages(self, context, uuid):
        """{class: amount used} of provider ``uuid``, or None."""
        body = self._read(context, self.client.get_provider_usages, uuid)
        return None if body is None else body['usages']

    def providers_with(self, context, resources):
        """The uuids of the providers that could each take ``resources``
        ({class: amount}) now, or None.
        """
        body = self._read(context, self.client.list_providers_with,
                          resources)
        if body is None:
            return None
        return [rp['uuid'] for rp in body['resource_providers']]
