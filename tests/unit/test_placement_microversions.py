# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Every placement microversion Berth asks for is listed in one place."""

import pathlib
import re

import pytest

from common.placement import microversions
from services.placement import microversion as served

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The modules that send placement requests (through common.placement).
CALLERS = [
    'common/placement/move_allocations.py',
    'services/allinone/launcher.py',
    'services/api/placement_sync.py',
    'services/compute/evacuate.py',
    'services/compute/report.py',
    'services/conductor/allocation_audit.py',
    'services/conductor/allocations.py',
    'services/conductor/move_allocations.py',
    'services/manage/placement_audit.py',
    'services/manage/placement_heal.py',
    'services/manage/status.py',
    'services/scheduler/client/placement.py',
]
_LITERAL = re.compile(r'''['"]1\.\d+['"]''')


def test_every_listed_version_is_one_placement_serves():
    used = microversions.used()
    assert {'CANDIDATES', 'SCHEDULER_CLAIM', 'PROVIDER_TREE'} <= set(used)
    for name, version in used.items():
        assert version in served.VERSIONS, name


def test_every_listed_version_is_used_by_a_caller():
    sources = ''.join((ROOT / path).read_text() for path in CALLERS)
    for name in microversions.used():
        assert 'microversions.%s' % name in sources, name


@pytest.mark.parametrize('path', CALLERS)
def test_callers_name_no_version_of_their_own(path):
    source = (ROOT / path).read_text()
    assert not _LITERAL.findall(source), path
    assert 'OpenStack-API-Version' not in source
