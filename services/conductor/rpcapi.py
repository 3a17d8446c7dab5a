# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Client side of the conductor RPC API.

Two families of methods, on two topics:

* the build flow on ``conductor``, cast by the API and by compute agents:
  ``schedule_and_build_instances`` and ``build_instances`` (reschedule);
* the record proxy on ``conductor_records``, called by compute agents,
  which have no database credentials: service records and heartbeats,
  compute node records, instance records, faults and action events.

NOTE: each topic has its own RPC server, hence its own thread pool, in
every conductor worker. A build flow holds its thread while the
scheduler decides; under a burst of boots every thread of a shared pool
waited on the scheduler, and the computes' record calls and heartbeats
queued behind them until they timed out (builds failed, hosts looked
down).

Arguments may be domain objects or their primitives; what crosses the wire
is always the primitive. Answers are primitives (dicts), as the contract
between the services says; callers rebuild objects with
``from_primitive`` where they want them.
"""

import oslo_messaging as messaging

import common.conf
from common import exception
from common import rpc

RPC_TOPIC = 'conductor'
RECORDS_TOPIC = 'conductor_records'
# NOTE: ``changed_since`` asking for every row: a time before any row.
SINCE_EVER = '1970-01-01T00:00:00'
# Release name -> the newest version that release's conductors understand.
VERSION_ALIASES = {}


def update_error_primitive(uuid, exc):
    """What ``instance_updates`` and ``move_updates`` answer for an
    update of instance ``uuid`` that met ``exc``.
    """
    if isinstance(exc, exception.InstanceNotFound):
        return {'error': 'InstanceNotFound', 'uuid': uuid}
    if isinstance(exc, exception.UnexpectedTaskStateError):
        return {'error': 'UnexpectedTaskStateError', 'uuid': uuid,
                'expected': exc.kwargs.get('expected'),
                'actual': exc.kwargs.get('actual')}
    if isinstance(exc, exception.MigrationNotFound):
        return {'error': 'MigrationNotFound',
                'migration': exc.kwargs.get('migration_id')}
    if isinstance(exc, exception.UnexpectedMigrationStatusError):
        return {'error': 'UnexpectedMigrationStatusError',
                'migration': exc.kwargs.get('migration_id'),
                'expected': exc.kwargs.get('expected'),
                'actual': exc.kwargs.get('actual')}
    return {'error': 'ValueError', 'uuid': uuid, 'message': str(exc)}


def _update_error(answer):
    """The exception of an ``instance_updates`` or ``move_updates``
    answer (see :func:`update_error_primitive`).
    """
    error = answer.get('error')
    if error == 'InstanceNotFound':
        return exception.InstanceNotFound(instance_id=answer['uuid'])
    if error == 'UnexpectedTaskStateError':
        return exception.UnexpectedTaskStateError(
            instance_uuid=answer['uuid'], expected=answer.get('expected'),
            actual=answer.get('actual'))
    if error == 'MigrationNotFound':
        return exception.MigrationNotFound(migration_id=answer['migration'])
    if error == 'UnexpectedMigrationStatusError':
        return exception.UnexpectedMigrationStatusError(
            migration_id=answer['migration'],
            expected=answer.get('expected'), actual=answer.get('actual'))
    return ValueError(answer.get('message') or 'invalid update')


def _primitive(value):
    """``value.to_primitive()`` for a domain object; a primitive as is."""
    to_primitive = getattr(value, 'to_primitive', None)
    return to_primitive() if to_primitive is not None else value


class ConductorAPI(object):
    """What the API and the compute agents call on the conductors.

    NOTE: Berth has not been released yet. Until its first release every
    RPC API stays at 1.0 and changes in place: client and server are
    changed together, no method downgrades for an older peer, and
    ``[upgrade_levels] conductor`` has nothing to cap. From the first
    release on, changes are additive minor bumps that older conductors are
    capped below (doc/architecture.md, "RPC versions").

    API version history:

    * 1.0 - Initial version: schedule_and_build_instances (with the
      build requests' instances), build_instances, service_join,
      service_report, service_report_many, service_get,
      compute_node_save (optionally brief), compute_nodes_save,
      compute_nodes_get_by_host, compute_node_delete,
      instances_get_by_host (optionally changed_since),
      instances_sync_hosts, instance_get, instance_update (optionally
      with an action event, optionally brief), instance_updates,
      instance_destroy,
      instance_fault_create, action_event_start, action_event_finish,
      rebuild_instance (cast), image_snapshot_done and
      image_snapshot_abandoned (record calls); migrate_server (call),
      migrate_reschedule, revert_resize (casts);
      live_migrate_instance (a cast, or a call below compute API 2.34).
      Record calls go to topic ``conductor_records``.
      Moves: unshelve_instance, evacuate_instance (casts),
      migrations_get_by_source, migration_get, migration_update
      (optionally brief), move_get, move_update (optionally brief) and
      move_updates (record calls: a compute's step of a move in one
      transaction, several steps in one call), move_claim_expired (the
      automatic confirm's claim and action, one record call).
      cache_images (cast).
    """

    def __init__(self):
        target = messaging.Target(topic=RPC_TOPIC, version='1.0')
        cap = rpc.version_cap('conductor', VERSION_ALIASES)
        self.client = rpc.get_client(target, version_cap=cap)

    # --- build flow (casts) --------------------------------------------------

    def schedule_and_build_instances(self, ctxt, request_spec,
                                     instance_uuids, build_requests):
        """Schedule and build servers the API recorded as build requests.

        :param request_spec: the RequestSpec (or its primitive) of the
            whole request; ``num_instances`` is ``len(instance_uuids)``.
        :param instance_uuids: the servers, each with its build request,
            request spec and cell-less instance mapping already written.
        :param build_requests: the Instances (or primitives) those build
            requests hold, in the same order, so that the conductor need
            not read them back.
        """
        cctxt = self.client.prepare(version='1.0')
        cctxt.cast(ctxt, 'schedule_and_build_instances',
                   request_spec=_primitive(request_spec),
                   instance_uuids=list(instance_uuids),
                   build_requests=[_primitive(i) for i in build_requests])

    def build_instances(self, ctxt, instance, request_spec, alternates,
                        failed_host, failed_node, reason):
        """Reschedule a build that failed on a compute host.

        The compute has already removed its placement allocation. The
        conductor claims the next alternate and casts the build there, or
        puts the instance in ERROR when none is left.

        :param instance: the Instance (or primitive).
        :param request_spec: the RequestSpec (or primitive).
        :param alternates: the remaining Selections (or primitives), all
            in the instance's cell.
        :param reason: why the build failed, for the fault.
        """
        cctxt = self.client.prepare(version='1.0')
        cctxt.cast(ctxt, 'build_instances', instance=_primitive(instance),
                   request_spec=_primitive(request_spec),
                   alternates=[_primitive(a) for a in alternates or ()],
                   failed_host=failed_host, failed_node=failed_node,
                   reason=reason)

    def rebuild_instance(self, ctxt, instance_uuid, image_ref,
                         orig_image_ref, orig_vm_state, image_meta,
                         preserve_ephemeral=False, orig_image_meta=None):
        """Rebuild a server the API marked ``rebuilding`` (cast).

        A new image re-checks the server's host with the scheduler
        filters marked ``RUN_ON_REBUILD`` first (see
        services/conductor/rebuild_flow.py).

        :param image_meta: the new image's ImageMeta (or primitive).
        :param orig_image_meta: the image properties before the rebuild,
            restored when the host no longer fits.
        """
        cctxt = self.client.prepare(version='1.0')
        cctxt.cast(ctxt, 'rebuild_instance', instance_uuid=instance_uuid,
                   image_ref=image_ref, orig_image_ref=orig_image_ref,
                   orig_vm_state=orig_vm_state,
                   image_meta=_primitive(image_meta),
                   preserve_ephemeral=preserve_ephemeral,
                   orig_image_meta=orig_image_meta or {})

    # --- resize and cold migration (services/conductor/migrate_flow.py) ------

    def migrate_server(self, ctxt, instance_uuid, flavor=None, host=None,
                       numa_topology=False, pci_requests=None,
                       instance=None):
        """Schedule a resize (``flavor``) or cold migration (a call, as
        Nova's: the API learns a NoValidHost; at most ``[conductor]
        schedule_timeout``, default ``long_rpc_timeout``, but a conductor
        that died, or none that took the call, is noticed within
        ``rpc_response_timeout`` through ``call_monitor_timeout``).

        :param flavor: the new Flavor primitive of a resize, None for a
            cold migration.
        :param host: the target host an admin named (2.56), or None.
        :param numa_topology: the new flavor's NUMA request primitive
            (None: none); False keeps the stored one (a migration).
        :param pci_requests: the new flavor's PCI requests, or None.
        :param instance: the Instance (or primitive) as the caller wrote
            it ``resize_prep``, with its ``cell_uuid``, which the conductor
            then need not read; None: it reads it.
        :raises common.exception.NoValidHost: no host fits; the server is
            back as it was, with a fault.
        """
        options = rpc.long_call_options()
        options['timeout'] = (common.conf.CONF.conductor.schedule_timeout or
                              options['timeout'])
        cctxt = self.client.prepare(version='1.0', **options)
        kwargs = dict(instance_uuid=instance_uuid, flavor=flavor, host=host,
                      numa_topology=numa_topology, pci_requests=pci_requests)
        if instance is not None:
            kwargs['instance'] = _primitive(instance)
        return cctxt.call(ctxt, 'migrate_server', **kwargs)

    def migrate_reschedule(self, ctxt, instance_uuid, migration_uuid,
                           request_spec, alternates, failed_host, reason):
        """A destination's prep_resize failed: claim the next alternate
        and prepare there, or end the move (cast, from the compute).

        :param request_spec: the move's RequestSpec primitive.
        :param alternates: the Selection primitives left.
        """
        cctxt = self.client.prepare(version='1.0')
        cctxt.cast(ctxt, 'migrate_reschedule', instance_uuid=instance_uuid,
                   migration_uuid=migration_uuid,
                   request_spec=_primitive(request_spec),
                   alternates=[_primitive(a) for a in alternates or ()],
                   failed_host=failed_host, reason=reason)

    def revert_resize(self, ctxt, instance_uuid, migration_uuid,
                      reason=None):
        """Send a moved server back to its source with its old flavor
        (cast, from a compute): the rollback of a move that failed after
        its destination was prepared, for ``reason``. (A user's revert
        goes from the API to the destination compute.)
        """
        cctxt = self.client.prepare(version='1.0')
        cctxt.cast(ctxt, 'revert_resize', instance_uuid=instance_uuid,
                   migration_uuid=migration_uuid, reason=reason)

    def live_migrate_instance(self, ctxt, instance_uuid, host=None,
                              block_migration=None, force=False,
                              sync=False, instance=None):
        """Live migrate a server the API marked ``migrating``.

        See services/conductor/live_migrate_flow.py.

        :param host: the target host, or None for the scheduler's choice.
        :param block_migration: True, False or None (``auto``).
        :param force: skip the scheduler for ``host``.
        :param sync: wait for the destination to be chosen and checked
            (a call bounded by ``long_rpc_timeout``), as Nova's API does
            below 2.34; otherwise a cast.
        :param instance: the Instance (or primitive) as the caller wrote
            it ``migrating``, with its ``cell_uuid``, which the conductor
            then need not read; None: it reads it.
        :raises common.exception.NoValidHost, MigrationPreCheckError,
            UnableToMigrateToSelf, ComputeServiceUnavailable,
            ComputeHostNotFound, MigrationError: (sync only) it failed.
        """
        kwargs = dict(instance_uuid=instance_uuid, host=host,
                      block_migration=block_migration, force=force,
                      sync=sync)
        if instance is not None:
            kwargs['instance'] = _primitive(instance)
        if sync:
            cctxt = self.client.prepare(version='1.0',
                                        **rpc.long_call_options())
            return cctxt.call(ctxt, 'live_migrate_instance', **kwargs)
        self.client.prepare(version='1.0').cast(
            ctxt, 'live_migrate_instance', **kwargs)

    # --- moves: unshelve and evacuate (casts) --------------------------------

    def unshelve_instance(self, ctxt, instance_uuid, zone_given=False,
                          availability_zone=None, host=None):
        """Unshelve a server the API marked ``unshelving`` (cast).

        :param zone_given: the request named ``availability_zone``
            (2.77); ``availability_zone`` None then unpins the zone (2.91).
        :param host: the host an admin named (2.91), or None.
        """
        cctxt = self.client.prepare(version='1.0')
        cctxt.cast(ctxt, 'unshelve_instance', instance_uuid=instance_uuid,
                   zone_given=bool(zone_given),
                   availability_zone=availability_zone, host=host)

    def evacuate_instance(self, ctxt, instance_uuid, migration_uuid,
                          host=None, force=False, target_state=None):
        """Evacuate a server of a down host (cast); the API has set task
        ``rebuilding`` and created the migration (``accepted``).

        :param host: the destination an admin named, or None.
        :param force: skip the scheduler for ``host`` (2.29..2.67).
        :param target_state: ``stopped`` from 2.95, else None (ACTIVE).
        """
        cctxt = self.client.prepare(version='1.0')
        cctxt.cast(ctxt, 'evacuate_instance', instance_uuid=instance_uuid,
                   migration_uuid=migration_uuid, host=host,
                   force=bool(force), target_state=target_state)

    # --- image pre-caching (cast) --------------------------------------------

    def cache_images(self, ctxt, aggregate, image_ids):
        """Have every host of an aggregate cache images (compute API 2.81;
        the API checked that the images exist).

        :param aggregate: {id, uuid, name, hosts, metadata}.
        :param image_ids: the image ids, each once.
        """
        cctxt = self.client.prepare(version='1.0')
        cctxt.cast(ctxt, 'cache_images', aggregate=dict(aggregate),
                   image_ids=list(image_ids))

    def _records(self):
        """A call context for a record method, on the records topic."""
        return self.client.prepare(topic=RECORDS_TOPIC, version='1.0')

    # --- service records (calls) ---------------------------------------------

    def service_join(self, ctxt, host, binary, topic):
        """Create or fetch the service record of (host, binary).

        :returns: a ServiceRecord primitive.
        """
        return self._records().call(ctxt, 'service_join', host=host,
                                    binary=binary, topic=topic)

    def service_report(self, ctxt, host, binary):
        """One heartbeat of (host, binary).

        :returns: the updated ServiceRecord primitive.
        :raises common.exception.ServiceNotFound: no such record (join
            again).
        """
        return self._records().call(ctxt, 'service_report', host=host,
                                    binary=binary)

    def service_report_many(self, ctxt, hosts, binary):
        """One heartbeat for each of many hosts of one binary, in one call.

        :returns: None. Hosts without a record are logged by the conductor
            and left out.
        """
        return self._records().call(ctxt, 'service_report_many',
                                    hosts=list(hosts), binary=binary)

    def service_get(self, ctxt, host, binary):
        """The ServiceRecord primitive of (host, binary), or None."""
        return self._records().call(ctxt, 'service_get', host=host,
                                    binary=binary)

    # --- compute node records (calls) ----------------------------------------

    def compute_node_save(self, ctxt, host, nodename, values, brief=False):
        """Create or update the compute node (host, nodename).

        :param values: compute_nodes column -> value; JSON columns as
            Python structures; ``uuid`` is used for a new node only.
        :param brief: the caller only needs the node's ``id`` and
            ``uuid``: the conductor does not read the saved row back.
        :returns: the saved record dict (every column; datetimes as ISO
            strings; JSON columns decoded), or ``{'id', 'uuid'}`` when
            ``brief``.
        """
        return self._records().call(ctxt, 'compute_node_save', host=host,
                                    nodename=nodename, values=values,
                                    brief=brief)

    def compute_nodes_save(self, ctxt, nodes):
        """Create or update several compute nodes in one call and one
        transaction, as compute_node_save with ``brief``.

        :param nodes: [{'host', 'nodename', 'values'}].
        :returns: [{'id', 'uuid'}] in the order of ``nodes``.
        """
        return self._records().call(ctxt, 'compute_nodes_save', nodes=nodes)

    def compute_nodes_get_by_host(self, ctxt, host):
        """The live compute node record dicts of ``host``."""
        return self._records().call(ctxt, 'compute_nodes_get_by_host',
                                    host=host)

    def compute_node_delete(self, ctxt, host, nodename):
        """Soft-delete the compute node (host, nodename)."""
        return self._records().call(ctxt, 'compute_node_delete', host=host,
                                    nodename=nodename)

    # --- instance records (calls) --------------------------------------------

    def instances_get_by_host(self, ctxt, host, changed_since=None):
        """The live instances on ``host``.

        :param changed_since: None for a list of Instance primitives. An
            ISO 8601 time (UTC; :data:`SINCE_EVER` for all) for what a
            compute agent needs to keep its copy of the list: a dict with
            ``instances``, the live rows changed since then (only
            ``common.db.host_instances.TRACKED_FIELDS`` and ``deleted``),
            ``uuids``, every live instance on the host, and ``as_of``, the
            conductor's time before it read them (where the next sync
            starts).
        """
        return self._records().call(ctxt, 'instances_get_by_host',
                                    host=host, changed_since=changed_since)

    def instances_sync_hosts(self, ctxt, since_by_host):
        """:meth:`instances_get_by_host` with ``changed_since`` for several
        hosts at once, in one transaction (an agent serving many hosts
        pays one call per periodic update, not one per host).

        :param since_by_host: {host: ISO 8601 time (UTC; :data:`SINCE_EVER`
            for all)}.
        :returns: {host: the sync reply of ``instances_get_by_host``}.
        """
        return self._records().call(ctxt, 'instances_sync_hosts',
                                    since_by_host=dict(since_by_host))

    def migration_get(self, ctxt, instance_uuid, migration_uuid):
        """The Migration primitive of a move of ``instance_uuid``.

        :raises common.exception.MigrationNotFound: there is none.
        """
        return self._records().call(ctxt, 'migration_get',
                                    instance_uuid=instance_uuid,
                                    migration_uuid=migration_uuid)

    def migration_update(self, ctxt, instance_uuid, migration_uuid, values,
                         expected_status=None, brief=False):
        """Change fields of a migration; its new primitive (None when
        ``brief``: it is not read back).

        :param expected_status: a status or a list of them; the update
            happens only in one of those.
        :raises common.exception.UnexpectedMigrationStatusError: the
            guard failed.
        """
        return self._records().call(
            ctxt, 'migration_update', instance_uuid=instance_uuid,
            migration_uuid=migration_uuid, values=values,
            expected_status=expected_status, brief=brief)

    def move_get(self, ctxt, instance_uuid, migration_uuid,
                 action_events=None):
        """The instance and the migration of a move, read together.

        :param action_events: events of the instance's latest action to
            record with the read (as ``action_event`` of
            :meth:`instance_update`), e.g. the start of a step.
        :returns: {'instance': Instance primitive, 'migration': Migration
            primitive}.
        :raises common.exception.InstanceNotFound: no live instance.
        :raises common.exception.MigrationNotFound: no such migration.
        """
        return self._records().call(
            ctxt, 'move_get', instance_uuid=instance_uuid,
            migration_uuid=migration_uuid,
            action_events=list(action_events or ()))

    def move_claim_expired(self, ctxt, instance_uuid, migration_uuid):
        """Begin the automatic confirm of a move in VERIFY_RESIZE beyond
        ``[DEFAULT] resize_confirm_window``: its migration ``confirming``
        and the instance's ``confirmResize`` action started, at once; a
        server no longer RESIZED, or gone, gets its migration ``error``
        instead.

        :returns: {'instance': Instance primitive (None when it is gone),
            'migration': Migration primitive}.
        :raises common.exception.UnexpectedTaskStateError: a task is
            under way (left for the next round).
        :raises common.exception.UnexpectedMigrationStatusError: the
            migration is no longer ``finished``.
        :raises common.exception.InstanceNotFound: the instance has no
            cell mapping.
        :raises common.exception.MigrationNotFound: the migration is gone.
        """
        return self._records().call(
            ctxt, 'move_claim_expired', instance_uuid=instance_uuid,
            migration_uuid=migration_uuid)

    def move_update(self, ctxt, instance_uuid, migration_uuid,
                    migration_values=None, expected_status=None,
                    instance_values=None, expected_task_state=None,
                    action_events=None, brief=False):
        """One step of a move in one call and one transaction: the
        migration's fields (guarded by ``expected_status``), the
        instance's (guarded by ``expected_task_state``), then
        ``action_events``; all of it or none.

        :returns: {'instance': the Instance primitive, 'migration': the
            Migration primitive}; with ``brief`` both are None (neither is
            read back).
        :raises: what :meth:`migration_update` and
            :meth:`instance_update` raise.
        """
        return self._records().call(
            ctxt, 'move_update', instance_uuid=instance_uuid,
            migration_uuid=migration_uuid,
            migration_values=migration_values,
            expected_status=expected_status,
            instance_values=instance_values,
            expected_task_state=expected_task_state,
            action_events=list(action_events or ()), brief=brief)

    def move_updates(self, ctxt, updates):
        """Several :meth:`move_update` calls in one.

        :param updates: [{'instance_uuid', 'migration_uuid', and
            optionally 'migration_values', 'expected_status',
            'instance_values', 'expected_task_state', 'action_events',
            'brief'}], each as the arguments of :meth:`move_update`.
        :returns: one entry per update, in order: what
            :meth:`move_update` returns, or the exception it would have
            raised (InstanceNotFound, MigrationNotFound,
            UnexpectedTaskStateError, UnexpectedMigrationStatusError,
            ValueError), rebuilt here and not raised.
        """
        answers = self._records().call(ctxt, 'move_updates',
                                       updates=updates)
        return [_update_error(answer) if 'error' in answer else answer
                for answer in answers]

    def migrations_get_by_source(self, ctxt, host, migration_type,
                                 statuses):
        """Migration primitives of ``migration_type`` from ``host`` in
        one of ``statuses`` (a starting agent's evacuated instances).
        """
        return self._records().call(
            ctxt, 'migrations_get_by_source', host=host,
            migration_type=migration_type, statuses=list(statuses))

    def instance_get(self, ctxt, instance_uuid):
        """The Instance primitive of a live instance.

        :raises common.exception.InstanceNotFound: there is none.
        """
        return self._records().call(ctxt, 'instance_get',
                                    instance_uuid=instance_uuid)

    def instance_update(self, ctxt, instance_uuid, values,
                        expected_task_state=None, action_event=None,
                        brief=False):
        """Change fields of a live instance; see instance_records.

        :param expected_task_state: a task state or a list of them (None
            allowed in it); the update happens only in one of those.
        :param action_event: an event of the instance's latest action,
            recorded with the update in one transaction:
            ``{'phase': 'start', 'event': name, 'host': host}`` or
            ``{'phase': 'finish', 'event': name, 'host': host, 'result':
            'Success' | 'Error', 'traceback': text}``.
        :param brief: the caller does not use the answer: the conductor
            does not read the instance back and answers None.
        :returns: the updated Instance primitive (None when ``brief``).
        :raises common.exception.InstanceNotFound: no live instance.
        :raises common.exception.UnexpectedTaskStateError: the guard
            failed (e.g. the user deleted the server meanwhile).
        """
        return self._records().call(
            ctxt, 'instance_update', instance_uuid=instance_uuid,
            values=values, expected_task_state=expected_task_state,
            action_event=action_event, brief=brief)

    def instance_updates(self, ctxt, updates):
        """Several brief instance_update calls in one.

        :param updates: [{'instance_uuid', 'values', 'expected_task_state'
            (optional), 'action_event' (optional)}], each as the
            arguments of :meth:`instance_update`.
        :returns: one entry per update, in order: None when it happened,
            else the exception instance_update would have raised
            (InstanceNotFound, UnexpectedTaskStateError, ValueError),
            rebuilt here and not raised.
        """
        answers = self._records().call(ctxt, 'instance_updates',
                                       updates=updates)
        return [None if answer is None else _update_error(answer)
                for answer in answers]

    def instance_destroy(self, ctxt, instance_uuid):
        """Soft-delete an instance (its mapping is kept, queued for delete).

        :raises common.exception.InstanceNotFound: no live instance.
        """
        return self._records().call(ctxt, 'instance_destroy',
                                    instance_uuid=instance_uuid)

    def instance_fault_create(self, ctxt, instance_uuid, code, message,
                              details=None, host=None):
        """Record a fault of an instance."""
        return self._records().call(
            ctxt, 'instance_fault_create', instance_uuid=instance_uuid,
            code=code, message=message, details=details, host=host)

    def action_event_start(self, ctxt, instance_uuid, event, host):
        """Start an event under the instance's latest action."""
        return self._records().call(ctxt, 'action_event_start',
                                    instance_uuid=instance_uuid,
                                    event=event, host=host)

    def action_event_finish(self, ctxt, instance_uuid, event, host, result,
                            traceback=None):
        """Finish an event of the instance's latest action.

        :param result: ``Success`` or ``Error``.
        """
        return self._records().call(
            ctxt, 'action_event_finish', instance_uuid=instance_uuid,
            event=event, host=host, result=result, traceback=traceback)

    def image_snapshot_done(self, ctxt, image_id, values=None):
        """Finish a snapshot's image in the api database (call).

        :param values: ``status`` (``active``), ``size`` and ``checksum``;
            None deletes the image (the snapshot failed).
        :returns: True when the image was there to finish.
        """
        return self._records().call(ctxt, 'image_snapshot_done',
                                    image_id=image_id, values=values)

    def image_snapshot_abandoned(self, ctxt, instance_uuid):
        """Delete the queued snapshot images of ``instance_uuid`` (its
        snapshot was interrupted by a compute restart); how many (call).
        """
        return self._records().call(ctxt, 'image_snapshot_abandoned',
                                    instance_uuid=instance_uuid)
