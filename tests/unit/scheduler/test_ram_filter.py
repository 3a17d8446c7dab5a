# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""RamFilter: memory capacity under the host's allocation ratio."""

import pytest

from services.scheduler import filters
from services.scheduler.filters import ram_filter
from tests.unit.scheduler import fakes


@pytest.mark.parametrize('host_fields, memory_mb, passes, reason', [
    # 2048 MB x 1.5 = 3072 MB, 2048 used: 1024 usable.
    (dict(total_usable_ram_mb=2048, free_ram_mb=0,
          ram_allocation_ratio=1.5), 1024, True, None),
    (dict(total_usable_ram_mb=2048, free_ram_mb=0,
          ram_allocation_ratio=1.5), 1025, False,
     'does not have 1025 MB usable ram, it only has 1024 MB usable ram.'),
    # No overcommit: only the free RAM counts.
    (dict(total_usable_ram_mb=4096, free_ram_mb=512,
          ram_allocation_ratio=1.0), 512, True, None),
    (dict(total_usable_ram_mb=4096, free_ram_mb=512,
          ram_allocation_ratio=1.0), 1024, False,
     'does not have 1024 MB usable ram, it only has 512 MB usable ram.'),
    # Free RAM may go negative under overcommit (doc/behaviours.md B13).
    (dict(total_usable_ram_mb=1000, free_ram_mb=-200,
          ram_allocation_ratio=2.0), 800, True, None),
])
def test_ram_filter(host_fields, memory_mb, passes, reason):
    host = fakes.host('h1', **host_fields)
    with filters.Rejections() as rejections:
        result = ram_filter.RamFilter().host_passes(
            host, fakes.spec(memory_mb=memory_mb))
    assert result is passes
    if reason:
        assert rejections.by_host[('h1', 'h1')] == ('RamFilter', reason)
        assert 'memory_mb' not in host.limits
    else:
        expected = (host_fields['total_usable_ram_mb']
                    * host_fields['ram_allocation_ratio'])
        assert host.limits['memory_mb'] == expected
