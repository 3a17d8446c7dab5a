# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A move of a server between hosts (or on one host): Nova's migration.

Every move operation (resize, cold migration, live migration, evacuation)
records one row in the cell database (``migrations``) while it runs and
keeps it afterwards as history (``os-migrations``). During the move the
migration's uuid is a placement consumer of its own (type ``MIGRATION``):
it holds the allocation on the source host while the instance's own
consumer holds the destination's, so that both hosts stay accounted until
the move is confirmed or reverted (doc/behaviours.md §moves).

The instance carries a ``migration_context`` while it moves: the NUMA
topology and PCI devices it has on the source (``old_*``) and those
claimed on the destination (``new_*``), so that whichever side it ends on
keeps the right ones.
"""

import dataclasses
import typing

from common.objects import base
from common.objects import flavor as flavor_obj

# migration_type values (Nova's)
RESIZE = 'resize'
MIGRATION = 'migration'
LIVE_MIGRATION = 'live-migration'
EVACUATION = 'evacuation'
TYPES = (MIGRATION, RESIZE, LIVE_MIGRATION, EVACUATION)

# status values, as Nova's workflows set them
ACCEPTED = 'accepted'
PRE_MIGRATING = 'pre-migrating'
MIGRATING = 'migrating'
POST_MIGRATING = 'post-migrating'
FINISHED = 'finished'
CONFIRMING = 'confirming'
CONFIRMED = 'confirmed'
REVERTING = 'reverting'
REVERTED = 'reverted'
QUEUED = 'queued'
PREPARING = 'preparing'
RUNNING = 'running'
COMPLETED = 'completed'
CANCELLED = 'cancelled'
DONE = 'done'
REBUILDING = 'rebuilding'
ERROR = 'error'
FAILED = 'failed'

# NOTE: a migration in one of these is over: the resource tracker stops
# counting it and placement must hold nothing for its consumer. 'accepted'
# is not counted either, as in Nova: nothing has been claimed yet.
ENDED = frozenset((CONFIRMED, REVERTED, COMPLETED, CANCELLED, DONE, ERROR,
                   FAILED))
NOT_COUNTED = ENDED | {ACCEPTED}
# NOTE: the statuses a live migration can be aborted (2.24; 2.65 adds
# the queued and preparing ones) or forced to complete (2.22) in.
LIVE_ABORTABLE = (QUEUED, PREPARING, RUNNING)
LIVE_RUNNING = (RUNNING,)


@dataclasses.dataclass
class Migration(base.PrimitiveObject):
    """One move of one server.

    :ivar id: the row id (what Nova's API shows as the migration id).
    :ivar uuid: the migration's uuid, also its placement consumer.
    :ivar source_compute, source_node: where the server was.
    :ivar dest_compute, dest_node: where it goes (None until chosen).
    :ivar dest_host: the destination's address (Nova's field; Berth has
        no separate management address and leaves it None).
    :ivar old_flavor, new_flavor: the flavor before and after (equal but
        for a resize).
    :ivar hidden: a migration not listed by ``os-migrations`` (none is,
        today; kept for Nova's field).
    :ivar memory_*, disk_*: a live migration's progress, in bytes.
    """

    id: int = None
    uuid: str = None
    instance_uuid: str = None
    migration_type: str = MIGRATION
    status: str = ACCEPTED
    source_compute: str = None
    source_node: str = None
    dest_compute: str = None
    dest_node: str = None
    dest_host: str = None
    old_flavor: typing.Optional[flavor_obj.Flavor] = None
    new_flavor: typing.Optional[flavor_obj.Flavor] = None
    project_id: str = None
    user_id: str = None
    hidden: bool = False
    cross_cell_move: bool = False
    memory_total: int = None
    memory_processed: int = None
    memory_remaining: int = None
    disk_total: int = None
    disk_processed: int = None
    disk_remaining: int = None
    created_at: str = None
    updated_at: str = None

    @property
    def in_progress(self):
        """True while the resource trackers count it."""
        return self.status not in NOT_COUNTED

    @property
    def same_host(self):
        """True for a move whose source and destination are one node."""
        return (self.source_compute == self.dest_compute and
                self.source_node == self.dest_node)


@dataclasses.dataclass
class MigrationContext(base.PrimitiveObject):
    """What an instance has on each side of a move in progress.

    :ivar old_numa_topology, new_numa_topology: the fitted instance
        topology primitives on the source and on the destination.
    :ivar old_pci_devices, new_pci_devices: PCI device addresses.
    """

    migration_uuid: str = None
    old_numa_topology: dict = None
    new_numa_topology: dict = None
    old_pci_requests: list = dataclasses.field(default_factory=list)
    new_pci_requests: list = dataclasses.field(default_factory=list)
    old_pci_devices: list = dataclasses.field(default_factory=list)
    new_pci_devices: list = dataclasses.field(default_factory=list)


def pci_requests_before(migration_context, pci_requests):
    """The PCI requests a server had before its move: those its
    ``migration_context`` (a primitive) kept, else ``pci_requests``, its
    own. An empty list kept is an answer too: a server that asked for no
    device before a resize to a flavor with some asks for none back on
    its source.
    """
    return list((migration_context or {}).get('old_pci_requests',
                                              pci_requests) or [])
