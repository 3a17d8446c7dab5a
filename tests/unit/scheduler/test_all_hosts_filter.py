# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AllHostsFilter passes everything."""

import pytest

from services.scheduler.filters import all_hosts_filter
from tests.unit.scheduler import fakes

FILTER = all_hosts_filter.AllHostsFilter()


@pytest.mark.parametrize('host', [
    fakes.host('h1'),
    fakes.host('h2', service={'disabled': True, 'up': False}),
    fakes.host('h3', free_ram_mb=0, free_disk_mb=0),
])
def test_passes_every_host(host):
    assert FILTER.host_passes(host, fakes.spec(vcpus=64, memory_mb=10 ** 6))


def test_flags():
    assert FILTER.run_filter_once_per_request
    assert not FILTER.RUN_ON_REBUILD
    assert FILTER.name == 'AllHostsFilter'
