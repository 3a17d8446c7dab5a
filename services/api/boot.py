# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The boot path: from a validated POST /servers to a conductor cast.

Everything that can be wrong with a request is found here, before any
record exists, and is the caller's 4xx (doc/architecture.md, flow 1): the
flavor and image must exist and be usable, the flavor's and image's
NUMA/CPU requests must make sense together (:mod:`common.numa.constraints`,
at API time as in Nova), the zone must exist or a host be forced (by admins),
the server group must exist and have room, the quota must allow at least
``min_count`` servers. Then one Instance and one RequestSpec per server
are written with the build requests (one api database transaction), the
servers join their group, and the conductor is cast
``schedule_and_build_instances``; the caller gets 202 while the servers
are in BUILD.
"""

import dataclasses
import json
import logging
import random
import string
import threading
import uuid as uuid_lib

from oslo_utils import timeutils

from common.db import boot_records
from common.numa import constraints
from common.numa import exception as numa_exc
from common.objects import instance as instance_obj
from common.objects import request_spec as spec_obj
from common.placement import guest_features
from services.api import errors
from services.api import hostnames
from services.api import images as image_api
from services.api import pci_requests
from services.api import quota
from services.api import records
from services.api.records import flavors as flavor_records
from services.api.records import server_groups as group_records

LOG = logging.getLogger(__name__)

# NOTE: Nova's [DEFAULT] multi_instance_display_name_template default.
MULTI_NAME_TEMPLATE = '%(name)s-%(count)d'
_RESERVATION_CHARS = string.ascii_lowercase + string.digits


@dataclasses.dataclass
class Placement(object):
    """Where a request may go: its zone, forced host/node, destination."""

    zone: str = None
    force_host: str = None
    force_node: str = None
    requested_host: str = None
    requested_node: str = None


@dataclasses.dataclass
class BootRequest(object):
    """A POST /servers after validation: what the records are built from.
    """

    name: str
    flavor: dict
    image: image_api.Image
    placement: Placement
    hints: dict
    group: dict = None
    metadata: dict = dataclasses.field(default_factory=dict)
    min_count: int = 1
    max_count: int = 1
    numa_topology: dict = None
    pci_requests: list = dataclasses.field(default_factory=list)
    # NOTE: the project's quota limits as validation read them; the
    # check and the recheck use them rather than reading them twice more.
    limits: dict = None
    # The accessIPv4/accessIPv6 the user gave (Nova keeps them as given).
    access_ip_v4: str = None
    access_ip_v6: str = None
    key_name: str = None
    key_data: str = None
    description: str = None
    # The hostname the user chose (2.90), for a single server.
    hostname: str = None
    tags: list = dataclasses.field(default_factory=list)


def parse_zone(value):
    """(zone, host, node) of an ``availability_zone`` value.

    ``az``, ``az:host``, ``az:host:node``, ``az::node``; an empty zone
    (``:host``) means any zone.

    :raises errors.BadRequest: more than three parts.
    """
    if not value:
        return None, None, None
    parts = value.split(':')
    if len(parts) > 3:
        raise errors.BadRequest('Unable to parse availability_zone %r'
                                % value)
    parts += [None] * (3 - len(parts))
    return tuple(p or None for p in parts)


def normalize_hints(hints):
    """Scheduler hints as RequestSpec keeps them: name -> list of strings.
    """
    result = {}
    for name, value in (hints or {}).items():
        if name == 'query' and not isinstance(value, str):
            value = json.dumps(value)
        values = value if isinstance(value, list) else [value]
        result[name] = [v if isinstance(v, str) else json.dumps(v)
                        for v in values]
    return result


def reservation_id():
    """A new ``r-xxxxxxxx`` reservation id, as Nova makes them."""
    return 'r-' + ''.join(random.choice(_RESERVATION_CHARS)
                          for _ in range(8))


def flavor_for_boot(ctxt, flavor_ref, project_id, is_admin):
    """The flavor dict a flavorRef (id or URL) names, if usable.

    :raises errors.BadRequest: unknown, disabled, or private and not
        shared with the project.
    """
    flavorid = str(flavor_ref).rstrip('/').rsplit('/', 1)[-1]
    try:
        flavor = flavor_records.get_flavor(ctxt, flavorid)
    except flavor_records.FlavorNotFound:
        raise errors.BadRequest('Flavor %s could not be found.' % flavorid)
    if flavor['disabled']:
        raise errors.BadRequest('Flavor %s is disabled.' % flavorid)
    if (not flavor['is_public'] and project_id not in flavor['projects']
            and not is_admin):
        raise errors.BadRequest('Flavor %s could not be found.' % flavorid)
    return flavor


def image_for_boot(ctxt, conf, image_ref, flavor):
    """The image an imageRef names, checked against the flavor.

    :raises errors.BadRequest: unknown, not active, or too big for the
        flavor.
    :raises errors.ServiceUnavailable: Glance could not be asked.
    """
    if not image_ref:
        raise errors.BadRequest('Booting from a volume is not supported; '
                                'an imageRef is required.')
    try:
        image = image_api.get_image(ctxt, conf, image_ref)
    except image_api.ImageNotFound:
        raise errors.BadRequest('Image %s could not be found.'
                                % image_api.image_id_from_ref(image_ref))
    except image_api.ImageServiceUnavailable as exc:
        raise errors.ServiceUnavailable(str(exc))
    if image.status != 'active':
        raise errors.BadRequest('Image %s is not active.' % image.id)
    if image.min_ram and flavor['memory_mb'] < image.min_ram:
        raise errors.BadRequest("Flavor's memory is too small for requested "
                                "image.")
    if image.min_disk and flavor['root_gb'] and (
            flavor['root_gb'] < image.min_disk):
        raise errors.BadRequest("Flavor's disk is too small for requested "
                                "image.")
    return image


def records_for_boot(ctxt, conf, flavor_ref, image_ref):
    """(flavor dict, :class:`images.Image`, quota limits) of a boot.

    The flavor, the image when it is in the built-in catalog, and the
    project's limits are read in one api database transaction (each
    alone cost a transaction per boot). A Glance image is asked for
    after it: no transaction is held over an HTTP call. The checks and
    their errors are those of :func:`flavor_for_boot` and
    :func:`image_for_boot`, in that order.

    :raises errors.BadRequest: as the two functions above.
    :raises errors.ServiceUnavailable: Glance could not be asked.
    """
    flavor, image, limits = _read_for_boot(ctxt, conf, flavor_ref,
                                           image_ref, image_api.builtin(conf))
    if image is None:
        image = image_for_boot(ctxt, conf, image_ref, flavor)
    return flavor, image, limits


@records.reader_connection
def _read_for_boot(ctxt, conf, flavor_ref, image_ref, builtin_image):
    flavor = flavor_for_boot(ctxt, flavor_ref, ctxt.project_id,
                             ctxt.is_admin)
    image = None
    if builtin_image:
        image = image_for_boot(ctxt, conf, image_ref, flavor)
    return flavor, image, quota.limits(ctxt, conf, ctxt.project_id)


def numa_for_boot(flavor, image):
    """The instance NUMA topology primitive (or None), at API time.

    The guest feature rules (memory encryption, vTPM, secure boot,
    persistent memory, no ``accel:device_profile``) are checked here too:
    like the NUMA ones they combine flavor and image, and a request the
    scheduler could only fail must be a 400 before anything is recorded.

    :raises errors.BadRequest: the flavor and image ask for something
        impossible (doc/behaviours.md §numa-constraints; B11 is a 400
        here, never a 500).
    """
    flavor_obj = flavor_records.to_object(flavor)
    try:
        guest_features.validate(flavor_obj, image)
        topology = constraints.get_constraints(flavor_obj, image.properties)
    except (numa_exc.NUMARequestInvalid,
            guest_features.GuestFeatureInvalid) as exc:
        raise errors.BadRequest(str(exc))
    return None if topology is None else topology.to_primitive()


def group_for_boot(ctxt, conf, hints, project_id, count,
                   project_limits=None):
    """The server group the ``group`` hint names (None without one).

    :param project_limits: the project's :func:`quota.limits`, when the
        caller read them already.
    :raises errors.BadRequest: no such group.
    :raises errors.Forbidden: the group has no room for ``count`` more.
    """
    names = hints.get('group')
    if not names:
        return None
    try:
        group = group_records.get_group(ctxt, names[0])
    except group_records.InstanceGroupNotFound as exc:
        raise errors.BadRequest(str(exc))
    if project_limits is None:
        project_limits = quota.limits(ctxt, conf, project_id)
    limit = project_limits['server_group_members']
    if 0 <= limit < len(group['members']) + count:
        raise errors.Forbidden('Quota exceeded, too many servers in group')
    return group


def names(name, count):
    """The display names of ``count`` servers (Nova's multi-create names).
    """
    if count == 1:
        return [name]
    return [MULTI_NAME_TEMPLATE % {'name': name, 'count': i + 1}
            for i in range(count)]


def build_records(ctxt, boot, count):
    """(Instance, RequestSpec) per server, and the reservation id."""
    flavor = flavor_records.to_object(boot.flavor)
    image_meta = boot.image.to_meta()
    group = None
    if boot.group is not None:
        group = group_records.to_object(boot.group)
    place = boot.placement
    destination = None
    if place.requested_host or place.requested_node:
        destination = spec_obj.Destination(host=place.requested_host,
                                           node=place.requested_node)
    reservation = reservation_id()
    created_at = timeutils.utcnow().isoformat()
    uuids = [str(uuid_lib.uuid4()) for _ in range(count)]
    if group is not None:
        group.members = list(group.members) + uuids
    items = []
    for index, (uuid, display_name) in enumerate(
            zip(uuids, names(boot.name, count))):
        instance = instance_obj.Instance(
            uuid=uuid, display_name=display_name,
            hostname=hostnames.for_new_server(uuid, display_name,
                                              boot.hostname),
            project_id=ctxt.project_id, user_id=ctxt.user_id,
            image_ref=boot.image.id, flavor=flavor,
            vm_state=instance_obj.BUILDING,
            task_state=instance_obj.SCHEDULING,
            availability_zone=place.zone,
            numa_topology=boot.numa_topology,
            pci_requests=list(boot.pci_requests),
            metadata=dict(boot.metadata),
            image_meta=dict(boot.image.properties),
            reservation_id=reservation, launch_index=index,
            created_at=created_at, access_ip_v4=boot.access_ip_v4,
            access_ip_v6=boot.access_ip_v6, key_name=boot.key_name,
            key_data=boot.key_data, display_description=boot.description,
            tags=sorted(set(boot.tags)))
        spec = spec_obj.RequestSpec(
            instance_uuid=uuid, project_id=ctxt.project_id,
            user_id=ctxt.user_id, flavor=flavor, image=image_meta,
            availability_zone=place.zone, num_instances=count,
            scheduler_hints={k: list(v) for k, v in boot.hints.items()},
            force_hosts=[place.force_host] if place.force_host else [],
            force_nodes=[place.force_node] if place.force_node else [],
            requested_destination=destination, instance_group=group,
            numa_topology=boot.numa_topology,
            pci_requests=list(boot.pci_requests),
            request_id=ctxt.request_id)
        items.append((instance, spec))
    return items, reservation


def conductor_api():
    """The conductor RPC client (a function, so tests can replace it).

    One client per process: oslo.messaging clients are safe to share
    between threads, and making one per request costs a target and a
    version-cap lookup each time.
    """
    from services.conductor import rpcapi as conductor_rpcapi
    with _CONDUCTOR_LOCK:
        if 'api' not in _CONDUCTOR:
            _CONDUCTOR['api'] = conductor_rpcapi.ConductorAPI()
        return _CONDUCTOR['api']


_CONDUCTOR = {}
_CONDUCTOR_LOCK = threading.Lock()


def _undo(ctxt, items, group):
    uuids = [instance.uuid for instance, _spec in items]
    for uuid in uuids:
        if boot_records.delete_build_request(ctxt, uuid):
            boot_records.delete_instance_mapping(ctxt, uuid)
    if group is not None:
        group_records.remove_members(ctxt, uuids)


def create(ctxt, conf, boot):
    """Record the servers of ``boot`` and ask the conductor to build them.

    :returns: (list of Instance, reservation id).
    :raises errors.Forbidden: over quota (also after the recheck).
    :raises errors.ServiceUnavailable: the conductor could not be cast to
        (nothing is left behind).
    """
    try:
        count = quota.allowed_count(ctxt, conf, ctxt.project_id,
                                    flavor_records.to_object(boot.flavor),
                                    boot.min_count, boot.max_count,
                                    project_limits=boot.limits)
    except quota.QuotaExceeded as exc:
        raise errors.Forbidden(str(exc))
    items, reservation = build_records(ctxt, boot, count)
    if boot.group is not None:
        group_records.add_members(ctxt, boot.group['uuid'],
                                  [i.uuid for i, _s in items])
    try:
        boot_records.create_build_requests(ctxt, items)
    except Exception:
        if boot.group is not None:
            group_records.remove_members(ctxt, [i.uuid for i, _s in items])
        raise
    try:
        quota.recheck(ctxt, conf, ctxt.project_id,
                      project_limits=boot.limits)
    except quota.QuotaExceeded as exc:
        _undo(ctxt, items, boot.group)
        raise errors.Forbidden(str(exc))
    spec = items[0][1]
    try:
        conductor_api().schedule_and_build_instances(
            ctxt, spec, [instance.uuid for instance, _spec in items],
            build_requests=[instance for instance, _spec in items])
    except Exception:
        LOG.exception('Could not cast schedule_and_build_instances for '
                      'reservation %s', reservation)
        _undo(ctxt, items, boot.group)
        raise errors.ServiceUnavailable(
            'The conductor could not be reached; no server was created.')
    LOG.info('Build of %d server(s) requested (reservation %s): %s',
             count, reservation, ', '.join(i.uuid for i, _s in items))
    return [instance for instance, _spec in items], reservation


def pci_for_boot(conf, flavor):
    """The PCI requests of the flavor; 400 for an undefined alias."""
    try:
        return pci_requests.from_flavor(conf, flavor['extra_specs'])
    except pci_requests.InvalidPCIAlias as exc:
        raise errors.BadRequest(str(exc))
