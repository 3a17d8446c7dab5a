# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""Capacity answers benchmark: headroom and what-if, in process.

The scheduler's pipeline (services/scheduler/capacity) runs over an
in-memory host source and an in-memory placement that answers
allocation candidates with provider summaries, so that only the
capacity code and the filters and weighers it drives are timed (a real
placement query over N providers is the placement benchmark's subject).

- headroom of one plain flavor (2 vCPU, 4 GiB, 20 GiB) over N hosts
  (64 vCPU at ratio 4, 256 GiB, 2 TiB; 20-70% used; 10 aggregates, 2
  zones): targets under 1 s at 1000 hosts, under 5 s at 10000;
- what-if for one host of 100 servers (mixed flavors, a fifth in
  anti-affinity groups with max_server_per_host 2) on a 1000-host
  cloud: target under 2 s.

Each figure is the median of ``--samples`` runs (default 3).
"""

import os
import random
import statistics
import sys
import time
import warnings

warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

TARGETS = {1000: 1.0, 10000: 5.0}
WHAT_IF_TARGET = 2.0
WHAT_IF_SERVERS = 100


class _Placement(object):
    """Providers with inventory and usage; candidates with summaries."""

    def __init__(self):
        self.providers = {}

    def add(self, uuid, capacity, used):
        self.providers[uuid] = (capacity, dict(used))

    def get_allocation_candidates(self, context, params):
        wanted = {}
        for name, value in params:
            if name == 'resources':
                for item in value.split(','):
                    rc, amount = item.split(':')
                    wanted[rc] = int(amount)
        requests, summaries = [], {}
        for uuid, (capacity, used) in self.providers.items():
            if all(capacity.get(rc, 0) - used.get(rc, 0) >= n
                   for rc, n in wanted.items()):
                requests.append({'allocations': {uuid: {
                    'resources': dict(wanted)}}})
                summaries[uuid] = {'root_provider_uuid': uuid, 'traits': [],
                                   'resources': {
                                       rc: {'capacity': c,
                                            'used': used.get(rc, 0)}
                                       for rc, c in capacity.items()}}
        return requests, summaries, '1.39'


def build(size, seed=1):
    """(scheduler, placement, host names) of a ``size``-host cloud."""
    from common.conf import CONF
    from services.scheduler import host_manager
    from services.scheduler import host_state as hs
    from services.scheduler import loading
    from services.scheduler import scheduling
    from services.scheduler.sources import memory

    rng = random.Random(seed)
    aggregates = [hs.Aggregate(id=i, uuid='agg-%d' % i, name='rack%d' % i,
                               metadata={'availability_zone': 'az%d' %
                                         (i % 2)})
                  for i in range(10)]
    placement = _Placement()
    states = []
    for index in range(size):
        name = 'host%05d' % index
        uuid = 'uuid-%s' % name
        share = rng.uniform(0.2, 0.7)
        capacity = {'VCPU': 64 * 4, 'MEMORY_MB': 262144, 'DISK_GB': 2048}
        used = {rc: int(total * share) for rc, total in capacity.items()}
        placement.add(uuid, capacity, used)
        aggregate = aggregates[index % len(aggregates)]
        aggregate.hosts.append(name)
        states.append(hs.HostState(
            host=name, nodename=name, uuid=uuid, cell_uuid='cell1',
            total_usable_ram_mb=262144,
            free_ram_mb=262144 - used['MEMORY_MB'],
            total_usable_disk_gb=2048,
            free_disk_mb=(2048 - used['DISK_GB']) * 1024, vcpus_total=64,
            vcpus_used=used['VCPU'], hypervisor_type='QEMU',
            hypervisor_version=8002000, hypervisor_hostname=name,
            supported_instances=[['x86_64', 'kvm', 'hvm']],
            aggregates=[aggregate], cpu_allocation_ratio=4.0,
            service={'disabled': False, 'forced_down': False, 'up': True}))
    manager = host_manager.HostManager(memory.MemoryHostSource(
        states, aggregates=aggregates))
    scheduler = scheduling.Scheduler(
        manager, placement,
        loading.load_filters(CONF.filter_scheduler.enabled_filters),
        loading.load_weighers(CONF.filter_scheduler.weight_classes))
    return scheduler, placement, [s.host for s in states]


def _spec(vcpus, memory_mb, disk_gb, group=None, uuid=None):
    from common.objects import flavor as flavor_obj
    from common.objects import image as image_obj
    from common.objects import request_spec as spec_obj
    flavor = flavor_obj.Flavor(name='f%d-%d' % (vcpus, memory_mb),
                               flavorid='f%d-%d' % (vcpus, memory_mb),
                               vcpus=vcpus, memory_mb=memory_mb,
                               root_gb=disk_gb)
    return spec_obj.RequestSpec(
        instance_uuid=uuid, project_id='p', user_id='u', flavor=flavor,
        image=image_obj.ImageMeta(id='img', name='cirros'),
        instance_group=group)


def _median(samples, func):
    times = []
    result = None
    for _i in range(samples):
        started = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def bench_headroom(size, samples):
    """(seconds, Headroom) of one plain flavor over ``size`` hosts."""
    from services.scheduler.capacity import headroom
    scheduler, _placement, _hosts = build(size)
    spec = _spec(2, 4096, 20)
    # NOTE: the first run loads the host-state cache, as a scheduler's
    # first request does; it is not timed.
    headroom.headroom(scheduler, None, spec)
    return _median(samples, lambda: headroom.headroom(scheduler, None,
                                                      spec))


def _servers(lost, rng):
    from common.objects import instance_group as group_obj
    from services.scheduler.capacity import what_if
    flavors = [(1, 2048, 20), (2, 4096, 40), (4, 8192, 80),
               (8, 16384, 160)]
    groups = [group_obj.InstanceGroup(
        uuid='group-%d' % i, name='g%d' % i,
        policy=group_obj.ANTI_AFFINITY, rules={'max_server_per_host': 2},
        members=[], hosts=[]) for i in range(5)]
    servers = []
    for index in range(WHAT_IF_SERVERS):
        uuid = 'server-%03d' % index
        group = groups[index % 5] if index % 5 == 0 else None
        if group is not None:
            group.members.append(uuid)
            group.hosts.append(lost)
        servers.append(what_if.Server(
            uuid=uuid, name='vm%03d' % index, host=lost,
            spec=_spec(*rng.choice(flavors), group=group, uuid=uuid)))
    return servers


def bench_what_if(size, samples):
    """(seconds, Plan) of losing one host of 100 servers."""
    from services.scheduler.capacity import what_if
    scheduler, _placement, hosts = build(size)
    servers = _servers(hosts[0], random.Random(2))
    what_if.plan(scheduler, None, servers, [hosts[0]])
    return _median(samples, lambda: what_if.plan(scheduler, None, servers,
                                                 [hosts[0]]))


def add_arguments(parser):
    """The capacity benchmark's options."""
    parser.add_argument('--sizes', default='1000,10000',
                        help='Host counts for headroom (comma-separated).')
    parser.add_argument('--what-if-size', dest='what_if_size', type=int,
                        default=1000, help='Hosts of the what-if cloud.')
    parser.add_argument('--samples', type=int, default=3)


def run(args):
    """Run and print the report; 1 when a target is missed."""
    from common.conf import CONF
    CONF([], project='berth')
    missed = False
    print('load average: %s' % ' '.join('%.2f' % v for v in
                                        os.getloadavg()))
    for size in [int(s) for s in args.sizes.split(',') if s]:
        seconds, result = bench_headroom(size, args.samples)
        target = TARGETS.get(size)
        ok = target is None or seconds < target
        missed |= not ok
        print('headroom   %6d hosts: %.3f s (target %s) -> %d servers, '
              '%d hosts with room%s' % (
                  size, seconds, '< %s s' % target if target else '-',
                  result.total, len(result.per_host),
                  '' if ok else '  MISSED'))
    seconds, plan = bench_what_if(args.what_if_size, args.samples)
    ok = seconds < WHAT_IF_TARGET
    missed |= not ok
    print('what-if    %6d hosts, 1 host of %d servers: %.3f s (target < %s '
          's) -> %d placed, %d not%s' % (
              args.what_if_size, WHAT_IF_SERVERS, seconds, WHAT_IF_TARGET,
              len(plan.moves), len(plan.unplaced), '' if ok else '  MISSED'))
    sys.stdout.flush()
    return 1 if missed else 0
