# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Deterministic host states and request specs for table-driven tests.

    host('h1', free_ram_mb=2048,
         aggregates=[aggregate(metadata={'io': 'fast'})])
    spec(vcpus=2, memory_mb=1024, extra_specs={'io': 'fast'})
    request_host_states(manager, ['uuid-h1'])
"""

import itertools

from common.objects import flavor as flavor_obj
from common.objects import image as image_obj
from common.objects import instance_group as group_obj
from common.objects import request_spec as spec_obj
from services.scheduler import answer_snapshot
from services.scheduler import host_state as hs
from services.scheduler import reservations as reservations_mod

_IDS = itertools.count(1)


def aggregate(name=None, hosts=(), metadata=None):
    """An aggregate; its id and uuid are made up."""
    number = next(_IDS)
    return hs.Aggregate(id=number, uuid='agg-%d' % number,
                        name=name or 'agg%d' % number, hosts=list(hosts),
                        metadata=dict(metadata or {}))


def host(name='host1', node=None, **fields):
    """A HostState with roomy defaults; any field may be overridden.

    Defaults: 16 vCPUs, 32 GiB RAM, 1 TiB disk, enabled and up.
    """
    values = dict(
        uuid='uuid-%s' % name, cell_uuid='cell1',
        total_usable_ram_mb=32768, free_ram_mb=32768,
        total_usable_disk_gb=1024, free_disk_mb=1024 * 1024,
        vcpus_total=16, vcpus_used=0, hypervisor_type='QEMU',
        hypervisor_version=8002000, hypervisor_hostname=name,
        supported_instances=[['x86_64', 'kvm', 'hvm']],
        service={'disabled': False, 'forced_down': False, 'up': True})
    values.update(fields)
    return hs.HostState(host=name, nodename=node or name, **values)


def spec(vcpus=1, memory_mb=512, root_gb=10, extra_specs=None,
         image_properties=None, group=None, **fields):
    """A RequestSpec for one instance of a made-up flavor and image."""
    flavor = flavor_obj.Flavor(name='f%d' % vcpus, flavorid='f%d' % vcpus,
                               vcpus=vcpus, memory_mb=memory_mb,
                               root_gb=root_gb,
                               extra_specs=dict(extra_specs or {}))
    image = image_obj.ImageMeta(id='image-1', name='cirros',
                                properties=dict(image_properties or {}))
    values = dict(instance_uuid='instance-%d' % next(_IDS),
                  project_id='project-1', user_id='user-1',
                  flavor=flavor, image=image, instance_group=group)
    values.update(fields)
    return spec_obj.RequestSpec(**values)


def group(policy, hosts=(), members=(), rules=None):
    """A server group whose members already run on ``hosts``."""
    return group_obj.InstanceGroup(uuid='group-%d' % next(_IDS),
                                   name='g', policy=policy,
                                   rules=dict(rules or {}),
                                   members=list(members), hosts=list(hosts))


def answer(compute_uuids, summaries=None):
    """A placement answer with one single-provider candidate per node."""
    return ([{'allocations': {u: {'resources': {}}}} for u in compute_uuids],
            dict(summaries or {}), '1.36')


def request_host_states(manager, compute_uuids, summaries=None,
                        snapshot_at=None, reservations=None, context=None,
                        snapshot=None):
    """The host states a request's pipeline gets, by its own path: the
    cache refreshed for the candidates, then the snapshot's copies.

    :param reservations: the worker's ledger; an empty one when not given.
    :param snapshot: an AnswerSnapshot to take shared copies from; else
        a new snapshot of ``compute_uuids`` and copies of the caller's own.
    """
    if reservations is None:
        reservations = reservations_mod.Reservations(manager.now)
    shared = snapshot is not None
    if snapshot is None:
        snapshot = answer_snapshot.AnswerSnapshot(
            answer(compute_uuids, summaries), snapshot_at)
    manager.refresh(context, snapshot.compute_uuids)
    return snapshot.host_states(manager, reservations, shared=shared)
