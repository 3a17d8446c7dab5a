# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""What ``capacity what-if`` reads: the lost hosts and their servers.

Hosts come from ``--lose``, an aggregate's hosts or a zone's (the
default zone: every compute host in no zone aggregate); servers are the
live instances on them in every cell, each with its stored request spec
and its server group's members' current hosts.
"""

import sqlalchemy as sa

from common.db import boot_records
from common.db import cell_access as cell_access_mod
from common.db import cell_tables
from common.db import cells as cells_db
from common.db import group_setup
from common import zones

_IN = cell_tables.instances.c
_CN = cell_tables.compute_nodes.c


def _compute_hosts(ctx):
    return set(ctx.session.execute(sa.select(_CN.host).where(
        _CN.deleted == 0)).scalars())


def _instances_on(ctx, hosts):
    return list(ctx.session.execute(sa.select(
        _IN.uuid, _IN.display_name, _IN.host, _IN.node).where(
        _IN.host.in_(sorted(hosts)), _IN.deleted == 0).order_by(_IN.uuid)))


def _all_compute_hosts(ctxt, source):
    hosts = set()
    for _uuid, database in source.cells(ctxt):
        hosts |= cells_db.read(database, _compute_hosts, ctxt)
    return hosts


def _named_hosts(ctxt, source, lose):
    """The compute hosts of ``--lose`` (a comma-separated list), sorted.

    :raises ValueError: a name is no compute host of any cell.
    """
    named = {h.strip() for h in lose.split(',') if h.strip()}
    known = _all_compute_hosts(ctxt, source)
    unknown = sorted(named - known)
    if unknown:
        raise ValueError('Compute host %s could not be found.'
                         % ', '.join(unknown))
    return sorted(named)


def _aggregate_hosts(aggregates, wanted):
    """The hosts of the aggregate ``wanted`` names (name, uuid or id).

    :raises ValueError: no aggregate has that name, uuid or id.
    """
    found = [a for a in aggregates if wanted in (a.name, a.uuid, str(a.id))]
    if not found:
        raise ValueError('Aggregate %s could not be found.' % wanted)
    return sorted(set(found[0].hosts))


def _zones_of_hosts(aggregates):
    """host -> the zone names its aggregates give it (hosts with one)."""
    zoned = {}
    for aggregate in aggregates:
        name = aggregate.metadata.get(zones.AZ_KEY)
        if name:
            for host in aggregate.hosts:
                zoned.setdefault(host, set()).add(name)
    return zoned


def _zone_hosts(ctxt, source, aggregates, zone):
    """The hosts of availability zone ``zone``, sorted.

    NOTE: the default zone also holds every compute host that no zone
    aggregate names (:func:`common.zones.zone_name` of no names).

    :raises ValueError: the zone has no host.
    """
    zoned = _zones_of_hosts(aggregates)
    hosts = {h for h, names in zoned.items() if zone in names}
    if zone == zones.zone_name(None):
        hosts |= {h for h in _all_compute_hosts(ctxt, source)
                  if h not in zoned}
    if not hosts:
        raise ValueError('Availability zone %s has no host.' % zone)
    return sorted(hosts)


def lost_hosts(ctxt, source, args):
    """The host names ``--lose``, ``--lose-aggregate`` or ``--lose-az``
    name; ValueError with the reason when they name nothing.
    """
    if args.lose:
        return _named_hosts(ctxt, source, args.lose)
    aggregates = source.get_aggregates(ctxt)
    if args.lose_aggregate:
        return _aggregate_hosts(aggregates, args.lose_aggregate)
    return _zone_hosts(ctxt, source, aggregates, args.lose_az)


def servers_on(ctxt, source, hosts, server_cls):
    """(servers, [(uuid, name, host, why)] without a usable spec)."""
    rows = []
    for _uuid, database in source.cells(ctxt):
        rows.extend(cells_db.read(database, _instances_on, ctxt, hosts))
    specs = boot_records.get_request_specs(
        ctxt, [r.uuid for r in rows], database=source.api)
    access = cell_access_mod.CellAccess(source.api)
    servers, missing = [], []
    for row in rows:
        spec = specs.get(row.uuid)
        if spec is None or spec.flavor is None:
            missing.append((row.uuid, row.display_name, row.host,
                            'no stored request spec'))
            continue
        try:
            group_setup.setup_instance_group(ctxt, access, spec)
        except Exception as exc:
            missing.append((row.uuid, row.display_name, row.host,
                            'server group: %s' % exc))
            continue
        servers.append(server_cls(uuid=row.uuid, name=row.display_name,
                                  host=row.host, node=row.node, spec=spec))
    return servers, missing
