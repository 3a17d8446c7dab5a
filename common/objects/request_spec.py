# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The request spec: everything the scheduler is told about a boot.

Built by the API and the conductor, sent to the scheduler over RPC, read by
request filters (to shape the placement query), by host filters and by
weighers. Field names follow Nova's RequestSpec so that operators' and
filter authors' knowledge carries over.
"""

import dataclasses
import math
import typing

from common.objects import base
from common.objects import flavor as flavor_obj
from common.objects import image as image_obj
from common.objects import instance_group as group_obj


@dataclasses.dataclass
class Destination(base.PrimitiveObject):
    """Where a request must (or must not) go: host, node, cell, aggregates.

    :ivar aggregates: list of comma-separated aggregate-uuid strings; each
        string is an OR, the list an AND (placement ``member_of``).
    :ivar forbidden_aggregates: aggregate uuids no candidate may be in.
    """

    host: str = None
    node: str = None
    cell: str = None
    aggregates: list = dataclasses.field(default_factory=list)
    forbidden_aggregates: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class SchedulerRetries(base.PrimitiveObject):
    """Hosts already tried for this request (reschedules).

    :ivar hosts: list of [host, node] pairs.
    """

    num_attempts: int = 0
    hosts: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class RequestGroup(base.PrimitiveObject):
    """One placement request group (unsuffixed when ``suffix`` is '').

    Built by the request filters from flavor extra specs, image properties
    and the rest of the spec.
    """

    suffix: str = ''
    resources: dict = dataclasses.field(default_factory=dict)
    required_traits: list = dataclasses.field(default_factory=list)
    forbidden_traits: list = dataclasses.field(default_factory=list)
    member_of: list = dataclasses.field(default_factory=list)
    in_tree: str = None


# The moves a request spec may be scheduled for (``move_type``).
MOVE_TYPES = ('resize', 'migrate', 'live-migrate', 'evacuate', 'unshelve')


@dataclasses.dataclass
class RequestSpec(base.PrimitiveObject):
    """A request to place ``num_instances`` servers.

    :ivar scheduler_hints: name -> list of strings (``same_host``,
        ``different_host``, ``group``, ``query``, ``build_near_host_ip``...).
    :ivar numa_topology: the instance NUMA topology primitive computed at
        API time from flavor and image (see :mod:`common.numa`), or None.
    :ivar pci_requests: list of PCI request dicts (alias, count, spec).
    :ivar requested_resources: extra request groups (ports, accelerators).
    :ivar move_type: None for a boot; for a server that moves, which move
        (:data:`MOVE_TYPES`): the scheduler's explanation names it. The
        conductor sets it on the copy it sends and never stores it.
    """

    instance_uuid: str = None
    project_id: str = None
    user_id: str = None
    flavor: typing.Optional[flavor_obj.Flavor] = None
    image: typing.Optional[image_obj.ImageMeta] = None
    availability_zone: str = None
    num_instances: int = 1
    scheduler_hints: dict = dataclasses.field(default_factory=dict)
    ignore_hosts: list = dataclasses.field(default_factory=list)
    force_hosts: list = dataclasses.field(default_factory=list)
    force_nodes: list = dataclasses.field(default_factory=list)
    requested_destination: typing.Optional[Destination] = None
    retry: typing.Optional[SchedulerRetries] = None
    instance_group: typing.Optional[group_obj.InstanceGroup] = None
    numa_topology: dict = None
    pci_requests: list = dataclasses.field(default_factory=list)
    requested_resources: list = dataclasses.field(default_factory=list)
    is_bfv: bool = False
    request_id: str = None
    move_type: str = None

    def get_scheduler_hint(self, name, default=None):
        """The hint ``name``: its single value, its list, or ``default``.

        Hints arrive as lists of strings; a one-element list is returned as
        its element, as Nova does.
        """
        value = self.scheduler_hints.get(name)
        if value is None:
            return default
        if isinstance(value, list) and len(value) == 1:
            return value[0]
        return value

    @property
    def vcpus(self):
        """The flavor's vCPUs."""
        return self.flavor.vcpus

    @property
    def memory_mb(self):
        """The flavor's RAM in MiB."""
        return self.flavor.memory_mb

    @property
    def disk_gb(self):
        """Local disk in GiB: root (0 when volume-backed), ephemeral, swap.

        Swap is in MiB; it is rounded up to whole GiB as placement counts.
        """
        root = 0 if self.is_bfv else self.flavor.root_gb
        return (root + self.flavor.ephemeral_gb +
                math.ceil(self.flavor.swap / 1024))
