# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""DiskFilter: local disk capacity under the host's allocation ratio."""

import pytest

from services.scheduler import filters
from services.scheduler.filters import disk_filter
from tests.unit.scheduler import fakes


@pytest.mark.parametrize('host_fields, spec_fields, passes, reason', [
    # 100 GB x 1.0, 90 GB free: a 10 GB root fits, 11 GB does not.
    (dict(total_usable_disk_gb=100, free_disk_mb=90 * 1024),
     dict(root_gb=10), True, None),
    (dict(total_usable_disk_gb=100, free_disk_mb=10 * 1024),
     dict(root_gb=11), False,
     'does not have 11264 MB usable disk, it only has 10240 MB usable disk.'),
    # Swap counts in MB, ephemeral in GB.
    (dict(total_usable_disk_gb=100, free_disk_mb=11 * 1024),
     dict(root_gb=10, swap=1024), True, None),
    (dict(total_usable_disk_gb=100, free_disk_mb=11 * 1024),
     dict(root_gb=10, swap=512, ephemeral_gb=1), False,
     'does not have 11776 MB usable disk, it only has 11264 MB usable disk.'),
    # Overcommit x2: 200 GB usable, 100 GB used.
    (dict(total_usable_disk_gb=100, free_disk_mb=0,
          disk_allocation_ratio=2.0), dict(root_gb=100), True, None),
    # An instance larger than the physical disk never fits, even thin.
    (dict(total_usable_disk_gb=100, free_disk_mb=100 * 1024,
          disk_allocation_ratio=10.0), dict(root_gb=101), False,
     'does not have 103424 MB usable disk space before overcommit, '
     'it only has 102400 MB.'),
    # Boot from volume: the root disk is not local.
    (dict(total_usable_disk_gb=100, free_disk_mb=0),
     dict(root_gb=500, is_bfv=True), True, None),
])
def test_disk_filter(host_fields, spec_fields, passes, reason):
    host = fakes.host('h1', **host_fields)
    spec = fakes.spec(root_gb=spec_fields.pop('root_gb'),
                      is_bfv=spec_fields.pop('is_bfv', False))
    for name, value in spec_fields.items():
        setattr(spec.flavor, name, value)
    with filters.Rejections() as rejections:
        result = disk_filter.DiskFilter().host_passes(host, spec)
    assert result is passes
    if reason:
        assert rejections.by_host[('h1', 'h1')] == ('DiskFilter', reason)
        assert 'disk_gb' not in host.limits
    else:
        assert host.limits['disk_gb'] == (
            host.total_usable_disk_gb * host.disk_allocation_ratio)
