# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Headroom and what-if on static host lists, over the fake placement.

Each headroom is checked against the pipeline itself: booting that many
servers one by one succeeds and the next one gets NoValidHost.
"""

import itertools

import pytest

from common.numa import constraints
from common.objects import instance_group as group_obj
from services.scheduler.capacity import fill
from services.scheduler.capacity import headroom as headroom_mod
from services.scheduler.capacity import what_if
from services.scheduler import numa_consume
from services.scheduler import scheduling
from tests.unit.numa import fakes as numa_fakes
from tests.unit.scheduler import fakes
from tests.unit.scheduler import test_scheduling

FILTERS = ['ComputeFilter', 'ComputeCapabilitiesFilter',
           'ImagePropertiesFilter', 'NUMATopologyFilter',
           'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter']
_N = itertools.count()


def _numa_spec(vcpus, memory_mb, **extra):
    spec = fakes.spec(vcpus=vcpus, memory_mb=memory_mb, root_gb=1,
                      extra_specs=extra)
    spec.numa_topology = constraints.get_constraints(
        spec.flavor, {}).to_primitive()
    return spec


def _boot_until_full(scheduler, spec, limit=100):
    """Servers booted one by one (claims and consumption) until
    NoValidHost.
    """
    booted = 0
    while booted < limit:
        try:
            selections, _r = scheduler.select_destinations(
                None, spec, ['b-%d' % next(_N)])
        except scheduling.NoValidHost:
            return booted
        booted += 1
        # NOTE: what the compute's claim and report do: the node's NUMA
        # usage and the group's members follow the boot.
        chosen = selections[0][0]
        state = scheduler.host_manager.source.states[
            chosen.compute_node_uuid]
        fitted = numa_consume.numa_fit(state, spec)
        if fitted is not None:
            state.numa_topology = fitted
    return booted


def _make(hosts, pcpus=None):
    scheduler, placement = test_scheduling.make(hosts, filters=FILTERS)
    for state in hosts:
        if pcpus is not None:
            placement.inventory[state.uuid]['resources']['PCPU'] = pcpus
    return scheduler, placement


def test_plain_flavor_counts_hosts_zones_and_stranded_ram():
    zone = fakes.aggregate(name='rack1',
                           metadata={'availability_zone': 'az1'})
    hosts = [fakes.host('h1', vcpus_total=16, total_usable_ram_mb=65536,
                        aggregates=[zone]),
             fakes.host('h2', vcpus_total=8, total_usable_ram_mb=8192),
             fakes.host('h3', vcpus_total=4, total_usable_ram_mb=2048)]
    scheduler, _placement = _make(hosts)
    spec = fakes.spec(vcpus=4, memory_mb=4096, root_gb=10)
    result = headroom_mod.headroom(scheduler, None, spec)
    assert result.total == 6
    assert result.per_host == {'h1': 4, 'h2': 2}
    assert result.per_zone == {'az1': 4, 'nova': 2}
    assert result.per_aggregate == {'rack1': 4}
    assert result.full['h1'] == 'placement: no VCPU (0 free, 4 needed)'
    assert result.full['h3'].startswith('placement: no MEMORY_MB')
    ram = result.stranded['MEMORY_MB']
    # h1: 64 GiB - 4 x 4 GiB left where VCPUs ran out; h3 never fit.
    assert ram['by_reason'] == {'placement: no VCPU': 49152,
                                'placement: no MEMORY_MB': 2048}
    assert result.to_dict()['total'] == 6
    assert _boot_until_full(scheduler, spec) == 6


def test_aggregate_scope():
    agg = fakes.aggregate(name='rack1')
    hosts = [fakes.host('h1', aggregates=[agg]), fakes.host('h2')]
    scheduler, _placement = _make(hosts)
    result = headroom_mod.headroom(scheduler, None,
                                   fakes.spec(vcpus=4, memory_mb=1024),
                                   aggregate='rack1')
    assert result.per_host == {'h1': 4}


def test_dedicated_cpus_follow_the_numa_fit_not_placement():
    hosts = [fakes.host('n%d' % i, numa_topology=numa_fakes.no_smt_host(
        cpus_per_node=8, memory=16384).to_primitive()) for i in (1, 2)]
    scheduler, _placement = _make(hosts, pcpus=16)
    # NOTE: placement alone would say 16 // 3 = 5 a host; two 3-CPU
    # guests fill one 8-CPU node (2 left), so the NUMA fit says 4.
    spec = _numa_spec(3, 1024, **{'hw:cpu_policy': 'dedicated',
                                  'hw:numa_nodes': '1'})
    result = headroom_mod.headroom(scheduler, None, spec)
    assert result.per_host == {'n1': 4, 'n2': 4}
    assert result.full['n1'].startswith(('NUMA', 'NUMATopologyFilter'))
    assert result.stranded['PCPU']['free'] == 8
    assert _boot_until_full(scheduler, spec) == 8


def test_hugepages_count_pages():
    hosts = [fakes.host('p1', numa_topology=numa_fakes.hugepage_host(
        gib_pages_on=(0,), count=3).to_primitive())]
    scheduler, _placement = _make(hosts)
    spec = _numa_spec(1, 1024, **{'hw:mem_page_size': '1GB'})
    result = headroom_mod.headroom(scheduler, None, spec)
    assert result.total == 3
    assert _boot_until_full(scheduler, spec) == 3


def test_anti_affinity_with_max_server_per_host():
    hosts = [fakes.host('a%d' % i) for i in (1, 2, 3)]
    scheduler, _placement = _make(hosts)
    group = fakes.group(group_obj.ANTI_AFFINITY, hosts=['a1'],
                        members=['m1'], rules={'max_server_per_host': 2})
    spec = fakes.spec(vcpus=1, memory_mb=512, group=group)
    result = headroom_mod.headroom(scheduler, None, spec)
    assert result.per_host == {'a1': 1, 'a2': 2, 'a3': 2}
    assert group.hosts == ['a1']
    assert result.full['a1'].startswith('ServerGroupAntiAffinityFilter')
    assert _boot_until_full(scheduler, spec) == 5


def test_new_affinity_group_fills_one_host():
    hosts = [fakes.host('x1', vcpus_total=8), fakes.host('x2',
                                                         vcpus_total=8)]
    scheduler, _placement = _make(hosts)
    spec = fakes.spec(vcpus=2, memory_mb=512,
                      group=fakes.group(group_obj.AFFINITY))
    result = headroom_mod.headroom(scheduler, None, spec)
    assert result.total == 4 and len(result.per_host) == 1
    assert spec.instance_group.hosts == []
    assert result.notes[-1].startswith('affinity group')


def test_impossible_request_says_why():
    scheduler, _placement = _make([fakes.host('h1')])
    spec = fakes.spec(availability_zone='nowhere')
    result = headroom_mod.headroom(scheduler, None, spec)
    assert result.total == 0 and result.notes


def _server(name, host, spec):
    return what_if.Server(uuid='u-' + name, name=name, host=host, spec=spec)


def test_what_if_places_biggest_first_deterministically():
    hosts = [fakes.host('lost', vcpus_total=32, total_usable_ram_mb=65536),
             fakes.host('b', vcpus_total=8, total_usable_ram_mb=16384),
             fakes.host('c', vcpus_total=8, total_usable_ram_mb=16384)]
    scheduler, _placement = _make(hosts)
    servers = [_server('small%d' % i, 'lost',
                       fakes.spec(vcpus=1, memory_mb=1024))
               for i in range(3)]
    servers.append(_server('big', 'lost', fakes.spec(vcpus=8,
                                                     memory_mb=16384)))
    servers.append(_server('huge', 'lost', fakes.spec(vcpus=16,
                                                      memory_mb=32768)))
    first = what_if.plan(scheduler, None, servers, ['lost'])
    again = what_if.plan(scheduler, None, servers, ['lost'])
    assert first.to_dict() == again.to_dict()
    assert [m.name for m in first.unplaced] == ['huge']
    assert 'no host' in first.unplaced[0].why or \
        'rejected' in first.unplaced[0].why
    moves = {m.name: m.destination for m in first.moves}
    assert moves['big'] == 'b'          # ties broken by name
    assert {moves['small0'], moves['small1'], moves['small2']} == {'c'}
    assert not first.complete


def test_what_if_honours_max_server_per_host():
    hosts = [fakes.host(name) for name in ('lost', 'd1', 'd2')]
    scheduler, _placement = _make(hosts)
    group = fakes.group(group_obj.ANTI_AFFINITY,
                        hosts=['lost', 'lost', 'd1', 'd2'],
                        members=['u-s1', 'u-s2', 'o1', 'o2'],
                        rules={'max_server_per_host': 2})
    servers = [_server('s%d' % i, 'lost',
                       fakes.spec(vcpus=1, memory_mb=512, group=group))
               for i in (1, 2)]
    result = what_if.plan(scheduler, None, servers, ['lost'])
    assert sorted(m.destination for m in result.moves) == ['d1', 'd2']
    group.hosts[:] = ['lost', 'lost', 'd1', 'd1', 'd2']
    result = what_if.plan(scheduler, None, servers, ['lost'])
    assert [m.destination for m in result.moves] == ['d2']
    assert result.unplaced[0].why.endswith(
        'ServerGroupAntiAffinityFilter 2')


@pytest.mark.parametrize('count', [1])
def test_what_if_of_nothing(count):
    scheduler, _placement = _make([fakes.host('h1')])
    assert what_if.plan(scheduler, None, [], ['h1']).complete


def test_manager_answers_the_headroom_rpc():
    from services.scheduler import manager as manager_mod
    hosts = [fakes.host('h1', vcpus_total=8)]
    scheduler, placement = _make(hosts)
    manager = manager_mod.SchedulerManager(
        host='sched', source=scheduler.host_manager.source,
        placement=placement)
    answer = manager.headroom(None, fakes.spec(vcpus=2).to_primitive(),
                              aggregate=None)
    assert answer['total'] == 4 and answer['per_host'] == {'h1': 4}


def _summary(root, **free):
    return {'root_provider_uuid': root, 'resources': {
        rc: {'capacity': amount, 'used': 0} for rc, amount in free.items()}}


@pytest.mark.parametrize('root, expected', [
    ('cn1', {'VCPU': 8, 'MEMORY_MB': 1024, 'CUSTOM_FPGA': 3}),
    ('cn2', {'VCPU': 1}),
    ('nowhere', {}),
])
def test_ledger_sums_a_tree_over_its_own_providers(root, expected):
    # NOTE: a compute node with NUMA/device children: the stranded
    # figures of a host are its whole tree's, and only its tree's.
    ledger = fill.Ledger({
        'cn1': _summary('cn1', VCPU=8, MEMORY_MB=512),
        'numa1': _summary('cn1', MEMORY_MB=512),
        'fpga1': _summary('cn1', CUSTOM_FPGA=3),
        'cn2': _summary('cn2', VCPU=4),
    })
    ledger.take({'allocations': {'cn2': {'resources': {'VCPU': 3}}}})
    assert ledger.free_of_root(root) == expected
