# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server actions: resize, confirmResize, revertResize and migrate.

``resize`` (a new flavor) and ``migrate`` (the same flavor, elsewhere;
admin; a target ``host`` from 2.56) are one move to the conductor, as in
Nova (doc/behaviours.md, "resize and cold migration"). The API checks the
policy, the lock, the state (ACTIVE or SHUTOFF with no task), the flavor
(400 unknown, the same one, a smaller disk), the quota (403 for the
cores and RAM an upsize adds) and a target host (400 unknown, the
source, or disabled or forced down), computes the new flavor's NUMA
request and PCI requests exactly as a boot does, then in one write
checks that the server's own compute service is up (409 ``Service is
unavailable at this time.`` otherwise, nothing written, as Nova's),
records the action and task ``resize_prep`` and
*calls* the conductor, which schedules the move: a refusal of the
scheduler comes back as Nova's 400 "No valid host was found", the server
back as it was. 202 once the destination is chosen.

``confirmResize`` (204) and ``revertResize`` (202) need a server in
VERIFY_RESIZE (vm_state ``resized``, 409 otherwise) with a ``finished``
migration (400 "Instance has not been resized." otherwise); the
migration moves to ``confirming`` / ``reverting`` under a guard, so of
two racing requests one gets the 400; the source compute finishes a
confirm, the destination a revert (both cast by the API, as in Nova). A
confirm whose source compute service is down is a 409, nothing
written (as Nova: the confirm could not be asked again once the
migration left ``finished``).
"""

import logging

import oslo_messaging as messaging

from common.db import api as db_api
from common.db import boot_records
from common.db import compute_records
from common.db import instance_records
from common.db import migration_records
from common import exception
from common.objects import image as image_obj
from common.objects import instance as inst
from common.objects import migration as migration_obj
from services.api.actions import checks
from services.api import boot
from services.api import cell_hosts
from services.api import deletion
from services.api import errors
from services.api import quota
from services.api.records import flavors as flavor_records
from services.api.schemas import server_actions as schemas
from services.api import util

LOG = logging.getLogger(__name__)

RESIZE_POLICY = 'os_compute_api:servers:resize'
CONFIRM_POLICY = 'os_compute_api:servers:confirm_resize'
REVERT_POLICY = 'os_compute_api:servers:revert_resize'
MIGRATE_POLICY = 'os_compute_api:os-migrate-server:migrate'
MIGRATE_HOST_POLICY = 'os_compute_api:os-migrate-server:migrate:host'
MIGRATE_HOST_VERSION = (2, 56)
# NOTE: Nova's check_instance_state of resize and migrate.
VM_STATES = (inst.ACTIVE, inst.STOPPED)

NOT_RESIZED = 'Instance has not been resized.'
NO_FLAVOR = 'Unable to locate requested flavor.'
SAME_FLAVOR = 'Resize requires a flavor change.'
DISK_DOWN = ('Server disk was unable to be resized because: Unable to '
             'resize disk down.')
ZERO_DISK = ('Server disk was unable to be resized because: Resize to '
             'zero disk flavor is not allowed.')
SAME_HOST = 'Cannot migrate to the host where the server exists.'
SERVICE_UNAVAILABLE = 'Service is unavailable at this time.'


class _ComputeDown(Exception):
    """The compute that would take the move, or end a confirm, is down
    (the transaction that found it is rolled back).
    """


def _up(ctx, host):
    """True when ``host``'s compute service (read in ``ctx``) is up.

    NOTE: read by the write it guards (one transaction, no read of its
    own), as Nova's ``check_instance_host(check_is_up=True)`` and its
    confirm's check of the source: a service forced down or silent for
    ``service_down_time`` could not take the move.
    """
    service = compute_records.select_service(
        ctx, host=host, binary=cell_hosts.COMPUTE_BINARY)
    return service is not None and cell_hosts.is_up(service)


def _new_flavor(ctxt, flavor_ref, instance):
    """The flavor record a resize asks for.

    :raises errors.BadRequest: unknown, disabled or not shared with the
        project (Nova answers all three alike), the current flavor, or a
        smaller root disk.
    """
    flavorid = str(flavor_ref).rstrip('/').rsplit('/', 1)[-1]
    try:
        flavor = flavor_records.get_flavor(ctxt, flavorid)
    except flavor_records.FlavorNotFound:
        raise errors.BadRequest(NO_FLAVOR)
    current = instance.flavor
    if flavor['flavorid'] == current.flavorid:
        raise errors.BadRequest(SAME_FLAVOR)
    if flavor['disabled'] or (
            not flavor['is_public'] and not ctxt.is_admin and
            instance.project_id not in flavor['projects']):
        raise errors.BadRequest(NO_FLAVOR)
    if flavor['root_gb'] == 0 and current.root_gb:
        raise errors.BadRequest(ZERO_DISK)
    if flavor['root_gb'] < (current.root_gb or 0):
        raise errors.BadRequest(DISK_DOWN)
    return flavor


def _check_quota(ctxt, conf, instance, flavor):
    """403 when the cores or RAM an upsize adds are over the project's
    limits (a downsize is always allowed, as in Nova).
    """
    deltas = {'cores': flavor['vcpus'] - (instance.flavor.vcpus or 0),
              'ram': flavor['memory_mb'] - (instance.flavor.memory_mb or 0)}
    deltas = {name: delta for name, delta in deltas.items() if delta > 0}
    if not deltas or conf.quota.driver == 'noop':
        return
    limits = quota.limits(ctxt, conf, instance.project_id)
    if all(limits[name] < 0 for name in deltas):
        return
    used = quota.usage(ctxt, instance.project_id, groups=False)
    for name, delta in sorted(deltas.items()):
        if 0 <= limits[name] < used[name] + delta:
            raise errors.Forbidden(str(quota.QuotaExceeded(
                overs=name, req=delta, used=used[name],
                allowed=limits[name])))


def _requests(conf, instance, flavor):
    """(NUMA request primitive or None, PCI requests) of the new flavor
    with the server's image, computed as at boot (400 when impossible).
    """
    image = image_obj.ImageMeta(id=instance.image_ref,
                                properties=dict(instance.image_meta or {}))
    numa = boot.numa_for_boot(flavor, image)
    return numa, boot.pci_for_boot(conf, flavor)


def _target_host(ctxt, instance, host):
    """Check a migrate's target host (2.56).

    NOTE: the scheduler would refuse a disabled or forced-down target as
    well; refusing it here writes no migration and no action for a
    request that cannot succeed.

    :raises errors.BadRequest: no compute service on it, it is the
        server's own host (Nova's messages), or its service is disabled
        or forced down.
    """
    if host == instance.host:
        raise errors.BadRequest(SAME_HOST)
    service = cell_hosts.compute_service(ctxt, host)
    if service is None:
        raise errors.BadRequest('Compute host %s could not be found.' % host)
    if service.get('disabled'):
        raise errors.BadRequest(str(exception.NoValidHost(
            reason='the compute service of %s is disabled: %s' % (
                host, service.get('disabled_reason') or 'no reason given'))))
    if service.get('forced_down'):
        raise errors.BadRequest(str(exception.NoValidHost(
            reason='the compute service of %s is forced down' % host)))


def _undo(ctxt, cell, instance):
    """Clear ``resize_prep`` when the conductor could not be told."""
    try:
        instance_records.update_instance(
            ctxt, cell_hosts.database(cell), instance.uuid,
            {'task_state': None,
             'system_metadata': dict(instance.system_metadata or {})},
            expected_task_state=[inst.RESIZE_PREP], brief=True)
    except Exception:
        LOG.exception('Could not undo the move of %s', instance.uuid)


def _move(req, instance, cell, action, flavor=None, host=None):
    """Begin ``action`` (resize or migrate) and have the conductor
    schedule it; 202.

    :raises errors.BadRequest: the scheduler found no host.
    :raises errors.ServiceUnavailable: the conductor could not be told
        (the server is put back as it was).
    """
    ctxt = util.context(req)
    conf = util.conf(req)
    numa, pci, new_flavor = False, None, None
    if flavor is not None:
        numa, pci = _requests(conf, instance, flavor)
        new_flavor = flavor_records.to_object(flavor).to_primitive()
    if not instance.host:
        raise errors.Conflict('Instance %s is not ready' % instance.uuid)
    system_metadata = dict(instance.system_metadata or {},
                           **{inst.OLD_VM_STATE: instance.vm_state})
    values = {'task_state': inst.RESIZE_PREP,
              'system_metadata': system_metadata}

    def first(ctx):
        if not _up(ctx, instance.host):
            raise _ComputeDown()
    try:
        checks.begin(req, instance, cell, action, action, values,
                     first=first, brief=True)
    except _ComputeDown:
        raise errors.Conflict(SERVICE_UNAVAILABLE)
    written = checks.as_written(instance, cell, values)
    try:
        boot.conductor_api().migrate_server(
            ctxt, instance_uuid=instance.uuid, flavor=new_flavor, host=host,
            numa_topology=numa, pci_requests=pci, instance=written)
    except exception.NoValidHost as exc:
        # NOTE: the conductor has put the server back and recorded the
        # fault; the caller learns it here, as Nova's API answers it.
        raise errors.BadRequest(exc.message)
    except messaging.MessagingTimeout:
        # NOTE: the conductor holds the request and ends it either way;
        # the server's state tells how.
        LOG.warning('The conductor did not answer in time for the %s of '
                    '%s; it goes on in the background', action,
                    instance.uuid)
    except Exception as exc:
        _undo(ctxt, cell, instance)
        LOG.exception('Could not start the %s of %s', action, instance.uuid)
        raise errors.ServiceUnavailable(
            'The %s of %s could not be started: %s'
            % (action, instance.uuid, exc))
    return util.no_content(202)


def resize(req, value):
    """``resize`` {flavorRef}: see the module doc.

    :raises errors.BadRequest: a bad body or flavor, an impossible NUMA
        or PCI request, or no valid host.
    :raises errors.Forbidden: policy, or over quota.
    :raises errors.Conflict: locked, or in a state Nova does not resize.
    """
    util.validate({'resize': value}, schemas.RESIZE)
    instance, cell = checks.find(req, RESIZE_POLICY)
    ctxt = util.context(req)
    checks.check_locked(ctxt, instance)
    checks.check_state(instance, 'resize', VM_STATES)
    flavor = _new_flavor(ctxt, value['flavorRef'], instance)
    _check_quota(ctxt, util.conf(req), instance, flavor)
    return _move(req, instance, cell, 'resize', flavor=flavor)


def migrate(req, value):
    """``migrate`` (admin), with ``host`` from 2.56: see the module doc.

    :raises errors.BadRequest: a bad body, an unknown target host, the
        server's own or one whose compute service is disabled or forced
        down, or no valid host.
    """
    with_host = util.at_least(req, MIGRATE_HOST_VERSION)
    util.validate({'migrate': value},
                  schemas.MIGRATE_V256 if with_host else schemas.MIGRATE)
    # NOTE: below 2.56 the body is not read (Nova's): a host named there
    # is ignored.
    host = (value or {}).get('host') if with_host else None
    instance, cell = checks.find(req, MIGRATE_POLICY)
    ctxt = util.context(req)
    if host is not None:
        checks.find(req, MIGRATE_HOST_POLICY)
    checks.check_locked(ctxt, instance)
    checks.check_state(instance, 'migrate', VM_STATES)
    if host is not None:
        _target_host(ctxt, instance, host)
    return _move(req, instance, cell, 'migrate', host=host)


#: the migration types a confirm or revert ends.
CONFIRMABLE_TYPES = (migration_obj.RESIZE, migration_obj.MIGRATION)


def _begin_end(req, instance, cell, key, status, values,
               source_up=False):
    """Claim the server's finished resize or migration (moved to
    ``status``) and begin action ``key`` with the instance's ``values``,
    in one transaction: 400 when it has no finished migration (never
    resized, or another confirm or revert won), 409 when the task state
    moved or (``source_up``) the migration's source compute service is
    down; either way nothing is written.

    :returns: the claimed Migration.
    """
    claim = migration_records.claim_finished(instance.uuid, CONFIRMABLE_TYPES,
                                             status)
    claimed = []

    def first(ctx):
        migration = claim(ctx)
        if source_up and not _up(ctx, migration.source_compute):
            raise _ComputeDown()
        # NOTE: the last one: a transaction may run again (a deadlock).
        claimed.append(migration)
    try:
        checks.begin(req, instance, cell, key, key, values, first=first,
                     brief=True)
    except (exception.UnexpectedMigrationStatusError,
            exception.MigrationNotFound):
        raise errors.BadRequest(NOT_RESIZED)
    except _ComputeDown:
        raise errors.Conflict(SERVICE_UNAVAILABLE)
    return claimed[-1]


def _unclaim(ctxt, cell, instance, migration, status, values):
    """Put the migration (and the instance) back when the conductor
    could not be told.
    """
    try:
        migration_records.update_migration(
            ctxt, cell_hosts.database(cell), migration.uuid,
            {'status': migration_obj.FINISHED}, expected_status=status)
        if values:
            instance_records.update_instance(
                ctxt, cell_hosts.database(cell), instance.uuid, values,
                brief=True)
    except Exception:
        LOG.exception('Could not undo the %s of %s', status, instance.uuid)


def _send_end(ctxt, cell, rpc, instance, migration):
    """Cast the confirm or revert of the claimed ``migration`` straight
    to the compute that ends it, as in Nova: a confirm to the source
    (it drops the migration consumer's allocation and the old guest; a
    resize's new flavor has been in the stored request spec since it
    was scheduled), a revert to the destination (it gives the source
    allocation back and hands the server to its source), after which
    a resize's stored spec gets its old flavor back.
    """
    computes = deletion.compute_api(cell)
    if rpc == 'confirm_resize':
        computes.confirm_resize(ctxt, migration.source_compute, instance,
                                migration)
        return
    computes.revert_resize(ctxt, migration.dest_compute, instance.uuid,
                           migration.uuid)
    if migration.migration_type == migration_obj.RESIZE:
        _old_flavor_back(ctxt, instance, migration)


def _old_flavor_back(ctxt, instance, migration):
    """The stored spec of a reverted resize takes the old flavor back
    (after the cast: no other move can start before the revert ends); a
    failure is logged.
    """
    try:
        boot_records.keep_spec_flavor(
            ctxt, instance.uuid, migration.old_flavor, instance.image_meta,
            migration_obj.pci_requests_before(instance.migration_context,
                                              instance.pci_requests))
    except Exception:
        LOG.exception('Could not give the request spec of %s its old '
                      'flavor back', instance.uuid)


def _end_resize(req, value, key, policy, method, status, values, rpc,
                answer, source_up=False):
    util.validate({key: value}, getattr(schemas, method))
    instance, cell = checks.find(req, policy)
    ctxt = util.context(req)
    checks.check_locked(ctxt, instance)
    checks.check_state(instance, key, (inst.RESIZED,))
    migration = _begin_end(req, instance, cell, key, status, values,
                           source_up=source_up)
    try:
        _send_end(ctxt, cell, rpc, instance, migration)
    except Exception as exc:
        _unclaim(ctxt, cell, instance, migration, status,
                 {'task_state': None} if values else {})
        LOG.exception('Could not cast the %s of %s', key, instance.uuid)
        raise errors.ServiceUnavailable('The %s of %s could not be started: '
                                        '%s' % (key, instance.uuid, exc))
    return util.no_content(answer)


def confirm_resize(req, value):
    """``confirmResize``: 204; the source's guest and allocation go."""
    return _end_resize(req, value, 'confirmResize', CONFIRM_POLICY,
                       'CONFIRM_RESIZE', migration_obj.CONFIRMING, {},
                       'confirm_resize', 204, source_up=True)


def revert_resize(req, value):
    """``revertResize``: 202; the server goes back to its source with
    its old flavor.
    """
    return _end_resize(req, value, 'revertResize', REVERT_POLICY,
                       'REVERT_RESIZE', migration_obj.REVERTING,
                       {'task_state': inst.RESIZE_REVERTING},
                       'revert_resize', 202)


def confirm_before_delete(ctxt, instance, cell):
    """Confirm the finished move of a server being deleted, as Nova does,
    so that its source's guest and allocation go with it.

    Best effort: a failure is logged, the delete goes on.
    """
    if instance.vm_state != inst.RESIZED or cell is None:
        return
    claim = migration_records.claim_finished(
        instance.uuid, CONFIRMABLE_TYPES, migration_obj.CONFIRMING)
    try:
        migration = db_api.write(cell_hosts.database(cell), claim, ctxt)
        deletion.compute_api(cell).confirm_resize(
            ctxt, migration.source_compute, instance, migration)
    except (exception.UnexpectedMigrationStatusError,
            exception.MigrationNotFound):
        LOG.info('Deleted server %s has no finished migration to confirm',
                 instance.uuid)
    except Exception:
        LOG.exception('Could not confirm the move of %s before deleting it',
                      instance.uuid)


ACTIONS = {'resize': resize, 'migrate': migrate,
           'confirmResize': confirm_resize, 'revertResize': revert_resize}
