# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateRamFilter: per-aggregate RAM ratios, the minimum wins."""

import pytest

from services.scheduler.filters import aggregate_ram_filter
from services.scheduler.filters import ram_filter
from tests.unit.scheduler import fakes


@pytest.mark.parametrize('ratios, memory_mb, passes, limit', [
    # The host's own ratio 1.5: 4096 x 1.5 = 6144, 4096 used.
    ((), 2048, True, 6144.0),
    # Two aggregates, 2.0 and 1.0: 1.0 wins, nothing is left.
    (('2.0', '1.0'), 1, False, None),
    (('2.0',), 4096, True, 8192.0),
    # Undecodable: the host's own ratio.
    (('lots',), 2048, True, 6144.0),
])
def test_aggregate_ram_filter(ratios, memory_mb, passes, limit):
    aggregates = [fakes.aggregate(metadata={'ram_allocation_ratio': ratio})
                  for ratio in ratios]
    host = fakes.host('h1', total_usable_ram_mb=4096, free_ram_mb=0,
                      ram_allocation_ratio=1.5, aggregates=aggregates)
    result = aggregate_ram_filter.AggregateRamFilter().host_passes(
        host, fakes.spec(memory_mb=memory_mb))
    assert result is passes
    assert host.limits.get('memory_mb') == limit


def test_only_the_ratio_lookup_differs():
    assert issubclass(aggregate_ram_filter.AggregateRamFilter,
                      ram_filter.RamFilter)
    assert 'host_passes' not in vars(aggregate_ram_filter.AggregateRamFilter)
