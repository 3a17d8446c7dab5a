# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""An in-memory stand-in for placement in scheduler unit tests.

Each provider is a root with VCPU, MEMORY_MB and DISK_GB; candidates are
the providers with room for the unsuffixed resources of the query; claims
check capacity and can be made to fail, so that rollback and retry paths
run. Functional tests use the real placement service instead.
"""

import threading

from services.scheduler.client import placement


class FakePlacement(object):
    """Providers, usages and claims; the SchedulerPlacementClient API."""

    def __init__(self):
        self.inventory = {}
        self.claims = {}
        self.refuse = set()
        self.refuse_consumers = set()
        self.attempts = 0
        self.queries = []
        self._lock = threading.Lock()

    def add_provider(self, uuid, vcpu=16, memory_mb=32768, disk_gb=1024,
                     traits=()):
        """A root provider with capacity and traits."""
        self.inventory[uuid] = {
            'resources': {'VCPU': vcpu, 'MEMORY_MB': memory_mb,
                          'DISK_GB': disk_gb},
            'traits': set(traits)}

    def used(self, uuid):
        """class -> used amount on a provider."""
        used = {}
        for allocations in self.claims.values():
            for rc, amount in allocations.get(uuid, {}).items():
                used[rc] = used.get(rc, 0) + amount
        return used

    def _fits(self, uuid, wanted):
        capacity = self.inventory[uuid]['resources']
        used = self.used(uuid)
        return all(rc in capacity and used.get(rc, 0) + n <= capacity[rc]
                   for rc, n in wanted.items())

    def get_allocation_candidates(self, context, params):
        self.queries.append(params)
        query = dict(params)
        wanted = {}
        for item in query.get('resources', '').split(','):
            if item:
                rc, amount = item.split(':')
                wanted[rc] = int(amount)
        required = [t for t in query.get('required', '').split(',')
                    if t and not t.startswith('!')]
        with self._lock:
            roots = [u for u in sorted(self.inventory)
                     if self._fits(u, wanted) and
                     set(required) <= self.inventory[u]['traits']]
            requests = [{'allocations': {u: {'resources': dict(wanted)}}}
                        for u in roots]
            summaries = {u: {'root_provider_uuid': u,
                             'traits': sorted(self.inventory[u]['traits']),
                             'resources': {
                                 rc: {'capacity': total,
                                      'used': self.used(u).get(rc, 0)}
                                 for rc, total in
                                 self.inventory[u]['resources'].items()}}
                         for u in roots}
        return requests, summaries, '1.39'

    def claim_resources(self, context, consumer, alloc_req, project_id,
                        user_id, consumer_generation=None,
                        consumer_type='INSTANCE'):
        self.attempts += 1
        if consumer in self.refuse_consumers:
            raise placement.ClaimRefused('409 consumer generation conflict')
        with self._lock:
            allocations = {u: dict(r['resources'])
                           for u, r in alloc_req['allocations'].items()}
            if set(allocations) & self.refuse:
                return False
            if not all(self._fits(u, r) for u, r in allocations.items()):
                return False
            self.claims[consumer] = allocations
            return True

    def claim_move(self, context, consumer, alloc_req, project_id,
                   user_id, hand_over):
        """A claim that also gives the source to the migration."""
        with self._lock:
            held = self.claims.pop(consumer, None)
        claimed = self.claim_resources(context, consumer, alloc_req,
                                       project_id, user_id)
        with self._lock:
            if claimed:
                self.claims[hand_over['migration_uuid']] = {
                    u: dict(r) for u, r in hand_over['allocations'].items()}
            elif held is not None:
                self.claims[consumer] = held
        return claimed

    def delete_allocation_for_instance(self, context, consumer):
        with self._lock:
            self.claims.pop(consumer, None)
        return True
