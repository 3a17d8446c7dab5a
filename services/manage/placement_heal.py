# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage placement heal_allocations``: allocations for instances
that have none.

    placement heal_allocations [--max-count N] [--verbose] [--dry-run]
                               [--instance UUID] [--cell UUID] [--force]

For each live instance on a host (in every cell but cell0, one cell, or
one instance) without allocations in placement and with no task or move
in progress, write its flavor's resources on its compute node, as the
scheduler would have claimed them.
``--force`` (with ``--instance``) rewrites them even when present.
Messages and exit codes are nova-manage's:

* 0: allocations were created;
* 1: ``--max-count`` was reached and instances are left;
* 2: an instance's compute node could not be found;
* 3: placement refused an allocation;
* 4: nothing needed healing;
* 127: invalid input.
"""

import logging

from common import context
from common.db import boot_records
from common.db import cell_access as cell_access_mod
from common.db import cells
from common.db import compute_records
from common.db import instance_records
from common.db import migration_records
from common import exception
from common.placement import client as placement_client
from services.conductor import allocation_audit
from services.conductor import allocations
from services.manage import output

LOG = logging.getLogger(__name__)


def _api(conf):
    """The api Database (a function, so that tests can give their own)."""
    return cells.configure_api(conf)


def _placement(conf):
    """The placement client (a function, for the same reason)."""
    return placement_client.PlacementClient(conf)


class _Stop(Exception):
    """End the walk with an exit code."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


class _Healer(object):
    """One heal_allocations run: its options, counts and output."""

    def __init__(self, conf, args, placement):
        self.args = args
        self.placement = placement
        self.processed = 0
        self.failed = False
        self.say = print if args.verbose else (lambda _m: None)
        self.progress = output.progress(args, 'heal_allocations')
        self.ctxt = context.get_admin_context()

    def heal_cell(self, cell_access, cell, instances):
        """Heal the given instances of one cell."""
        self.say("Looking for instances in cell: %s(%s)"
                 % (cell.name, cell.uuid))
        database = cell_access.database(cell)
        nodes = {(n['host'], n['hypervisor_hostname']): n['uuid']
                 for n in compute_records.list_compute_nodes(self.ctxt,
                                                             database)}
        # NOTE: read after the instances: a move that starts later has a
        # task state in the instance read (or its server is skipped next
        # run).
        instances = list(instances)
        moving = migration_records.instances_moving(self.ctxt, database)
        self.progress.expect(len(instances))
        for instance in instances:
            self.heal(instance, nodes, moving)
            self.progress.step()

    def heal(self, instance, nodes, moving=()):
        """Heal one instance (see the module docstring).

        :param moving: the uuids of the cell's instances with a move in
            progress: their allocations are the move's (the instance's
            own consumer is empty while its migration holds the source),
            and writing one would count the server twice.
        """
        if instance.task_state is not None:
            self.say('Instance %s is undergoing a task state transition: %s'
                     % (instance.uuid, instance.task_state))
            return
        if instance.uuid in moving:
            self.say('Instance %s is being migrated (a migration is in '
                     'progress); skipping.' % instance.uuid)
            return
        if not instance.node:
            self.say('Instance %s is not on a host.' % instance.uuid)
            return
        held, generation = allocations.get_allocations(
            self.placement, self.ctxt, instance.uuid)
        if held and not self.args.force:
            self.say('Instance %s already has allocations.' % instance.uuid)
            return
        node_uuid = nodes.get((instance.host, instance.node))
        if node_uuid is None:
            print('Unable to find matching compute_nodes record for host '
                  '%s and node %s of instance %s.'
                  % (instance.host, instance.node, instance.uuid))
            raise _Stop(2)
        if self.args.max_count is not None and \
                self.processed >= self.args.max_count:
            raise _Stop(1)
        wanted = {node_uuid: allocation_audit.expected_resources(instance)}
        if self.args.dry_run:
            print('[dry-run] Update allocations for instance %s: %s'
                  % (instance.uuid, wanted))
            self.processed += 1
            return
        try:
            allocations.put_allocations(
                self.placement, self.ctxt, instance.uuid, wanted,
                instance.project_id, instance.user_id,
                consumer_generation=generation)
        except allocations.ClaimFailed as exc:
            print('Failed to create allocations for instance %s: %s'
                  % (instance.uuid, exc))
            self.failed = True
            return
        self.processed += 1
        self.say('Successfully created allocations for instance %s.'
                 % instance.uuid)


def _targets(ctxt, cell_access, args):
    """[(CellMapping, [Instance])] to heal.

    :raises _Stop: 127 for an unknown instance or cell.
    """
    if args.instance:
        mapping = boot_records.get_instance_mapping(
            ctxt, args.instance, database=cell_access.api)
        if mapping is None or mapping['cell_uuid'] is None:
            print('Unable to find cell for instance %s, is it mapped? Try '
                  'running "berth-manage cell_v2 map_instances".'
                  % args.instance)
            raise _Stop(127)
        cell = cell_access.cell(ctxt, mapping['cell_uuid'])
        try:
            instance = instance_records.get_instance(
                ctxt, cell_access.database(cell), args.instance)
        except exception.InstanceNotFound:
            print('Instance %s not found.' % args.instance)
            raise _Stop(127)
        return [(cell, [instance])]
    if args.cell:
        try:
            chosen = [cell_access.cell(ctxt, args.cell)]
        except cells.CellMappingNotFound:
            print('Cell with uuid %s was not found.' % args.cell)
            raise _Stop(127)
    else:
        chosen = [c for c in cell_access.cells(ctxt) if not c.is_cell0]
    return [(cell, instance_records.list_instances(
        ctxt, cell_access.database(cell))) for cell in chosen]


def heal_allocations(conf):
    """The command; see the module docstring for exit codes."""
    args = conf.category
    if args.force and not args.instance:
        print('--force requires --instance.')
        return 127
    if args.max_count is not None and args.max_count < 1:
        print('Must supply a positive integer for --max-count.')
        return 127
    cell_access = cell_access_mod.CellAccess(_api(conf))
    healer = _Healer(conf, args, _placement(conf))
    prefix = '[dry-run] ' if args.dry_run else ''
    try:
        with healer.progress:
            for cell, instances in _targets(healer.ctxt, cell_access,
                                            args):
                healer.heal_cell(cell_access, cell, instances)
    except _Stop as stop:
        if stop.code == 1:
            print('%sMax count reached. Processed %d instances.'
                  % (prefix, healer.processed))
        return stop.code
    except placement_client.PlacementUnavailable as exc:
        print('Placement is unavailable: %s' % exc)
        return 3
    print('%sProcessed %d instances.' % (prefix, healer.processed))
    if healer.failed:
        return 3
    return 0 if healer.processed else 4
