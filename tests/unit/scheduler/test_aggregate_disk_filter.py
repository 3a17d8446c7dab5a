# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateDiskFilter: per-aggregate disk ratios, the minimum wins."""

import pytest

from services.scheduler.filters import aggregate_disk_filter
from services.scheduler.filters import disk_filter
from tests.unit.scheduler import fakes


@pytest.mark.parametrize('ratios, passes, limit', [
    # The host's own ratio 2.0: 200 GB, 100 used, 50 asked.
    ((), True, 200.0),
    # 3.0 and 1.0: 1.0 wins and the host is full.
    (('3.0', '1.0'), False, None),
    (('1.5',), True, 150.0),
    # Undecodable: the host's own ratio.
    (('', '1,5'), True, 200.0),
])
def test_aggregate_disk_filter(ratios, passes, limit):
    aggregates = [fakes.aggregate(metadata={'disk_allocation_ratio': ratio})
                  for ratio in ratios]
    host = fakes.host('h1', total_usable_disk_gb=100, free_disk_mb=0,
                      disk_allocation_ratio=2.0, aggregates=aggregates)
    result = aggregate_disk_filter.AggregateDiskFilter().host_passes(
        host, fakes.spec(root_gb=50))
    assert result is passes
    assert host.limits.get('disk_gb') == limit


def test_only_the_ratio_lookup_differs():
    assert issubclass(aggregate_disk_filter.AggregateDiskFilter,
                      disk_filter.DiskFilter)
    assert 'host_passes' not in vars(
        aggregate_disk_filter.AggregateDiskFilter)
