# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ComputeFilter: enabled, not forced down, up (doc/behaviours.md B21)."""

import pytest

from services.scheduler import filters
from services.scheduler.filters import compute_filter
from tests.unit.scheduler import fakes

FILTER = compute_filter.ComputeFilter()

UP = {'disabled': False, 'forced_down': False, 'up': True}


@pytest.mark.parametrize('service,expected,reason', [
    (UP, True, None),
    (dict(UP, disabled=True, disabled_reason='maintenance'), False,
     'compute service is disabled: maintenance'),
    (dict(UP, disabled=True), False,
     'compute service is disabled: no reason given'),
    (dict(UP, forced_down=True), False, 'compute service is forced down'),
    # B21: a dead nova-compute whose VMs keep running is "down".
    (dict(UP, up=False), False,
     'compute service has not been heard from in a while (down)'),
    (dict(UP, disabled=True, up=False, disabled_reason='x'), False,
     'compute service is disabled: x'),
    ({}, False, 'has no compute service record'),
])
def test_service_state(service, expected, reason):
    host = fakes.host('h1', service=service)
    with filters.Rejections() as rejections:
        assert FILTER.host_passes(host, fakes.spec()) is expected
    got = rejections.by_host.get(('h1', 'h1'))
    assert got == (None if reason is None else ('ComputeFilter', reason))


def test_filter_all_keeps_only_live_hosts():
    hosts = [fakes.host('a'), fakes.host('b', service=dict(UP, up=False)),
             fakes.host('c')]
    assert [h.host for h in FILTER.filter_all(hosts, fakes.spec())] == [
        'a', 'c']
