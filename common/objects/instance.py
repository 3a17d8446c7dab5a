# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""An instance (a server) as the services pass it to one another.

The row lives in a cell database (``instances``); the API, the conductor
and the compute agents exchange this object over RPC. States follow Nova:
``vm_state`` is what the instance is (building, active, error, deleted),
``task_state`` what is being done to it (scheduling, spawning, deleting).
"""

import dataclasses
import typing

from common.objects import base
from common.objects import flavor as flavor_obj

# vm_state values
BUILDING = 'building'
ACTIVE = 'active'
ERROR = 'error'
DELETED = 'deleted'

# task_state values
SCHEDULING = 'scheduling'
SPAWNING = 'spawning'
DELETING = 'deleting'

# task_state values of rebuild and createImage (Nova's names)
REBUILDING = 'rebuilding'
REBUILD_SPAWNING = 'rebuild_spawning'
IMAGE_SNAPSHOT = 'image_snapshot'
IMAGE_PENDING_UPLOAD = 'image_pending_upload'
IMAGE_UPLOADING = 'image_uploading'

# power_state values, as Nova numbers them
NOSTATE = 0
RUNNING = 1
SHUTDOWN = 4

# NOTE: the API's server status for each vm_state (Nova's mapping for the
# states Berth has).
STATUS_BY_VM_STATE = {
    BUILDING: 'BUILD',
    ACTIVE: 'ACTIVE',
    ERROR: 'ERROR',
    DELETED: 'DELETED',
}


@dataclasses.dataclass
class Instance(base.PrimitiveObject):
    """One server.

    :ivar numa_topology: the instance NUMA topology primitive (see
        :mod:`common.numa`); once a compute agent has claimed it, with the
        host cells and pinned CPUs it got.
    :ivar pci_requests: list of PCI request dicts.
    :ivar metadata: user metadata, key -> value.
    :ivar image_meta: the image's properties at boot time.
    :ivar locked_by: ``owner`` or ``admin`` while ``locked``.
    :ivar system_metadata: what Berth keeps about the server for itself
        (e.g. ``locked_reason``), key -> value.
    :ivar tags: the server's tags (2.26): given at boot they travel with
        the build request and are written with the row; None for an
        instance read from a cell database whose tags were not read.
    :ivar fault: the latest fault, {code, message, details, created_at},
        or None.
    :ivar cell_uuid: the cell whose database holds the row (None while the
        instance is still a build request).
    Timestamps are ISO 8601 strings (UTC) so that the object stays JSON.
    """

    uuid: str = None
    display_name: str = None
    project_id: str = None
    user_id: str = None
    image_ref: str = None
    flavor: typing.Optional[flavor_obj.Flavor] = None
    vm_state: str = BUILDING
    task_state: str = None
    power_state: int = NOSTATE
    host: str = None
    node: str = None
    availability_zone: str = None
    numa_topology: dict = None
    pci_requests: list = dataclasses.field(default_factory=list)
    metadata: dict = dataclasses.field(default_factory=dict)
    image_meta: dict = dataclasses.field(default_factory=dict)
    reservation_id: str = None
    launch_index: int = 0
    launched_at: str = None
    terminated_at: str = None
    created_at: str = None
    updated_at: str = None
    deleted: bool = False
    locked: bool = False
    locked_by: str = None
    key_name: str = None
    key_data: str = None
    display_description: str = None
    access_ip_v4: str = None
    access_ip_v6: str = None
    system_metadata: dict = dataclasses.field(default_factory=dict)
    tags: list = None
    fault: dict = None
    cell_uuid: str = None

    @property
    def status(self):
        """The API's status word (BUILD, ACTIVE, ERROR, DELETED)."""
        return STATUS_BY_VM_STATE.get(self.vm_state, 'UNKNOWN')
