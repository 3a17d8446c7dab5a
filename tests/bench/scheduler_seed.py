# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""The scheduler benchmark's data: seeded databases and the request mix.

:func:`build_dataset` is deterministic: the same ``(size, seed)`` gives the
same hosts, uuids, aggregates and instances, so the process that seeds the
databases and the one that checks the scheduler's answers agree without
passing the data around. :func:`seed` writes it with SQLAlchemy Core
straight into fresh placement, api and cell databases (10000 hosts in
seconds; the APIs would take minutes). :func:`build_requests` makes the
mixed request set as RequestSpec objects.
"""

import collections
import json
import random
import time
import uuid

import sqlalchemy as sa

# Flavors: name -> (vcpus, memory_mb, root_gb).
FLAVORS = collections.OrderedDict([
    ('small', (1, 2048, 20)),
    ('medium', (2, 4096, 40)),
    ('large', (4, 8192, 80)),
    ('xlarge', (8, 16384, 160)),
])
AVX2 = 'HW_CPU_X86_AVX2'
# NOTE: 20% of the hosts carry these, as a CPU generation would.
HOST_TRAITS = (AVX2, 'HW_CPU_X86_SSE42', 'HW_CPU_X86_AESNI')
TRAIT_SHARE = 0.2
AGGREGATE_COUNT = 10
# The first aggregates are availability zones (host aggregate metadata),
# mirrored in placement under the same uuid, as Nova mirrors them.
ZONES = ('az1', 'az2', 'az3', 'az4')
INSTANCES_PER_HOST = (0, 6)
PROJECTS = 20
USER = 'bench-user'
CPU_RATIO, RAM_RATIO, DISK_RATIO = 4.0, 1.0, 1.0
RESERVED_RAM_MB = 512
HYPERVISOR_VERSION = 8002000
SUPPORTED = [['x86_64', 'kvm', 'hvm'], ['i686', 'kvm', 'hvm']]
CPU_INFO = {'arch': 'x86_64', 'model': 'Skylake-Server-IBRS',
            'vendor': 'Intel', 'features': ['avx', 'sse4.2', 'aes'],
            'topology': {'sockets': 2, 'cores': 16, 'threads': 2}}
IMAGES = {
    'cirros': {},
    'ubuntu': {'hw_architecture': 'x86_64', 'img_hv_type': 'kvm',
               'hw_vm_mode': 'hvm'},
}

Host = collections.namedtuple(
    'Host', 'index uuid name vcpus memory_mb disk_gb traits aggregate '
    'instances')
Instance = collections.namedtuple('Instance', 'uuid flavor project')
Dataset = collections.namedtuple('Dataset', 'size hosts aggregates zones')
Request = collections.namedtuple(
    'Request', 'kind spec instance_uuids zone trait group_hosts')


def _uuid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def project_name(index):
    """The external id of seeded project ``index``."""
    return 'bench-project-%02d' % index


def build_dataset(size, seed):
    """Return the deterministic Dataset of ``size`` hosts."""
    rng = random.Random('scheduler-%s-%s' % (seed, size))
    aggregates = [_uuid(rng) for _ in range(AGGREGATE_COUNT)]
    zones = dict(zip(aggregates, ZONES))
    hosts = []
    for index in range(size):
        traits = HOST_TRAITS if rng.random() < TRAIT_SHARE else ()
        instances = [Instance(_uuid(rng), rng.choice(list(FLAVORS)),
                              project_name(rng.randrange(PROJECTS)))
                     for _ in range(rng.randint(*INSTANCES_PER_HOST))]
        hosts.append(Host(
            index, _uuid(rng), 'bench-cn-%05d' % index,
            rng.choice((32, 48, 64)),
            rng.choice((128, 256, 384, 512)) * 1024,
            rng.randrange(1000, 4001, 500), traits,
            rng.randrange(AGGREGATE_COUNT), instances))
    return Dataset(size, hosts, aggregates, zones)


def host_zone(dataset, host):
    """The availability zone of ``host``, or None (the default zone)."""
    return dataset.zones.get(dataset.aggregates[host.aggregate])


def used(host):
    """(vcpus, memory_mb, disk_gb) taken by the host's seeded instances."""
    totals = [0, 0, 0]
    for instance in host.instances:
        for i, amount in enumerate(FLAVORS[instance.flavor]):
            totals[i] += amount
    return tuple(totals)


# ----------------------------------------------------------------- seeding

def _insert(conn, table, rows, batch=20000):
    for start in range(0, len(rows), batch):
        conn.execute(table.insert(), rows[start:start + batch])


def _seed_placement(url, dataset, now):
    from services.placement.db import tables as t
    from services.placement.objects import catalog

    rc = {name: catalog.standard_rc_id(name)
          for name in ('VCPU', 'MEMORY_MB', 'DISK_GB')}
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        trait_ids = dict(conn.execute(
            sa.select(t.traits.c.name, t.traits.c.id).where(
                t.traits.c.name.in_(HOST_TRAITS))).all())
        conn.execute(t.consumer_types.insert(),
                     [{'id': 1, 'name': 'INSTANCE', 'created_at': now}])
        _insert(conn, t.projects, [
            {'id': i + 1, 'external_id': project_name(i), 'created_at': now}
            for i in range(PROJECTS)])
        _insert(conn, t.users, [{'id': 1, 'external_id': USER,
                                 'created_at': now}])
        _insert(conn, t.placement_aggregates, [
            {'id': i + 1, 'uuid': agg, 'created_at': now}
            for i, agg in enumerate(dataset.aggregates)])
        providers, inventories, traits, aggs = [], [], [], []
        consumers, allocations = [], []
        for host in dataset.hosts:
            rp = host.index + 1
            providers.append({'id': rp, 'uuid': host.uuid, 'name': host.name,
                              'generation': 1, 'root_provider_id': rp,
                              'created_at': now})
            for name, total, ratio, reserved in (
                    ('VCPU', host.vcpus, CPU_RATIO, 0),
                    ('MEMORY_MB', host.memory_mb, RAM_RATIO,
                     RESERVED_RAM_MB),
                    ('DISK_GB', host.disk_gb, DISK_RATIO, 0)):
                inventories.append({
                    'resource_provider_id': rp, 'resource_class_id': rc[name],
                    'total': total, 'reserved': reserved, 'min_unit': 1,
                    'max_unit': total, 'step_size': 1,
                    'allocation_ratio': ratio, 'created_at': now})
            traits.extend({'trait_id': trait_ids[name],
                           'resource_provider_id': rp, 'created_at': now}
                          for name in host.traits)
            aggs.append({'resource_provider_id': rp,
                         'aggregate_id': host.aggregate + 1,
                         'created_at': now})
            for instance in host.instances:
                consumers.append({
                    'uuid': instance.uuid,
                    'project_id': int(instance.project[-2:]) + 1,
                    'user_id': 1, 'generation': 1, 'consumer_type_id': 1,
                    'created_at': now})
                vcpus, ram, disk = FLAVORS[instance.flavor]
                allocations.extend({
                    'resource_provider_id': rp, 'consumer_id': instance.uuid,
                    'resource_class_id': rc[name], 'used': amount,
                    'created_at': now} for name, amount in (
                        ('VCPU', vcpus), ('MEMORY_MB', ram),
                        ('DISK_GB', disk)))
        for table, rows in ((t.resource_providers, providers),
                            (t.inventories, inventories),
                            (t.resource_provider_traits, traits),
                            (t.resource_provider_aggregates, aggs),
                            (t.consumers, consumers),
                            (t.allocations, allocations)):
            _insert(conn, table, rows)
    engine.dispose()
    return len(consumers)


def _seed_api(url, dataset, cell_url, transport_url, now):
    from common.db import api_tables as t

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(t.cell_mappings.insert(), [{
            'id': 1, 'uuid': str(uuid.uuid5(uuid.NAMESPACE_URL, cell_url)),
            'name': 'cell1', 'transport_url': transport_url,
            'database_connection': cell_url, 'disabled': False,
            'created_at': now}])
        _insert(conn, t.host_mappings, [
            {'cell_id': 1, 'host': h.name, 'created_at': now}
            for h in dataset.hosts])
        _insert(conn, t.aggregates, [
            {'id': i + 1, 'uuid': agg, 'name': 'bench-agg-%d' % i,
             'created_at': now} for i, agg in enumerate(dataset.aggregates)])
        _insert(conn, t.aggregate_metadata, [
            {'aggregate_id': i + 1, 'key': 'availability_zone',
             'value': dataset.zones[agg], 'created_at': now}
            for i, agg in enumerate(dataset.aggregates)
            if agg in dataset.zones])
        _insert(conn, t.aggregate_hosts, [
            {'aggregate_id': h.aggregate + 1, 'host': h.name,
             'created_at': now} for h in dataset.hosts])
    engine.dispose()


def _flavor_json(name):
    vcpus, ram, disk = FLAVORS[name]
    return json.dumps({'flavorid': name, 'name': name, 'vcpus': vcpus,
                       'memory_mb': ram, 'root_gb': disk, 'ephemeral_gb': 0,
                       'swap': 0, 'extra_specs': {}})


def _seed_cell(url, dataset, now):
    from common.db import cell_tables as t

    engine = sa.create_engine(url)
    services, nodes, instances = [], [], []
    for host in dataset.hosts:
        vcpus_used, ram_used, disk_used = used(host)
        zone = host_zone(dataset, host) or 'nova'
        services.append({
            'id': host.index + 1, 'uuid': str(uuid.uuid5(uuid.NAMESPACE_DNS,
                                                         host.name)),
            'host': host.name, 'binary': 'berth-compute', 'topic': 'compute',
            'report_count': 1, 'disabled': False, 'forced_down': False,
            'last_seen_up': now, 'version': 0, 'created_at': now,
            'deleted': 0})
        nodes.append({
            'uuid': host.uuid, 'service_id': host.index + 1,
            'host': host.name, 'hypervisor_hostname': host.name,
            'host_ip': '10.%d.%d.%d' % (host.index >> 16 & 255,
                                        host.index >> 8 & 255,
                                        host.index & 255),
            'vcpus': host.vcpus, 'memory_mb': host.memory_mb,
            'local_gb': host.disk_gb, 'vcpus_used': vcpus_used,
            'memory_mb_used': ram_used + RESERVED_RAM_MB,
            'local_gb_used': disk_used,
            'free_ram_mb': host.memory_mb - ram_used - RESERVED_RAM_MB,
            'free_disk_gb': host.disk_gb - disk_used,
            'running_vms': len(host.instances), 'current_workload': 0,
            'hypervisor_type': 'QEMU',
            'hypervisor_version': HYPERVISOR_VERSION,
            'cpu_info': json.dumps(CPU_INFO), 'pci_stats': '[]',
            'metrics': '[]', 'supported_instances': json.dumps(SUPPORTED),
            'stats': json.dumps({'num_instances': len(host.instances),
                                 'io_workload': 0}),
            'cpu_allocation_ratio': CPU_RATIO,
            'ram_allocation_ratio': RAM_RATIO,
            'disk_allocation_ratio': DISK_RATIO, 'mapped': 1,
            'created_at': now, 'updated_at': now, 'deleted': 0})
        instances.extend({
            'uuid': i.uuid, 'host': host.name, 'node': host.name,
            'project_id': i.project, 'user_id': USER,
            'image_ref': 'cirros', 'flavor': _flavor_json(i.flavor),
            'vm_state': 'active', 'power_state': 1,
            'availability_zone': zone, 'launched_at': now,
            'created_at': now, 'deleted': 0} for i in host.instances)
    with engine.begin() as conn:
        _insert(conn, t.services, services)
        _insert(conn, t.compute_nodes, nodes)
        _insert(conn, t.instances, instances)
    engine.dispose()


def seed(config_file, size, seed_value, transport_url):
    """Create and fill the databases named in ``config_file``.

    Runs in a fresh process: Berth's Database objects are configured once
    per process, and every size has its own database files.

    :param transport_url: the cell's message queue, for its cell mapping.

    :returns: {'seconds', 'hosts', 'instances'}.
    """
    from oslo_utils import timeutils

    from common import config
    from common.db import cells as cells_db
    from services.placement.db import api as placement_api

    start = time.perf_counter()
    conf = config.parse_args(['--config-file', config_file],
                             default_config_files=[])
    placement_api.sync(conf)
    cells_db.sync_api(conf)
    cells_db.sync_cell(cells_db.local_cell_database())
    dataset = build_dataset(size, seed_value)
    # NOTE: naive UTC, as Berth stores every timestamp.
    now = timeutils.utcnow()
    count = _seed_placement(conf.placement_database.connection, dataset, now)
    _seed_api(conf.api_database.connection, dataset,
              conf.database.connection, transport_url, now)
    _seed_cell(conf.database.connection, dataset, now)
    return {'seconds': round(time.perf_counter() - start, 1),
            'hosts': size, 'instances': count}


# ----------------------------------------------------------- request mix

# One block of ten requests: (kind, flavor, instances, image). Kinds:
# plain, avx2 (trait:HW_CPU_X86_AVX2=required), az (an availability
# zone), group (anti-affinity with two existing members), multi.
MIX = (
    ('plain', 'small', 1, 'cirros'),
    ('plain', 'medium', 1, 'ubuntu'),
    ('avx2', 'medium', 1, 'cirros'),
    ('az', 'large', 1, 'ubuntu'),
    ('plain', 'large', 1, 'cirros'),
    ('group', 'small', 3, 'cirros'),
    ('multi', 'medium', 2, 'ubuntu'),
    ('az', 'small', 1, 'cirros'),
    ('plain', 'xlarge', 1, 'ubuntu'),
    ('avx2', 'small', 1, 'cirros'),
)


def _flavor(name, kind):
    from common.objects import flavor as flavor_obj

    vcpus, ram, disk = FLAVORS[name]
    extra_specs = {}
    if kind == 'avx2':
        extra_specs['trait:%s' % AVX2] = 'required'
        name += '.avx2'
    return flavor_obj.Flavor(name=name, flavorid=name, vcpus=vcpus,
                             memory_mb=ram, root_gb=disk,
                             extra_specs=extra_specs)


def _group(dataset, rng):
    """An anti-affinity group whose two members run on seeded hosts."""
    from common.objects import instance_group as group_obj

    members = []
    while len(members) < 2:
        host = rng.choice(dataset.hosts)
        if host.instances and host.name not in [h for _m, h in members]:
            members.append((host.instances[0].uuid, host.name))
    return group_obj.InstanceGroup(
        uuid=_uuid(rng), name='bench-group', policy=group_obj.ANTI_AFFINITY,
        members=[m for m, _h in members], hosts=[h for _m, h in members])


def build_requests(dataset, count, seed_value):
    """``count`` Requests of the mixed set, in a seeded random order."""
    from common.objects import image as image_obj
    from common.objects import request_spec as spec_obj

    rng = random.Random('requests-%s-%s' % (seed_value, dataset.size))
    kinds = [MIX[i % len(MIX)] for i in range(count)]
    rng.shuffle(kinds)
    requests = []
    zones = 0
    for kind, flavor, num, image in kinds:
        uuids = [_uuid(rng) for _ in range(num)]
        zone = None
        if kind == 'az':
            # NOTE: in turn, so that a warm-up of 20 visits every zone.
            zone = ZONES[zones % len(ZONES)]
            zones += 1
        group = _group(dataset, rng) if kind == 'group' else None
        spec = spec_obj.RequestSpec(
            instance_uuid=uuids[0],
            project_id=project_name(rng.randrange(PROJECTS)), user_id=USER,
            flavor=_flavor(flavor, kind),
            image=image_obj.ImageMeta(id=image, name=image,
                                      properties=dict(IMAGES[image])),
            availability_zone=zone, num_instances=num, instance_group=group,
            request_id='req-%s' % _uuid(rng))
        requests.append(Request(kind, spec, uuids, zone,
                                AVX2 if kind == 'avx2' else None,
                                list(group.hosts) if group else []))
    return requests


def check_selections(dataset, request, selections, by_name):
    """Problems (strings) with the scheduler's answer to ``request``.

    :param by_name: host name -> Host.
    """
    problems = []
    if len(selections) != len(request.instance_uuids):
        return ['%s: %d selections for %d instances' % (
            request.kind, len(selections), len(request.instance_uuids))]
    chosen = [per[0].service_host for per in selections]
    for name in chosen:
        host = by_name.get(name)
        if host is None:
            problems.append('%s: unknown host %s' % (request.kind, name))
            continue
        if request.zone and host_zone(dataset, host) != request.zone:
            problems.append('%s: %s is not in %s' % (
                request.kind, name, request.zone))
        if request.trait and request.trait not in host.traits:
            problems.append('%s: %s lacks %s' % (
                request.kind, name, request.trait))
    if request.spec.instance_group is not None:
        taken = set(request.group_hosts)
        if len(set(chosen)) != len(chosen) or taken & set(chosen):
            problems.append('%s: anti-affinity broken: %s (members on %s)'
                            % (request.kind, chosen, sorted(taken)))
    return problems
