# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server side of the conductor RPC API: thin, the work is in workflows.

The manager holds what the workflows share (the cells, placement, the
scheduler and compute clients, the notifier), turns RPC payloads into
objects and hands each request to its module:

* ``schedule_and_build_instances`` -> :mod:`.build_flow`
* ``build_instances`` (reschedule) -> :mod:`.reschedule`
* ``rebuild_instance`` -> :mod:`.rebuild_flow`
* ``migrate_server`` (resize, cold migration), ``migrate_reschedule``,
  ``revert_resize`` (a failed step's rollback) -> :mod:`.migrate_flow`
* ``live_migrate_instance`` -> :mod:`.live_migrate_flow`
* ``unshelve_instance`` -> :mod:`.unshelve_flow`
* ``evacuate_instance`` -> :mod:`.evacuate_flow`
* ``cache_images`` (image pre-caching on an aggregate) -> :mod:`.image_cache`
* the compute agents' record calls -> :mod:`.record_proxy` (a second
  endpoint of the same API)
* background: host discovery (:mod:`common.db.discovery`, a loop of its
  own), the allocation audit (:mod:`.allocation_audit`) and the bound for
  builds that never reached a compute (:mod:`.unplaced_builds`) and for
  moves that stopped half-way (:mod:`.stuck_moves`) and live
  migrations never cast to one (:mod:`.unstarted_live_migrations`),
  periodic tasks, at the intervals the configuration gives.
"""

import logging
import threading

import oslo_messaging as messaging

from common import cell_rpc
import common.conf
from common import context as berth_context
from common.db import cell_access as cell_access_mod
from common.db import discovery
from common import exception
from common import manager
from common import notifications
from common.objects import instance as instance_obj
from common.objects import request_spec as spec_obj
from common.objects import selection as selection_obj
from common.placement import client as placement_client
from common import rpc
from services.compute import rpcapi as compute_rpcapi
from services.conductor import allocation_audit
from services.conductor import build_flow
from services.conductor import evacuate_flow
from services.conductor import image_cache
from services.conductor import live_migrate_flow
from services.conductor import migrate_flow
from services.conductor import rebuild_flow
from services.conductor import record_proxy
from services.conductor import reschedule
from services.conductor import stuck_moves
from services.conductor import unplaced_builds
from services.conductor import unshelve_flow
from services.conductor import unstarted_live_migrations

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF


def _task_of(method):
    """A fresh function calling ``method``, for the periodic decorator
    to mark (it sets attributes on what it decorates).
    """
    def task(self, ctxt):
        return method(self, ctxt)
    task.__name__ = method.__name__
    return task


def _add_instance_task(mgr, task):
    """Add a periodic ``task`` to the manager ``mgr`` alone.

    NOTE: seam: oslo.service's public ``add_periodic_task`` adds a task to
    the class, for every manager of the process. This uses what it keeps
    privately instead: the class's ``_periodic_tasks`` and
    ``_periodic_spacing`` (copied onto ``mgr`` first), the instance's
    ``_periodic_last_run``, and the decorator's ``_periodic_name``,
    ``_periodic_spacing`` and ``_periodic_last_run`` marks on ``task``.
    Checked against oslo.service 4.8.0; tests/unit/test_library_seams.py
    fails naming this seam when a release changes them.
    """
    if '_periodic_tasks' not in vars(mgr):
        mgr._periodic_tasks = list(type(mgr)._periodic_tasks)
        mgr._periodic_spacing = dict(type(mgr)._periodic_spacing)
    name = task._periodic_name
    mgr._periodic_tasks.append((name, task))
    mgr._periodic_spacing[name] = task._periodic_spacing
    mgr._periodic_last_run[name] = task._periodic_last_run


class ConductorManager(manager.Manager):
    """Build orchestration, the compute agents' records, periodic audits.
    """

    target = messaging.Target(version=record_proxy.RPC_API_VERSION)

    def __init__(self, host=None, scheduler_api=None, compute_clients=None,
                 placement=None, api_database=None, cell_databases=None,
                 notifier=None):
        """
        :param scheduler_api: a SchedulerAPI; made on first use (after
            the RPC transport exists) when not given.
        :param compute_clients: a
            :class:`~common.cell_rpc.CellClients` of compute APIs.
        :param placement: a :class:`common.placement_client.
            PlacementClient`; built from ``[placement]`` by default.
        :param api_database: the api Database (tests); default
            ``[api_database]``.
        :param cell_databases: a cell Database registry (tests); default
            the process-wide one.
        :param notifier: an oslo.messaging Notifier; default the process's
            once RPC is initialized.
        """
        super().__init__(host=host, service_name='conductor')
        self.cells = cell_access_mod.CellAccess(api_database, cell_databases)
        self.placement = placement or placement_client.PlacementClient(CONF)
        self.compute_clients = compute_clients or cell_rpc.CellClients(
            compute_rpcapi.ComputeAPI)
        self.records = record_proxy.RecordProxy(self.cells)
        self._scheduler_api = scheduler_api
        self._notifier = notifier
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._discovery = None
        self._add_configured_tasks()

    # --- shared services of the workflows ------------------------------------

    @property
    def scheduler_api(self):
        """The scheduler client, whose select_destinations may run long.

        NOTE: the conductor waits ``[conductor] schedule_timeout``
        (default ``long_rpc_timeout``) and notices a dead scheduler within
        ``rpc_response_timeout`` through ``call_monitor_timeout``.
        """
        with self._lock:
            if self._scheduler_api is None:
                from services.scheduler import rpcapi as scheduler_rpcapi
                self._scheduler_api = scheduler_rpcapi.SchedulerAPI(
                    select_timeout=CONF.conductor.schedule_timeout)
            return self._scheduler_api

    def _get_notifier(self):
        """The notifier, or None while RPC is not up or no notification
        driver is set (then nothing is built for it).
        """
        if self._notifier is None and rpc.notifications_enabled():
            self._notifier = rpc.get_notifier('conductor.%s' % self.host)
        return self._notifier

    def notify(self, ctxt, event, payload):
        """Emit a versioned notification (dropped when RPC is not up or
        no driver is set).
        """
        notifier = self._get_notifier()
        if notifier is None:
            return
        try:
            if event.endswith('.error'):
                notifier.error(ctxt, event, payload)
            else:
                notifier.info(ctxt, event, payload)
        except Exception:
            LOG.exception('Could not send notification %s', event)

    def notify_create_error(self, ctxt, instance, reason, explanation=None,
                            exception_name='BuildAbortException'):
        """``instance.create.error`` in the versioned payload shape.

        :param instance: the Instance (or primitive, or just
            ``{'uuid': ...}``) that went to ERROR.
        :param reason: the fault's message.
        :param explanation: the scheduler's explanation of a NoValidHost
            (a dict), sent as the fault's ``details`` (Berth's addition
            to Nova's exception payload).
        """
        if self._get_notifier() is None:
            return
        fault = {'exception': exception_name, 'exception_message': reason,
                 'module_name': None, 'function_name': None,
                 'traceback': None, 'details': explanation}
        primitive = (instance.to_primitive()
                     if hasattr(instance, 'to_primitive') else
                     dict(instance))
        primitive.update(vm_state=instance_obj.ERROR, task_state=None)
        self.notify(ctxt, 'instance.create.error',
                    notifications.instance_payload(primitive, fault=fault,
                                                   ctxt=ctxt))

    @property
    def additional_endpoints(self):
        """The record proxy serves the compute agents' calls."""
        return [self.records]

    def cleanup_host(self):
        """Stop discovery; close the cells' own transports."""
        self._stopping.set()
        if self._discovery is not None:
            self._discovery.join(30)
        self.compute_clients.cleanup()

    def reset(self):
        """SIGHUP: re-read cell mappings on next use."""
        self.cells.refresh()

    # --- the build flow ------------------------------------------------------

    def schedule_and_build_instances(self, ctxt, request_spec,
                                     instance_uuids, build_requests):
        """Schedule and build servers; see ConductorAPI.

        :param request_spec: RequestSpec primitive.
        :param instance_uuids: the servers (each with a build request).
        :param build_requests: their build requests' Instance primitives,
            in order.
        """
        spec = spec_obj.RequestSpec.from_primitive(request_spec)
        instances = [instance_obj.Instance.from_primitive(i)
                     for i in build_requests]
        build_flow.schedule_and_build_instances(self, ctxt, spec,
                                                instance_uuids, instances)

    def build_instances(self, ctxt, instance, request_spec, alternates,
                        failed_host, failed_node, reason):
        """Reschedule a failed build onto an alternate; see ConductorAPI.

        :param instance: Instance primitive.
        :param request_spec: RequestSpec primitive.
        :param alternates: Selection primitives.
        """
        reschedule.build_instances(
            self, ctxt, instance_obj.Instance.from_primitive(instance),
            spec_obj.RequestSpec.from_primitive(request_spec),
            [selection_obj.Selection.from_primitive(a)
             for a in alternates or ()],
            failed_host, failed_node, reason)

    def rebuild_instance(self, ctxt, instance_uuid, image_ref,
                         orig_image_ref, orig_vm_state, image_meta,
                         preserve_ephemeral=False, orig_image_meta=None):
        """Re-check the host for a new image, then cast the rebuild; see
        ConductorAPI.rebuild_instance.

        :param image_meta: the new image's ImageMeta primitive.
        """
        rebuild_flow.rebuild_instance(
            self, ctxt, rebuild_flow.Rebuild(
                instance_uuid=instance_uuid, image_ref=image_ref,
                orig_image_ref=orig_image_ref, orig_vm_state=orig_vm_state,
                image_meta=image_meta,
                preserve_ephemeral=preserve_ephemeral,
                orig_image_meta=orig_image_meta or {}))

    # --- resize and cold migration -------------------------------------------

    @messaging.expected_exceptions(exception.NoValidHost,
                                   exception.InstanceNotFound)
    def migrate_server(self, ctxt, instance_uuid, flavor=None, host=None,
                       numa_topology=False, pci_requests=None,
                       instance=None):
        """Schedule a resize or cold migration; see ConductorAPI.

        :param flavor: the new Flavor primitive of a resize, or None.
        :param instance: the Instance primitive as the API wrote it, or
            None.
        :returns: the destination host.
        """
        return migrate_flow.migrate_server(
            self, ctxt, instance_uuid, migrate_flow.flavor_of(flavor), host,
            numa_topology, pci_requests, instance=instance)

    def migrate_reschedule(self, ctxt, instance_uuid, migration_uuid,
                           request_spec, alternates, failed_host, reason):
        """Move a failed destination's move to an alternate; see
        ConductorAPI.
        """
        migrate_flow.migrate_reschedule(
            self, ctxt, instance_uuid, migration_uuid,
            spec_obj.RequestSpec.from_primitive(request_spec),
            [selection_obj.Selection.from_primitive(a)
             for a in alternates or ()], failed_host, reason)

    def revert_resize(self, ctxt, instance_uuid, migration_uuid,
                      reason=None):
        """Roll back a move whose step failed; see ConductorAPI."""
        migrate_flow.revert_resize(self, ctxt, instance_uuid,
                                   migration_uuid, reason)

    # --- live migration ------------------------------------------------------

    @messaging.expected_exceptions(*live_migrate_flow.EXPECTED)
    def live_migrate_instance(self, ctxt, instance_uuid, host=None,
                              block_migration=None, force=False,
                              sync=False, instance=None):
        """Choose, check and start a live migration; see
        ConductorAPI.live_migrate_instance.

        :param sync: the API waits (a call, below 2.34): the failure is
            answered; a cast's is only recorded (fault, event).
        """
        try:
            live_migrate_flow.live_migrate_instance(
                self, ctxt, live_migrate_flow.LiveMigrate(
                    instance_uuid=instance_uuid, host=host,
                    block_migration=block_migration, force=force),
                instance=instance)
        except Exception:
            if sync:
                raise
    # --- moves: unshelve and evacuate ----------------------------------------

    def unshelve_instance(self, ctxt, instance_uuid, zone_given=False,
                          availability_zone=None, host=None):
        """Unshelve a server; see ConductorAPI.unshelve_instance."""
        unshelve_flow.unshelve_instance(self, ctxt, unshelve_flow.Unshelve(
            instance_uuid=instance_uuid, zone_given=zone_given,
            availability_zone=availability_zone, host=host))

    def evacuate_instance(self, ctxt, instance_uuid, migration_uuid,
                          host=None, force=False, target_state=None):
        """Evacuate a server; see ConductorAPI.evacuate_instance."""
        evacuate_flow.evacuate_instance(self, ctxt, evacuate_flow.Evacuate(
            instance_uuid=instance_uuid, migration_uuid=migration_uuid,
            host=host, force=force, target_state=target_state))

    # --- image pre-caching --------------------------------------------------

    def cache_images(self, ctxt, aggregate, image_ids):
        """Pre-cache images on an aggregate's hosts; see
        ConductorAPI.cache_images.
        """
        image_cache.cache_images(self, ctxt, aggregate, image_ids)

    # --- background work -----------------------------------------------------

    def _add_configured_tasks(self):
        """The allocation audit, every ``[audit] allocation_audit_interval``.

        NOTE: ``@periodic_task(spacing=CONF...)`` would read the option at
        import, before the config files are parsed; the task is made here
        instead, on this instance only (oslo.service's own
        add_periodic_task would add it to the class, for every manager of
        the process).
        """
        bound = unplaced_builds.spacing(CONF.conductor.build_request_timeout)
        if bound is not None:
            _add_instance_task(self, manager.periodic_task(
                spacing=bound, name='end_unplaced_builds')(
                    _task_of(ConductorManager._end_unplaced_builds)))
        bound = stuck_moves.spacing(CONF.conductor.move_timeout)
        if bound is not None:
            _add_instance_task(self, manager.periodic_task(
                spacing=bound, name='end_stuck_moves')(
                    _task_of(ConductorManager._end_stuck_moves)))
        bound = unstarted_live_migrations.spacing(
            CONF.live_migration_start_timeout)
        if bound is not None:
            _add_instance_task(self, manager.periodic_task(
                spacing=bound, name='end_unstarted_live_migrations')(
                    _task_of(ConductorManager._end_unstarted_live_migrations)))
        spacing = CONF.audit.allocation_audit_interval
        if spacing is None or spacing < 0:
            LOG.debug('The allocation audit is disabled')
            return
        # NOTE: the first run after one interval, when the builds that
        # were in flight at start have settled.
        _add_instance_task(self, manager.periodic_task(
            spacing=spacing, name='audit_allocations')(
                _task_of(ConductorManager._audit_allocations)))

    def post_start_hook(self):
        """Start host discovery when ``discover_hosts_in_cells_interval``
        asks for it.

        NOTE: a loop of its own rather than a periodic task: periodic tasks
        start after a random ``periodic_fuzzy_delay`` (up to a minute),
        and new compute hosts should not wait that long to be mapped.
        """
        interval = CONF.scheduler.discover_hosts_in_cells_interval
        if interval is None or interval < 0 or not self.cells.has_api:
            return
        self._discovery = threading.Thread(
            target=self._discovery_loop, args=(interval or 60,),
            name='conductor-discover-hosts', daemon=True)
        self._discovery.start()

    def _discovery_loop(self, interval):
        delay = 0
        while not self._stopping.wait(delay):
            self._discover_hosts_in_cells(berth_context.get_admin_context())
            delay = interval

    def _discover_hosts_in_cells(self, ctxt):
        """Map compute hosts that joined since the last run."""
        try:
            found = discovery.discover_hosts(ctxt, self.cells,
                                             status=LOG.debug)
        except Exception as exc:
            LOG.warning('Host discovery failed: %s', exc)
            return
        if found:
            LOG.info('Discovered %d new compute host(s)', len(found))

    def _audit_allocations(self, ctxt):
        """Report (and with ``[audit] allocation_audit_repair``, fix)
        allocations that do not match the instances.
        """
        if not self.cells.has_api:
            return
        report = allocation_audit.audit(
            ctxt or berth_context.get_admin_context(), self.cells,
            self.placement, repair=CONF.audit.allocation_audit_repair,
            grace=CONF.audit.allocation_audit_grace_period)
        LOG.info('Allocation audit: %s', report.summary())

    def _end_stuck_moves(self, ctxt):
        """End moves that stopped half-way (see :mod:`.stuck_moves`)."""
        if self.cells.has_api:
            stuck_moves.run(self, ctxt or berth_context.get_admin_context(),
                            CONF.conductor.move_timeout)

    def _end_unstarted_live_migrations(self, ctxt):
        """End live migrations whose conductor stopped before it cast
        them (see :mod:`.unstarted_live_migrations`).
        """
        unstarted_live_migrations.run(
            self, ctxt or berth_context.get_admin_context(),
            CONF.live_migration_start_timeout)

    def _end_unplaced_builds(self, ctxt):
        """End builds that never reached a compute agent (see
        :mod:`.unplaced_builds`).
        """
        unplaced_builds.run(self, ctxt or berth_context.get_admin_context(),
                            CONF.conductor.build_request_timeout)
