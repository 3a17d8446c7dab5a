# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The compute agents' database access, served over RPC by the conductor.

Compute agents hold no database credentials (doc/architecture.md); every
record they keep goes through these calls. Service records and compute
nodes live in this conductor's cell (``[database] connection``), as with
upstream's cell conductors; instances are found in the cell their
mapping names.

This is an RPC endpoint of its own next to the manager, in the same
namespace and version, so that the manager stays a thin build-flow
dispatcher.
"""

import collections
import logging

import oslo_messaging as messaging

from common.db import action_records
from common.db import boot_records
from common.db import compute_records
from common.db import host_instances
from common.db import instance_records
from common.db import instance_updates
from common.db import migration_records
from common.db import move_records
from common.db import snapshot_images
from common import exception
from common import servicegroup_db
from services.conductor import rpcapi

LOG = logging.getLogger(__name__)

# NOTE: keep in step with ConductorManager.target (one RPC API) and the
# version history of ConductorAPI.
RPC_API_VERSION = '1.0'


class RecordProxy(object):
    """Record calls of the compute agents (see ConductorAPI).

    :param cell_access: the conductor's
        :class:`~common.db.cell_access.CellAccess`.
    """

    target = messaging.Target(version=RPC_API_VERSION)

    def __init__(self, cell_access):
        self.cells = cell_access
        self._services = None

    @property
    def services(self):
        """The ``db`` service-group driver on this cell's database."""
        if self._services is None:
            self._services = servicegroup_db.DatabaseDriver(
                self.cells.local())
        return self._services

    # --- service records -----------------------------------------------------

    def service_join(self, ctxt, host, binary, topic):
        """Create or fetch a service record; its primitive."""
        return self.services.join(host, binary, topic).to_primitive()

    @messaging.expected_exceptions(exception.ServiceNotFound)
    def service_report(self, ctxt, host, binary):
        """One heartbeat; the updated record's primitive.

        :raises common.exception.ServiceNotFound: unknown service.
        """
        return self.services.report(host, binary).to_primitive()

    def service_report_many(self, ctxt, hosts, binary):
        """One heartbeat for each of ``hosts``, in one transaction."""
        missing = compute_records.report_services(
            ctxt, self.cells.local(), hosts, binary)
        if missing:
            LOG.warning('Heartbeat for unknown %s services on %s', binary,
                        ', '.join(missing[:10]) +
                        (' and %d more' % (len(missing) - 10)
                         if len(missing) > 10 else ''))

    def service_get(self, ctxt, host, binary):
        """The record's primitive, or None."""
        record = self.services.get(host, binary)
        return None if record is None else record.to_primitive()

    # --- compute nodes -------------------------------------------------------

    def compute_node_save(self, ctxt, host, nodename, values, brief=False):
        """Create or update a compute node; the saved record dict.

        :param brief: only the node's id and uuid.
        """
        return compute_records.save_compute_node(
            ctxt, self.cells.local(), host, nodename, values, brief=brief)

    def compute_nodes_save(self, ctxt, nodes):
        """Save several nodes' records at once; [{'id', 'uuid'}]."""
        return compute_records.save_compute_nodes(ctxt, self.cells.local(),
                                                  nodes)

    def compute_nodes_get_by_host(self, ctxt, host):
        """The live compute node records of ``host``."""
        return compute_records.list_compute_nodes(ctxt, self.cells.local(),
                                                  host=host)

    def compute_node_delete(self, ctxt, host, nodename):
        """Soft-delete a compute node."""
        compute_records.delete_compute_node(ctxt, self.cells.local(), host,
                                            nodename)

    # --- instances -----------------------------------------------------------

    def instances_get_by_host(self, ctxt, host, changed_since=None):
        """The live instances on ``host`` (this cell).

        :param changed_since: None for a list of Instance primitives.
            An ISO time for a compute agent's sync
            (see ConductorAPI): the instances changed since then, with
            the fields its tracker reads, and every live uuid.
        """
        if changed_since is None:
            return [i.to_primitive() for i in instance_records.
                    list_instances(ctxt, self.cells.local(), host=host)]
        return host_instances.sync_host_instances(
            ctxt, self.cells.local(), host, changed_since)

    def instances_sync_hosts(self, ctxt, since_by_host):
        """The sync replies of several hosts (see ConductorAPI)."""
        return host_instances.sync_hosts(ctxt, self.cells.local(),
                                         since_by_host)

    def _instance_db(self, ctxt, uuid):
        cell_uuid, database = self.cells.instance_cell(ctxt, uuid)
        return cell_uuid, database

    @messaging.expected_exceptions(exception.InstanceNotFound)
    def instance_get(self, ctxt, instance_uuid):
        """The Instance primitive of a live instance.

        :raises common.exception.InstanceNotFound: there is none.
        """
        cell_uuid, database = self._instance_db(ctxt, instance_uuid)
        instance = instance_records.get_instance(ctxt, database,
                                                 instance_uuid)
        instance.cell_uuid = cell_uuid
        return instance.to_primitive()

    @messaging.expected_exceptions(exception.InstanceNotFound,
                                   exception.UnexpectedTaskStateError)
    def instance_update(self, ctxt, instance_uuid, values,
                        expected_task_state=None, action_event=None,
                        brief=False):
        """Update a live instance; its new primitive.

        :param action_event: an action event recorded in the same
            transaction (see ConductorAPI.instance_update).
        :param brief: answer None: the caller does not need the
            updated instance, which is then not read back.
        :raises common.exception.InstanceNotFound: there is none.
        :raises common.exception.UnexpectedTaskStateError: guard failed.
        """
        cell_uuid, database = self._instance_db(ctxt, instance_uuid)
        instance = instance_records.update_instance(
            ctxt, database, instance_uuid, values,
            expected_task_state=expected_task_state,
            action_event=action_event, brief=brief)
        if brief:
            return None
        instance.cell_uuid = cell_uuid
        return instance.to_primitive()

    # --- migrations ----------------------------------------------------------

    @messaging.expected_exceptions(exception.InstanceNotFound,
                                   exception.MigrationNotFound)
    def migration_get(self, ctxt, instance_uuid, migration_uuid):
        """The Migration primitive of a move of ``instance_uuid``."""
        _cell, database = self._instance_db(ctxt, instance_uuid)
        return migration_records.get_migration(
            ctxt, database, migration_uuid).to_primitive()

    @messaging.expected_exceptions(exception.InstanceNotFound,
                                   exception.MigrationNotFound,
                                   exception.UnexpectedMigrationStatusError)
    def migration_update(self, ctxt, instance_uuid, migration_uuid, values,
                         expected_status=None, brief=False):
        """Change a migration (guarded by its status); its primitive (None
        when ``brief``).
        """
        _cell, database = self._instance_db(ctxt, instance_uuid)
        migration = migration_records.update_migration(
            ctxt, database, migration_uuid, values,
            expected_status=expected_status, brief=brief)
        return None if migration is None else migration.to_primitive()

    @messaging.expected_exceptions(exception.InstanceNotFound,
                                   exception.MigrationNotFound)
    def move_get(self, ctxt, instance_uuid, migration_uuid,
                 action_events=None):
        """{'instance', 'migration'} primitives of a move, read together
        (and its action events recorded).
        """
        cell_uuid, database = self._instance_db(ctxt, instance_uuid)
        instance, migration = move_records.get_move(
            ctxt, database, instance_uuid, migration_uuid,
            action_events=action_events or ())
        instance.cell_uuid = cell_uuid
        return {'instance': instance.to_primitive(),
                'migration': migration.to_primitive()}

    @messaging.expected_exceptions(exception.InstanceNotFound,
                                   exception.MigrationNotFound,
                                   exception.UnexpectedTaskStateError,
                                   exception.UnexpectedMigrationStatusError)
    def move_claim_expired(self, ctxt, instance_uuid, migration_uuid):
        """{'instance', 'migration'} primitives of a move whose automatic
        confirm began (see ``move_records.claim_expired``).
        """
        cell_uuid, database = self._instance_db(ctxt, instance_uuid)
        instance, migration = move_records.claim_expired(
            ctxt, database, instance_uuid, migration_uuid)
        if instance is not None:
            instance.cell_uuid = cell_uuid
            instance = instance.to_primitive()
        return {'instance': instance, 'migration': migration.to_primitive()}

    @messaging.expected_exceptions(exception.InstanceNotFound,
                                   exception.MigrationNotFound,
                                   exception.UnexpectedTaskStateError,
                                   exception.UnexpectedMigrationStatusError)
    def move_update(self, ctxt, instance_uuid, migration_uuid,
                    migration_values=None, expected_status=None,
                    instance_values=None, expected_task_state=None,
                    action_events=None, brief=False):
        """A step of a move written in one transaction (see
        ConductorAPI.move_update).
        """
        cell_uuid, database = self._instance_db(ctxt, instance_uuid)
        instance, migration = move_records.update_move(
            ctxt, database, instance_uuid, migration_uuid,
            migration_values=migration_values,
            expected_status=expected_status,
            instance_values=instance_values,
            expected_task_state=expected_task_state,
            action_events=action_events or (), brief=brief)
        if instance is not None:
            instance.cell_uuid = cell_uuid
            instance = instance.to_primitive()
        if migration is not None:
            migration = migration.to_primitive()
        return {'instance': instance, 'migration': migration}

    def migrations_get_by_source(self, ctxt, host, migration_type,
                                 statuses):
        """Migrations of a type from ``host`` (this cell) in one of
        ``statuses``, as primitives.
        """
        return [m.to_primitive() for m in migration_records.list_migrations(
            ctxt, self.cells.local(), migration_records.Filters(
                source_compute=host, migration_type=migration_type,
                statuses=statuses))]

    def instance_updates(self, ctxt, updates):
        """Several brief instance updates, one transaction per cell.

        :param updates: [{'instance_uuid', 'values', 'expected_task_state'
            (optional), 'action_event' (optional)}].
        :returns: per update, in order: None when it happened, else an
            error primitive (``conductor.rpcapi.update_error_primitive``):
            one update's failure does not fail the others.
        """
        return self._by_cell(ctxt, updates, instance_updates.update_instances,
                             lambda _cell_uuid, _outcome: None)

    def move_updates(self, ctxt, updates):
        """Several move_update calls, one transaction per cell.

        :param updates: [{'instance_uuid', 'migration_uuid', and
            optionally the other arguments of :meth:`move_update`}].
        :returns: per update, in order: what :meth:`move_update` answers,
            or an error primitive (``conductor.rpcapi.
            update_error_primitive``) for the exception it would raise:
            one update's failure does not fail the others.
        """
        def answer(cell_uuid, outcome):
            instance, migration = outcome
            if instance is not None:
                instance.cell_uuid = cell_uuid
                instance = instance.to_primitive()
            return {'instance': instance,
                    'migration': (None if migration is None else
                                  migration.to_primitive())}
        return self._by_cell(ctxt, updates, move_records.update_moves, answer)

    def _by_cell(self, ctxt, updates, run, answer):
        """``run(ctxt, database, updates)`` once per cell of the updates'
        instances; per update, in order: ``answer(cell_uuid, outcome)``,
        or the error primitive of an outcome that is an exception.
        """
        by_cell = collections.OrderedDict()
        answers = [None] * len(updates)
        for index, update in enumerate(updates):
            uuid = update['instance_uuid']
            try:
                cell_uuid, database = self._instance_db(ctxt, uuid)
            except exception.InstanceNotFound as exc:
                # NOTE: no mapping (archived): this one's answer only.
                answers[index] = rpcapi.update_error_primitive(uuid, exc)
                continue
            by_cell.setdefault(id(database), (cell_uuid, database, []))[
                2].append(index)
        for cell_uuid, database, indexes in by_cell.values():
            outcomes = run(ctxt, database, [updates[i] for i in indexes])
            for index, outcome in zip(indexes, outcomes):
                if isinstance(outcome, Exception):
                    answers[index] = rpcapi.update_error_primitive(
                        updates[index]['instance_uuid'], outcome)
                else:
                    answers[index] = answer(cell_uuid, outcome)
        return answers

    @messaging.expected_exceptions(exception.InstanceNotFound)
    def instance_destroy(self, ctxt, instance_uuid):
        """Soft-delete an instance; its mapping is queued for delete.

        :raises common.exception.InstanceNotFound: no live instance.
        """
        _cell, database = self._instance_db(ctxt, instance_uuid)
        instance_records.destroy_instance(ctxt, database, instance_uuid)
        if self.cells.has_api:
            boot_records.set_queued_for_delete(ctxt, instance_uuid,
                                               database=self.cells.api)

    def instance_fault_create(self, ctxt, instance_uuid, code, message,
                              details=None, host=None):
        """Record a fault of an instance."""
        _cell, database = self._instance_db(ctxt, instance_uuid)
        instance_records.add_fault(ctxt, database, instance_uuid, code,
                                   message, details, host)

    def action_event_start(self, ctxt, instance_uuid, event, host):
        """Start an event under the instance's latest action."""
        _cell, database = self._instance_db(ctxt, instance_uuid)
        action_records.action_event_start(ctxt, database, instance_uuid,
                                          event, host)

    def action_event_finish(self, ctxt, instance_uuid, event, host, result,
                            traceback=None):
        """Finish an event of the instance's latest action."""
        _cell, database = self._instance_db(ctxt, instance_uuid)
        action_records.action_event_finish(
            ctxt, database, instance_uuid, event, host, result, traceback)

    # --- snapshot images -----------------------------------------------------

    def image_snapshot_done(self, ctxt, image_id, values=None):
        """Finish (or, values None, delete) a snapshot's queued image in
        the api database; see ConductorAPI.image_snapshot_done.

        NOTE: the conductor writes it because compute agents hold no
        database credentials; the API created the image.
        """
        if not self.cells.has_api:
            LOG.warning('No api database: snapshot image %s is left as it '
                        'is', image_id)
            return False
        return snapshot_images.finish_image(ctxt, self.cells.api, image_id,
                                            values)

    def image_snapshot_abandoned(self, ctxt, instance_uuid):
        """Delete the queued snapshot images of an instance whose snapshot
        a compute restart interrupted; how many.
        """
        if not self.cells.has_api:
            return 0
        return snapshot_images.drop_pending_of_instance(
            ctxt, self.cells.api, instance_uuid)
