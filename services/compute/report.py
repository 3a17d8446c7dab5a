# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The agent's placement client: provider trees in, allocations out.

Each node's tree is pushed with :meth:`ReportClient.sync_tree`, which
remembers what placement held after the last push (providers with their
generations, inventories and traits). A node whose desired tree is
unchanged and whose providers' generations are what this client last saw
costs no call at all beyond the one cheap generations read the caller
makes per update (:meth:`read_generations`): any edit in placement, by an
operator or an allocation, moves a generation, and only the providers
whose generation moved have their inventory read again and, when it
differs, rewritten (a manual inventory edit is overwritten at the next
update, seed B10). Their traits are read again every ``refresh``
seconds (``[compute] resource_provider_association_refresh``, as Nova
refreshes its cache) and before the agent writes them: an allocation
moves a generation far more often than anyone edits traits, and an
operator's own traits are kept either way; a managed trait an operator
removed comes back at the next refresh. Every write carries
the provider generation; a 409 from a concurrent change is retried on a
fresh read (:func:`common.placement.client.retry_conflicts`).

A provider named like the node but with another uuid (seed B6) makes
creation fail with ResourceProviderCreationFailed, as in Nova, unless
``[compute] replace_stale_resource_provider`` lets an unused one go.
"""

import collections
import logging
import threading
import time

from common import exception
from common.placement import client as placement_client
from common.placement import microversions
from services.compute import provider_tree

LOG = logging.getLogger(__name__)

VERSION = microversions.PROVIDER_TREE
# NOTE: below this many trees, one in_tree query per tree is cheaper than
# listing every provider of the cloud.
IN_TREE_QUERY_LIMIT = 16
CONFLICT_RETRIES = 4
CONCURRENT_UPDATE = placement_client.CONCURRENT_UPDATE

PlacementUnavailable = placement_client.PlacementUnavailable


class PlacementError(exception.BerthException):
    msg_fmt = 'Placement answered %(method)s %(url)s with %(status)s: ' \
              '%(detail)s'


class ResourceProviderCreationFailed(exception.BerthException):
    msg_fmt = 'Failed to create resource provider %(name)s: %(reason)s'


class TreeState(object):
    """What placement held for one tree after this client's last push.

    :ivar providers: uuid -> {'generation', 'inventory', 'traits',
        'parent'}.
    :ivar complete: False when the last push could not apply everything
        (inventory in use, a child with allocations): the next update
        tries again even if nothing moved.
    :ivar at: the client's clock at the tree's last full read.
    """

    def __init__(self, providers, desired, complete, at):
        self.providers = providers
        self.desired = desired
        self.complete = complete
        self.at = at


class _Counted(placement_client.PlacementCalls):
    """The client's calls, each counted by the report client first."""

    def __init__(self, client, count):
        self._client = client
        self._count = count

    def request(self, method, url, version, context=None, body=None,
                timeout=None):
        """Count the call, then send it through the shared client."""
        self._count(method)
        return self._client.request(method, url, version, context,
                                    body=body, timeout=timeout)


class ReportClient(object):
    """Thread-safe; one per agent, shared by every node it serves.

    :param client: a :class:`common.placement.client.PlacementClient`.
    :param refresh: seconds after which a tree is re-read in full (0:
        every sync; None: never).
    """

    def __init__(self, client, refresh=300, clock=time.monotonic):
        self.client = client
        self.refresh = refresh
        self.clock = clock
        self.calls = collections.Counter()
        self._trees = {}
        self._known_classes = set()
        self._known_traits = set()
        self._lock = threading.Lock()
        self._local = threading.local()
        # NOTE: every call below goes through this view, so that the
        # counts (per HTTP method, and this thread's writes) see them all.
        self._placement = _Counted(client, self._count)

    # ------------------------------------------------------------ plumbing

    def _count(self, method):
        with self._lock:
            self.calls[method] += 1
        if method != 'GET':
            self._local.writes = getattr(self._local, 'writes', 0) + 1

    def _writes(self):
        """Writes made so far by this thread (syncs run in parallel)."""
        return getattr(self._local, 'writes', 0)

    @staticmethod
    def _check(resp, *expected):
        if resp.status not in expected:
            raise PlacementError(method=resp.method, url=resp.url,
                                 status=resp.status,
                                 detail=resp.error_detail())
        return resp.body

    def snapshot(self):
        """A copy of the call counts ({HTTP method: calls so far})."""
        with self._lock:
            return collections.Counter(self.calls)

    # --------------------------------------------------------------- reads

    def read_generations(self, ctxt, root_uuids):
        """{root uuid: {provider uuid: provider dict}} of the given trees.

        One ``in_tree`` query per tree for a few trees, one listing of
        every provider for many (an agent simulating hundreds of hosts).
        A tree missing from placement maps to {}.

        :raises PlacementUnavailable: placement is down.
        """
        roots = set(root_uuids)
        result = {root: {} for root in roots}
        if len(roots) <= IN_TREE_QUERY_LIMIT:
            for root in sorted(roots):
                resp = self._placement.list_providers(
                    ctxt, version=VERSION, in_tree=root)
                if resp.status == 404:
                    continue
                body = self._check(resp, 200)
                for rp in body['resource_providers']:
                    result[root][rp['uuid']] = rp
            return result
        body = self._check(self._placement.list_providers(
            ctxt, version=VERSION), 200)
        for rp in body['resource_providers']:
            if rp['root_provider_uuid'] in roots:
                result[rp['root_provider_uuid']][rp['uuid']] = rp
        return result

    def _read_provider(self, ctxt, uuid):
        record = self._read_inventory(ctxt, uuid)
        record.update(self._read_traits(ctxt, uuid))
        return record

    def _read_inventory(self, ctxt, uuid):
        inv = self._check(self._placement.get_inventories(
            ctxt, uuid, version=VERSION), 200)
        return {'generation': inv['resource_provider_generation'],
                'inventory': inv['inventories']}

    def _read_traits(self, ctxt, uuid):
        traits = self._check(self._placement.get_provider_traits(
            ctxt, uuid, version=VERSION), 200)
        return {'generation': traits['resource_provider_generation'],
                'traits': set(traits['traits']), 'traits_read': True}

    def provider_allocations(self, ctxt, uuid):
        """{consumer uuid: {resource class: amount}} on one provider."""
        resp = self._placement.get_provider_allocations(ctxt, uuid,
                                                        version=VERSION)
        if resp.status == 404:
            return {}
        body = self._check(resp, 200)
        return {consumer: data['resources']
                for consumer, data in body['allocations'].items()}

    # -------------------------------------------------------------- writes

    def delete_allocation(self, ctxt, consumer_uuid):
        """Remove every allocation of a consumer (gone already: fine).

        :returns: True when something was deleted.
        """
        resp = self._placement.delete_allocations(ctxt, consumer_uuid,
                                                  version=VERSION)
        self._check(resp, 204, 404)
        if resp.status == 204:
            LOG.info('Deleted allocation for instance %s', consumer_uuid)
        return resp.status == 204

    def _ensure_names(self, ctxt, providers):
        for provider in providers:
            for rc in provider.inventory:
                if rc.startswith('CUSTOM_') and rc not in self._known_classes:
                    self._check(self._placement.ensure_resource_class(
                        ctxt, rc, version=VERSION), 200, 201, 204)
                    self._known_classes.add(rc)
            for trait in provider.traits:
                if trait.startswith('CUSTOM_') and (
                        trait not in self._known_traits):
                    self._check(self._placement.ensure_trait(
                        ctxt, trait, version=VERSION), 201, 204)
                    self._known_traits.add(trait)

    def _create(self, ctxt, provider, replace_stale):
        resp = self._placement.create_provider(
            ctxt, provider.uuid, provider.name, provider.parent_uuid,
            version=VERSION)
        if resp.status == 200:
            LOG.info('Created resource provider %s (%s)', provider.name,
                     provider.uuid)
            return resp.body
        if resp.status != 409:
            self._check(resp, 200)
        mine = self._placement.get_provider(ctxt, provider.uuid,
                                            version=VERSION)
        if mine.status == 200:
            # NOTE: another worker created it first; it is ours all the same.
            return mine.body
        stale = self._find_by_name(ctxt, provider.name)
        if stale and replace_stale and self._delete_unused_tree(
                ctxt, stale['uuid']):
            return self._create(ctxt, provider, False)
        raise ResourceProviderCreationFailed(
            name=provider.name,
            reason='placement has provider %s with that name; delete it '
                   '(openstack resource provider delete %s) or give it the '
                   'uuid %s' % (stale and stale['uuid'], stale and
                                stale['uuid'], provider.uuid))

    def _find_by_name(self, ctxt, name):
        body = self._check(self._placement.list_providers(
            ctxt, version=VERSION, name=name), 200)
        found = body['resource_providers']
        return found[0] if found else None

    def _delete_unused_tree(self, ctxt, root_uuid):
        tree = self.read_generations(ctxt, [root_uuid])[root_uuid]
        for uuid in tree:
            if self.provider_allocations(ctxt, uuid):
                LOG.error('Stale resource provider %s still has '
                          'allocations; not deleting it', uuid)
                return False
        self._delete_providers(ctxt, tree)
        LOG.warning('Deleted stale resource provider tree %s', root_uuid)
        return True

    def delete_tree(self, ctxt, root_uuid):
        """Delete a node's whole tree (its node is gone).

        :returns: True when nothing is left of it.
        """
        tree = self.read_generations(ctxt, [root_uuid])[root_uuid]
        left = self._delete_providers(ctxt, tree)
        self.forget(root_uuid)
        return not left

    def _delete_providers(self, ctxt, providers):
        """Delete providers, children first. :returns: the ones left."""
        left = []
        for uuid in _deepest_first(providers):
            resp = self._placement.delete_provider(ctxt, uuid,
                                                   version=VERSION)
            if resp.status == 409:
                LOG.warning('Cannot delete resource provider %s: %s', uuid,
                            resp.error_detail())
                left.append(uuid)
                continue
            self._check(resp, 204, 404)
        return left

    def _retry(self, attempt, what):
        """True when ``attempt`` succeeded within CONFLICT_RETRIES tries."""
        return placement_client.retry_conflicts_or_warn(
            attempt, CONFLICT_RETRIES, what, LOG)

    def _put_inventory(self, ctxt, uuid, record, wanted):
        def attempt():
            nonlocal wanted
            resp = self._placement.put_inventories(
                ctxt, uuid, record['generation'], wanted, version=VERSION)
            if resp.status == 200:
                record['generation'] = resp.body[
                    'resource_provider_generation']
                record['inventory'] = resp.body['inventories']
                return True
            if resp.status != 409 or resp.error_code() != CONCURRENT_UPDATE:
                LOG.warning('Placement refused inventory %s of provider '
                            '%s: %s', wanted, uuid, resp.error_detail())
                return False
            # NOTE: someone else wrote the provider: what to send is
            # worked out again from what placement holds now (an operator
            # may have set a ratio).
            record.update(self._read_provider(ctxt, uuid))
            wanted = _resolve(record['inventory'], wanted, {})
            return resp
        return self._retry(attempt, 'the inventory of provider %s' % uuid)

    def _put_traits(self, ctxt, provider, record):
        uuid = provider.uuid

        def attempt():
            wanted = _wanted_traits(record, provider)
            if wanted == record['traits']:
                return True
            resp = self._placement.put_provider_traits(
                ctxt, uuid, record['generation'], sorted(wanted),
                version=VERSION)
            if resp.status == 200:
                record['generation'] = resp.body[
                    'resource_provider_generation']
                record['traits'] = set(resp.body['traits'])
                return True
            if resp.status != 409 or resp.error_code() != CONCURRENT_UPDATE:
                LOG.warning('Placement refused traits %s of provider %s: '
                            '%s', sorted(wanted), uuid, resp.error_detail())
                return False
            record.update(self._read_provider(ctxt, uuid))
            return resp
        return self._retry(attempt, 'the traits of provider %s' % uuid)

    # ---------------------------------------------------------------- sync

    def forget(self, root_uuid):
        """Drop what is remembered of a tree (the next sync reads it)."""
        with self._lock:
            self._trees.pop(root_uuid, None)

    def _unchanged(self, state, desired, seen):
        if state is None or seen is None or not state.complete:
            return False
        if state.desired != provider_tree.signature(desired):
            return False
        if self._refresh_due(state):
            return False
        if set(seen) != set(state.providers):
            return False
        return all(seen[u]['generation'] == state.providers[u]['generation']
                   for u in seen)

    def sync_tree(self, ctxt, root_uuid, desired, seen=None,
                  replace_stale=False):
        """Make placement hold ``desired`` for the tree of ``root_uuid``.

        :param desired: the list of provider_tree.Provider, root first.
        :param seen: the tree's providers from :meth:`read_generations`
            this update, or None to read them here.
        :returns: True when placement was written to.
        :raises PlacementUnavailable: placement is down (nothing is
            remembered then: the next sync starts afresh).
        :raises ResourceProviderCreationFailed: the root's name is taken.
        """
        with self._lock:
            state = self._trees.get(root_uuid)
        if self._unchanged(state, desired, seen):
            return False
        self.forget(root_uuid)
        if seen is None:
            seen = self.read_generations(ctxt, [root_uuid])[root_uuid]
        writes_before = self._writes()
        complete = True
        records = {}
        wanted_uuids = {p.uuid for p in desired}
        extra = {u: p for u, p in seen.items() if u not in wanted_uuids}
        if extra and self._delete_providers(ctxt, extra):
            complete = False
        self._ensure_names(ctxt, desired)
        for provider in desired:
            old = state.providers.get(provider.uuid) if state else None
            if provider.uuid not in seen:
                created = self._create(ctxt, provider, replace_stale)
                record = {'generation': created['generation'],
                          'inventory': {}, 'traits': set()}
            elif self._move(ctxt, provider, seen[provider.uuid]):
                record = self._read_provider(ctxt, provider.uuid)
            elif old and not self._refresh_due(state):
                moved = old['generation'] != seen[provider.uuid]['generation']
                record = dict(old, traits_read=not moved)
                if moved:
                    # NOTE: most often an allocation moved it; the
                    # inventory is read again (an operator's edit is
                    # undone), the traits only when they are to be
                    # written (see _apply) or the refresh is due.
                    record.update(self._read_inventory(ctxt, provider.uuid))
            else:
                record = self._read_provider(ctxt, provider.uuid)
            complete &= self._apply(ctxt, provider, record)
            records[provider.uuid] = record
        # NOTE: the refresh's time stays that of the last full read: a
        # busy host syncs every update, and its traits must still be read
        # again every ``refresh`` seconds.
        refreshed = state is None or self._refresh_due(state)
        with self._lock:
            self._trees[root_uuid] = TreeState(
                records, provider_tree.signature(desired), complete,
                self.clock() if refreshed else state.at)
        return self._writes() > writes_before

    def _refresh_due(self, state):
        return (self.refresh is not None and
                self.clock() - state.at >= self.refresh)

    def _move(self, ctxt, provider, current):
        """Rename or re-parent a provider that is not where it should be
        (microversion 1.37 allows a new parent).

        :returns: True when it was changed (its generation moved).
        """
        if (current['name'] == provider.name and
                current.get('parent_provider_uuid') == provider.parent_uuid):
            return False
        resp = self._placement.update_provider(
            ctxt, provider.uuid, provider.name, provider.parent_uuid,
            version=VERSION)
        if resp.status != 200:
            LOG.warning('Could not rename or move provider %s to %s '
                        '(parent %s): %s', provider.uuid, provider.name,
                        provider.parent_uuid, resp.error_detail())
        return True

    def _apply(self, ctxt, provider, record):
        ok = True
        wanted = _resolve(record['inventory'], provider.inventory,
                          provider.initial_ratios)
        if wanted != record['inventory']:
            ok &= self._put_inventory(ctxt, provider.uuid, record, wanted)
        if _wanted_traits(record, provider) != record['traits']:
            if not record.get('traits_read', True):
                # NOTE: an operator's own traits, added since they were
                # last read, are kept: the write starts from placement's.
                record.update(self._read_traits(ctxt, provider.uuid))
            ok &= self._put_traits(ctxt, provider, record)
        record.pop('traits_read', None)
        return ok


def _wanted_traits(record, provider):
    """The traits ``provider`` should have: the agent's own, and every
    trait of ``record`` (what placement held) that the agent does not
    manage (an operator's, e.g. ``CUSTOM_VGPU_PLACEMENT``).
    """
    return {t for t in record['traits']
            if not provider_tree.is_managed(t)} | set(provider.traits)


_RATIO_CLASSES = {'VCPU': 'cpu', 'MEMORY_MB': 'ram', 'DISK_GB': 'disk'}


def _resolve(current, desired, initial):
    """``desired`` with unset ratios taken from placement or ``initial``.

    NOTE: as Nova: with ``*_allocation_ratio`` unset an operator may set
    the ratio in placement and the agent keeps it; everything else in the
    inventory is the agent's and is overwritten.
    """
    result = {}
    for rc, fields in desired.items():
        fields = dict(fields)
        if fields.get('allocation_ratio') is None:
            if rc in current:
                fields['allocation_ratio'] = current[rc]['allocation_ratio']
            else:
                fields['allocation_ratio'] = initial.get(
                    _RATIO_CLASSES.get(rc), 1.0)
        result[rc] = fields
    return result


def _deepest_first(providers):
    """Provider uuids ordered so that children come before parents."""
    depth = {}

    def _depth(uuid):
        if uuid not in depth:
            parent = providers[uuid].get('parent_provider_uuid')
            depth[uuid] = 0 if parent not in providers else _depth(
                parent) + 1
        return depth[uuid]
    return sorted(providers, key=lambda u: -_depth(u))
