# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage placement audit`` and ``placement sync_aggregates``.

    placement audit [--verbose] [--delete] [--resource_provider UUID]
                    [--stuck_after SECONDS]

Finds allocations whose consumer is no live instance, no build request
and no move in progress (doc/behaviours.md B1: a server deleted while its
host was down; a migration consumer whose migration ended, or whose
server was deleted) and, with ``--delete``, removes them. It also
reports the servers stuck in a task state (or still a build request) for
more than ``--stuck_after`` seconds (default an hour), with the
allocations they hold: those are not deleted (delete the server). Exit
codes: 0 none found, 3 found, 4 found and all deleted, 127 invalid input.

    placement sync_aggregates [--verbose]

Adds every compute node provider to the placement aggregates of its
host's host aggregates (it never removes any). Exit codes: 0 done, 3 a
provider's aggregates could not be updated, 4 hosts without host mapping,
5 hosts without compute node, 6 nodes without resource provider.

Messages are nova-manage's.
"""

import logging

from oslo_utils import timeutils
import sqlalchemy as sa

from common import context
from common.db import api_tables
from common.db import boot_records
from common.db import cell_access as cell_access_mod
from common.db import cells
from common.db import compute_records
from common.objects import instance as instance_obj
from common.placement import client as placement_client
from common.placement import microversions
from services.conductor import allocation_audit
from services.conductor import allocations
from services.manage import output

LOG = logging.getLogger(__name__)

AGGREGATES_VERSION = microversions.AGGREGATES
# NOTE: a compute agent's update can move the generation between our read
# and write; a few tries ride that out.
CONFLICT_RETRIES = 3
# NOTE: an hour: longer than any build or delete takes, and what the
# conductor's build-request bound defaults to.
STUCK_AFTER = 3600


def _quiet(_message):
    pass


def _api(conf):
    """The api Database (a function, so that tests can give their own)."""
    return cells.configure_api(conf)


def _placement(conf):
    """The placement client (a function, for the same reason)."""
    return placement_client.PlacementClient(conf)


def _read_allocations(placement, ctxt, providers, args, say):
    """consumer -> {provider uuid: resources} of every allocation
    against ``providers``, with a progress line per provider read.
    """
    for provider in providers:
        say('Processing allocations for Resource Provider %s (%s)'
            % (provider.get('name'), provider['uuid']))
    with output.progress(args, 'audit: providers read',
                         len(providers)) as progress:
        _roots, by_consumer = allocation_audit.provider_allocations(
            placement, ctxt, providers, progress=progress.step)
    return by_consumer


def _report_orphans(placement, ctxt, orphans, delete, say):
    """Print each orphan's allocations and, with ``delete``, delete them.

    :returns: how many consumers' allocations were deleted.
    """
    deleted = 0
    for finding in orphans:
        say('Consumer %s: %s' % (finding.consumer, finding.reason))
        if delete and allocations.delete_allocations(
                placement, ctxt, finding.consumer):
            deleted += 1
            template = ('Deleted allocations for consumer UUID %s on '
                        'Resource Provider %s: %s')
        else:
            template = ('Allocations for consumer UUID %s on Resource '
                        'Provider %s can be deleted: %s')
        for rp_uuid, resources in sorted(finding.have.items()):
            print(template % (finding.consumer, rp_uuid, resources))
    return deleted


def _audit_exit_code(orphans, stuck, delete, deleted):
    """0 nothing found, 4 every orphan deleted and no stuck server, else
    3 (see the module docstring).
    """
    if not orphans and not stuck:
        return 0
    return 4 if delete and deleted == len(orphans) and not stuck else 3


def audit(conf):
    """The audit command; see the module docstring."""
    args = conf.category
    say = print if args.verbose else _quiet
    if stuck_after(args) < 0:
        print('--stuck_after must be 0 or more seconds.')
        return 127
    ctxt = context.get_admin_context()
    placement = _placement(conf)
    cell_access = cell_access_mod.CellAccess(_api(conf))
    providers = allocation_audit.list_providers(placement, ctxt)
    if args.resource_provider:
        providers = [p for p in providers
                     if p['uuid'] == args.resource_provider]
        if not providers:
            print('Resource Provider with UUID %s does not exist.'
                  % args.resource_provider)
            return 127
    by_consumer = _read_allocations(placement, ctxt, providers, args, say)
    orphans, instances, _nodes = allocation_audit.find_orphans(
        ctxt, cell_access, by_consumer)
    stuck = report_stuck(ctxt, cell_access, instances, by_consumer,
                         stuck_after(args))
    deleted = _report_orphans(placement, ctxt, orphans, args.delete, say)
    print('Processed %d allocations.'
          % sum(len(v) for v in by_consumer.values()))
    return _audit_exit_code(orphans, stuck, args.delete, deleted)


# --- servers stuck in a task state ------------------------------------------

def stuck_after(args):
    """The ``--stuck_after`` bound in seconds (default
    :data:`STUCK_AFTER`).
    """
    value = getattr(args, 'stuck_after', None)
    return STUCK_AFTER if value is None else value


def _since(stamp, now):
    """Seconds from an ISO time to ``now``, or None."""
    if not stamp:
        return None
    when = timeutils.normalize_time(timeutils.parse_isotime(stamp))
    return (now - when).total_seconds()


def find_stuck(ctxt, cell_access, instances, bound, now=None):
    """Servers stuck in a task state for more than ``bound`` seconds.

    A live instance counts when it has a task state, or is still
    building, and has not changed for ``bound`` seconds; a build request
    counts when it was written ``bound`` seconds ago and is still not
    scheduled. Cell0 holds only failed builds, which have no task.

    :param instances: uuid -> live Instance of the cells
        (:func:`allocation_audit.live_instances`).
    :returns: [(uuid, state, host or None, seconds)], oldest first;
        ``state`` is ``task_state (vm_state)``, or ``build request``.
    """
    now = now or timeutils.utcnow()
    found = []
    for uuid, instance in instances.items():
        if instance.task_state is None and (
                instance.vm_state != instance_obj.BUILDING):
            continue
        age = _since(instance.updated_at or instance.created_at, now)
        if age is not None and age > bound:
            found.append((uuid, '%s (%s)' % (instance.task_state,
                                             instance.vm_state),
                          instance.host, age))
    for request in boot_records.list_build_requests(
            ctxt, database=cell_access.api):
        age = _since(request.created_at, now)
        if age is not None and age > bound:
            found.append((request.uuid, 'build request', None, age))
    return sorted(found, key=lambda item: -item[3])


def report_stuck(ctxt, cell_access, instances, by_consumer, bound):
    """Print each stuck server with the allocations it holds.

    :param by_consumer: consumer -> {provider: resources}.
    :returns: the stuck servers (:func:`find_stuck`).
    """
    stuck = find_stuck(ctxt, cell_access, instances, bound)
    for uuid, state, host, age in stuck:
        print('Server %s has been in task state %s on host %s for %d '
              'seconds; it holds allocations %s' % (
                  uuid, state, host or '(none)', age,
                  by_consumer.get(uuid) or '{}'))
    return stuck


# --- sync_aggregates ---------------------------------------------------------

def _aggregates(ctx):
    t = api_tables
    found = {}
    for row in ctx.session.execute(sa.select(
            t.aggregates.c.id, t.aggregates.c.uuid,
            t.aggregates.c.name).order_by(t.aggregates.c.id)):
        found[row.id] = {'uuid': row.uuid, 'name': row.name, 'hosts': []}
    for row in ctx.session.execute(sa.select(
            t.aggregate_hosts.c.aggregate_id, t.aggregate_hosts.c.host)
            .order_by(t.aggregate_hosts.c.host)):
        if row.aggregate_id in found:
            found[row.aggregate_id]['hosts'].append(row.host)
    return list(found.values())


def _add_to_aggregate(placement, ctxt, rp_uuid, agg_uuid):
    """True when ``rp_uuid`` is (now) in the aggregate; None: no provider.
    """
    def attempt():
        resp = placement.get_provider_aggregates(ctxt, rp_uuid,
                                                 version=AGGREGATES_VERSION)
        if resp.status == 404:
            return None
        if not resp.ok:
            return False
        current = resp.body['aggregates']
        if agg_uuid in current:
            return True
        put = placement.put_provider_aggregates(
            ctxt, rp_uuid, resp.body['resource_provider_generation'],
            sorted(set(current) | {agg_uuid}), version=AGGREGATES_VERSION)
        # NOTE: a 409 is the provider changing meanwhile (its compute
        # reported): the next attempt reads its generation again.
        return put if put.status == 409 else put.ok

    return placement_client.retry_conflicts_or_warn(
        attempt, CONFLICT_RETRIES, 'aggregates of provider %s' % rp_uuid, LOG)


def _print_missing(missing):
    messages = {
        4: ('The following hosts were found in host aggregates but no host '
            'mappings were found in the api database. Run "berth-manage '
            'cell_v2 discover_hosts" and then retry. Missing: %s'),
        5: ('Unable to find matching compute_nodes record entries in the '
            'cell database for the following hosts; does the berth-compute '
            'service on each host need to be restarted? Missing: %s'),
        6: ('Unable to find matching resource provider record in placement '
            'with uuid for the following hosts: %s. Try restarting the '
            'berth-compute service on each host and then retry.'),
        3: 'Failed updating provider aggregates in placement for: %s',
    }
    for code in (3, 4, 5, 6):
        if missing[code]:
            print(messages[code] % ','.join(sorted(set(missing[code]))))


def sync_aggregates(conf):
    """The sync_aggregates command; see the module docstring."""
    args = conf.category
    say = print if args.verbose else _quiet
    ctxt = context.get_admin_context()
    placement = _placement(conf)
    api = _api(conf)
    cell_access = cell_access_mod.CellAccess(api)
    aggregates = api.reader(_aggregates)(ctxt)
    hosts = sorted({h for agg in aggregates for h in agg['hosts']})
    host_cells = {}
    if hosts:
        host_cells = boot_records.get_host_mappings(ctxt, hosts,
                                                    database=api)
    missing = {3: [], 4: [], 5: [], 6: []}
    progress = output.progress(args, 'sync_aggregates hosts',
                               sum(len(a['hosts']) for a in aggregates))
    for agg in aggregates:
        say('Processing aggregate: %s (uuid: %s)' % (agg['name'],
                                                     agg['uuid']))
        for host in agg['hosts']:
            progress.step()
            cell_uuid = host_cells.get(host)
            if cell_uuid is None:
                missing[4].append(host)
                continue
            nodes = compute_records.list_compute_nodes(
                ctxt, cell_access.database(cell_uuid), host=host)
            if not nodes:
                missing[5].append(host)
            for node in nodes:
                done = _add_to_aggregate(placement, ctxt, node['uuid'],
                                         agg['uuid'])
                if done is None:
                    missing[6].append(host)
                elif not done:
                    missing[3].append(host)
                else:
                    say('Resource provider %s of host %s is in aggregate '
                        '%s.' % (node['uuid'], host, agg['uuid']))
    progress.finish()
    _print_missing(missing)
    for code in (3, 4, 5, 6):
        if missing[code]:
            return code
    return 0
