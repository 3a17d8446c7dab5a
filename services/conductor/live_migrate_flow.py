# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Live migrate a server: choose and check its destination, then cast.

The API has recorded the ``live-migration`` action and task
``migrating``. Here, as Nova's LiveMigrationTask::

    migration row (live-migration, accepted, the source)
      -> the source compute must be up
      -> destination:
           forced host (2.30..2.67 ``force``, or a host below 2.30):
             the source allocation handed to the migration consumer;
             not the source, up, a compute node of the server's cell;
             the source's resources claimed on it in placement
           otherwise: the scheduler (``requested_destination`` = the
             named host, if any; the source in ``ignore_hosts``) with
             alternates; it claims the first and, for a lone move off
             its source, hands the source allocation to the migration
             consumer in the same write (a move off a source that
             another is leaving hands over first, on its own:
             services/conductor/busy_sources.py)
      -> pre-checks: the destination's (driver, move claim: NUMA cells
         and pinned CPUs fitted on it) and the source's, each a call
         bounded by ``long_rpc_timeout``; a failed one drops that host's
         claim and allocation and tries the next alternate (then asks the
         scheduler again) up to ``[DEFAULT] migrate_max_retries``
      -> the migration names its destination, the instance its
         migration context (old and new NUMA topology), the decision
         record is kept, ``live_migration`` is cast to the source
         (services/compute/live_migration.py does the rest)

On failure nothing stays held: the source allocation goes back to the
instance (the destination's is dropped), the migration ends ``error``
(``failed`` for an unexpected error, which also puts the server in
ERROR, as Nova does), the server keeps its vm_state with task None, a
fault is recorded and the ``conductor_live_migrate_instance`` event
fails. Below microversion 2.34 the API waits for this flow and answers
the failure as a 400.
"""

import dataclasses
import logging
import traceback

import oslo_messaging as messaging

import common.conf
from common.db import api as db_api
from common.db import compute_records
from common.db import decision_records
from common.db import instance_records
from common.db import migration_records
from common import exception
from common.objects import instance as instance_obj
from common.objects import migration as migration_obj
from common import servicegroup
from services.conductor import action_events
from services.conductor import allocations
from services.conductor import busy_sources
from services.conductor import move_allocations
from services.conductor import move_spec

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

EVENT = decision_records.KIND_EVENTS['live-migrate']
FAULT_CODE = 500
_SERVICEGROUP = servicegroup.API(driver=servicegroup.MemoryDriver())
# NOTE: the source hosts of the live migrations this process is choosing
# destinations for.
BUSY_SOURCES = busy_sources.BusySources()
# NOTE: failures the API of a synchronous request (below 2.34) answers
# with a 400, as Nova's does; anything else is unexpected.
EXPECTED = (exception.NoValidHost, exception.MigrationPreCheckError,
            exception.UnableToMigrateToSelf,
            exception.ComputeServiceUnavailable,
            exception.ComputeHostNotFound)


@dataclasses.dataclass
class LiveMigrate(object):
    """One live migration request as the API sent it.

    :ivar host: the target host an admin named, or None.
    :ivar block_migration: True, False, or None for ``auto``.
    :ivar force: skip the scheduler for ``host`` (2.30..2.67 ``force``,
        and any named host below 2.30).
    """

    instance_uuid: str
    host: str = None
    block_migration: object = None
    force: bool = False


class _Flow(object):
    """The state of one request between its steps."""

    def __init__(self, conductor, ctxt, request, database, instance):
        self.conductor = conductor
        self.ctxt = ctxt
        self.request = request
        self.database = database
        self.instance = instance
        self.uuid = instance['uuid']
        self.source = instance['host']
        self.migration = None
        self.held = False
        self.claimed_on = None
        self.cell = conductor.cells.cell(ctxt, instance['cell_uuid'])
        self.compute = conductor.compute_clients.for_cell(self.cell)

    # --- checks ---------------------------------------------------------

    def check_up(self, host):
        """The compute service of ``host`` in this cell must be up.

        :raises common.exception.ComputeHostNotFound: no such service.
        :raises common.exception.ComputeServiceUnavailable: it is down.
        """
        service = compute_records.get_service(
            self.ctxt, self.database, host=host,
            binary=compute_records.COMPUTE_BINARY)
        if service is None:
            raise exception.ComputeHostNotFound(host=host)
        if not _SERVICEGROUP.service_is_up(
                compute_records.service_record(service)):
            raise exception.ComputeServiceUnavailable(host=host)

    def check_forced(self, host):
        """The checks Nova makes of a forced destination; its node.

        :returns: the compute node record of ``host``.
        """
        if host == self.source:
            raise exception.UnableToMigrateToSelf(instance_id=self.uuid,
                                                  host=host)
        self.check_up(host)
        node = compute_records.get_compute_node(self.ctxt, self.database,
                                                host=host)
        if node is None:
            raise exception.ComputeHostNotFound(host=host)
        return node

    # --- destination ----------------------------------------------------

    def forced_destination(self):
        """(host, node, migrate data) of a forced host, claimed in
        placement with the source's resources (Nova's
        claim_resources_on_destination).
        """
        node = self.check_forced(self.request.host)
        held, _gen = allocations.get_allocations(
            self.conductor.placement, self.ctxt, self.migration['uuid'])
        resources = {}
        for amounts in held.values():
            for rc, amount in amounts.items():
                resources[rc] = resources.get(rc, 0) + amount
        request = {'allocations': {node['uuid']: {'resources': resources}}}
        if not allocations.claim(
                self.conductor.placement, self.ctxt, self.uuid, request,
                self.instance['project_id'], self.instance['user_id']):
            raise exception.MigrationPreCheckError(
                reason='Unable to move instance %s to host %s. There is not '
                       'enough capacity on the host for the instance.'
                       % (self.uuid, self.request.host))
        spec = move_spec.stored_spec(self.conductor, self.ctxt,
                                     self.instance)
        data = self.pre_checks(self.request.host, node['hypervisor_hostname'],
                               spec, {}, None)
        return self.request.host, node['hypervisor_hostname'], data, None

    def scheduled_destination(self):
        """(host, node, migrate data, decision) of the first destination
        the scheduler offers whose pre-checks pass.
        """
        stored = move_spec.stored_spec(self.conductor, self.ctxt,
                                       self.instance)
        spec = move_spec.for_move(stored, self.instance, 'live-migrate',
                                  host=self.request.host)
        move_spec.refresh_group(self.conductor, self.ctxt, spec)
        hand_over = None
        if not self.held:
            hand_over = move_allocations.read_hand_over(
                self.conductor.placement, self.ctxt, self.uuid,
                self.migration['uuid'])
        attempted = [self.source]
        while True:
            spec.ignore_hosts = list(attempted)
            # NOTE: held from the first call on, even one that fails: its
            # claim may have been written before the answer was lost (a
            # migration that holds nothing gives nothing back).
            self.held = True
            [host_list] = self.conductor.scheduler_api.select_destinations(
                self.ctxt, spec, [self.uuid], return_alternates=True,
                hand_over=hand_over)
            hand_over = None
            for index, selection in enumerate(host_list):
                _check_retries(self.uuid, attempted)
                if index and not self._claim(selection):
                    continue
                try:
                    data = self.pre_checks(
                        selection.service_host, selection.nodename, spec,
                        selection.limits, _mappings(selection))
                    return (selection.service_host, selection.nodename,
                            data, host_list[0].decision)
                except exception.MigrationPreCheckError as exc:
                    LOG.info('Skipping host %s for the live migration of '
                             '%s: %s', selection.service_host, self.uuid,
                             exc)
                    attempted.append(selection.service_host)
                    allocations.delete_allocations(
                        self.conductor.placement, self.ctxt, self.uuid)

    def _claim(self, selection):
        request = allocations.allocation_request(selection)
        return request is not None and allocations.claim(
            self.conductor.placement, self.ctxt, self.uuid, request,
            self.instance['project_id'], self.instance['user_id'])

    def pre_checks(self, host, node, spec, limits, mappings):
        """The destination's then the source's pre-checks; the migrate
        data.

        :raises common.exception.MigrationPreCheckError: one refused or
            did not answer in time (the destination's claim is dropped).
        """
        # NOTE: the destination is named before it claims, so that
        # whoever ends this migration (this flow, or the bound for
        # migrations whose conductor died) knows whom to tell to drop it.
        destination = {'dest_compute': host, 'dest_node': node}
        migration_records.update_migration(
            self.ctxt, self.database, self.migration['uuid'], destination,
            expected_status=migration_obj.ACCEPTED, brief=True)
        self.migration = migration = dict(self.migration, **destination)
        try:
            data = self.compute.check_can_live_migrate_destination(
                self.ctxt, host, self.instance, migration,
                spec.to_primitive(), limits, mappings,
                self.request.block_migration)
        except messaging.MessagingTimeout:
            self.compute.drop_move_claim_at_destination(
                self.ctxt, host, self.migration['uuid'])
            raise exception.MigrationPreCheckError(
                reason='Timeout while checking if we can live migrate to '
                       'host: %s' % host)
        try:
            self.compute.check_can_live_migrate_source(
                self.ctxt, self.source, self.uuid)
        except Exception as exc:
            self.compute.drop_move_claim_at_destination(
                self.ctxt, host, self.migration['uuid'])
            if isinstance(exc, exception.MigrationPreCheckError):
                raise
            raise exception.MigrationPreCheckError(reason=str(exc))
        return data

    # --- the flow ---------------------------------------------------------

    def run(self):
        """Choose and check the destination, then cast the migration."""
        instance = instance_obj.Instance.from_primitive(self.instance)
        self.migration = migration_records.create_migration(
            self.ctxt, self.database, migration_obj.Migration(
                instance_uuid=self.uuid,
                migration_type=migration_obj.LIVE_MIGRATION,
                status=migration_obj.ACCEPTED, source_compute=self.source,
                source_node=self.instance.get('node'),
                dest_compute=self.request.host,
                old_flavor=instance.flavor, new_flavor=instance.flavor,
                project_id=instance.project_id,
                user_id=instance.user_id),
            action_event={'phase': 'start', 'event': EVENT,
                          'host': self.conductor.host}).to_primitive()
        self.check_up(self.source)
        forced = bool(self.request.host and self.request.force)
        with BUSY_SOURCES.choosing_from(self.source) as alone:
            if forced or not alone:
                move_allocations.to_migration(
                    self.conductor.placement, self.ctxt, self.uuid,
                    self.migration['uuid'], instance.project_id,
                    instance.user_id)
                self.held = True
            if forced:
                host, node, data, decision = self.forced_destination()
            else:
                host, node, data, decision = self.scheduled_destination()
        self.start(host, node, data, decision)

    def start(self, host, node, data, decision):
        """Name the destination everywhere and cast to the source."""
        uuid = self.migration['uuid']
        self.claimed_on = host
        context = migration_obj.MigrationContext(
            migration_uuid=uuid,
            old_numa_topology=self.instance.get('numa_topology'),
            new_numa_topology=data.get('dest_numa_topology'),
            new_pci_devices=list(data.get('dest_pci_devices') or
                                 [])).to_primitive()
        self._record_start(host, node, context, decision)
        self.compute.live_migration(
            self.ctxt, self.source, self.uuid, uuid, host, data,
            instance=dict(self.instance, migration_context=context))
        LOG.info('Cast the live migration of %s from %s to %s (%s)',
                 self.uuid, self.source, host, node)

    def _record_start(self, host, node, context, decision):
        """The destination, the migration context (a primitive), the
        decision record and the event's Success, in one transaction.
        """
        named = migration_records.prepare_update(
            self.migration['uuid'], {'dest_compute': host, 'dest_node': node},
            expected_status=migration_obj.ACCEPTED, brief=True)
        placed = instance_records.prepare_update(
            self.uuid, {'migration_context': context},
            expected_task_state=[instance_obj.MIGRATING])
        conductor_host = self.conductor.host

        def write(ctx):
            named(ctx)
            instance_records.apply_or_raise(ctx, placed)
            decision_records.add_and_finish(ctx, self.uuid, 'live-migrate',
                                            decision, host=conductor_host)
        db_api.write(self.database, write, self.ctxt)

    def fail(self, exc, expected):
        """Undo what was held, end the migration and the task."""
        tb = traceback.format_exc()
        if self.claimed_on is not None:
            self.compute.drop_move_claim_at_destination(
                self.ctxt, self.claimed_on, self.migration['uuid'])
        if self.held:
            self._give_back()
        if self.migration is not None:
            _end_migration(self, migration_obj.ERROR if expected
                           else migration_obj.FAILED)
        values = {'task_state': None, 'migration_context': None}
        if not expected:
            values['vm_state'] = instance_obj.ERROR
        try:
            instance_records.add_fault(self.ctxt, self.database, self.uuid,
                                       FAULT_CODE, str(exc), details=tb)
            instance_records.update_instance(
                self.ctxt, self.database, self.uuid, values,
                expected_task_state=[instance_obj.MIGRATING], brief=True)
        except (exception.InstanceNotFound,
                exception.UnexpectedTaskStateError) as gone:
            LOG.info('Instance %s changed during its live migration: %s',
                     self.uuid, gone)
            return
        _event(self, 'finish', 'Error', tb)

    def _give_back(self):
        """The source allocation back to the server; all of it dropped
        when the server was deleted meanwhile.
        """
        placement = self.conductor.placement
        try:
            move_allocations.back_to_instance(
                placement, self.ctxt, self.uuid, self.migration['uuid'],
                self.instance['project_id'], self.instance['user_id'])
        except Exception:
            LOG.exception('Could not give the allocation of migration %s '
                          'back to %s', self.migration['uuid'], self.uuid)
        try:
            current = instance_records.get_instance(self.ctxt,
                                                    self.database, self.uuid)
            gone = current.task_state == instance_obj.DELETING
        except exception.InstanceNotFound:
            gone = True
        if gone:
            LOG.info('Instance %s was deleted during its live migration',
                     self.uuid)
            move_allocations.drop_migration(placement, self.ctxt,
                                            self.migration['uuid'])
            allocations.delete_allocations(placement, self.ctxt, self.uuid)


def flow_for(conductor, ctxt, database, instance, migration):
    """The flow of an existing ``migration`` (a primitive) whose
    conductor is gone, to end it with :meth:`_Flow.fail`: its source
    allocation may be held, its destination (if named) may hold a claim.
    """
    flow = _Flow(conductor, ctxt, LiveMigrate(
        instance_uuid=instance['uuid'], host=migration.get('dest_compute')),
        database, instance)
    flow.migration = migration
    flow.held = True
    flow.claimed_on = migration.get('dest_compute')
    return flow


def _mappings(selection):
    request = allocations.allocation_request(selection) or {}
    mappings = request.get('mappings')
    return mappings if isinstance(mappings, dict) else None


def _check_retries(uuid, attempted):
    """Nova's bound on the destinations tried (the source is the first
    of ``attempted``).

    :raises common.exception.MaxRetriesExceeded: past the bound.
    """
    limit = CONF.migrate_max_retries
    if limit >= 0 and len(attempted) - 1 > limit:
        raise exception.MaxRetriesExceeded(
            reason='Exceeded max scheduling retries %d for instance %s '
                   'during live migration' % (limit, uuid))


def _end_migration(flow, status):
    try:
        migration_records.update_migration(
            flow.ctxt, flow.database, flow.migration['uuid'],
            {'status': status})
    except exception.MigrationNotFound:
        LOG.info('Migration %s is gone', flow.migration['uuid'])


def _event(flow, phase, result=None, tb=None):
    action_events.record(flow.ctxt, flow.database, flow.uuid, EVENT,
                         flow.conductor.host, phase, result, tb)


def _migrating(conductor, ctxt, uuid, sent):
    """(Instance, its cell's Database) of a server to live migrate, or
    None when it is gone or no longer ``migrating``.

    :param sent: the Instance primitive the API wrote ``migrating`` (the
        flow's guarded writes find a delete since), or None to read it.
    """
    if sent is not None:
        instance = instance_obj.Instance.from_primitive(sent)
        cell_uuid, database = conductor.cells.instance_cell(
            ctxt, uuid, hint=instance.cell_uuid)
    else:
        try:
            cell_uuid, database = conductor.cells.instance_cell(ctxt, uuid)
            instance = instance_records.get_instance(ctxt, database, uuid,
                                                     fault=False)
        except exception.InstanceNotFound:
            LOG.info('Instance %s was deleted before its live migration',
                     uuid)
            return None
    if instance.task_state != instance_obj.MIGRATING:
        LOG.info('Instance %s is no longer migrating (task %s); nothing '
                 'to do', uuid, instance.task_state)
        return None
    instance.cell_uuid = cell_uuid
    return instance, database


def live_migrate_instance(conductor, ctxt, request, instance=None):
    """Start the live migration ``request`` asks for.

    :param conductor: the ConductorManager.
    :param request: a :class:`LiveMigrate`.
    :param instance: the Instance primitive as the API wrote it
        ``migrating`` (None: read here).
    :raises: after cleaning up, one of :data:`EXPECTED` (the API's 400
        below 2.34), or common.exception.MigrationError for anything else.
    """
    uuid = request.instance_uuid
    found = _migrating(conductor, ctxt, uuid, instance)
    if found is None:
        return
    instance, database = found
    flow = _Flow(conductor, ctxt, request, database, instance.to_primitive())
    try:
        flow.run()
    except EXPECTED as exc:
        LOG.info('Live migration of %s refused: %s', uuid, exc)
        flow.fail(exc, expected=True)
        raise
    except Exception as exc:
        LOG.exception('Live migration of %s unexpectedly failed', uuid)
        flow.fail(exc, expected=False)
        raise exception.MigrationError(reason=str(exc))
