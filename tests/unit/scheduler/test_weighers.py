# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Table-driven tests of the host weighers, their sums and multipliers."""

import logging
import types

import pytest

from common.conf import CONF
from common.objects import request_spec
from services.scheduler import host_state as hs
from services.scheduler import weighers
from services.scheduler.weighers import build_failure
from services.scheduler.weighers import cpu
from services.scheduler.weighers import cross_cell
from services.scheduler.weighers import disk
from services.scheduler.weighers import hypervisor_version
from services.scheduler.weighers import image_properties
from services.scheduler.weighers import io_ops
from services.scheduler.weighers import metrics
from services.scheduler.weighers import num_instances
from services.scheduler.weighers import pci
from services.scheduler.weighers import ram
from services.scheduler.weighers import soft_affinity
from services.scheduler.weighers import soft_anti_affinity
from tests.unit.scheduler import fakes


class _Overrides(object):
    """Set options with CONF.set_override; undo them all afterwards."""

    def __init__(self):
        self._set = []

    def config(self, group, **options):
        """Override each option of ``options`` in ``group``."""
        for name, value in options.items():
            CONF.set_override(name, value, group=group)
            self._set.append((name, group))

    def clear(self):
        """Drop every override made through this object."""
        for name, group in reversed(self._set):
            CONF.clear_override(name, group=group)


@pytest.fixture
def conf():
    """Config overrides for one test.

    NOTE: the same shape as oslo_config.fixture.Config, whose ``fixtures``
    dependency is not in the test requirements.
    """
    overrides = _Overrides()
    yield overrides
    overrides.clear()


def _hosts(table):
    """Host states from ``[(name, {field: value}), ...]``."""
    return [fakes.host(name, **fields) for name, fields in table]


def _weigh(weigher_classes, table, spec_fields=None, spec=None):
    """Weigh the hosts of ``table``; [(name, total weight)] best first."""
    spec = spec or fakes.spec(**(spec_fields or {}))
    weighed = weighers.weigh([cls() for cls in weigher_classes],
                             _hosts(table), spec)
    return [(w.obj.host, w.weight) for w in weighed]


def _check(result, expected):
    """``result`` has the hosts of ``expected`` in order, with its weights.

    ``expected`` is [(name, weight)]; hosts with equal weights may come in
    any order among themselves, so ties are compared as sets.
    """
    assert ([round(w, 6) for _, w in result]
            == [round(w, 6) for _, w in expected])
    by_weight = {}
    for name, weight in expected:
        by_weight.setdefault(round(weight, 6), set()).add(name)
    for weight, names in by_weight.items():
        assert {n for n, w in result if round(w, 6) == weight} == names


# --- the observed order (doc/behaviours.md A12) ---------------------------

SEEDS_A12 = [('sh11-compute-s3-10e5e12e25', {'free_ram_mb': 27767}),
             ('sh11-compute-s3-10e5e12e26', {'free_ram_mb': 36983}),
             ('sh11-compute-s3-10e5e12e28', {'free_ram_mb': 28791}),
             ('sh11-compute-s3-10e5e12e29', {'free_ram_mb': 24695})]


def test_a12_order_by_free_ram():
    """Digest §3.9/A12: e26 > e28 > e25 > e29, e26 selected."""
    result = _weigh([ram.RAMWeigher], SEEDS_A12,
                    {'vcpus': 1, 'memory_mb': 1024})
    assert [name[-3:] for name, _ in result] == ['e26', 'e28', 'e25',
                                                 'e29']
    # NOTE: normalised from 0, so each weight is free RAM / the largest.
    assert result[0][1] == pytest.approx(1.0)
    assert result[-1][1] == pytest.approx(24695 / 36983)


def test_a12_order_with_every_default_weigher():
    """The same hosts, otherwise identical, under all default weighers."""
    classes = [cls for cls in _ALL_WEIGHERS]
    result = _weigh(classes, SEEDS_A12, {'vcpus': 1, 'memory_mb': 1024})
    assert [name[-3:] for name, _ in result] == ['e26', 'e28', 'e25',
                                                 'e29']


# --- one table per weigher -----------------------------------------------

@pytest.mark.parametrize('table, overrides, expected', [
    pytest.param([('h1', {'free_ram_mb': 1024}),
                  ('h2', {'free_ram_mb': 4096})], {},
                 [('h2', 1.0), ('h1', 0.25)], id='spread-by-default'),
    pytest.param([('h1', {'free_ram_mb': 1024}),
                  ('h2', {'free_ram_mb': 4096})],
                 {'ram_weight_multiplier': -1.0},
                 [('h1', -0.25), ('h2', -1.0)], id='negative-stacks'),
    pytest.param([('h1', {'free_ram_mb': -512}),
                  ('h2', {'free_ram_mb': 1024})], {},
                 [('h2', 1.0), ('h1', -0.5)], id='overcommitted-last'),
    pytest.param([('h1', {'free_ram_mb': 2048}),
                  ('h2', {'free_ram_mb': 2048})], {},
                 [('h1', 1.0), ('h2', 1.0)], id='equal-hosts-tie'),
])
def test_ram_weigher(conf, table, overrides, expected):
    conf.config(group='filter_scheduler', **overrides)
    _check(_weigh([ram.RAMWeigher], table), expected)


@pytest.mark.parametrize('table, overrides, expected', [
    pytest.param([('h1', {'free_disk_mb': 10240}),
                  ('h2', {'free_disk_mb': 40960})], {},
                 [('h2', 1.0), ('h1', 0.25)], id='spread-by-default'),
    pytest.param([('h1', {'free_disk_mb': 10240}),
                  ('h2', {'free_disk_mb': 40960})],
                 {'disk_weight_multiplier': -2.0},
                 [('h1', -0.5), ('h2', -2.0)], id='negative-stacks'),
])
def test_disk_weigher(conf, table, overrides, expected):
    conf.config(group='filter_scheduler', **overrides)
    _check(_weigh([disk.DiskWeigher], table), expected)


@pytest.mark.parametrize('table, overrides, expected', [
    # h1: 16 * 1.0 - 4 = 12 free; h2: 8 * 4.0 - 8 = 24 free.
    pytest.param([('h1', {'vcpus_total': 16, 'cpu_allocation_ratio': 1.0,
                          'vcpus_used': 4}),
                  ('h2', {'vcpus_total': 8, 'cpu_allocation_ratio': 4.0,
                          'vcpus_used': 8})], {},
                 [('h2', 1.0), ('h1', 0.5)], id='ratio-counts'),
    pytest.param([('h1', {'vcpus_total': 16, 'cpu_allocation_ratio': 1.0,
                          'vcpus_used': 4}),
                  ('h2', {'vcpus_total': 8, 'cpu_allocation_ratio': 4.0,
                          'vcpus_used': 8})],
                 {'cpu_weight_multiplier': -1.0},
                 [('h1', -0.5), ('h2', -1.0)], id='negative-stacks'),
])
def test_cpu_weigher(conf, table, overrides, expected):
    conf.config(group='filter_scheduler', **overrides)
    _check(_weigh([cpu.CPUWeigher], table), expected)


@pytest.mark.parametrize('table, overrides, expected', [
    pytest.param([('busy', {'num_io_ops': 6}), ('idle', {'num_io_ops': 0}),
                  ('some', {'num_io_ops': 3})], {},
                 [('idle', 0.0), ('some', -0.5), ('busy', -1.0)],
                 id='idle-first-by-default'),
    pytest.param([('busy', {'num_io_ops': 6}), ('idle', {'num_io_ops': 0})],
                 {'io_ops_weight_multiplier': 1.0},
                 [('busy', 1.0), ('idle', 0.0)], id='positive-packs'),
    pytest.param([('h1', {'num_io_ops': 2}), ('h2', {'num_io_ops': 2})], {},
                 [('h1', 0.0), ('h2', 0.0)], id='all-equal-zero'),
])
def test_io_ops_weigher(conf, table, overrides, expected):
    conf.config(group='filter_scheduler', **overrides)
    _check(_weigh([io_ops.IoOpsWeigher], table), expected)


def _metric(value):
    return {'value': value, 'timestamp': None, 'source': 'libvirt'}


METRIC_HOSTS = [
    ('calm', {'metrics': {'cpu.idle': _metric(80), 'cpu.user': _metric(10)}}),
    ('busy', {'metrics': {'cpu.idle': _metric(50), 'cpu.user': _metric(40)}}),
    ('mute', {'metrics': {'cpu.idle': _metric(99)}}),
]


@pytest.mark.parametrize('table, overrides, expected', [
    # calm: 80 - 10 = 70; busy: 50 - 40 = 10.
    pytest.param(METRIC_HOSTS[:2],
                 {'weight_setting': ['cpu.idle=1.0', 'cpu.user=-1.0']},
                 [('calm', 1.0), ('busy', 0.0)], id='weighted-sum'),
    pytest.param(METRIC_HOSTS,
                 {'weight_setting': ['cpu.idle=1.0', 'cpu.user=-1.0'],
                  'required': False},
                 [('calm', 1.0), ('busy', 10010 / 10070), ('mute', 0.0)],
                 id='missing-weighs-unavailable'),
    pytest.param(METRIC_HOSTS,
                 {'weight_setting': ['cpu.idle=1.0', 'cpu.user=-1.0'],
                  'required': False, 'weight_multiplier': 2.0},
                 [('calm', 2.0), ('busy', 20020 / 10070), ('mute', 0.0)],
                 id='multiplier'),
    pytest.param(METRIC_HOSTS, {'weight_setting': []},
                 [('calm', 0.0), ('busy', 0.0), ('mute', 0.0)],
                 id='no-setting-no-effect'),
    pytest.param(METRIC_HOSTS[:2],
                 {'weight_setting': ['cpu.idle', '=2', 'cpu.user=lots',
                                     'cpu.user=1']},
                 [('busy', 1.0), ('calm', 0.0)], id='bad-items-ignored'),
])
def test_metrics_weigher(conf, table, overrides, expected):
    conf.config(group='metrics', **overrides)
    _check(_weigh([metrics.MetricsWeigher], table), expected)


def test_metrics_weigher_missing_required_metric_raises(conf):
    conf.config(group='metrics', weight_setting=['cpu.user=-1.0'],
                required=True)
    with pytest.raises(metrics.ComputeHostMetricNotFound,
                       match='cpu.user not found on host mute'):
        _weigh([metrics.MetricsWeigher], METRIC_HOSTS)


def test_metrics_weigher_warns_once_per_bad_item(conf, caplog):
    conf.config(group='metrics', weight_setting=['cpu.idle', 'cpu.user=-1'])
    caplog.set_level(logging.WARNING, logger=metrics.__name__)
    weigher = metrics.MetricsWeigher()
    for _ in range(3):
        weighers.weigh([weigher], _hosts(METRIC_HOSTS[:2]), fakes.spec())
    warnings = [r for r in caplog.records if 'cpu.idle' in r.getMessage()]
    assert len(warnings) == 1


PCI_HOSTS = [
    ('none', {'pci_stats': []}),
    ('one', {'pci_stats': [{'vendor_id': '8086', 'product_id': '1520',
                            'numa_node': 0, 'count': 1}]}),
    ('many', {'pci_stats': [{'vendor_id': '8086', 'product_id': '1520',
                             'numa_node': 0, 'count': 4},
                            {'vendor_id': '10de', 'product_id': '1eb8',
                             'numa_node': 1, 'count': 4}]}),
]
PCI_REQUEST = [{'alias': 'nic', 'count': 1, 'spec': [{'vendor_id': '8086'}]}]


@pytest.mark.parametrize('spec_fields, expected', [
    pytest.param({'pci_requests': PCI_REQUEST},
                 [('many', 1.0), ('one', 0.125), ('none', 0.0)],
                 id='pci-request-prefers-devices'),
    pytest.param({}, [('none', 1.0), ('one', 0.875), ('many', 0.0)],
                 id='no-request-keeps-pci-hosts-free'),
])
def test_pci_weigher(spec_fields, expected):
    _check(_weigh([pci.PCIWeigher], PCI_HOSTS, spec_fields), expected)


GROUP_HOSTS = [('h1', {}), ('h2', {}), ('h3', {})]


@pytest.mark.parametrize('policy, group_hosts, expected', [
    pytest.param('soft-affinity', ['h2', 'h2', 'h3'],
                 [('h2', 1.0), ('h3', 0.5), ('h1', 0.0)],
                 id='most-members-first'),
    pytest.param('soft-affinity', [],
                 [('h1', 0.0), ('h2', 0.0), ('h3', 0.0)],
                 id='first-member-anywhere'),
    pytest.param('affinity', ['h2'],
                 [('h1', 0.0), ('h2', 0.0), ('h3', 0.0)],
                 id='hard-policy-ignored'),
    pytest.param(None, [], [('h1', 0.0), ('h2', 0.0), ('h3', 0.0)],
                 id='no-group'),
])
def test_soft_affinity_weigher(policy, group_hosts, expected):
    group = fakes.group(policy, hosts=group_hosts) if policy else None
    _check(_weigh([soft_affinity.ServerGroupSoftAffinityWeigher],
                  GROUP_HOSTS, {'group': group}), expected)


@pytest.mark.parametrize('policy, group_hosts, expected', [
    pytest.param('soft-anti-affinity', ['h2', 'h2', 'h3'],
                 [('h1', 1.0), ('h3', 0.5), ('h2', 0.0)],
                 id='fewest-members-first'),
    # NOTE: more members than hosts (doc/behaviours.md B14): still a host,
    # the least crowded one, where the hard policy would give NoValidHost.
    pytest.param('soft-anti-affinity', ['h1', 'h2', 'h3', 'h1', 'h3'],
                 [('h2', 1.0), ('h1', 0.0), ('h3', 0.0)],
                 id='over-capacity-least-crowded'),
    pytest.param('anti-affinity', ['h2'],
                 [('h1', 0.0), ('h2', 0.0), ('h3', 0.0)],
                 id='hard-policy-ignored'),
])
def test_soft_anti_affinity_weigher(policy, group_hosts, expected):
    group = fakes.group(policy, hosts=group_hosts)
    _check(_weigh([soft_anti_affinity.ServerGroupSoftAntiAffinityWeigher],
                  GROUP_HOSTS, {'group': group}), expected)


@pytest.mark.parametrize('table, overrides, expected', [
    pytest.param([('ok', {'failed_builds': 0}), ('bad', {'failed_builds': 4}),
                  ('meh', {'failed_builds': 1})], {},
                 [('ok', 1e6), ('meh', 0.75e6), ('bad', 0.0)],
                 id='failures-weigh-down'),
    pytest.param([('h1', {'failed_builds': 0}), ('h2', {'failed_builds': 0})],
                 {}, [('h1', 0.0), ('h2', 0.0)], id='no-failures-no-effect'),
    pytest.param([('ok', {'failed_builds': 0}), ('bad', {'failed_builds': 4})],
                 {'build_failure_weight_multiplier': 0.0},
                 [('ok', 0.0), ('bad', 0.0)], id='disabled'),
])
def test_build_failure_weigher(conf, table, overrides, expected):
    conf.config(group='filter_scheduler', **overrides)
    _check(_weigh([build_failure.BuildFailureWeigher], table), expected)


@pytest.mark.parametrize('table, overrides, expected', [
    pytest.param([('h1', {'num_instances': 2}), ('h2', {'num_instances': 6})],
                 {}, [('h1', 0.0), ('h2', 0.0)], id='off-by-default'),
    pytest.param([('h1', {'num_instances': 2}), ('h2', {'num_instances': 6})],
                 {'num_instances_weight_multiplier': 1.0},
                 [('h2', 1.0), ('h1', 0.0)], id='positive-packs'),
    pytest.param([('h1', {'num_instances': 2}), ('h2', {'num_instances': 6})],
                 {'num_instances_weight_multiplier': -1.0},
                 [('h1', 0.0), ('h2', -1.0)], id='negative-spreads'),
])
def test_num_instances_weigher(conf, table, overrides, expected):
    conf.config(group='filter_scheduler', **overrides)
    _check(_weigh([num_instances.NumInstancesWeigher], table), expected)


@pytest.mark.parametrize('table, overrides, expected', [
    pytest.param([('old', {'hypervisor_version': 6002000}),
                  ('new', {'hypervisor_version': 8002000}),
                  ('mid', {'hypervisor_version': 7002000})], {},
                 [('new', 1.0), ('mid', 0.5), ('old', 0.0)],
                 id='newest-first'),
    pytest.param([('unknown', {'hypervisor_version': None}),
                  ('new', {'hypervisor_version': 8002000})], {},
                 [('new', 1.0), ('unknown', 0.0)], id='unreported-oldest'),
    pytest.param([('old', {'hypervisor_version': 6002000}),
                  ('new', {'hypervisor_version': 8002000})],
                 {'hypervisor_version_weight_multiplier': -1.0},
                 [('old', 0.0), ('new', -1.0)], id='negative-prefers-old'),
])
def test_hypervisor_version_weigher(conf, table, overrides, expected):
    conf.config(group='filter_scheduler', **overrides)
    _check(_weigh([hypervisor_version.HypervisorVersionWeigher], table),
           expected)


def _instances(*images):
    """InstanceInfo records running ``images`` (ids or (id, props))."""
    result = {}
    for number, image in enumerate(images):
        uuid = 'inst-%d' % number
        if isinstance(image, tuple):
            # NOTE: a record that carries its image properties, which the
            # weigher compares one by one.
            result[uuid] = types.SimpleNamespace(
                uuid=uuid, image_id=image[0], image_properties=image[1])
        else:
            result[uuid] = hs.InstanceInfo(uuid=uuid, image_id=image)
    return result


IMAGE_HOSTS = [
    ('two-same', {'instances': _instances('image-1', 'image-1')}),
    ('one-same', {'instances': _instances('image-1', 'image-2')}),
    ('other', {'instances': _instances('image-2', 'image-3')}),
    ('empty', {}),
]
PROPS = {'os_distro': 'ubuntu', 'hw_machine_type': 'q35'}
PROP_HOSTS = [
    ('both', {'instances': _instances(('image-9', dict(PROPS)))}),
    ('distro', {'instances': _instances(
        ('image-8', {'os_distro': 'ubuntu', 'hw_machine_type': 'pc'}))}),
    ('machine', {'instances': _instances(
        ('image-7', {'os_distro': 'rhel', 'hw_machine_type': 'q35'}))}),
]


@pytest.mark.parametrize('table, overrides, expected', [
    pytest.param(IMAGE_HOSTS, {},
                 [('two-same', 0.0), ('one-same', 0.0), ('other', 0.0),
                  ('empty', 0.0)], id='off-by-default'),
    pytest.param(IMAGE_HOSTS, {'image_props_weight_multiplier': 1.0},
                 [('two-same', 1.0), ('one-same', 0.5), ('other', 0.0),
                  ('empty', 0.0)], id='same-image-id-counted'),
    pytest.param(PROP_HOSTS, {'image_props_weight_multiplier': 1.0},
                 [('both', 1.0), ('distro', 0.0), ('machine', 0.0)],
                 id='each-property-counts-one'),
    pytest.param(PROP_HOSTS, {'image_props_weight_multiplier': 1.0,
                              'image_props_weight_setting': [
                                  'os_distro=2', 'hw_machine_type=0.5']},
                 [('both', 1.0), ('distro', 0.75), ('machine', 0.0)],
                 id='setting-ratios'),
    pytest.param(PROP_HOSTS, {'image_props_weight_multiplier': 1.0,
                              'image_props_weight_setting': [
                                  'hw_machine_type=1', 'junk']},
                 [('both', 1.0), ('machine', 1.0), ('distro', 0.0)],
                 id='only-listed-properties'),
])
def test_image_properties_weigher(conf, table, overrides, expected):
    conf.config(group='filter_scheduler', **overrides)
    spec = fakes.spec(image_properties=PROPS)
    _check(_weigh([image_properties.ImagePropertiesWeigher], table,
                  spec=spec), expected)


CELL_HOSTS = [('a1', {'cell_uuid': 'cell-a', 'free_ram_mb': 65536}),
              ('b1', {'cell_uuid': 'cell-b', 'free_ram_mb': 1024}),
              ('b2', {'cell_uuid': 'cell-b', 'free_ram_mb': 2048})]


@pytest.mark.parametrize('spec_fields, expected', [
    pytest.param({}, [('a1', 0.0), ('b1', 0.0), ('b2', 0.0)],
                 id='plain-boot-no-effect'),
    pytest.param({'scheduler_hints': {'source_cell': ['cell-b']}},
                 [('b1', 1e6), ('b2', 1e6), ('a1', 0.0)], id='hint'),
    pytest.param({'requested_destination':
                  request_spec.Destination(cell='cell-b')},
                 [('b1', 1e6), ('b2', 1e6), ('a1', 0.0)],
                 id='requested-destination'),
    pytest.param({'scheduler_hints': {'source_cell': ['cell-a', 'cell-b']}},
                 [('a1', 0.0), ('b1', 0.0), ('b2', 0.0)],
                 id='ambiguous-hint-ignored'),
])
def test_cross_cell_weigher(spec_fields, expected):
    _check(_weigh([cross_cell.CrossCellWeigher], CELL_HOSTS, spec_fields),
           expected)


def test_cross_cell_beats_free_ram():
    """The source cell wins even against a host with far more RAM."""
    result = _weigh([cross_cell.CrossCellWeigher, ram.RAMWeigher],
                    CELL_HOSTS, {'scheduler_hints': {'source_cell':
                                                     ['cell-b']}})
    assert [name for name, _ in result] == ['b2', 'b1', 'a1']


# --- sums, multipliers and aggregate overrides ---------------------------

def test_sum_of_weighers_with_multipliers(conf):
    """total = sum(multiplier * normalised weight) over the weighers."""
    conf.config(group='filter_scheduler', ram_weight_multiplier=2.0,
                io_ops_weight_multiplier=-3.0,
                num_instances_weight_multiplier=0.5)
    table = [('h1', {'free_ram_mb': 8192, 'num_io_ops': 0,
                     'num_instances': 10}),
             ('h2', {'free_ram_mb': 4096, 'num_io_ops': 4,
                     'num_instances': 0}),
             ('h3', {'free_ram_mb': 6144, 'num_io_ops': 2,
                     'num_instances': 5})]
    spec = fakes.spec()
    hosts = _hosts(table)
    weighed = weighers.weigh([ram.RAMWeigher(), io_ops.IoOpsWeigher(),
                              num_instances.NumInstancesWeigher()],
                             hosts, spec)
    # h1: 2*1 - 3*0 + 0.5*1; h3: 2*0.75 - 3*0.5 + 0.5*0.5;
    # h2: 2*0.5 - 3*1 + 0.5*0.
    assert [(w.obj.host, round(w.weight, 6)) for w in weighed] == [
        ('h1', 2.5), ('h3', 0.25), ('h2', -2.0)]
    assert weighed[1].contributions == {
        'RAMWeigher': pytest.approx(1.5),
        'IoOpsWeigher': pytest.approx(-1.5),
        'NumInstancesWeigher': pytest.approx(0.25)}


def test_io_ops_outweighs_ram_when_multiplied(conf):
    """A larger |multiplier| lets a weigher dominate the others."""
    table = [('roomy-busy', {'free_ram_mb': 8192, 'num_io_ops': 5}),
             ('tight-idle', {'free_ram_mb': 2048, 'num_io_ops': 0})]
    classes = [ram.RAMWeigher, io_ops.IoOpsWeigher]
    # NOTE: at the defaults the busy host's -1 cancels its RAM lead.
    assert _weigh(classes, table)[0][0] == 'tight-idle'
    conf.config(group='filter_scheduler', ram_weight_multiplier=3.0)
    assert _weigh(classes, table)[0][0] == 'roomy-busy'
    conf.config(group='filter_scheduler', io_ops_weight_multiplier=-10.0)
    assert _weigh(classes, table)[0][0] == 'tight-idle'


def _agg(**metadata):
    return fakes.aggregate(metadata=metadata)


@pytest.mark.parametrize('aggregates, expected_multiplier', [
    pytest.param([], 1.0, id='config-default'),
    pytest.param([_agg(ram_weight_multiplier='-1.0')], -1.0,
                 id='aggregate-overrides'),
    pytest.param([_agg(ram_weight_multiplier='2.0'),
                  _agg(ram_weight_multiplier='0.5')], 0.5,
                 id='minimum-wins'),
    pytest.param([_agg(ram_weight_multiplier='lots')], 1.0,
                 id='unreadable-ignored'),
    pytest.param([_agg(cpu_weight_multiplier='5.0')], 1.0,
                 id='other-key-no-effect'),
])
def test_ram_multiplier_aggregate_override(aggregates, expected_multiplier):
    host = fakes.host('h1', aggregates=aggregates)
    assert ram.RAMWeigher().weight_multiplier(host) == expected_multiplier


def test_aggregate_override_changes_the_order():
    """A stacking aggregate on the roomiest host sends instances elsewhere."""
    stack = _agg(ram_weight_multiplier='-1.0')
    hosts = [fakes.host('roomy', free_ram_mb=8192, aggregates=[stack]),
             fakes.host('tight', free_ram_mb=4096)]
    weighed = weighers.weigh([ram.RAMWeigher()], hosts, fakes.spec())
    assert [(w.obj.host, w.weight) for w in weighed] == [
        ('tight', pytest.approx(0.5)), ('roomy', pytest.approx(-1.0))]


@pytest.mark.parametrize('weigher_cls, key', [
    (ram.RAMWeigher, 'ram_weight_multiplier'),
    (disk.DiskWeigher, 'disk_weight_multiplier'),
    (cpu.CPUWeigher, 'cpu_weight_multiplier'),
    (io_ops.IoOpsWeigher, 'io_ops_weight_multiplier'),
    (metrics.MetricsWeigher, 'metrics_weight_multiplier'),
    (pci.PCIWeigher, 'pci_weight_multiplier'),
    (soft_affinity.ServerGroupSoftAffinityWeigher,
     'soft_affinity_weight_multiplier'),
    (soft_anti_affinity.ServerGroupSoftAntiAffinityWeigher,
     'soft_anti_affinity_weight_multiplier'),
    (build_failure.BuildFailureWeigher, 'build_failure_weight_multiplier'),
    (num_instances.NumInstancesWeigher, 'num_instances_weight_multiplier'),
    (hypervisor_version.HypervisorVersionWeigher,
     'hypervisor_version_weight_multiplier'),
    (image_properties.ImagePropertiesWeigher,
     'image_props_weight_multiplier'),
    (cross_cell.CrossCellWeigher, 'cross_cell_move_weight_multiplier'),
])
def test_every_weigher_reads_its_aggregate_key(weigher_cls, key):
    host = fakes.host('h1', aggregates=[_agg(**{key: '-7.5'})])
    assert weigher_cls().weight_multiplier(host) == -7.5


@pytest.mark.parametrize('weigher_cls, group, option, default', [
    (ram.RAMWeigher, 'filter_scheduler', 'ram_weight_multiplier', 1.0),
    (io_ops.IoOpsWeigher, 'filter_scheduler', 'io_ops_weight_multiplier',
     -1.0),
    (build_failure.BuildFailureWeigher, 'filter_scheduler',
     'build_failure_weight_multiplier', 1e6),
    (cross_cell.CrossCellWeigher, 'filter_scheduler',
     'cross_cell_move_weight_multiplier', 1e6),
    (num_instances.NumInstancesWeigher, 'filter_scheduler',
     'num_instances_weight_multiplier', 0.0),
    (image_properties.ImagePropertiesWeigher, 'filter_scheduler',
     'image_props_weight_multiplier', 0.0),
    (metrics.MetricsWeigher, 'metrics', 'weight_multiplier', 1.0),
])
def test_multiplier_defaults_and_config(conf, weigher_cls, group, option,
                                        default):
    host = fakes.host('h1')
    assert weigher_cls().weight_multiplier(host) == default
    conf.config(group=group, **{option: 3.0})
    assert weigher_cls().weight_multiplier(host) == 3.0


# --- normalisation edge cases ---------------------------------------------

@pytest.mark.parametrize('values, minval, maxval, expected', [
    pytest.param([], None, None, [], id='empty'),
    pytest.param([5, 5, 5], None, None, [0.0, 0.0, 0.0], id='all-equal'),
    pytest.param([7], None, None, [0.0], id='single-host'),
    pytest.param([1, 2, 3], None, None, [0.0, 0.5, 1.0], id='min-max'),
    pytest.param([-4, 0, 4], None, None, [0.0, 0.5, 1.0], id='negative'),
    pytest.param([2, 4], 0, None, [0.5, 1.0], id='fixed-minval'),
    pytest.param([0, 0], 0, None, [0.0, 0.0], id='minval-all-zero'),
    pytest.param([2, 4], None, 8, [0.0, 1 / 3], id='fixed-maxval'),
])
def test_normalize(values, minval, maxval, expected):
    assert weighers.normalize(values, minval, maxval) == pytest.approx(
        expected)


def test_all_equal_hosts_get_zero_from_every_unbounded_weigher():
    """Identical hosts: every weigher without a fixed bound adds 0."""
    classes = [cls for cls in _ALL_WEIGHERS if cls.minval is None]
    table = [('h1', {}), ('h2', {}), ('h3', {})]
    for _, weight in _weigh(classes, table):
        assert weight == 0.0


def test_no_hosts():
    assert weighers.weigh([ram.RAMWeigher()], [], fakes.spec()) == []


def test_single_host_weighs():
    result = _weigh(_ALL_WEIGHERS, [('only', {})])
    assert [name for name, _ in result] == ['only']


# --- the weigher list --------------------------------------------------

# NOTE: tests/unit/test_packaging.py checks that setup.cfg's entry points
# resolve to these classes.
_ALL_WEIGHERS = [
    ram.RAMWeigher, disk.DiskWeigher, cpu.CPUWeigher, io_ops.IoOpsWeigher,
    metrics.MetricsWeigher, pci.PCIWeigher,
    soft_affinity.ServerGroupSoftAffinityWeigher,
    soft_anti_affinity.ServerGroupSoftAntiAffinityWeigher,
    build_failure.BuildFailureWeigher, num_instances.NumInstancesWeigher,
    hypervisor_version.HypervisorVersionWeigher,
    image_properties.ImagePropertiesWeigher, cross_cell.CrossCellWeigher,
]


@pytest.mark.parametrize('weigher_cls', _ALL_WEIGHERS,
                         ids=lambda cls: cls.__name__)
def test_weigher_name_is_its_entry_point_name(weigher_cls):
    """The explanation names each weigher as operators configure it."""
    assert weigher_cls().name == weigher_cls.__name__
