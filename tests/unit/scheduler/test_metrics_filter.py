# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""MetricsFilter: the weighed metrics must be reported."""

import pytest

from common.conf import CONF
from services.scheduler import filters
from services.scheduler.filters import metrics_filter
from tests.unit.scheduler import fakes

FILTER = metrics_filter.MetricsFilter()

SETTING = ['cpu.user.percent=-1.0', 'cpu.idle.percent=1.0']


@pytest.fixture
def conf():
    """Set options for one test; every override is cleared afterwards."""
    overridden = []

    def override(name, value, group=None):
        CONF.set_override(name, value, group=group)
        overridden.append((name, group))

    yield override
    for name, group in overridden:
        CONF.clear_override(name, group=group)


def _metric(value):
    return {'value': value, 'timestamp': None,
            'source': 'libvirt.LibvirtDriver'}


BOTH = {'cpu.user.percent': _metric(0.2), 'cpu.idle.percent': _metric(0.7)}
ONE = {'cpu.idle.percent': _metric(0.7)}


@pytest.mark.parametrize('setting,required,metrics,expected', [
    (SETTING, True, BOTH, True),
    (SETTING, True, ONE, False),
    (SETTING, True, {}, False),
    (SETTING, True, dict(BOTH, **{'cpu.user.percent': None}), False),
    # not required: the weigher scores missing metrics instead
    (SETTING, False, {}, True),
    ([], True, {}, True),
    # malformed items are skipped, as the weigher skips them
    (['cpu.idle.percent=1.0', 'garbage', '=2'], True, ONE, True),
    (['cpu.frequency=1'], True, BOTH, False),
])
def test_metrics(conf, setting, required, metrics, expected):
    conf('weight_setting', setting, group='metrics')
    conf('required', required, group='metrics')
    host = fakes.host('h1', metrics=metrics)
    assert FILTER.host_passes(host, fakes.spec()) is expected


def test_default_configuration_passes_everything():
    assert FILTER.host_passes(fakes.host('h1'), fakes.spec())


def test_reason(conf):
    conf('weight_setting', SETTING, group='metrics')
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(fakes.host('h1', metrics={}),
                                      fakes.spec())
    assert rejections.by_host[('h1', 'h1')] == (
        'MetricsFilter',
        'does not report metric(s) cpu.user.percent, cpu.idle.percent')
