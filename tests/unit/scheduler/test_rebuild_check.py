# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A rebuild's host check: the current host, RUN_ON_REBUILD filters only,
no placement query and no claim.
"""

import pytest

from common import exception
from common.objects import request_spec as spec_obj
from services.scheduler import filters as filters_mod
from services.scheduler import loading
from services.scheduler import rebuild_check
from tests.unit.scheduler import fakes
from tests.unit.scheduler import test_scheduling


def _rebuild_spec(host='full', **kwargs):
    return fakes.spec(
        scheduler_hints={'_nova_check_type': ['rebuild']},
        requested_destination=spec_obj.Destination(host=host, node=host),
        **kwargs)


def _hosts():
    # NOTE: a host with no room left at all: a rebuild claims nothing new,
    # so RamFilter and friends must not run.
    return [fakes.host('full', free_ram_mb=0, vcpus_used=16,
                       service={'disabled': True, 'forced_down': False,
                                'up': True}),
            fakes.host('other')]


def test_filters_marked_for_rebuild():
    names = ['AggregateImagePropertiesIsolation', 'ImagePropertiesFilter',
             'IsolatedHostsFilter', 'NUMATopologyFilter']
    for host_filter in loading.load_filters(names):
        assert host_filter.RUN_ON_REBUILD, host_filter.name
    for host_filter in loading.load_filters(['RamFilter', 'ComputeFilter',
                                             'AvailabilityZoneFilter']):
        assert not host_filter.RUN_ON_REBUILD, host_filter.name


def test_rebuild_check_passes_the_full_current_host_without_a_claim():
    scheduler, placement = test_scheduling.make(
        _hosts(), filters=['ComputeFilter', 'RamFilter',
                           'ImagePropertiesFilter'])
    spec = _rebuild_spec()
    selections, record = scheduler.select_destinations(None, spec,
                                                       [spec.instance_uuid])
    [[selection]] = selections
    assert (selection.service_host, selection.nodename) == ('full', 'full')
    assert selection.allocation_request is None
    assert placement.claims == {}
    assert [f['filter'] for f in record['filters']] == [
        'ImagePropertiesFilter']


def test_rebuild_check_refuses_an_image_the_host_cannot_run():
    scheduler, placement = test_scheduling.make(
        _hosts(), filters=['ImagePropertiesFilter'])
    spec = _rebuild_spec(image_properties={'hw_architecture': 'aarch64'})
    with pytest.raises(exception.NoValidHost) as caught:
        scheduler.select_destinations(None, spec, [spec.instance_uuid])
    assert 'ImagePropertiesFilter' in str(caught.value)
    assert placement.claims == {}


def test_rebuild_check_needs_a_known_host():
    scheduler, _p = test_scheduling.make(_hosts(), filters=[])
    with pytest.raises(exception.NoValidHost, match='not known'):
        scheduler.select_destinations(None, _rebuild_spec(host='gone'),
                                      ['i'])
    spec = fakes.spec(scheduler_hints={'_nova_check_type': ['rebuild']})
    with pytest.raises(exception.NoValidHost, match='needs the server'):
        scheduler.select_destinations(None, spec, ['i'])


def test_is_rebuild():
    assert rebuild_check.is_rebuild(_rebuild_spec())
    assert not rebuild_check.is_rebuild(fakes.spec())
    assert filters_mod.BaseHostFilter.RUN_ON_REBUILD is False
