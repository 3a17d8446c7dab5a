# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Placement writes that race a compute agent: retried, then given up.

Covers the API's aggregate mirror and disabled trait
(services/api/placement_sync.py) and ``berth-manage placement
sync_aggregates`` (services/manage/placement_audit.py), which share
:func:`common.placement.client.retry_conflicts`.
"""

import pytest

from common.placement import client as placement_client
from services.api import placement_sync
from services.manage import placement_audit

RP = '0f0c9d6e-0000-4000-8000-000000000001'
AGG = '0f0c9d6e-0000-4000-8000-0000000000a1'


class RacingPlacement(placement_client.PlacementCalls):
    """One provider's aggregates and traits, with generations.

    :ivar races: how many of the next writes someone else beats (the
        provider's generation moves just before them).
    """

    def __init__(self, races=0):
        self.races = races
        self.generation = 0
        self.state = {'aggregates': [], 'traits': []}
        self.writes = []

    def request(self, method, url, version, context=None, body=None,
                timeout=None):
        kind = url.rsplit('/', 1)[1]
        if method == 'GET':
            return placement_client.Response(200, {
                kind: list(self.state[kind]),
                'resource_provider_generation': self.generation}, {})
        self.writes.append((kind, version, body))
        if self.races:
            self.races -= 1
            self.generation += 1
        if body['resource_provider_generation'] != self.generation:
            return placement_client.Response(409, {'errors': [{
                'code': placement_client.CONCURRENT_UPDATE,
                'detail': 'resource provider generation conflict'}]}, {})
        self.state[kind] = list(body[kind])
        self.generation += 1
        return placement_client.Response(200, {}, {})


@pytest.fixture
def use(monkeypatch):
    def _use(fake):
        monkeypatch.setattr(placement_sync, 'client', lambda conf: fake)
        return fake
    return _use


def test_the_mirror_rides_out_a_race(use):
    fake = use(RacingPlacement(races=2))
    assert placement_sync.mirror_host(None, None, [RP], AGG) == [RP]
    assert fake.state['aggregates'] == [AGG]
    assert [(k, v) for k, v, _b in fake.writes] == [('aggregates', '1.19')] * 3


def test_the_mirror_gives_up_after_its_retries(use, caplog):
    fake = use(RacingPlacement(races=100))
    assert placement_sync.mirror_host(None, None, [RP], AGG) == []
    assert len(fake.writes) == placement_sync.CONFLICT_RETRIES
    assert fake.state['aggregates'] == []
    assert 'Could not add provider %s to placement aggregate %s' % (
        RP, AGG) in caplog.text
    assert 'generation conflict' in caplog.text


def test_the_disabled_trait_gives_up_after_its_retries(use, caplog):
    fake = use(RacingPlacement(races=100))
    placement_sync.set_disabled(None, None, [RP], True)
    assert len(fake.writes) == placement_sync.CONFLICT_RETRIES
    assert {v for _k, v, _b in fake.writes} == {'1.6'}
    assert fake.state['traits'] == []
    assert 'Gave up updating traits of provider %s' % RP in caplog.text


def test_the_disabled_trait_rides_out_a_race(use):
    fake = use(RacingPlacement(races=1))
    placement_sync.set_disabled(None, None, [RP], True)
    assert fake.state['traits'] == [placement_sync.DISABLED_TRAIT]
    assert len(fake.writes) == 2


@pytest.mark.parametrize('races,done,writes', [
    (0, True, 1), (2, True, 3),
    (100, False, placement_audit.CONFLICT_RETRIES)])
def test_sync_aggregates_retries_as_many_times(races, done, writes):
    fake = RacingPlacement(races=races)
    assert placement_audit._add_to_aggregate(fake, None, RP, AGG) is done
    assert len(fake.writes) == writes
