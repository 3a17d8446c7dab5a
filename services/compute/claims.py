# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The local claim: NUMA cells, pinned CPUs, pages and PCI devices.

Placement already holds the build's allocation of VCPU, PCPU, memory and
disk, so what the agent checks is what placement cannot see: whether the
instance's NUMA topology still fits the node's cells now (pinned CPUs and
huge pages taken by builds since the scheduler looked) and which PCI
devices it gets. The fitting code is :mod:`common.numa`, the same the
scheduler's NUMATopologyFilter runs, so the two agree on what fits.
"""

import dataclasses
import logging

from common import exception
from common.numa import fit
from common.numa import topology
from services.compute import pci_tracker
from services.compute import usage as usage_mod

LOG = logging.getLogger(__name__)


class ComputeResourcesUnavailable(exception.BerthException):
    """The instance does not fit the node any more; reschedule it."""

    msg_fmt = 'Insufficient compute resources: %(reason)s.'


@dataclasses.dataclass
class Claim(object):
    """What one build holds on a node until it is finished or aborted.

    :ivar numa_topology: the fitted instance topology (host cell ids,
        pinning), or None.
    :ivar pci_devices: addresses of the devices given to the instance.
    :ivar migration_uuid: for a move claim, the migration (the claim and
        its usage are then keyed by it, not by the instance).
    :ivar claimed_at: the tracker's clock when a move claim was made.
    """

    instance_uuid: str
    nodename: str
    usage: usage_mod.InstanceUsage
    numa_topology: topology.InstanceTopology = None
    pci_devices: list = dataclasses.field(default_factory=list)
    migration_uuid: str = None
    claimed_at: float = None


def limits_for(selection_limits, ratios):
    """The NUMA overcommit limits of a claim.

    The scheduler's NUMATopologyFilter records the limits it checked in
    the selection; without them (the filter is not enabled) the node's
    own allocation ratios apply.
    """
    found = (selection_limits or {}).get('numa_topology')
    if found:
        return topology.load_limits(found)
    return topology.Limits(cpu_allocation_ratio=ratios['cpu'],
                           ram_allocation_ratio=ratios['ram'])


def requested_topology(instance, request_spec):
    """The NUMA topology the build asks for.

    NOTE: the request spec's first: an instance rescheduled from another
    host still carries the topology fitted there (its host's cells and
    pins), while the spec keeps what the flavor and image asked for.
    """
    for holder in (request_spec or {}, instance):
        numa = holder.get('numa_topology')
        if numa:
            return topology.load_instance(numa)
    return None


def _pci_requests_of(instance, request_spec):
    """The PCI requests of the build: the instance's, else the spec's."""
    return (instance.get('pci_requests') or
            (request_spec or {}).get('pci_requests') or [])


def _fit_numa(node, requested, limits, pci_requests):
    """The instance topology ``requested`` fitted onto the node's cells.

    Nothing is taken yet: the fit only chooses cells and pins, with the
    node's PCI pools so that devices and cells agree.

    :returns: the fitted InstanceTopology, or None when nothing was
        requested.
    :raises ComputeResourcesUnavailable: the node has no NUMA topology
        or the request does not fit it.
    """
    if requested is None:
        return None
    if node.topology is None:
        raise ComputeResourcesUnavailable(
            reason='the instance asks for a NUMA topology and node %s '
                   'reports none' % node.nodename)
    fitted = fit.fit_instance_to_host(
        node.topology, requested, limits, pci_requests=pci_requests,
        pci_stats=node.pci.fit_pools())
    if fitted is None:
        raise ComputeResourcesUnavailable(
            reason='Requested instance NUMA topology cannot fit the '
                   'given host NUMA topology')
    return fitted


def _claim_pci(node, uuid, pci_requests, fitted, mappings):
    """Take the devices ``pci_requests`` ask for, for instance ``uuid``.

    NOTE: devices placement allocated are taken from the providers the
    claimed allocation request's ``mappings`` name, so that the agent
    and placement hold the same ones.

    :returns: the addresses of the devices taken.
    :raises ComputeResourcesUnavailable: the devices are not free.
    """
    cell_ids = [cell.id for cell in fitted.cells] if fitted else None
    placed = (node.pci.placed(node.uuid, node.nodename, mappings)
              if mappings and pci_requests and node.uuid else None)
    try:
        return node.pci.claim(uuid, pci_requests, cell_ids, placed=placed)
    except pci_tracker.PciDeviceRequestFailed as exc:
        raise ComputeResourcesUnavailable(
            reason='Claim pci failed: %s' % exc)


def _add_numa_usage(node, uuid, fitted):
    """Count ``fitted`` (or nothing, when None) on the node's cells.

    NOTE: the devices were taken first; when the cells refuse (pins or
    pages taken meanwhile) they are given back, so a failed claim
    holds nothing.

    :raises ComputeResourcesUnavailable: the cells cannot take it.
    """
    if fitted is None:
        return
    try:
        fit.change_usage_in_place(node.topology, fitted, 1)
    except exception.BerthException as exc:
        node.pci.release(uuid)
        raise ComputeResourcesUnavailable(reason=str(exc))


def make_claim(node, instance, request_spec, limits, mappings=None):
    """Fit ``instance`` onto ``node`` and take what it needs.

    Changes ``node.topology`` (usage added) and ``node.pci`` (devices
    owned); the caller holds the tracker's lock.

    :param node: the resource tracker's NodeState.
    :param instance: the Instance primitive.
    :param request_spec: the RequestSpec primitive, or None.
    :param limits: a :class:`~common.numa.topology.Limits`.
    :param mappings: the claimed allocation request's ``mappings``
        (request group suffix -> provider uuids): PCI devices allocated
        in placement are taken from the providers named there.
    :returns: a :class:`Claim`.
    :raises ComputeResourcesUnavailable: the instance does not fit.
    """
    uuid = instance['uuid']
    requested = requested_topology(instance, request_spec)
    pci_requests = _pci_requests_of(instance, request_spec)
    fitted = _fit_numa(node, requested, limits, pci_requests)
    devices = _claim_pci(node, uuid, pci_requests, fitted, mappings)
    _add_numa_usage(node, uuid, fitted)
    usage = usage_mod.from_instance(instance, numa=fitted)
    LOG.debug('Claimed on %s for %s: NUMA %s, PCI %s', node.nodename, uuid,
              fitted and fitted.to_primitive(), devices)
    return Claim(instance_uuid=uuid, nodename=node.nodename, usage=usage,
                 numa_topology=fitted, pci_devices=devices)
