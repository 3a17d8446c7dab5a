# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Compute node, service and instance records turned into HostStates.

The database source reads rows; this module decides what they mean for
the scheduler: free resources, JSON columns decoded (a broken value is
logged and ignored, never fatal), whether the service is up, which node
each instance counts on.
"""

import json
import logging

from oslo_utils import timeutils

import common.conf
from services.scheduler import host_state as hs

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

_DEFAULT_SERVICE_DOWN_TIME = 60


def service_down_time():
    """``[DEFAULT] service_down_time`` (60 when not registered)."""
    return getattr(CONF, 'service_down_time', _DEFAULT_SERVICE_DOWN_TIME)


def service_is_up(last_heartbeat, forced_down, now=None, down_time=None):
    """True when the last heartbeat is recent and the service not forced down.

    :param last_heartbeat: ``last_seen_up`` (or ``updated_at``) of the
        record, a naive UTC datetime, or None when it never reported.
    """
    if forced_down or last_heartbeat is None:
        return False
    now = now or timeutils.utcnow()
    down_time = service_down_time() if down_time is None else down_time
    elapsed = (now - timeutils.normalize_time(last_heartbeat))
    # NOTE: abs(): a heartbeat "from the future" is clock skew between the
    # service's host and ours, not a reason to call the service down.
    return abs(elapsed.total_seconds()) <= down_time


def decode_json(text, default, what):
    """Decode a JSON column; a broken value is logged and ignored."""
    if text is None or text == '':
        return default
    try:
        return json.loads(text)
    except ValueError:
        LOG.warning('Ignoring undecodable %s: %.80r', what, text)
        return default


def metrics_by_name(value):
    """Metrics as name -> {'value', 'timestamp', 'source'}.

    NOTE: computes store the list of metric records; a mapping is accepted
    as it is.
    """
    if isinstance(value, dict):
        return value
    result = {}
    for item in value or []:
        if isinstance(item, dict) and 'name' in item:
            result[item['name']] = {k: v for k, v in item.items()
                                    if k != 'name'}
    return result


def pci_pools(value):
    """PCI device pools as a list, from a list or a {'pools': [...]}."""
    if isinstance(value, dict):
        value = value.get('pools')
    return list(value) if isinstance(value, list) else []


def free_amount(reported, total, used):
    """The record's free figure, or total - used when it has none."""
    return reported if reported is not None else (total or 0) - (used or 0)


def service_dict(row, now, down_time):
    """The HostState service dict of a joined row ({} without a service)."""
    if row.service_row_id is None:
        return {}
    heartbeat = (row.service_last_seen_up or row.service_updated_at or
                 row.service_created_at)
    return {'disabled': bool(row.service_disabled),
            'disabled_reason': row.service_disabled_reason,
            'forced_down': bool(row.service_forced_down),
            'up': service_is_up(heartbeat, row.service_forced_down, now,
                                down_time)}


def to_host_state(row, cell_uuid, service):
    """A HostState from a compute_nodes row joined with its service.

    :returns: (HostState, the resource tracker's instance count or None).
    """
    stats = decode_json(row.stats, {}, 'stats of %s' % row.uuid)
    stats = stats if isinstance(stats, dict) else {}
    cpu_info = decode_json(row.cpu_info, {}, 'cpu_info of %s' % row.uuid)
    state = hs.HostState(
        host=row.host, nodename=row.hypervisor_hostname, uuid=row.uuid,
        cell_uuid=cell_uuid,
        total_usable_ram_mb=row.memory_mb,
        free_ram_mb=free_amount(row.free_ram_mb, row.memory_mb,
                                row.memory_mb_used),
        total_usable_disk_gb=row.local_gb,
        free_disk_mb=free_amount(row.free_disk_gb, row.local_gb,
                                 row.local_gb_used) * 1024,
        disk_mb_used=(row.local_gb_used or 0) * 1024,
        vcpus_total=row.vcpus, vcpus_used=row.vcpus_used or 0,
        num_io_ops=int(stats.get('io_workload', row.current_workload or 0)),
        host_ip=row.host_ip, hypervisor_type=row.hypervisor_type,
        hypervisor_version=row.hypervisor_version,
        hypervisor_hostname=row.hypervisor_hostname,
        cpu_info=cpu_info if isinstance(cpu_info, dict) else {},
        supported_instances=decode_json(
            row.supported_instances, [],
            'supported_instances of %s' % row.uuid),
        numa_topology=decode_json(row.numa_topology, None,
                                  'numa_topology of %s' % row.uuid),
        pci_stats=pci_pools(decode_json(row.pci_stats, [],
                                        'pci_stats of %s' % row.uuid)),
        metrics=metrics_by_name(decode_json(row.metrics, [],
                                            'metrics of %s' % row.uuid)),
        service=service,
        updated=row.updated_at or row.created_at)
    # NOTE: a ratio the compute never wrote keeps HostState's default
    # (upstream's initial ratios) rather than becoming 0.
    for name in ('cpu', 'ram', 'disk'):
        ratio = getattr(row, '%s_allocation_ratio' % name)
        if ratio:
            setattr(state, '%s_allocation_ratio' % name, ratio)
    return state, stats.get('num_instances')


def flavor_id(text, uuid):
    """The flavorid of an instance's flavor JSON, or None."""
    flavor = decode_json(text, {}, 'flavor of instance %s' % uuid)
    if not isinstance(flavor, dict):
        return None
    return flavor.get('flavorid', flavor.get('id'))


def attach_instances(states, rows, counts):
    """Give each state the instances on its (host, node), and their number.

    :param rows: live instance rows of the states' hosts.
    :param counts: uuid -> the resource tracker's count (or None); it wins
        over the instance rows, which lag behind a build in progress.
    """
    by_host = {}
    for state in states:
        by_host.setdefault(state.host, []).append(state)
    for row in rows:
        nodes = by_host.get(row.host, [])
        # NOTE: on a host with several nodes an instance counts on the one
        # it runs on; on a one-node host (the usual case) the node name
        # need not match, so an instance whose node is not written yet
        # still counts.
        if len(nodes) > 1:
            nodes = [s for s in nodes if s.nodename == row.node]
        for state in nodes[:1]:
            state.instances[row.uuid] = hs.InstanceInfo(
                uuid=row.uuid, project_id=row.project_id,
                flavor_id=flavor_id(row.flavor, row.uuid),
                image_id=row.image_ref, vm_state=row.vm_state,
                task_state=row.task_state)
    for state in states:
        counted = counts.get(state.uuid)
        state.num_instances = (int(counted) if counted is not None
                               else len(state.instances))
