# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""What the API tells placement and the schedulers when hosts change.

* Host aggregate membership is mirrored into placement: the compute node
  providers of a host added to an aggregate join the placement aggregate
  of the same uuid (and leave it on removal), so that the scheduler's
  ``member_of`` queries (zones, tenant isolation) find them.
* A deleted compute service takes its providers out of placement.
* A local delete removes the instance's allocations.
* Every aggregate change is announced to the schedulers
  (``update_aggregates``, a fanout cast) so that their caches reload.

Placement being unreachable never fails the API request: the database is
the source of truth and ``berth-manage placement sync_aggregates`` (or
``placement audit``) brings placement back in line, as Nova does.
"""

import logging
import threading

from common.placement import client as placement_client
from common.placement import microversions

LOG = logging.getLogger(__name__)

# NOTE: a compute agent's periodic update can bump the provider
# generation between our GET and PUT; a few retries ride that out.
CONFLICT_RETRIES = 5

_CLIENTS = {}
_LOCK = threading.Lock()


def client(conf):
    """The process-wide placement client of ``conf``."""
    with _LOCK:
        found = _CLIENTS.get(id(conf))
        if found is None:
            found = placement_client.PlacementClient(conf)
            _CLIENTS[id(conf)] = found
        return found


def reset():
    """Forget the clients (tests)."""
    with _LOCK:
        _CLIENTS.clear()


def _change_membership(ctxt, api, provider_uuid, aggregate_uuid, add):
    """Add or remove one provider's membership; True when done."""
    version = microversions.AGGREGATES

    def attempt():
        resp = api.get_provider_aggregates(ctxt, provider_uuid,
                                           version=version)
        if resp.status == 404:
            LOG.warning('Resource provider %s is not in placement yet; '
                        'aggregate %s will be mirrored by its compute '
                        'agent or by placement sync_aggregates.',
                        provider_uuid, aggregate_uuid)
            return False
        if not resp.ok:
            return resp
        current = list(resp.body['aggregates'])
        if add and aggregate_uuid not in current:
            wanted = current + [aggregate_uuid]
        elif not add and aggregate_uuid in current:
            wanted = [a for a in current if a != aggregate_uuid]
        else:
            return True
        put = api.put_provider_aggregates(
            ctxt, provider_uuid, resp.body['resource_provider_generation'],
            wanted, version=version)
        return True if put.ok else put

    try:
        answer = placement_client.retry_conflicts(
            attempt, CONFLICT_RETRIES,
            'aggregates of provider %s' % provider_uuid)
    except placement_client.GenerationConflict as exc:
        answer = exc.response
    if isinstance(answer, bool):
        return answer
    LOG.warning('Could not %s provider %s %s placement aggregate %s: %s. '
                'Run berth-manage placement sync_aggregates to repair it.',
                'add' if add else 'remove', provider_uuid,
                'to' if add else 'from', aggregate_uuid,
                answer.error_detail())
    return False


def mirror_host(ctxt, conf, node_uuids, aggregate_uuid, add=True):
    """Mirror a host's aggregate membership on its compute node providers.

    :param node_uuids: the host's compute node (= provider) uuids.
    :param add: True to join the aggregate, False to leave it.
    :returns: the providers that were updated.
    """
    api = client(conf)
    done = []
    for uuid in node_uuids:
        try:
            if _change_membership(ctxt, api, uuid, aggregate_uuid, add):
                done.append(uuid)
        except placement_client.PlacementUnavailable as exc:
            LOG.warning('Placement is unavailable (%s); aggregate %s of '
                        'provider %s will need placement sync_aggregates.',
                        exc, aggregate_uuid, uuid)
    return done


def delete_providers(ctxt, conf, node_uuids):
    """Delete compute node providers (their service was deleted).

    :returns: the uuids placement refused or could not be asked about.
    """
    api = client(conf)
    left = []
    for uuid in node_uuids:
        try:
            resp = api.delete_provider(
                ctxt, uuid, version=microversions.PROVIDER_DELETE)
        except placement_client.PlacementUnavailable as exc:
            LOG.warning('Could not delete resource provider %s: %s',
                        uuid, exc)
            left.append(uuid)
            continue
        if resp.ok or resp.status == 404:
            LOG.info('Deleted resource provider %s', uuid)
        else:
            LOG.warning('Placement kept resource provider %s: %s', uuid,
                        resp.error_detail())
            left.append(uuid)
    return left


def delete_allocations(ctxt, conf, instance_uuid):
    """Remove an instance's allocations (local delete); True when gone.

    NOTE: a failure is logged, not raised: the instance is deleted either
    way, and the allocation auditor reports the orphan.
    """
    try:
        resp = client(conf).delete_allocations(
            ctxt, instance_uuid, version=microversions.LOCAL_DELETE)
    except placement_client.PlacementUnavailable as exc:
        LOG.error('Could not delete the allocations of instance %s: %s',
                  instance_uuid, exc)
        return False
    if resp.ok or resp.status == 404:
        LOG.info('Deleted allocation for instance %s', instance_uuid)
        return True
    LOG.error('Placement refused to delete the allocations of instance '
              '%s: %s', instance_uuid, resp.error_detail())
    return False


def tell_schedulers(ctxt):
    """Ask every scheduler to reload aggregates (fanout cast)."""
    from services.scheduler import rpcapi as scheduler_rpcapi
    try:
        scheduler_rpcapi.SchedulerAPI().update_aggregates(ctxt)
    except Exception:
        # NOTE: the schedulers also reload aggregates periodically; a
        # missed notice delays, never loses, the change.
        LOG.exception('Could not tell the schedulers that aggregates '
                      'changed')


DISABLED_TRAIT = 'COMPUTE_STATUS_DISABLED'


def _set_trait(ctxt, api, provider_uuid, trait, present):
    """Set or clear one trait of a provider; True when done."""
    version = microversions.TRAITS

    def attempt():
        resp = api.get_provider_traits(ctxt, provider_uuid, version=version)
        if not resp.ok:
            return False
        traits = set(resp.body['traits'])
        wanted = traits | {trait} if present else traits - {trait}
        if wanted == traits:
            return True
        put = api.put_provider_traits(
            ctxt, provider_uuid, resp.body['resource_provider_generation'],
            sorted(wanted), version=version)
        return put if put.status == 409 else put.ok

    return placement_client.retry_conflicts_or_warn(
        attempt, CONFLICT_RETRIES, 'traits of provider %s' % provider_uuid,
        LOG)


def set_disabled(ctxt, conf, node_uuids, disabled):
    """Set or clear COMPUTE_STATUS_DISABLED on a host's providers.

    The scheduler asks placement for providers without that trait, so a
    disabled compute service stops getting candidates at once; its
    ComputeFilter also drops it whatever placement says.
    """
    api = client(conf)
    for uuid in node_uuids:
        try:
            if not _set_trait(ctxt, api, uuid, DISABLED_TRAIT, disabled):
                LOG.warning('Could not %s %s on provider %s',
                            'set' if disabled else 'clear', DISABLED_TRAIT,
                            uuid)
        except placement_client.PlacementUnavailable as exc:
            LOG.warning('Placement is unavailable (%s); %s of provider %s '
                        'not updated.', exc, DISABLED_TRAIT, uuid)
