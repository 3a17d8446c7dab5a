# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""An instance (a server) as the services pass it to one another.

The row lives in a cell database (``instances``); the API, the conductor
and the compute agents exchange this object over RPC. States follow Nova:
``vm_state`` is what the instance is (building, active, stopped...),
``task_state`` what is being done to it (scheduling, powering-off...),
``power_state`` what the hypervisor last said of the guest. The API's
status word derives from the first two (:func:`status_from_state`), as
Nova's does.
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
STOPPED = 'stopped'
PAUSED = 'paused'
SUSPENDED = 'suspended'
# NOTE: the states of later operations (rescue, resize, shelve, soft
# delete), named as Nova's so that their status words are right from the
# start.
RESCUED = 'rescued'
RESIZED = 'resized'
SHELVED = 'shelved'
SHELVED_OFFLOADED = 'shelved_offloaded'
SOFT_DELETED = 'soft-delete'

# task_state values
SCHEDULING = 'scheduling'
SPAWNING = 'spawning'
DELETING = 'deleting'
POWERING_OFF = 'powering-off'
POWERING_ON = 'powering-on'
REBOOTING = 'rebooting'
REBOOT_PENDING = 'reboot_pending'
REBOOT_STARTED = 'reboot_started'
REBOOTING_HARD = 'rebooting_hard'
REBOOT_PENDING_HARD = 'reboot_pending_hard'
REBOOT_STARTED_HARD = 'reboot_started_hard'
PAUSING = 'pausing'
UNPAUSING = 'unpausing'
SUSPENDING = 'suspending'
RESUMING = 'resuming'
REBUILDING = 'rebuilding'
REBUILD_BLOCK_DEVICE_MAPPING = 'rebuild_block_device_mapping'
REBUILD_SPAWNING = 'rebuild_spawning'
IMAGE_SNAPSHOT = 'image_snapshot'
IMAGE_SNAPSHOT_PENDING = 'image_snapshot_pending'
IMAGE_PENDING_UPLOAD = 'image_pending_upload'
IMAGE_UPLOADING = 'image_uploading'
UPDATING_PASSWORD = 'updating_password'
RESIZE_PREP = 'resize_prep'
RESIZE_MIGRATING = 'resize_migrating'
RESIZE_MIGRATED = 'resize_migrated'
RESIZE_FINISH = 'resize_finish'
RESIZE_REVERTING = 'resize_reverting'
RESIZE_CONFIRMING = 'resize_confirming'
MIGRATING = 'migrating'

# task_state values of rebuild and createImage (Nova's names)
REBUILDING = 'rebuilding'
REBUILD_SPAWNING = 'rebuild_spawning'
IMAGE_SNAPSHOT = 'image_snapshot'
IMAGE_PENDING_UPLOAD = 'image_pending_upload'
IMAGE_UPLOADING = 'image_uploading'

# task_state values of shelve, shelveOffload and unshelve (Nova's names);
# an evacuation is ``rebuilding`` then ``rebuild_spawning``, as in Nova.
SHELVING = 'shelving'
SHELVING_IMAGE_PENDING_UPLOAD = 'shelving_image_pending_upload'
SHELVING_IMAGE_UPLOADING = 'shelving_image_uploading'
SHELVING_OFFLOADING = 'shelving_offloading'
UNSHELVING = 'unshelving'

# power_state values, as Nova numbers them
NOSTATE = 0
RUNNING = 1
PAUSED_POWER = 3
SHUTDOWN = 4
CRASHED = 6
SUSPENDED_POWER = 7

_REBOOT = {REBOOTING: 'REBOOT', REBOOT_PENDING: 'REBOOT',
           REBOOT_STARTED: 'REBOOT', REBOOTING_HARD: 'HARD_REBOOT',
           REBOOT_PENDING_HARD: 'HARD_REBOOT',
           REBOOT_STARTED_HARD: 'HARD_REBOOT'}
_REBUILD = {REBUILDING: 'REBUILD', REBUILD_BLOCK_DEVICE_MAPPING: 'REBUILD',
            REBUILD_SPAWNING: 'REBUILD'}
_RESIZE = {RESIZE_PREP: 'RESIZE', RESIZE_MIGRATING: 'RESIZE',
           RESIZE_MIGRATED: 'RESIZE', RESIZE_FINISH: 'RESIZE'}

# NOTE: the API's server status for each vm_state, and the task states
# that override it: Nova's mapping (a rebooting ACTIVE server is REBOOT,
# a resizing one RESIZE...). 'default' is the status without such a task.
STATUS_MAP = {
    ACTIVE: dict({'default': 'ACTIVE', UPDATING_PASSWORD: 'PASSWORD',
                  MIGRATING: 'MIGRATING'}, **_REBOOT, **_REBUILD,
                 **_RESIZE),
    BUILDING: {'default': 'BUILD'},
    STOPPED: dict({'default': 'SHUTOFF'}, **_REBUILD, **_RESIZE),
    RESIZED: {'default': 'VERIFY_RESIZE', RESIZE_REVERTING: 'REVERT_RESIZE'},
    PAUSED: {'default': 'PAUSED', MIGRATING: 'MIGRATING'},
    SUSPENDED: {'default': 'SUSPENDED'},
    RESCUED: {'default': 'RESCUE'},
    ERROR: dict({'default': 'ERROR'}, **_REBUILD),
    DELETED: {'default': 'DELETED'},
    SOFT_DELETED: {'default': 'SOFT_DELETED'},
    SHELVED: {'default': 'SHELVED'},
    SHELVED_OFFLOADED: {'default': 'SHELVED_OFFLOADED'},
}


def status_from_state(vm_state, task_state=None):
    """The API's status word for a vm_state and task_state (Nova's).

    An unknown vm_state is ``UNKNOWN``.
    """
    task_map = STATUS_MAP.get(vm_state, {'default': 'UNKNOWN'})
    return task_map.get(task_state, task_map['default'])


#: NOTE: the key of the server's system metadata where the API records
#: the vm_state a resize or cold migration started from, as Nova does,
#: so that its confirm or revert gives a stopped server back stopped.
OLD_VM_STATE = 'old_vm_state'


def state_before_move(system_metadata):
    """The vm_state a resized or migrated server ends its move in:
    stopped if it was stopped (``OLD_VM_STATE``), else active.
    """
    old = (system_metadata or {}).get(OLD_VM_STATE)
    return STOPPED if old == STOPPED else ACTIVE


def without_state_before_move(system_metadata):
    """A copy of ``system_metadata`` without the ``OLD_VM_STATE`` record
    (dropped when the move ends).
    """
    kept = dict(system_metadata or {})
    kept.pop(OLD_VM_STATE, None)
    return kept


@dataclasses.dataclass
class Instance(base.PrimitiveObject):
    """One server.

    :ivar numa_topology: the instance NUMA topology primitive (see
        :mod:`common.numa`); once a compute agent has claimed it, with the
        host cells and pinned CPUs it got.
    :ivar pci_requests: list of PCI request dicts.
    :ivar metadata: user metadata, key -> value.
    :ivar image_meta: the image's properties at boot time.
    :ivar hostname: the guest's hostname: the sanitized name at boot,
        or the user's choice (compute API 2.90; an FQDN from 2.94).
    :ivar locked_by: ``owner`` or ``admin`` while ``locked``.
    :ivar system_metadata: what Berth keeps about the server for itself
        (e.g. ``locked_reason``), key -> value.
    :ivar migration_context: while the server moves, the
        :class:`~common.objects.migration.MigrationContext` primitive.
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
    hostname: str = None
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
    migration_context: dict = None
    tags: list = None
    fault: dict = None
    cell_uuid: str = None

    @property
    def status(self):
        """The API's status word (BUILD, ACTIVE, SHUTOFF, REBOOT...)."""
        return status_from_state(self.vm_state, self.task_state)
