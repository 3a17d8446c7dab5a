# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A moving instance's claim: the destination for the instance and its
source for the migration, written together by the scheduler.
"""

import pytest

from common.placement import client as placement_client
from services.scheduler.client import placement
from services.scheduler import placing
from tests.unit.scheduler import fakes
from tests.unit.scheduler import test_scheduling

SOURCE = {'uuid-src': {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}}


def _hand_over(migration='mig-1'):
    return {'migration_uuid': migration, 'allocations': dict(SOURCE),
            'consumer_generation': 3}


def test_the_claim_hands_the_source_over_in_the_same_write():
    hosts = [fakes.host('best', total_usable_ram_mb=65536,
                        free_ram_mb=65536), fakes.host('other')]
    scheduler, fake = test_scheduling.make(hosts)
    fake.refuse.add('uuid-best')
    selections, _record = scheduler.select_destinations(
        None, fakes.spec(), ['moving'], hand_over=_hand_over())
    # NOTE: the first host lost its claim; the next took both writes.
    assert selections[0][0].service_host == 'other'
    assert list(fake.claims['moving']) == ['uuid-other']
    assert fake.claims['mig-1'] == SOURCE


def test_a_hand_over_is_for_one_instance():
    with pytest.raises(ValueError):
        placing.Request(fakes.spec(), ['a', 'b'], hand_over=_hand_over())


class _Client(object):
    """POST /allocations answers, in order; the bodies it was sent."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.posts = []

    def post(self, url, body, version, context=None):
        assert url == '/allocations'
        self.posts.append(body)
        return self.answers.pop(0)


def _answer(status, code=None, detail=''):
    body = None if status == 204 else {'errors': [
        {'code': code or 'placement.undefined_code', 'detail': detail}]}
    return placement_client.Response(status, body, {})


def _claim(client):
    return placement.SchedulerPlacementClient(client).claim_move(
        None, 'inst', {'allocations': {'uuid-dst': {'resources': {
            'VCPU': 1}}}}, 'p', 'u', _hand_over())


def test_the_body_gives_the_source_to_a_new_migration_consumer():
    client = _Client(_answer(204))
    assert _claim(client) is True
    [body] = client.posts
    assert body['mig-1'] == {
        'allocations': {'uuid-src': {'resources': SOURCE['uuid-src']}},
        'consumer_generation': None, 'project_id': 'p', 'user_id': 'u',
        'consumer_type': 'MIGRATION'}
    assert body['inst'] == {
        'allocations': {'uuid-dst': {'resources': {'VCPU': 1}}},
        'consumer_generation': 3, 'project_id': 'p', 'user_id': 'u',
        'consumer_type': 'INSTANCE'}


def test_a_concurrent_update_is_tried_again_on_the_same_host(monkeypatch):
    monkeypatch.setattr(placement.time, 'sleep', lambda seconds: None)
    busy = _answer(409, placement_client.CONCURRENT_UPDATE,
                   'resource provider generation conflict')
    client = _Client(busy, busy, _answer(204))
    assert _claim(client) is True
    assert len(client.posts) == 3
    client = _Client(*[busy] * placement.HAND_OVER_ATTEMPTS)
    assert _claim(client) is False


def test_a_full_host_is_lost_and_a_changed_consumer_refused():
    client = _Client(_answer(409, detail='Unable to allocate inventory'))
    assert _claim(client) is False
    assert len(client.posts) == 1
    client = _Client(_answer(409, placement_client.CONCURRENT_UPDATE,
                             'consumer generation conflict'))
    with pytest.raises(placement.ClaimRefused):
        _claim(client)
