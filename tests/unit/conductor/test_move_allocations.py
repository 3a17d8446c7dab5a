# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The migration consumer against the real placement, in-process."""

import uuid

import pytest

from common import conf as common_conf
from common import context
from common import exception
from common.placement import client as placement_client
from common.placement import microversions
from common.placement import move_allocations as placement_moves
from services.conductor import move_allocations as moves
from tests.unit.compute import fakes
from tests.unit.placement import fixtures as placement_fixtures

V = microversions.MOVE_ALLOCATIONS
SMALL = {'VCPU': 1, 'MEMORY_MB': 512}
BIG = {'VCPU': 2, 'MEMORY_MB': 1024}


class Cloud(object):
    """Two providers (source, dest) and one instance on the source."""

    def __init__(self, client):
        self.client = client
        self.ctxt = context.get_admin_context()
        self.source = self._provider('source')
        self.dest = self._provider('dest')
        self.instance = str(uuid.uuid4())
        self.migration = str(uuid.uuid4())
        self.claim(self.instance, self.source, SMALL, None, 'INSTANCE')

    def _provider(self, name):
        rp = str(uuid.uuid4())
        resp = self.client.post('/resource_providers',
                                {'name': name, 'uuid': rp}, V, self.ctxt)
        assert resp.ok, resp.body
        resp = self.client.put(
            '/resource_providers/%s/inventories' % rp,
            {'resource_provider_generation': 0, 'inventories': {
                'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 8192}}},
            V, self.ctxt)
        assert resp.ok, resp.body
        return rp

    def claim(self, consumer, rp, resources, generation, consumer_type):
        resp = self.client.put_allocations(
            self.ctxt, consumer, {rp: {'resources': resources}}, 'p1', 'u1',
            consumer_generation=generation, consumer_type=consumer_type,
            version=V)
        assert resp.ok, resp.body

    def held(self, consumer):
        """(provider -> resources, consumer_type) of a consumer."""
        body = self.client.get_allocations(self.ctxt, consumer,
                                           version=V).body
        return ({rp: a['resources']
                 for rp, a in body['allocations'].items()},
                body.get('consumer_type'))

    def generation(self, consumer):
        return self.client.get_allocations(
            self.ctxt, consumer, version=V).body.get('consumer_generation')

    def usage(self, rp):
        body = self.client.get('/resource_providers/%s/usages' % rp, V,
                               self.ctxt).body
        return {k: v for k, v in body['usages'].items() if v}

    def to_migration(self, placement=None):
        return moves.to_migration(placement or self.client, self.ctxt,
                                  self.instance, self.migration, 'p1', 'u1')

    def back(self, placement=None):
        return moves.back_to_instance(placement or self.client, self.ctxt,
                                      self.instance, self.migration, 'p1',
                                      'u1')


@pytest.fixture
def cloud():
    app = placement_fixtures.setup_app()
    placement_fixtures.wipe_database()
    client = placement_client.PlacementClient(
        common_conf.CONF, adapter=fakes.WsgiAdapter(app))
    return Cloud(client)


class Racing(object):
    """A placement client that lets another writer in right after the
    first read of ``consumer``'s allocations.
    """

    def __init__(self, client, consumer, race):
        self.client = client
        self.consumer = consumer
        self.race = race

    def get_allocations(self, ctxt, consumer, *, version):
        resp = self.client.get_allocations(ctxt, consumer, version=version)
        if consumer == self.consumer and self.race is not None:
            race, self.race = self.race, None
            race()
        return resp

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_to_migration_hands_the_source_to_the_migration(cloud):
    moved = cloud.to_migration()
    assert moved == {cloud.source: SMALL}
    assert cloud.held(cloud.instance)[0] == {}
    assert cloud.held(cloud.migration) == ({cloud.source: SMALL},
                                           'MIGRATION')
    # The source stays used: only the consumer changed.
    assert cloud.usage(cloud.source) == SMALL
    # The instance's consumer is free for the scheduler's claim of the
    # destination (a consumer placement does not know any more).
    cloud.claim(cloud.instance, cloud.dest, BIG, None, 'INSTANCE')
    assert cloud.usage(cloud.dest) == BIG


def test_to_migration_of_an_instance_holding_nothing_writes_nothing(cloud):
    cloud.instance = str(uuid.uuid4())
    assert cloud.to_migration() == {}
    assert cloud.held(cloud.migration)[0] == {}


def test_back_to_instance_restores_the_source_and_drops_the_dest(cloud):
    cloud.to_migration()
    cloud.claim(cloud.instance, cloud.dest, BIG, None, 'INSTANCE')
    assert cloud.back() is True
    assert cloud.held(cloud.instance) == ({cloud.source: SMALL}, 'INSTANCE')
    assert cloud.held(cloud.migration)[0] == {}
    assert cloud.usage(cloud.dest) == {}
    assert cloud.usage(cloud.source) == SMALL
    # A second call (a retried revert) finds nothing to give back and
    # leaves the instance alone.
    assert cloud.back() is False
    assert cloud.held(cloud.instance)[0] == {cloud.source: SMALL}


def test_back_to_instance_before_the_destination_was_claimed(cloud):
    cloud.to_migration()
    assert cloud.back() is True
    assert cloud.held(cloud.instance)[0] == {cloud.source: SMALL}
    assert cloud.held(cloud.migration)[0] == {}


def test_drop_migration_frees_the_source(cloud):
    cloud.to_migration()
    cloud.claim(cloud.instance, cloud.dest, BIG, None, 'INSTANCE')
    assert moves.drop_migration(cloud.client, cloud.ctxt, cloud.migration)
    assert cloud.usage(cloud.source) == {}
    assert cloud.held(cloud.instance)[0] == {cloud.dest: BIG}


def test_to_migration_racing_a_delete_fails_and_writes_nothing(cloud):
    def delete():
        assert cloud.client.delete_allocations(
            cloud.ctxt, cloud.instance, version=V).ok
    racing = Racing(cloud.client, cloud.instance, delete)
    with pytest.raises(moves.MoveAllocationFailed):
        cloud.to_migration(racing)
    # The delete won: the migration holds nothing on the source.
    assert cloud.held(cloud.migration)[0] == {}
    assert cloud.usage(cloud.source) == {}


def test_to_migration_racing_a_write_fails(cloud):
    def write():
        cloud.claim(cloud.instance, cloud.source, BIG,
                    cloud.generation(cloud.instance), 'INSTANCE')
    racing = Racing(cloud.client, cloud.instance, write)
    with pytest.raises(moves.MoveAllocationFailed):
        cloud.to_migration(racing)
    assert cloud.held(cloud.instance)[0] == {cloud.source: BIG}
    assert cloud.held(cloud.migration)[0] == {}


def test_back_to_instance_racing_a_write_of_the_migration_fails(cloud):
    cloud.to_migration()

    def write():
        cloud.claim(cloud.migration, cloud.source, BIG,
                    cloud.generation(cloud.migration), 'MIGRATION')
    racing = Racing(cloud.client, cloud.migration, write)
    with pytest.raises(moves.MoveAllocationFailed):
        cloud.back(racing)
    assert cloud.held(cloud.instance)[0] == {}
    assert cloud.held(cloud.migration)[0] == {cloud.source: BIG}


def test_back_to_instance_racing_a_destination_claim_fails(cloud):
    cloud.to_migration()

    def claim():
        cloud.claim(cloud.instance, cloud.dest, BIG, None, 'INSTANCE')
    # NOTE: the claim lands after both reads (the instance's is the
    # second): the write that follows names the generations read.
    racing = Racing(cloud.client, cloud.instance, claim)
    with pytest.raises(moves.MoveAllocationFailed):
        cloud.back(racing)
    assert cloud.held(cloud.instance)[0] == {cloud.dest: BIG}
    assert cloud.held(cloud.migration)[0] == {cloud.source: SMALL}


class ProviderConflicts(object):
    """A placement client whose first ``times`` POSTs lose a provider
    generation race (another server's claim on the same provider).
    """

    def __init__(self, client, times):
        self.client = client
        self.times = times
        self.posts = 0

    def post(self, url, body, version, ctxt):
        self.posts += 1
        if self.posts <= self.times:
            return placement_client.Response(409, {'errors': [{
                'code': placement_client.CONCURRENT_UPDATE,
                'detail': 'resource provider generation conflict'}]}, {})
        return self.client.post(url, body, version, ctxt)

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_a_provider_generation_race_is_read_again_and_retried(cloud):
    racing = ProviderConflicts(cloud.client, times=2)
    assert cloud.to_migration(racing) == {cloud.source: SMALL}
    assert racing.posts == 3
    assert cloud.held(cloud.migration) == ({cloud.source: SMALL},
                                           'MIGRATION')
    racing = ProviderConflicts(cloud.client, times=1)
    assert cloud.back(racing) is True
    assert cloud.held(cloud.instance)[0] == {cloud.source: SMALL}


def test_a_provider_race_lost_every_time_fails_and_writes_nothing(cloud):
    racing = ProviderConflicts(cloud.client, times=placement_moves.ATTEMPTS)
    with pytest.raises(exception.NoValidHost) as caught:
        cloud.to_migration(racing)
    assert 'Unable to replace instance claim on source' in str(caught.value)
    assert racing.posts == placement_moves.ATTEMPTS
    assert cloud.held(cloud.instance)[0] == {cloud.source: SMALL}
