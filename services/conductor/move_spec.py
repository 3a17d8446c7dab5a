# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The request spec of a server that moves, as Nova's conductor makes it.

Every move (resize, cold and live migration, evacuation, unshelve)
schedules with the server's stored request spec, updated for the move:

* one instance, this one; forced hosts and nodes dropped (a boot's
  ``host:node`` zone never binds a move) and a fresh retry count;
* the source host in ``ignore_hosts`` unless the move may stay on it
  (a resize with ``[DEFAULT] allow_resize_to_same_host``);
* ``requested_destination``: the target host (and node) an admin named,
  and in every case the server's own cell (Berth moves within a cell);
* the new flavor of a resize, with the NUMA topology and PCI requests
  computed for it by the API;
* the server group refreshed (members placed since the boot count).

The stored spec is changed only where the move's result must persist,
by the workflow: a resize's flavor from the moment it is scheduled (so
that its confirm needs nothing more than the source compute, as in Nova)
and the old one again when the resize ends on its source (a revert, a
failure, a stuck move ended), the image of an unshelve. The copy sent
also names the kind of move.
"""

import logging

from common.db import boot_records
from common.db import group_setup
from common import exception
from common.objects import instance as instance_obj
from common.objects import request_spec as spec_obj

LOG = logging.getLogger(__name__)


def stored_spec(conductor, ctxt, instance):
    """The instance's stored request spec, or one made from the instance
    (a server whose spec is gone still has its flavor).

    :param instance: the Instance primitive.
    """
    if conductor.cells.has_api:
        try:
            return boot_records.get_request_spec(
                ctxt, instance['uuid'], database=conductor.cells.api)
        except exception.RequestSpecNotFound:
            LOG.info('Instance %s has no request spec; using its own '
                     'fields', instance['uuid'])
    inst = instance_obj.Instance.from_primitive(instance)
    return spec_obj.RequestSpec(
        instance_uuid=inst.uuid, project_id=inst.project_id,
        user_id=inst.user_id, flavor=inst.flavor,
        availability_zone=inst.availability_zone,
        numa_topology=inst.numa_topology,
        pci_requests=list(inst.pci_requests or []))


def save_spec(conductor, ctxt, instance_uuid, spec):
    """Store ``spec`` as the instance's request spec (without the move's
    own fields).
    """
    if not conductor.cells.has_api:
        return
    kept = spec_obj.RequestSpec.from_primitive(spec.to_primitive())
    kept.move_type = None
    kept.ignore_hosts = []
    kept.requested_destination = None
    kept.retry = None
    boot_records.save_request_spec(ctxt, instance_uuid, kept,
                                   database=conductor.cells.api)


def keep_flavor(conductor, ctxt, instance, flavor, pci_requests):
    """Give the instance's stored spec ``flavor``, with its NUMA request
    and ``pci_requests`` (see
    :func:`common.db.boot_records.keep_spec_flavor`): a resize's new one
    once it is scheduled, the old one back when it ends on its source.
    Nothing else of the spec changes (what a move asked for is its own).

    :param instance: the Instance primitive.
    """
    if conductor.cells.has_api:
        boot_records.keep_spec_flavor(
            ctxt, instance['uuid'], flavor, instance.get('image_meta'),
            pci_requests, database=conductor.cells.api)


def give_flavor_back(conductor, ctxt, instance, flavor, pci_requests):
    """:func:`keep_flavor` for a resize that ended on its source, best
    effort: a failure is logged (the spec keeps the resize's flavor, as
    Nova's may).
    """
    try:
        keep_flavor(conductor, ctxt, instance, flavor, pci_requests)
    except Exception:
        LOG.exception('Could not give the request spec of %s its old '
                      'flavor back', instance['uuid'])


def for_move(spec, instance, move_type, flavor=None, host=None, node=None,
             allow_same_host=False, numa_topology=False, pci_requests=None,
             availability_zone=False):
    """A copy of ``spec`` to schedule ``instance``'s move with.

    :param instance: the Instance primitive (with ``cell_uuid``).
    :param move_type: one of :data:`common.objects.request_spec.
        MOVE_TYPES`.
    :param flavor: the new Flavor of a resize, or None.
    :param host, node: the target an admin named, or None.
    :param allow_same_host: keep the source host a candidate.
    :param numa_topology: the new flavor's NUMA request primitive (None
        for none); False keeps the stored one.
    :param pci_requests: the new flavor's PCI requests; None keeps them.
    :param availability_zone: a zone to move into (unshelve 2.77); False
        keeps the stored one, None lifts it.
    """
    if move_type not in spec_obj.MOVE_TYPES:
        raise ValueError('unknown move type %r' % move_type)
    moved = spec_obj.RequestSpec.from_primitive(spec.to_primitive())
    moved.move_type = move_type
    moved.instance_uuid = instance['uuid']
    moved.num_instances = 1
    moved.force_hosts = []
    moved.force_nodes = []
    moved.retry = spec_obj.SchedulerRetries(num_attempts=1, hosts=[])
    source = instance.get('host')
    moved.ignore_hosts = [] if allow_same_host or not source else [source]
    if flavor is not None:
        moved.flavor = flavor
    if numa_topology is not False:
        moved.numa_topology = numa_topology
    if pci_requests is not None:
        moved.pci_requests = list(pci_requests)
    if availability_zone is not False:
        moved.availability_zone = availability_zone
    moved.requested_destination = spec_obj.Destination(
        host=host, node=node, cell=instance.get('cell_uuid'))
    return moved


def refresh_group(conductor, ctxt, spec):
    """Fill the spec's server group with its members' current hosts."""
    group_setup.setup_instance_group(ctxt, conductor.cells, spec)
