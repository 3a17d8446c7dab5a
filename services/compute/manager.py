# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server side of the compute RPC API: thin, one for the whole agent.

Every host an agent serves shares one RPC server (see
:mod:`common.rpc_hosts`); each message names its host. The work lives in
:mod:`services.compute.build`, :mod:`services.compute.delete`,
:mod:`services.compute.power`, :mod:`services.compute.rebuild`,
:mod:`services.compute.resize`, :mod:`services.compute.snapshot`,
:mod:`services.compute.live_migration`, :mod:`services.compute.shelve`,
:mod:`services.compute.evacuate` and :mod:`services.compute.image_cache`,
the state in the shared agent.
"""

import logging

import oslo_messaging as messaging

from common import exception
from common import manager
from services.compute import build
from services.compute import delete
from services.compute import evacuate
from services.compute import image_cache
from services.compute import live_migration
from services.compute import power
from services.compute import rebuild
from services.compute import resize
from services.compute import shelve
from services.compute import snapshot
from services.compute.virt import driver as virt_driver

LOG = logging.getLogger(__name__)


class UnknownHost(Exception):
    """A message for a host this agent does not serve."""


class ComputeManager(manager.Manager):
    """The compute RPC endpoint of every host of one agent.

    :param agent: the process's ComputeAgent.
    """

    target = messaging.Target(version='1.0')

    def __init__(self, agent):
        super().__init__(host=agent.hosts[0], service_name='compute')
        self.agent = agent

    def init_host(self):
        """Prepare the agent (records, recovery, first update) once."""
        self.agent.start()

    def _served(self, host):
        if host not in self.agent.trackers:
            # NOTE: only a misrouted message gets here; dropping it loudly
            # beats building on a host the scheduler did not pick.
            LOG.error('Dropping a message for host %s, which this agent '
                      '(%s...) does not serve', host, self.host)
            raise UnknownHost(host)
        return host

    def build_and_run_instance(self, ctxt, instance, request_spec, selection,
                               alternates, host, node=None):
        """Claim, spawn and activate an instance; reschedule on failure.

        :param instance: the Instance primitive.
        :param request_spec: the RequestSpec primitive.
        :param selection: the claimed Selection primitive.
        :param alternates: Selection primitives to reschedule to.
        :param host: the host to build on.
        :param node: the node (default the selection's).
        """
        host = self._served(host)
        build.BuildTask(self.agent, ctxt, host, instance, request_spec,
                        selection, alternates, node).run()

    def terminate_instance(self, ctxt, instance_uuid, host):
        """Delete an instance of one of this agent's hosts.

        :param instance_uuid: the instance to delete.
        :param host: its host.
        """
        delete.terminate(self.agent, ctxt, self._served(host),
                         instance_uuid)

    def rebuild_instance(self, ctxt, instance_uuid, image_ref, orig_vm_state,
                         host, preserve_ephemeral=False):
        """Re-create an instance's guest from its (new) image.

        :param orig_vm_state: the vm_state before the rebuild.
        """
        rebuild.rebuild_instance(self.agent, ctxt, self._served(host),
                                 instance_uuid, image_ref, orig_vm_state,
                                 preserve_ephemeral)

    def snapshot_instance(self, ctxt, instance_uuid, image_id, host):
        """Snapshot an instance into the queued image ``image_id``."""
        snapshot.snapshot_instance(self.agent, ctxt, self._served(host),
                                   instance_uuid, image_id)

    # --- resize and cold migration (services/compute/resize.py) ------------

    def prep_resize(self, ctxt, instance, migration_uuid, flavor,
                    request_spec, selection, alternates, host, node=None):
        """Claim a moving server's new flavor here (destination).

        :param instance: the Instance primitive.
        :param flavor: the Flavor primitive it will have here.
        :param request_spec: the move's RequestSpec primitive.
        :param selection: the claimed Selection primitive.
        :param alternates: Selection primitives to reschedule to.
        """
        resize.PrepResize(self.agent, ctxt, self._served(host), instance,
                          migration_uuid, flavor, request_spec, selection,
                          alternates, node).run()

    def resize_instance(self, ctxt, instance_uuid, migration_uuid, host,
                        dest_compute):
        """Power off and send a moving server (source) to
        ``dest_compute``.
        """
        resize.ResizeInstance(self.agent, ctxt, self._served(host),
                              instance_uuid, migration_uuid,
                              dest_compute).run()

    def finish_resize(self, ctxt, instance_uuid, migration_uuid, host,
                      instance, migration):
        """Start a moved server here (destination); VERIFY_RESIZE.

        :param instance, migration: their primitives as the source's
            last write read them back.
        """
        resize.FinishResize(self.agent, ctxt, self._served(host), instance,
                            migration).run()

    def confirm_resize(self, ctxt, instance_uuid, migration_uuid, host,
                       instance, migration):
        """Remove a confirmed move's old guest and free the source of
        its migration consumer's allocation (source).

        :param instance, migration: their primitives as the API (or the
            destination's ``resize_confirm_window``) claimed them.
        """
        resize.ConfirmResize(self.agent, ctxt, self._served(host),
                             instance, migration).run()

    def revert_resize(self, ctxt, instance_uuid, migration_uuid, host,
                      reason=None):
        """Remove a reverted move's new guest (destination)."""
        resize.RevertResize(self.agent, ctxt, self._served(host),
                            instance_uuid, migration_uuid, reason).run()

    def finish_revert_resize(self, ctxt, instance_uuid, migration_uuid,
                             host, reason=None):
        """Start a reverted server again with its old flavor (source)."""
        resize.FinishRevertResize(self.agent, ctxt, self._served(host),
                                  instance_uuid, migration_uuid,
                                  reason).run()

    def stop_instance(self, ctxt, instance_uuid, host):
        """Power off an instance (see :mod:`services.compute.power`)."""
        power.run(self.agent, ctxt, self._served(host), instance_uuid,
                  'stop')

    def start_instance(self, ctxt, instance_uuid, host):
        """Power on a stopped instance."""
        power.run(self.agent, ctxt, self._served(host), instance_uuid,
                  'start')

    def reboot_instance(self, ctxt, instance_uuid, host, reboot_type):
        """Reboot an instance, ``reboot_type`` SOFT or HARD."""
        power.run(self.agent, ctxt, self._served(host), instance_uuid,
                  'reboot', reboot_type=reboot_type)

    def pause_instance(self, ctxt, instance_uuid, host):
        """Pause an instance."""
        power.run(self.agent, ctxt, self._served(host), instance_uuid,
                  'pause')

    def unpause_instance(self, ctxt, instance_uuid, host):
        """Unpause a paused instance."""
        power.run(self.agent, ctxt, self._served(host), instance_uuid,
                  'unpause')

    def suspend_instance(self, ctxt, instance_uuid, host):
        """Suspend an instance."""
        power.run(self.agent, ctxt, self._served(host), instance_uuid,
                  'suspend')

    def resume_instance(self, ctxt, instance_uuid, host):
        """Resume a suspended instance."""
        power.run(self.agent, ctxt, self._served(host), instance_uuid,
                  'resume')

    # --- moves: shelve, unshelve, evacuate ----------------------------------

    def shelve_instance(self, ctxt, instance_uuid, host):
        """Shelve an instance (see :mod:`services.compute.shelve`)."""
        shelve.shelve_instance(self.agent, ctxt, self._served(host),
                               instance_uuid)

    def shelve_offload_instance(self, ctxt, instance_uuid, host):
        """Offload a shelved instance."""
        shelve.shelve_offload_instance(self.agent, ctxt, self._served(host),
                                       instance_uuid)

    def unshelve_instance(self, ctxt, instance_uuid, request_spec,
                          selection, host, node=None):
        """Spawn an offloaded instance here (claimed by the conductor).
        """
        shelve.unshelve_instance(self.agent, ctxt, self._served(host),
                                 instance_uuid, request_spec, selection,
                                 node)

    def evacuate_instance(self, ctxt, instance_uuid, migration_uuid,
                          request_spec, selection, host, node=None,
                          target_state=None):
        """Re-create an evacuated instance here (see
        :mod:`services.compute.evacuate`).
        """
        evacuate.evacuate_instance(self.agent, ctxt, self._served(host),
                                   instance_uuid, migration_uuid,
                                   request_spec, selection, node,
                                   target_state)

    def get_diagnostics(self, ctxt, instance_uuid, host):
        """The driver's diagnostics of a guest of one of this agent's hosts.

        :returns: ``{'diagnostics': dict}``, or ``{'error': 'not-found'}``
            (no such guest) or ``{'error': 'not-implemented'}`` (the
            driver has none): answers, not exceptions, so that the API
            reads them without knowing this service's exceptions.
        """
        host = self._served(host)
        try:
            return {'diagnostics': self.agent.driver.get_diagnostics(
                host, instance_uuid)}
        except virt_driver.GuestNotFound:
            return {'error': 'not-found'}
        except NotImplementedError:
            return {'error': 'not-implemented'}

    def cache_images(self, ctxt, image_ids, host):
        """Cache images on this host ahead of boots (compute API 2.81).

        :returns: {image id: ``cached``, ``existing``, ``unsupported`` or
            ``error``} (see :mod:`services.compute.image_cache`).
        """
        return image_cache.cache_images(self.agent, self._served(host),
                                        image_ids)

    # --- live migration (services/compute/live_migration.py) -------------

    @messaging.expected_exceptions(exception.MigrationPreCheckError)
    def check_can_live_migrate_destination(self, ctxt, instance, migration,
                                           request_spec, limits, mappings,
                                           block_migration, host):
        """Check and claim this host as a live migration's destination.

        :returns: the migrate data (see live_migration).
        :raises common.exception.MigrationPreCheckError: refused.
        """
        return live_migration.check_can_live_migrate_destination(
            self.agent, ctxt, self._served(host), instance, migration,
            request_spec, limits, mappings, block_migration)

    @messaging.expected_exceptions(exception.MigrationPreCheckError)
    def check_can_live_migrate_source(self, ctxt, instance_uuid, host):
        """Check the guest can leave this host (it runs or is paused)."""
        return live_migration.check_can_live_migrate_source(
            self.agent, ctxt, self._served(host), instance_uuid)

    def drop_move_claim_at_destination(self, ctxt, migration_uuid, host):
        """Release the claim of a pre-check the conductor gave up on."""
        live_migration.drop_move_claim_at_destination(
            self.agent, ctxt, self._served(host), migration_uuid)

    def live_migration(self, ctxt, instance_uuid, migration_uuid, dest,
                       migrate_data, host, instance=None):
        """Live migrate an instance of this host to ``dest``."""
        live_migration.live_migration(
            self.agent, ctxt, self._served(host), instance_uuid,
            migration_uuid, dest, migrate_data, instance=instance)

    def pre_live_migration(self, ctxt, instance_uuid, migration_uuid, host):
        """The destination's preparation before the copy."""
        return live_migration.pre_live_migration(
            self.agent, ctxt, self._served(host), instance_uuid,
            migration_uuid)

    def post_live_migration_at_destination(self, ctxt, instance_uuid,
                                           migration_uuid, migrate_data,
                                           host):
        """The copy is done: the instance is this host's from now on."""
        return live_migration.post_live_migration_at_destination(
            self.agent, ctxt, self._served(host), instance_uuid,
            migration_uuid, migrate_data)

    def rollback_live_migration_at_destination(self, ctxt, instance_uuid,
                                               migration_uuid, host):
        """The migration was rolled back: drop the claim here."""
        live_migration.rollback_live_migration_at_destination(
            self.agent, ctxt, self._served(host), instance_uuid,
            migration_uuid)

    def live_migration_abort(self, ctxt, instance_uuid, migration_uuid,
                             host):
        """Abort a live migration running from this host."""
        live_migration.live_migration_abort(
            self.agent, ctxt, self._served(host), instance_uuid,
            migration_uuid)

    def live_migration_force_complete(self, ctxt, instance_uuid,
                                      migration_uuid, host):
        """Have a live migration running from this host finish now."""
        live_migration.live_migration_force_complete(
            self.agent, ctxt, self._served(host), instance_uuid,
            migration_uuid)
