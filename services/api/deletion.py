# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Deleting a server, wherever it is in its life.

* Still a build request: the build request (and its cell-less mapping)
  is deleted; a conductor that was about to build it notices
  (``finish_build_request`` answers False) and cleans up behind itself.
* On a host whose compute service is up: ``task_state`` becomes
  ``deleting``, a ``delete`` action is recorded and the compute agent is
  cast ``terminate_instance``; it destroys the guest, releases its claim
  and allocation and has the conductor soft-delete the row.
* No host (cell0: never scheduled), or a host that is down (heartbeat
  older than ``service_down_time``, or forced down): a local delete. The
  API soft-deletes the row itself and removes the instance's placement
  allocations, so that nothing is left behind for a host that may never
  come back (doc/behaviours.md §local-delete, B1). The compute cleans
  its side when it returns.
"""

import logging
import threading

from common import cell_rpc
from common.db import action_records
from common.db import boot_records
from common.db import instance_records
from common import exception
from common.objects import instance as instance_obj
from services.api import cell_hosts
from services.api import placement_sync
from services.api.records import server_groups as group_records
from services.api import server_lookup
from services.compute import rpcapi as compute_rpcapi

LOG = logging.getLogger(__name__)


def compute_api(cell):
    """The compute RPC client for a cell (a function tests can replace).

    NOTE: the same per-cell registry as the conductor's, so that a cell
    with a message queue of its own is reached on it.
    """
    with _LOCK:
        if 'clients' not in _COMPUTE_CLIENTS:
            _COMPUTE_CLIENTS['clients'] = cell_rpc.CellClients(
                compute_rpcapi.ComputeAPI)
        clients = _COMPUTE_CLIENTS['clients']
    return clients.for_cell(cell)


_COMPUTE_CLIENTS = {}
_LOCK = threading.Lock()


def _delete_build_request(ctxt, instance):
    """True when the server was still a build request and is now gone."""
    if not boot_records.delete_build_request(ctxt, instance.uuid):
        return False
    boot_records.delete_instance_mapping(ctxt, instance.uuid)
    group_records.remove_members(ctxt, [instance.uuid])
    LOG.info('Deleted build request of instance %s before it was '
             'scheduled', instance.uuid)
    return True


def _local_delete(ctxt, conf, instance, cell, reason):
    database = cell_hosts.database(cell)
    LOG.warning('[instance: %s] %s, deleting from database (requested by '
                'user %s of project %s)', instance.uuid, reason,
                ctxt.user_id, ctxt.project_id)
    action_records.record_action(ctxt, database, instance.uuid, 'delete')
    try:
        instance_records.destroy_instance(ctxt, database, instance.uuid)
    except exception.InstanceNotFound:
        return
    boot_records.set_queued_for_delete(ctxt, instance.uuid)
    group_records.remove_members(ctxt, [instance.uuid])
    placement_sync.delete_allocations(ctxt, conf, instance.uuid)


def _remote_delete(ctxt, instance, cell):
    database = cell_hosts.database(cell)
    if instance.task_state == instance_obj.DELETING:
        LOG.info('[instance: %s] already being deleted on %s; asking again',
                 instance.uuid, instance.host)
    else:
        try:
            instance_records.update_instance(
                ctxt, database, instance.uuid,
                {'task_state': instance_obj.DELETING})
        except exception.InstanceNotFound:
            return
        action_records.record_action(ctxt, database, instance.uuid,
                                     'delete')
    group_records.remove_members(ctxt, [instance.uuid])
    compute_api(cell).terminate_instance(ctxt, instance.host, instance.uuid)


def delete(ctxt, conf, instance, cell):
    """Delete ``instance`` (as found by :func:`server_lookup.find`).

    :raises services.api.errors.NotFound: it vanished meanwhile.
    """
    if cell is None:
        if _delete_build_request(ctxt, instance):
            return
        # NOTE: the conductor gave it a cell in the meantime.
        instance, cell = server_lookup.find(ctxt, instance.uuid)
    # NOTE: a server in VERIFY_RESIZE has its move confirmed first, so
    # that the source host's guest and allocation do not stay behind.
    from services.api.actions import resize
    resize.confirm_before_delete(ctxt, instance, cell)
    if cell.is_cell0 or not instance.host:
        return _local_delete(ctxt, conf, instance, cell,
                             'instance has no host')
    service = cell_hosts.compute_service(ctxt, instance.host, cell)
    if service is None or not cell_hosts.is_up(service):
        return _local_delete(ctxt, conf, instance, cell,
                             "instance's host %s is down" % instance.host)
    return _remote_delete(ctxt, instance, cell)
