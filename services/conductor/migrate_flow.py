# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Resize and cold migration: Nova's MigrationTask, and the ends of a move.

    migrate_server (a call from the API; task resize_prep recorded)
      -> Migration row: type resize | migration, status pre-migrating
      -> stored request spec -> for_move (new flavor, NUMA and PCI of a
         resize; source host ignored unless [DEFAULT]
         allow_resize_to_same_host and a resize; target host of 2.56)
      -> what the instance holds in placement, read
      -> select_destinations with alternates: its claim writes the
         destination for the instance consumer and hands the source to
         the migration consumer, in one POST
           NoValidHost / error -> allocation back to the instance (if the
             claim was written), migration error, task None (vm_state
             unchanged), fault, event Error; the API answers the
             NoValidHost as a 400
      -> decision recorded in conductor_migrate_server, migration's
         destination set; a resize's flavor (and its NUMA and PCI
         requests) stored in the server's request spec, as Nova does
         once the scheduler found a host; prep_resize cast to the
         destination

    migrate_reschedule (cast by a destination whose prep_resize failed)
      -> its claim dropped; the next alternate claimed in placement ->
         prep_resize there; none left -> ended as a NoValidHost above
         (and a resize's stored spec has the old flavor again)

    revert_resize (cast by a compute whose part of the move failed, with
      the reason; a user's revert goes from the API to the destination)
      -> migration reverting, a resize's stored spec given its old
         flavor back -> revert_resize cast to the destination compute
         (which gives the source allocation back and hands the server
         back to the source: services/compute/resize.py)

The conductor owns the placement writes of scheduling a move (the claim
that hands the source over, an alternate's claim, the hand-back of a
move that never left its source); the computes own those of its end (the
source drops the migration's allocation at a confirm, the destination
gives it back at a revert, as in Nova), the guests, their claims and the
instance and migration rows' progress.
"""

import logging
import traceback

import common.conf
from common.db import api as db_api
from common.db import decision_records
from common.db import instance_records
from common.db import migration_records
from common.db import move_records
from common import exception
from common.objects import flavor as flavor_obj
from common.objects import instance as instance_obj
from common.objects import migration as migration_obj
from common.objects import request_spec as spec_obj
from services.conductor import action_events
from services.conductor import allocations
from services.conductor import move_allocations
from services.conductor import move_spec

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

EVENT = decision_records.KIND_EVENTS['migrate']
FAULT_CODE = 500


class _Move(object):
    """What the steps of one move share: the instance, its cell, the
    migration.
    """

    def __init__(self, conductor, ctxt, instance, cell_uuid, database,
                 migration=None):
        self.conductor = conductor
        self.ctxt = ctxt
        self.instance = instance
        self.uuid = instance.uuid
        self.cell_uuid = cell_uuid
        self.database = database
        self.migration = migration

    @classmethod
    def load(cls, conductor, ctxt, instance_uuid, migration_uuid=None):
        """The move of ``instance_uuid``; None when it was deleted (what
        its migration held is then dropped: see :func:`_drop_deleted`).
        """
        try:
            cell_uuid, database = conductor.cells.instance_cell(
                ctxt, instance_uuid)
            migration = None
            if migration_uuid is None:
                instance = instance_records.get_instance(
                    ctxt, database, instance_uuid, fault=False)
            else:
                instance, migration = move_records.get_move(
                    ctxt, database, instance_uuid, migration_uuid)
        except exception.InstanceNotFound:
            LOG.info('Instance %s is gone; ending its move %s',
                     instance_uuid, migration_uuid)
            if migration_uuid is not None:
                _drop_deleted(conductor, ctxt, database, instance_uuid,
                              migration_uuid)
            return None
        except exception.MigrationNotFound:
            LOG.info('Migration %s of instance %s is gone; nothing to do',
                     migration_uuid, instance_uuid)
            return None
        instance.cell_uuid = cell_uuid
        return cls(conductor, ctxt, instance, cell_uuid, database, migration)

    @classmethod
    def sent(cls, conductor, ctxt, instance):
        """The move of an Instance primitive the API wrote (nothing is
        read here; a server deleted since is found by the compute step's
        guarded write).
        """
        instance = instance_obj.Instance.from_primitive(instance)
        cell_uuid, database = conductor.cells.instance_cell(
            ctxt, instance.uuid, hint=instance.cell_uuid)
        instance.cell_uuid = cell_uuid
        return cls(conductor, ctxt, instance, cell_uuid, database)

    @property
    def kind(self):
        """The decision record's kind of placement."""
        return ('resize' if self.migration.migration_type ==
                migration_obj.RESIZE else 'migrate')

    def event(self, phase, result=None, tb=None):
        action_events.record(self.ctxt, self.database, self.uuid, EVENT,
                             self.conductor.host, phase, result, tb)

    def set_migration(self, values, expected=None):
        self.migration = migration_records.update_migration(
            self.ctxt, self.database, self.migration.uuid, values,
            expected_status=expected)

    def compute(self):
        """The compute RPC client of the instance's cell."""
        cell = self.conductor.cells.cell(self.ctxt, self.cell_uuid)
        return self.conductor.compute_clients.for_cell(cell)

    def give_back(self):
        """The source allocation back to the instance (destination's
        dropped); a refusal is logged: the audit finds what is left.
        """
        try:
            move_allocations.back_to_instance(
                self.conductor.placement, self.ctxt, self.uuid,
                self.migration.uuid, self.instance.project_id,
                self.instance.user_id)
        except Exception as exc:
            LOG.error('Could not give the allocation of migration %s back '
                      'to instance %s: %s', self.migration.uuid, self.uuid,
                      exc)

    def fail(self, exc, tb=None, spec_saved=False):
        """End a move that never left its source: allocation back,
        migration error, task None with a fault, event Error.

        :param spec_saved: the resize's flavor may be in the stored spec
            already (it goes back to the server's own).
        """
        LOG.warning('%s of %s failed: %s', self.kind, self.uuid, exc)
        self.give_back()
        try:
            self.set_migration({'status': migration_obj.ERROR})
        except Exception as again:
            LOG.warning('Could not end migration %s: %s',
                        self.migration.uuid, again)
        try:
            instance_records.add_fault(self.ctxt, self.database, self.uuid,
                                       FAULT_CODE, str(exc)[:255],
                                       details=tb)
            instance_records.update_instance(
                self.ctxt, self.database, self.uuid, {'task_state': None},
                expected_task_state=[instance_obj.RESIZE_PREP], brief=True)
            if spec_saved:
                self.restore_spec(self.instance.flavor,
                                  self.instance.pci_requests)
        except (exception.InstanceNotFound,
                exception.UnexpectedTaskStateError) as gone:
            LOG.info('Instance %s changed during its move: %s', self.uuid,
                     gone)
            if self.deleted():
                # NOTE: what was just given back must go with it.
                allocations.delete_allocations(self.conductor.placement,
                                               self.ctxt, self.uuid)
        self.event('finish', 'Error', tb)

    def restore_spec(self, flavor, pci_requests):
        """A resize ends on its source: the stored spec takes ``flavor``
        (the old one) back.
        """
        if self.migration.migration_type == migration_obj.RESIZE:
            move_spec.give_flavor_back(self.conductor, self.ctxt,
                                       self.instance.to_primitive(), flavor,
                                       pci_requests)

    def deleted(self):
        """True when the server is gone or being deleted."""
        try:
            current = instance_records.get_instance(self.ctxt,
                                                    self.database, self.uuid)
        except exception.InstanceNotFound:
            return True
        return current.task_state == instance_obj.DELETING


def _drop_deleted(conductor, ctxt, database, instance_uuid, migration_uuid):
    """The server was deleted mid-move: its migration's allocation (the
    source), its own (a destination claimed after the delete) and the
    migration in progress end.
    """
    move_allocations.drop_migration(conductor.placement, ctxt,
                                    migration_uuid)
    allocations.delete_allocations(conductor.placement, ctxt, instance_uuid)
    try:
        migration = migration_records.get_migration(ctxt, database,
                                                    migration_uuid)
        if migration.status not in migration_obj.ENDED:
            migration_records.update_migration(
                ctxt, database, migration_uuid,
                {'status': migration_obj.ERROR},
                expected_status=migration.status)
    except (exception.MigrationNotFound,
            exception.UnexpectedMigrationStatusError) as exc:
        LOG.info('Migration %s of deleted instance %s: %s', migration_uuid,
                 instance_uuid, exc)


def _new_migration(move, flavor):
    """The move's migration, written with the start of its event."""
    instance = move.instance
    resize = flavor is not None
    return migration_records.create_migration(
        move.ctxt, move.database, migration_obj.Migration(
            instance_uuid=instance.uuid,
            migration_type=(migration_obj.RESIZE if resize else
                            migration_obj.MIGRATION),
            status=migration_obj.PRE_MIGRATING,
            source_compute=instance.host, source_node=instance.node,
            old_flavor=instance.flavor,
            new_flavor=flavor if resize else instance.flavor,
            project_id=instance.project_id, user_id=instance.user_id),
        action_event={'phase': 'start', 'event': EVENT,
                      'host': move.conductor.host})


def _spec(move, flavor, host, numa_topology, pci_requests):
    """The request spec the move is scheduled with."""
    conductor = move.conductor
    primitive = move.instance.to_primitive()
    spec = move_spec.stored_spec(conductor, move.ctxt, primitive)
    if flavor is None:
        moved = move_spec.for_move(spec, primitive, 'migrate', host=host)
    else:
        moved = move_spec.for_move(
            spec, primitive, 'resize', flavor=flavor, host=host,
            allow_same_host=CONF.allow_resize_to_same_host,
            numa_topology=numa_topology, pci_requests=pci_requests or [])
    move_spec.refresh_group(conductor, move.ctxt, moved)
    return moved


def migrate_server(conductor, ctxt, instance_uuid, flavor=None, host=None,
                   numa_topology=False, pci_requests=None, instance=None):
    """Schedule a resize or cold migration and cast prep_resize.

    :param flavor: the new Flavor of a resize, None for a migration.
    :param instance: the Instance primitive as the API wrote it
        ``resize_prep`` (a delete since is found by the destination's
        guarded write, which drops the move); None reads it.
    :returns: the destination host.
    :raises common.exception.NoValidHost: no host fits (the move is
        undone, see the module doc).
    """
    if instance is not None:
        move = _Move.sent(conductor, ctxt, instance)
    else:
        move = _Move.load(conductor, ctxt, instance_uuid)
    if move is None:
        raise exception.InstanceNotFound(instance_id=instance_uuid)
    instance = move.instance
    move.migration = _new_migration(move, flavor)
    try:
        spec = _spec(move, flavor, host, numa_topology, pci_requests)
        hand_over = move_allocations.read_hand_over(
            conductor.placement, ctxt, instance.uuid, move.migration.uuid)
        selections = conductor.scheduler_api.select_destinations(
            ctxt, spec, [instance.uuid], return_alternates=True,
            hand_over=hand_over)[0]
    except Exception as exc:
        move.fail(exc, traceback.format_exc())
        raise
    chosen, alternates = selections[0], selections[1:]
    decision, chosen.decision = chosen.decision, None
    try:
        _record_choice(move, decision, chosen)
        if flavor is not None:
            move_spec.keep_flavor(conductor, ctxt, instance.to_primitive(),
                                  flavor, spec.pci_requests)
        _prepare(move, spec, chosen, alternates, named=True)
    except Exception as exc:
        # NOTE: the destination is claimed but nobody was told: give it
        # back rather than leave the server half moved.
        move.fail(exc, traceback.format_exc(), spec_saved=True)
        raise
    return chosen.service_host


def _record_choice(move, decision, chosen):
    """The scheduler's decision record, the event's Success and the
    migration's destination, in one transaction.
    """
    destination = {'dest_compute': chosen.service_host,
                   'dest_node': chosen.nodename}
    named = migration_records.prepare_update(move.migration.uuid,
                                             destination, brief=True)
    host = move.conductor.host

    def write(ctx):
        decision_records.add_and_finish(ctx, move.uuid, move.kind, decision,
                                        host=host)
        named(ctx)
    db_api.write(move.database, write, move.ctxt)
    for name, value in destination.items():
        setattr(move.migration, name, value)


def _prepare(move, spec, chosen, alternates, named=False):
    """Point the migration at ``chosen`` (unless ``named`` already) and
    cast prep_resize there.
    """
    if not named:
        move.set_migration({'dest_compute': chosen.service_host,
                            'dest_node': chosen.nodename})
    move.compute().prep_resize(
        move.ctxt, chosen.service_host, move.instance.to_primitive(),
        move.migration.uuid, move.migration.new_flavor, spec, chosen,
        alternates, node=chosen.nodename)
    LOG.info('Cast prep_resize of %s (%s %s) to %s (%s)', move.uuid,
             move.migration.migration_type, move.migration.uuid,
             chosen.service_host, chosen.nodename)


def _claim_next(move, alternates):
    """(claimed Selection, the ones after it) or (None, [])."""
    instance = move.instance
    for index, selection in enumerate(alternates):
        request = allocations.allocation_request(selection)
        if request is not None and allocations.claim(
                move.conductor.placement, move.ctxt, instance.uuid, request,
                instance.project_id, instance.user_id):
            return selection, alternates[index + 1:]
        LOG.info('Alternate %s of the move of %s could not be claimed',
                 selection.service_host, instance.uuid)
    return None, []


def migrate_reschedule(conductor, ctxt, instance_uuid, migration_uuid,
                       spec, alternates, failed_host, reason):
    """Move a move whose destination failed onto its next alternate.

    :param spec: the move's RequestSpec (its retry counts attempts).
    :param alternates: the Selections left, in preference order.
    :returns: the new destination host, or None (the move ended).
    """
    move = _Move.load(conductor, ctxt, instance_uuid, migration_uuid)
    if move is None:
        return None
    # NOTE: the failed destination's claim is the instance consumer's
    # whole allocation now (the source is the migration's).
    allocations.delete_allocations(conductor.placement, ctxt, instance_uuid)
    retry = spec.retry or spec_obj.SchedulerRetries(num_attempts=1)
    retry.num_attempts += 1
    retry.hosts.append([failed_host, move.migration.dest_node])
    spec.retry = retry
    LOG.info('prep_resize of %s failed on %s (%s); attempt %d of %d',
             instance_uuid, failed_host, reason, retry.num_attempts,
             CONF.scheduler.max_attempts)
    chosen = None
    if retry.num_attempts <= CONF.scheduler.max_attempts:
        chosen, alternates = _claim_next(move, alternates)
    if chosen is None:
        exc = exception.MaxRetriesExceeded(
            reason='Exceeded maximum number of retries. Exhausted all '
                   'hosts available for retrying build failures for '
                   'instance %s.' % instance_uuid)
        move.fail(exc, 'Last failure on host %s: %s' % (failed_host,
                                                        reason),
                  spec_saved=True)
        return None
    _prepare(move, spec, chosen, alternates)
    return chosen.service_host


def revert_resize(conductor, ctxt, instance_uuid, migration_uuid,
                  reason=None):
    """Roll back a move whose step failed after its destination was
    prepared: migration ``reverting``, a resize's stored spec given its
    old flavor back, and the destination told to hand the server back
    to its source (it gives the source allocation back first).

    :param reason: why the move is rolled back.
    """
    move = _Move.load(conductor, ctxt, instance_uuid, migration_uuid)
    if move is None:
        return
    try:
        move.set_migration({'status': migration_obj.REVERTING})
    except Exception as exc:
        LOG.warning('Could not mark migration %s reverting: %s',
                    migration_uuid, exc)
    move.restore_spec(move.migration.old_flavor,
                      migration_obj.pci_requests_before(
                          move.instance.migration_context,
                          move.instance.pci_requests))
    move.compute().revert_resize(ctxt, move.migration.dest_compute,
                                 instance_uuid, migration_uuid,
                                 reason=reason)
    LOG.info('Cast revert_resize of %s to %s (rollback: %s)',
             instance_uuid, move.migration.dest_compute, reason)


def flavor_of(primitive):
    """A Flavor from an RPC argument (None stays None)."""
    return None if primitive is None else flavor_obj.Flavor.from_primitive(
        primitive)
