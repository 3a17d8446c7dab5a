# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Client side of the compute RPC API (topic ``compute``, server=host)."""

import oslo_messaging as messaging

from common import rpc

RPC_TOPIC = 'compute'
# Seconds the API waits for a compute agent's diagnostics.
DIAGNOSTICS_TIMEOUT = 30
# Release name -> the newest version that release's computes understand.
VERSION_ALIASES = {}


def _primitive(value):
    return value.to_primitive() if hasattr(value, 'to_primitive') else value


class ComputeAPI(object):
    """What the conductor and the API call on compute agents.

    Every method is a cast to one host: ``server=host``, so only the agent
    serving that host (a simulated one included) receives it. Each also
    carries ``host``: one agent serves many hosts on one listener, and
    the message says which one it is for.

    NOTE: Berth has not been released yet. Until its first release every
    RPC API stays at 1.0 and changes in place: client and server are
    changed together, no method downgrades for an older peer, and
    ``[upgrade_levels] compute`` has nothing to cap. From the first
    release on, changes are additive minor bumps that older computes are
    capped below (doc/architecture.md, "RPC versions").

    API version history:

    * 1.0 - Initial version: build_and_run_instance, terminate_instance;
      stop_instance, start_instance, reboot_instance, pause_instance,
      unpause_instance, suspend_instance, resume_instance;
      rebuild_instance, snapshot_instance; get_diagnostics; prep_resize,
      resize_instance, finish_resize, confirm_resize, revert_resize,
      finish_revert_resize;
      live migration: check_can_live_migrate_destination,
      check_can_live_migrate_source, pre_live_migration,
      post_live_migration_at_destination (calls),
      drop_move_claim_at_destination, live_migration,
      rollback_live_migration_at_destination, live_migration_abort,
      live_migration_force_complete (casts);
      shelve_instance, shelve_offload_instance, unshelve_instance,
      evacuate_instance; cache_images (a call).
    """

    def __init__(self):
        target = messaging.Target(topic=RPC_TOPIC, version='1.0')
        cap = rpc.version_cap('compute', VERSION_ALIASES)
        self.client = rpc.get_client(target, version_cap=cap)

    def _prepare(self, host):
        """The call context for ``host``."""
        return self.client.prepare(server=host, version='1.0')

    def build_and_run_instance(self, ctxt, host, instance, request_spec,
                               selection, alternates, node=None):
        """Build an instance on ``host`` (cast).

        :param instance: an Instance (or its primitive) whose row is in
            the cell with host and node set, building / scheduling.
        :param request_spec: the RequestSpec (or primitive).
        :param selection: the claimed Selection (or primitive); its
            allocation is already in placement.
        :param alternates: Selections (or primitives) to reschedule to.
        :param node: the node; default the selection's.
        """
        self._prepare(host).cast(
            ctxt, 'build_and_run_instance', instance=_primitive(instance),
            request_spec=_primitive(request_spec),
            selection=_primitive(selection),
            alternates=[_primitive(a) for a in alternates or []],
            host=host, node=node)

    def terminate_instance(self, ctxt, host, instance_uuid):
        """Delete an instance running on ``host`` (cast).

        The agent destroys the guest, releases its claim, deletes its
        placement allocation and has the conductor soft-delete the row.
        """
        self._prepare(host).cast(ctxt, 'terminate_instance',
                                 instance_uuid=instance_uuid, host=host)

    def rebuild_instance(self, ctxt, host, instance_uuid, image_ref,
                         orig_vm_state, preserve_ephemeral=False):
        """Re-create the guest of an instance from ``image_ref`` (cast).

        The instance is ``rebuilding`` with its new image and fields
        already recorded (see services/compute/rebuild.py).

        :param orig_vm_state: the vm_state before the rebuild (a stopped
            server stays stopped, as in Nova).
        """
        self._prepare(host).cast(
            ctxt, 'rebuild_instance', instance_uuid=instance_uuid,
            image_ref=image_ref, orig_vm_state=orig_vm_state,
            preserve_ephemeral=preserve_ephemeral, host=host)

    def snapshot_instance(self, ctxt, host, instance_uuid, image_id):
        """Snapshot an instance into the queued image ``image_id`` (cast).
        """
        self._prepare(host).cast(ctxt, 'snapshot_instance',
                                 instance_uuid=instance_uuid,
                                 image_id=image_id, host=host)

    # --- resize and cold migration (services/compute/resize.py) -----------

    def prep_resize(self, ctxt, host, instance, migration_uuid, flavor,
                    request_spec, selection, alternates, node=None):
        """Claim a moving server's new flavor on the destination ``host``
        (cast); it then asks the source to send the server.

        :param instance: the Instance primitive.
        :param flavor: the Flavor primitive it will have there.
        :param selection: the claimed Selection (or primitive).
        :param alternates: Selections (or primitives) to reschedule to.
        """
        self._prepare(host).cast(
            ctxt, 'prep_resize', instance=_primitive(instance),
            migration_uuid=migration_uuid, flavor=_primitive(flavor),
            request_spec=_primitive(request_spec),
            selection=_primitive(selection),
            alternates=[_primitive(a) for a in alternates or []],
            host=host, node=node)

    def _move_cast(self, ctxt, method, host, instance_uuid, migration_uuid,
                   **kwargs):
        self._prepare(host).cast(ctxt, method, instance_uuid=instance_uuid,
                                 migration_uuid=migration_uuid, host=host,
                                 **kwargs)

    def resize_instance(self, ctxt, host, instance_uuid, migration_uuid,
                        dest_compute):
        """Power off and send the server from its source ``host`` to
        ``dest_compute`` (cast).
        """
        self._move_cast(ctxt, 'resize_instance', host, instance_uuid,
                        migration_uuid, dest_compute=dest_compute)

    def finish_resize(self, ctxt, host, instance_uuid, migration_uuid,
                      instance, migration):
        """Start the moved server on the destination ``host`` (cast).

        :param instance, migration: the Instance and Migration (or
            primitives) as the source's last write read them back.
        """
        self._move_cast(ctxt, 'finish_resize', host, instance_uuid,
                        migration_uuid, instance=_primitive(instance),
                        migration=_primitive(migration))

    def confirm_resize(self, ctxt, host, instance, migration):
        """Remove the confirmed move's old guest on the source and its
        migration consumer's allocation (cast).

        :param instance, migration: the Instance and Migration (or
            primitives) as the API (or the destination's
            ``resize_confirm_window``) claimed them.
        """
        instance, migration = _primitive(instance), _primitive(migration)
        self._move_cast(ctxt, 'confirm_resize', host, instance['uuid'],
                        migration['uuid'], instance=instance,
                        migration=migration)

    def revert_resize(self, ctxt, host, instance_uuid, migration_uuid,
                      reason=None):
        """Remove the guest on the destination ``host`` and hand the server
        back to its source (cast); ``reason``: a failed move rolled back.
        """
        self._move_cast(ctxt, 'revert_resize', host, instance_uuid,
                        migration_uuid, reason=reason)

    def finish_revert_resize(self, ctxt, host, instance_uuid,
                             migration_uuid, reason=None):
        """Start the server again on its source ``host`` with its old
        flavor (cast).
        """
        self._move_cast(ctxt, 'finish_revert_resize', host, instance_uuid,
                        migration_uuid, reason=reason)

    def _power_cast(self, ctxt, method, host, instance_uuid, **kwargs):
        self._prepare(host).cast(ctxt, method, instance_uuid=instance_uuid,
                                 host=host, **kwargs)

    def stop_instance(self, ctxt, host, instance_uuid):
        """Power off the guest of an instance, task ``powering-off`` (cast).
        """
        self._power_cast(ctxt, 'stop_instance', host, instance_uuid)

    def start_instance(self, ctxt, host, instance_uuid):
        """Power on a stopped instance, task ``powering-on`` (cast)."""
        self._power_cast(ctxt, 'start_instance', host, instance_uuid)

    def reboot_instance(self, ctxt, host, instance_uuid, reboot_type):
        """Reboot an instance (cast).

        :param reboot_type: ``SOFT`` or ``HARD``.
        """
        self._power_cast(ctxt, 'reboot_instance', host, instance_uuid,
                         reboot_type=reboot_type)

    def pause_instance(self, ctxt, host, instance_uuid):
        """Pause an instance, task ``pausing`` (cast)."""
        self._power_cast(ctxt, 'pause_instance', host, instance_uuid)

    def unpause_instance(self, ctxt, host, instance_uuid):
        """Unpause a paused instance, task ``unpausing`` (cast)."""
        self._power_cast(ctxt, 'unpause_instance', host, instance_uuid)

    def suspend_instance(self, ctxt, host, instance_uuid):
        """Suspend an instance, task ``suspending`` (cast)."""
        self._power_cast(ctxt, 'suspend_instance', host, instance_uuid)

    def resume_instance(self, ctxt, host, instance_uuid):
        """Resume a suspended instance, task ``resuming`` (cast)."""
        self._power_cast(ctxt, 'resume_instance', host, instance_uuid)

    # --- moves: shelve, unshelve, evacuate (casts) ---------------------------

    def shelve_instance(self, ctxt, host, instance_uuid):
        """Shelve an instance, task ``shelving`` (cast); the agent
        offloads it too when its ``shelved_offload_time`` is 0.
        """
        self._power_cast(ctxt, 'shelve_instance', host, instance_uuid)

    def shelve_offload_instance(self, ctxt, host, instance_uuid):
        """Offload a SHELVED instance, task ``shelving_offloading``
        (cast): guest destroyed, allocation deleted, host cleared.
        """
        self._power_cast(ctxt, 'shelve_offload_instance', host,
                         instance_uuid)

    def unshelve_instance(self, ctxt, host, instance_uuid, request_spec,
                          selection, node=None):
        """Spawn an offloaded instance on ``host`` (cast); the conductor
        has claimed it in placement and written host and node.

        :param request_spec: the unshelve's RequestSpec (or primitive).
        :param selection: the claimed Selection (or primitive).
        """
        self._prepare(host).cast(
            ctxt, 'unshelve_instance', instance_uuid=instance_uuid,
            request_spec=_primitive(request_spec),
            selection=_primitive(selection), host=host, node=node)

    def evacuate_instance(self, ctxt, host, instance_uuid, migration_uuid,
                          request_spec, selection, node=None,
                          target_state=None):
        """Re-create an evacuated instance on ``host`` (cast); the
        destination is claimed for the instance, the source allocation is
        the migration's.

        :param target_state: ``stopped`` (2.95) or None (ACTIVE).
        """
        self._prepare(host).cast(
            ctxt, 'evacuate_instance', instance_uuid=instance_uuid,
            migration_uuid=migration_uuid,
            request_spec=_primitive(request_spec),
            selection=_primitive(selection), host=host, node=node,
            target_state=target_state)

    def get_diagnostics(self, ctxt, host, instance_uuid):
        """The diagnostics of a guest on ``host`` (a call, at most
        DIAGNOSTICS_TIMEOUT seconds).

        :returns: ``{'diagnostics': dict}`` (Nova's 2.48 shape), or
            ``{'error': 'not-found' | 'not-implemented'}``.
        :raises oslo_messaging.MessagingTimeout: the agent did not answer.
        """
        cctxt = self.client.prepare(server=host, version='1.0',
                                    timeout=DIAGNOSTICS_TIMEOUT)
        return cctxt.call(ctxt, 'get_diagnostics',
                          instance_uuid=instance_uuid, host=host)

    def cache_images(self, ctxt, host, image_ids):
        """Have ``host`` cache ``image_ids`` (a call, up to
        ``long_rpc_timeout``: an image download may take long).

        :returns: {image id: ``cached``, ``existing``, ``unsupported`` or
            ``error``}.
        :raises oslo_messaging.MessagingTimeout: the agent did not answer.
        """
        return self._long_call(host).call(ctxt, 'cache_images',
                                          image_ids=list(image_ids),
                                          host=host)

    # --- live migration (services/compute/live_migration.py) -------------

    def _long_call(self, host):
        """A call context for a check that may take long: up to
        ``long_rpc_timeout``, a dead agent noticed within
        ``rpc_response_timeout``.
        """
        return self.client.prepare(server=host, version='1.0',
                                   **rpc.long_call_options())

    def check_can_live_migrate_destination(self, ctxt, host, instance,
                                           migration, request_spec, limits,
                                           mappings, block_migration):
        """Check and claim ``host`` as the destination (a call).

        :param instance: the Instance (or primitive).
        :param migration: the Migration (or primitive), dest_node set.
        :param request_spec: the RequestSpec (or primitive) of the move.
        :param limits, mappings: the scheduler's selection's.
        :param block_migration: True, False or None (``auto``).
        :returns: the migrate data dict.
        :raises common.exception.MigrationPreCheckError: refused.
        :raises oslo_messaging.MessagingTimeout: no answer in time.
        """
        return self._long_call(host).call(
            ctxt, 'check_can_live_migrate_destination',
            instance=_primitive(instance), migration=_primitive(migration),
            request_spec=_primitive(request_spec), limits=limits,
            mappings=mappings, block_migration=block_migration, host=host)

    def check_can_live_migrate_source(self, ctxt, host, instance_uuid):
        """Check the guest can leave ``host`` (a call).

        :raises common.exception.MigrationPreCheckError: it cannot.
        """
        return self._long_call(host).call(
            ctxt, 'check_can_live_migrate_source',
            instance_uuid=instance_uuid, host=host)

    def drop_move_claim_at_destination(self, ctxt, host, migration_uuid):
        """Release a pre-check's claim on ``host`` (cast)."""
        self._prepare(host).cast(ctxt, 'drop_move_claim_at_destination',
                                 migration_uuid=migration_uuid, host=host)

    def live_migration(self, ctxt, host, instance_uuid, migration_uuid,
                       dest, migrate_data, instance=None):
        """Live migrate an instance from ``host`` to ``dest`` (cast).

        :param instance: the Instance (or primitive) as the conductor
            wrote it, so that the source need not read it back; None: the
            source reads it.
        """
        self._prepare(host).cast(
            ctxt, 'live_migration', instance_uuid=instance_uuid,
            migration_uuid=migration_uuid, dest=dest,
            migrate_data=migrate_data, host=host,
            instance=None if instance is None else _primitive(instance))

    def pre_live_migration(self, ctxt, host, instance_uuid,
                           migration_uuid):
        """Prepare ``host`` to receive the guest (a call)."""
        return self._long_call(host).call(
            ctxt, 'pre_live_migration', instance_uuid=instance_uuid,
            migration_uuid=migration_uuid, host=host)

    def post_live_migration_at_destination(self, ctxt, host, instance_uuid,
                                           migration_uuid, migrate_data):
        """The instance now runs on ``host`` (a call).

        :returns: the updated Instance primitive.
        """
        return self._long_call(host).call(
            ctxt, 'post_live_migration_at_destination',
            instance_uuid=instance_uuid, migration_uuid=migration_uuid,
            migrate_data=migrate_data, host=host)

    def rollback_live_migration_at_destination(self, ctxt, host,
                                               instance_uuid,
                                               migration_uuid):
        """Drop what ``host`` held for a rolled back migration (cast)."""
        self._prepare(host).cast(
            ctxt, 'rollback_live_migration_at_destination',
            instance_uuid=instance_uuid, migration_uuid=migration_uuid,
            host=host)

    def live_migration_abort(self, ctxt, host, instance_uuid,
                             migration_uuid):
        """Abort a live migration from ``host`` (cast)."""
        self._prepare(host).cast(ctxt, 'live_migration_abort',
                                 instance_uuid=instance_uuid,
                                 migration_uuid=migration_uuid, host=host)

    def live_migration_force_complete(self, ctxt, host, instance_uuid,
                                      migration_uuid):
        """Have a live migration from ``host`` finish now (cast)."""
        self._prepare(host).cast(ctxt, 'live_migration_force_complete',
                                 instance_uuid=instance_uuid,
                                 migration_uuid=migration_uuid, host=host)
