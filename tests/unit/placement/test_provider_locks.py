# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A write that lost a provider generation race retries under the lock of
its providers; a first attempt takes none.
"""

import threading

import pytest

from services.placement.objects import allocation
from services.placement.objects import provider_locks
from services.placement.objects import resource_provider as rp_obj

RP1 = '11111111-1111-1111-1111-111111111111'
RP2 = '22222222-2222-2222-2222-222222222222'


@pytest.fixture
def attempts(monkeypatch):
    """Each attempt of replace_all: whether RP1's lock was held then."""
    seen = []

    def attempt(ctx, requests, class_ids, all_new=False):
        held = provider_locks._LOCKS.get(RP1)
        seen.append(held is not None and held.locked())
        if len(seen) < 3:
            raise rp_obj.ConcurrentUpdate(RP1)
        return {RP1, RP2}

    monkeypatch.setattr(allocation, 'resolve_classes', lambda c, r: {})
    monkeypatch.setattr(allocation, 'replace_all_in_transaction', attempt)
    return seen


def _request():
    return allocation.ConsumerRequest(
        'c1', {RP2: {'VCPU': 1}, RP1: {'MEMORY_MB': 64}})


def test_retries_hold_the_providers_locks(attempts):
    assert allocation.replace_all(None, [_request()]) == {RP1, RP2}
    assert attempts == [False, True, True]
    # NOTE: released afterwards, whatever the outcome.
    assert not provider_locks._LOCKS[RP1].locked()
    assert not provider_locks._LOCKS[RP2].locked()


def test_a_retry_waits_for_another_retry_of_the_same_provider(attempts):
    holding = threading.Event()
    release = threading.Event()

    def other_retry():
        with provider_locks.held([RP1]):
            holding.set()
            release.wait(10)

    other = threading.Thread(target=other_retry)
    other.start()
    holding.wait(10)
    result = []
    writer = threading.Thread(
        target=lambda: result.append(
            allocation.replace_all(None, [_request()])))
    writer.start()
    writer.join(0.3)
    # NOTE: its first attempt ran without waiting; its retry waits.
    assert writer.is_alive() and attempts == [True]
    release.set()
    writer.join(10)
    other.join(10)
    assert result == [{RP1, RP2}]
    assert len(attempts) == 3
