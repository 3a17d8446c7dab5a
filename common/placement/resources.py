# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A flavor as placement resources: VCPU or PCPU, memory, disk, extras.

The scheduler asks placement for these (its first request filter) and the
conductor's allocation audit compares what a server holds with them, so
the rules (dedicated CPUs as PCPU, one more for isolated emulator
threads, ``resources[S]:RC=N`` overrides and granular groups,
``group_policy``) live here once and the two never disagree.
"""

import logging
import re

from common.numa import constraints as numa_constraints
from common.numa import exception as numa_exception
from common.numa import topology as numa_topology
from common.placement import guest_features

LOG = logging.getLogger(__name__)

_RESOURCES_KEY = re.compile(r'^resources([a-zA-Z0-9_-]{1,64})?:(.+)$')


def cpu_needs(spec):
    """(thread policy, number of dedicated vCPUs) of the request.

    NOTE: the rules (flavor over image, mixed masks, realtime vCPUs) are
    the NUMA library's, the same the API validates and the compute claim
    applies.

    :raises common.numa.exception.NUMARequestInvalid: a combination the
        API refuses; the request cannot be placed.
    """
    specs = spec.flavor.extra_specs
    props = spec.image.properties if spec.image else {}
    policy = numa_constraints.get_cpu_policy(specs, props)
    realtime, _mask = numa_constraints.get_realtime_vcpus(
        specs, props, policy, spec.vcpus)
    dedicated = numa_constraints.get_dedicated_vcpus(
        specs, policy, realtime, spec.vcpus)
    return (numa_constraints.get_cpu_thread_policy(specs, props),
            len(dedicated))


def emulator_pcpus(spec):
    """1 when the emulator threads are isolated on a pCPU of their own.

    NOTE: Nova asks placement for one more PCPU than the guest has
    vCPUs in that case (2 vCPUs, PCPU 3); the NUMA fit holds that pCPU.

    :raises common.numa.exception.NUMARequestInvalid: isolate without
        dedicated CPUs, or a policy that does not exist.
    """
    specs = spec.flavor.extra_specs
    props = spec.image.properties if spec.image else {}
    policy = numa_constraints.get_cpu_policy(specs, props)
    emulator = numa_constraints.get_emulator_threads_policy(specs, props,
                                                            policy)
    return 1 if emulator == numa_topology.ISOLATE else 0


def flavor_resources(spec, query):
    """Add the flavor's VCPU or PCPU, MEMORY_MB and DISK_GB to ``query``.

    Isolated emulator threads add one PCPU (:func:`emulator_pcpus`);
    memory encryption and persistent memory add theirs
    (:func:`common.placement.guest_features.requests`).
    Extra specs ``resources:RC=N`` override (0 removes a class) and
    ``resources{S}:RC=N`` build granular groups; ``group_policy`` is
    passed on. A request the NUMA rules refuse sets ``query.impossible``.

    :param spec: a :class:`common.objects.request_spec.RequestSpec`.
    :param query: a :class:`common.placement.query.PlacementQuery`.
    """
    group = query.unsuffixed
    try:
        _thread_policy, dedicated = cpu_needs(spec)
        emulator = emulator_pcpus(spec)
        features = guest_features.requests(spec.flavor, spec.image)
    except (numa_exception.NUMARequestInvalid,
            guest_features.GuestFeatureInvalid) as exc:
        query.impossible = str(exc)
        return
    shared = spec.vcpus - dedicated
    if shared:
        group.resources['VCPU'] = shared
    if dedicated:
        group.resources['PCPU'] = dedicated + emulator
    group.resources['MEMORY_MB'] = spec.memory_mb
    if spec.disk_gb:
        group.resources['DISK_GB'] = spec.disk_gb
    group.resources.update(features.resources)
    for key, value in spec.flavor.extra_specs.items():
        found = _RESOURCES_KEY.match(key)
        if found:
            suffix, rc = found.group(1) or '', found.group(2)
            try:
                amount = int(value)
            except ValueError:
                LOG.warning('Ignoring extra spec %s=%r: not an integer',
                            key, value)
                continue
            query.group(suffix).resources[rc] = amount
        elif key == 'group_policy':
            query.group_policy = value
    for group in list(query.groups.values()):
        group.resources = {rc: n for rc, n in group.resources.items() if n}
