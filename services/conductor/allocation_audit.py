# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Compare placement allocations with the instances of every cell.

Three kinds of finding (doc/behaviours.md B1, B13: usage is placement's,
so a leaked allocation is a leaked host):

* **orphaned**: a consumer holds allocations but is no live instance in
  any cell, no build request and no move in progress (a server deleted
  while its host was down, a crash between two steps, a move that ended
  without dropping its migration consumer's allocation);
* **missing**: a live instance on a host holds no allocation at all;
* **mismatched**: a live instance's allocation is not on its compute
  node, or not what its flavor asks for.

Instances with a task or a move in progress, or changed within the grace
period, are left out of the last two: builds, reschedules, moves and
deletes move their allocations themselves. Build requests are read
before instances, because the build flow creates the instance before it
deletes the build request; read the other way round, a server could slip
between the two reads and look orphaned.

Repair deletes orphaned allocations and writes the flavor's resources on
the instance's compute node for the other two. The conductor runs this
every ``[audit] allocation_audit_interval`` seconds; ``berth-manage
placement audit`` runs the orphan part on demand.
"""

import concurrent.futures
import dataclasses
import datetime
import logging

from oslo_utils import timeutils

from common.db import boot_records
from common.db import compute_records
from common.db import instance_records
from common.db import migration_records
from common.objects import image as image_obj
from common.objects import instance as instance_obj
from common.objects import migration as migration_obj
from common.objects import request_spec as spec_obj
from common.placement import microversions
from common.placement import query as placement_query
from common.placement import resources as placement_resources
from services.conductor import allocations

LOG = logging.getLogger(__name__)

PROVIDERS_VERSION = microversions.PROVIDER_LISTING
STANDARD_CLASSES = ('VCPU', 'PCPU', 'MEMORY_MB', 'DISK_GB')
# Instances in these states hold no allocation: never placed, or gone.
_UNALLOCATED_STATES = (instance_obj.ERROR, instance_obj.DELETED,
                       'shelved_offloaded')
# NOTE: provider allocation reads run a few at a time, so that a large
# cloud's audit is not one long serial walk, nor a burst on placement.
READ_THREADS = 4


@dataclasses.dataclass
class Finding(object):
    """One allocation problem.

    :ivar kind: ``orphaned``, ``missing`` or ``mismatched``.
    :ivar have: provider uuid -> resources the consumer holds.
    :ivar want: provider uuid -> resources it should hold ({} for an
        orphan).
    """

    kind: str
    consumer: str
    have: dict
    want: dict
    reason: str
    project_id: str = None
    user_id: str = None
    host: str = None
    repaired: bool = False
    error: str = None


@dataclasses.dataclass
class AuditReport(object):
    """What one audit run looked at and found."""

    providers: int = 0
    allocations: int = 0
    instances: int = 0
    findings: list = dataclasses.field(default_factory=list)

    def of_kind(self, kind):
        """The findings of one kind."""
        return [f for f in self.findings if f.kind == kind]

    def summary(self):
        """e.g. ``120 providers, 900 allocations, 898 instances: 2
        orphaned, 0 missing, 0 mismatched``.
        """
        return ('%d providers, %d allocations, %d instances: %d orphaned, '
                '%d missing, %d mismatched' % (
                    self.providers, self.allocations, self.instances,
                    len(self.of_kind('orphaned')),
                    len(self.of_kind('missing')),
                    len(self.of_kind('mismatched'))))


# --- what an instance should hold --------------------------------------------

def expected_resources(instance):
    """Resource class -> amount the instance's flavor asks of its node.

    The scheduler's own rules (dedicated CPUs as PCPU, ``resources:*``
    overrides) decide, so the audit never disagrees with a claim.
    """
    props = instance.image_meta or {}
    if isinstance(props.get('properties'), dict):
        props = props['properties']
    spec = spec_obj.RequestSpec(
        flavor=instance.flavor, image=image_obj.ImageMeta(properties=props),
        project_id=instance.project_id, user_id=instance.user_id)
    query = placement_query.PlacementQuery()
    placement_resources.flavor_resources(spec, query)
    wanted = {}
    for group in query.groups.values():
        for rc, amount in group.resources.items():
            wanted[rc] = wanted.get(rc, 0) + amount
    return wanted


def _totals(held):
    totals = {}
    for resources in held.values():
        for rc, amount in resources.items():
            totals[rc] = totals.get(rc, 0) + amount
    return totals


def resources_match(held, wanted):
    """True when the held totals are what the flavor asks.

    Classes the flavor does not name (ports, accelerators) are left alone
    unless they are standard ones.
    """
    totals = _totals(held)
    for rc, amount in wanted.items():
        if totals.get(rc, 0) != amount:
            return False
    return not any(rc in STANDARD_CLASSES and rc not in wanted
                   for rc in totals)


# --- reading placement and the cells -----------------------------------------

def list_providers(placement, ctxt):
    """Every resource provider: dicts with uuid, name, root uuid.

    :raises common.placement.client.PlacementUnavailable: placement down.
    :raises allocations.ClaimFailed: an unexpected answer.
    """
    resp = placement.list_providers(ctxt, version=PROVIDERS_VERSION)
    if not resp.ok:
        raise allocations.ClaimFailed('GET /resource_providers answered '
                                      '%d: %s' % (resp.status,
                                                  resp.error_detail()))
    return resp.body['resource_providers']


def provider_allocations(placement, ctxt, providers=None, progress=None):
    """(provider uuid -> root uuid, consumer -> {provider: resources}).

    :param providers: the provider dicts to read (default: all).
    :param progress: ``progress()`` after each provider is read.
    :raises common.placement.client.PlacementUnavailable: placement down.
    :raises allocations.ClaimFailed: an unexpected answer.
    """
    if providers is None:
        providers = list_providers(placement, ctxt)
    roots = {rp['uuid']: rp.get('root_provider_uuid') or rp['uuid']
             for rp in providers}

    def read(rp_uuid):
        answer = placement.get_provider_allocations(
            ctxt, rp_uuid, version=PROVIDERS_VERSION)
        if answer.status == 404:
            return rp_uuid, {}
        if not answer.ok:
            raise allocations.ClaimFailed(
                'GET allocations of %s answered %d' % (rp_uuid,
                                                       answer.status))
        return rp_uuid, answer.body.get('allocations', {})

    by_consumer = {}
    with concurrent.futures.ThreadPoolExecutor(READ_THREADS) as pool:
        for rp_uuid, found in pool.map(read, sorted(roots)):
            if progress is not None:
                progress()
            for consumer, alloc in found.items():
                by_consumer.setdefault(consumer, {})[rp_uuid] = dict(
                    alloc['resources'])
    return roots, by_consumer


def live_instances(ctxt, cell_access):
    """(uuid -> Instance, (host, node) -> compute node uuid) of every cell
    that holds hosts, disabled ones included.
    """
    instances = {}
    nodes = {}
    for cell in cell_access.cells(ctxt):
        if cell.is_cell0:
            continue
        database = cell_access.database(cell)
        for node in compute_records.list_compute_nodes(ctxt, database):
            nodes[(node['host'], node['hypervisor_hostname'])] = \
                node['uuid']
        for instance in instance_records.list_instances(ctxt, database):
            instance.cell_uuid = cell.uuid
            instances[instance.uuid] = instance
    return instances, nodes


def _host_cells(ctxt, cell_access):
    return [cell_access.database(cell) for cell in cell_access.cells(ctxt)
            if not cell.is_cell0]


def find_migrations(ctxt, cell_access, consumers):
    """uuid -> Migration of the ``consumers`` that are migrations (the
    consumers of a move's source allocation), in any cell.
    """
    found = {}
    for database in _host_cells(ctxt, cell_access):
        found.update(migration_records.get_migrations(ctxt, database,
                                                      consumers))
    return found


def moving_instances(ctxt, cell_access):
    """The uuids of the instances of every cell with a move in progress.
    """
    moving = set()
    for database in _host_cells(ctxt, cell_access):
        moving |= migration_records.instances_moving(ctxt, database)
    return moving


def _orphan_reason(migration, instances):
    """Why a consumer that is no instance nor build request is orphaned,
    or None for the consumer of a move in progress (it holds the source).
    """
    if migration is None:
        return 'no live instance, build request or migration'
    if (migration.migration_type == migration_obj.EVACUATION and
            migration.status == migration_obj.DONE and
            migration.instance_uuid in instances):
        # NOTE: the source of an evacuation is down: its allocation stays
        # until that host's agent starts again and removes it.
        return None
    if migration.status in migration_obj.ENDED:
        return 'migration of instance %s ended (%s)' % (
            migration.instance_uuid, migration.status)
    if migration.instance_uuid not in instances:
        # NOTE: a move cannot go on once its server is deleted: what its
        # migration holds is left over from the delete.
        return 'migration of deleted instance %s' % migration.instance_uuid
    return None


def find_orphans(ctxt, cell_access, by_consumer):
    """Orphaned-allocation Findings among ``by_consumer``.

    A consumer is orphaned when it is no live instance, no build request
    and no migration in progress (of a live instance): the migration
    consumer of a move holds the source host until the move ends.

    :param by_consumer: consumer -> {provider: resources}.
    :returns: (findings, uuid -> live Instance, (host, node) -> compute
        node uuid); the last two as :func:`live_instances` gives them.
    """
    # NOTE: build requests first, then instances, then migrations (a
    # migration row is written before its consumer's allocation, and
    # after its instance); see the module docstring.
    building = set(boot_records.get_build_requests(
        ctxt, list(by_consumer), database=cell_access.api))
    instances, nodes = live_instances(ctxt, cell_access)
    candidates = [consumer for consumer in sorted(by_consumer)
                  if consumer not in building and consumer not in instances]
    migrations = find_migrations(ctxt, cell_access, candidates)
    findings = []
    for consumer in candidates:
        reason = _orphan_reason(migrations.get(consumer), instances)
        if reason is not None:
            findings.append(Finding(kind='orphaned', consumer=consumer,
                                    have=by_consumer[consumer], want={},
                                    reason=reason))
    return findings, instances, nodes


def _settled(instance, grace, now):
    """True when nothing is moving the instance's allocations now."""
    if instance.task_state is not None:
        return False
    changed = instance.updated_at or instance.created_at
    if not changed:
        return True
    when = timeutils.normalize_time(timeutils.parse_isotime(changed))
    return now - when >= datetime.timedelta(seconds=grace)


def _classify_instance(instance, held, nodes):
    """A missing/mismatched Finding for a settled instance, or None."""
    if not instance.host or not instance.node or \
            instance.vm_state in _UNALLOCATED_STATES:
        return None
    node_uuid = nodes.get((instance.host, instance.node))
    if node_uuid is None:
        return None
    want = {node_uuid: expected_resources(instance)}
    common = dict(consumer=instance.uuid, have=held or {}, want=want,
                  project_id=instance.project_id, user_id=instance.user_id,
                  host=instance.host)
    if not held:
        return Finding(kind='missing', reason='instance on %s holds no '
                       'allocation' % instance.host, **common)
    if not resources_match(held, want[node_uuid]):
        return Finding(kind='mismatched', reason='allocation %s is not '
                       'the flavor\'s %s' % (_totals(held), want[node_uuid]),
                       **common)
    return None


def audit(ctxt, cell_access, placement, repair=False, grace=300,
          status=None, orphans_only=False):
    """Find (and with ``repair``, fix) allocation problems.

    :param status: ``status(message)`` per finding; default: the log.
    :param orphans_only: skip the missing and mismatched checks.
    :returns: an :class:`AuditReport`.
    """
    status = status or LOG.warning
    report = AuditReport()
    roots, by_consumer = provider_allocations(placement, ctxt)
    report.providers = len(roots)
    report.allocations = sum(len(v) for v in by_consumer.values())
    orphans, instances, nodes = find_orphans(ctxt, cell_access,
                                             by_consumer)
    report.instances = len(instances)
    report.findings.extend(orphans)
    if not orphans_only:
        now = timeutils.utcnow()
        # NOTE: a moving server's allocations are the move's to change (a
        # resize waiting for its confirmation has no task state).
        moving = moving_instances(ctxt, cell_access)
        for uuid, instance in sorted(instances.items()):
            if uuid not in moving and _settled(instance, grace, now):
                finding = _classify_instance(instance,
                                             by_consumer.get(uuid), nodes)
                if finding is not None:
                    report.findings.append(finding)
    for finding in report.findings:
        status('%s allocation of consumer %s: %s (holds %s)' % (
            finding.kind.capitalize(), finding.consumer, finding.reason,
            finding.have))
        if repair:
            fix(ctxt, placement, finding)
    return report


def fix(ctxt, placement, finding):
    """Repair one finding; sets ``repaired`` or ``error`` on it."""
    try:
        if finding.kind == 'orphaned':
            finding.repaired = allocations.delete_allocations(
                placement, ctxt, finding.consumer)
            return finding.repaired
        _current, generation = allocations.get_allocations(
            placement, ctxt, finding.consumer)
        allocations.put_allocations(
            placement, ctxt, finding.consumer, finding.want,
            finding.project_id, finding.user_id,
            consumer_generation=generation)
        finding.repaired = True
        LOG.info('Wrote allocation %s for instance %s', finding.want,
                 finding.consumer)
    except Exception as exc:
        finding.error = str(exc)
        LOG.warning('Could not repair the %s allocation of %s: %s',
                    finding.kind, finding.consumer, exc)
    return finding.repaired
