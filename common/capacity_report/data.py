# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The plain data of a capacity report, and its collector.

A :class:`Report` is all the page draws; it can be built by hand (tests)
or by :func:`collect`, which reads

* placement: each root provider's inventories and usages (summed over its
  tree), as used / capacity per resource class, capacity being
  ``(total - reserved) * allocation_ratio``;
* the cells' compute node records: which host each root provider is;
* the api database: each host's aggregates and availability zone.

Headroom and stranded capacity need the scheduler's filters; the caller
passes them in (``headroom``: a function returning (headroom rows,
stranded rows[, notes]), or None when it cannot), so that this module
stays service-neutral. :func:`headroom_rows` turns the scheduler's
Headroom answers into those rows; ``berth-manage`` asks the pipeline in
its own process, berth-api asks a scheduler over RPC, and both pages are
the same.
"""

import dataclasses
import datetime
import logging

import sqlalchemy as sa

from common.db import api_tables
from common.db import cell_access as cell_access_mod
from common.db import cells
from common.db import compute_records
from common.placement import microversions

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class HostUsage(object):
    """One compute host: its place and its use per resource class.

    :ivar usage: {resource class: (used, capacity)}.
    """

    host: str
    zone: str
    aggregates: list = dataclasses.field(default_factory=list)
    usage: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class HeadroomRow(object):
    """How many more servers of a flavor fit, in total and per zone."""

    flavor: str
    total: int
    per_zone: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class StrandedRow(object):
    """Free capacity of one class on hosts where the flavor fits no more.
    """

    flavor: str
    resource_class: str
    free: float
    hosts: int
    reason: str


@dataclasses.dataclass
class Report(object):
    """Everything the page shows.

    :ivar headroom: HeadroomRows, or None when headroom could not be
        computed (``notes`` says why); likewise ``stranded``.
    """

    generated_at: str
    hosts: list = dataclasses.field(default_factory=list)
    headroom: list = None
    stranded: list = None
    notes: list = dataclasses.field(default_factory=list)


class NoHeadroom(Exception):
    """No headroom can be had at all; the message is the page's note."""


class FlavorSkipped(Exception):
    """The headroom of one flavor cannot be asked; the message says why.
    """


def capacity(inventory):
    """What placement lets be allocated of one inventory."""
    return int((inventory['total'] - inventory.get('reserved', 0)) *
               inventory.get('allocation_ratio', 1.0))


def _get(placement, ctxt, url):
    resp = placement.get(url, microversions.PROVIDER_LISTING, ctxt)
    if not resp.ok:
        raise RuntimeError('placement answered %s to GET %s'
                           % (resp.status, url))
    return resp.body


def placement_usage(placement, ctxt):
    """{root provider uuid: (name, {rc: (used, capacity)})}, each tree's
    providers summed into its root.
    """
    providers = _get(placement, ctxt,
                     '/resource_providers')['resource_providers']
    names = {p['uuid']: p['name'] for p in providers}
    found = {}
    for provider in providers:
        root = provider.get('root_provider_uuid') or provider['uuid']
        entry = found.setdefault(root, (names.get(root, root), {}))[1]
        base = '/resource_providers/%s' % provider['uuid']
        inventories = _get(placement, ctxt, base + '/inventories')
        usages = _get(placement, ctxt, base + '/usages')['usages']
        for rc, inventory in inventories['inventories'].items():
            used, cap = entry.get(rc, (0, 0))
            entry[rc] = (used + usages.get(rc, 0), cap + capacity(inventory))
    return found


def host_places(ctxt, api):
    """{host: (zone or None, [aggregate names])} from the api database."""
    t = api_tables

    def read(ctx):
        zones = {row.aggregate_id: row.value for row in ctx.session.execute(
            sa.select(t.aggregate_metadata.c.aggregate_id,
                      t.aggregate_metadata.c.value).where(
                t.aggregate_metadata.c.key == 'availability_zone'))}
        rows = ctx.session.execute(sa.select(
            t.aggregates.c.id, t.aggregates.c.name,
            t.aggregate_hosts.c.host).join(
            t.aggregate_hosts,
            t.aggregate_hosts.c.aggregate_id == t.aggregates.c.id))
        places = {}
        for row in rows:
            zone, names = places.setdefault(row.host, (None, []))
            names.append(row.name)
            if row.id in zones:
                zone = zones[row.id]
            places[row.host] = (zone, names)
        return places
    return api.reader(read)(ctxt)


def node_hosts(ctxt, api):
    """{compute node uuid: host} over every cell (cell0 has none)."""
    access = cell_access_mod.CellAccess(api)
    found = {}
    for cell in access.cells(ctxt):
        if cell.uuid == cells.CELL0_UUID:
            continue
        try:
            for node in compute_records.list_compute_nodes(
                    ctxt, access.database(cell)):
                found[node['uuid']] = node['host']
        except Exception:
            LOG.warning('Capacity report: cannot read the compute nodes '
                        'of cell %s', cell.name, exc_info=True)
    return found


def public_flavors(ctxt, api):
    """[(flavorid, name)] of the public, enabled flavors, smallest first
    (the report's rows).
    """
    t = api_tables.flavors

    def read(ctx):
        return [(row.flavorid, row.name) for row in ctx.session.execute(
            sa.select(t.c.flavorid, t.c.name).where(
                t.c.is_public.is_(True), t.c.disabled.is_(False)).order_by(
                t.c.memory_mb, t.c.vcpus, t.c.name))]
    return api.reader(read)(ctxt)


def reasons(by_reason):
    """One line of the reasons free capacity is stranded, largest first."""
    return '; '.join('%s (%d)' % (reason, amount) for reason, amount in
                     sorted(by_reason.items(), key=lambda i: (-i[1], i[0])))


def headroom_rows(flavors, answer):
    """(HeadroomRows, StrandedRows, notes) of ``flavors``.

    :param flavors: [(flavorid, name)], as :func:`public_flavors`.
    :param answer: ``answer(flavorid)`` -> the scheduler's Headroom as a
        dict (``Headroom.to_dict()``); it raises :class:`FlavorSkipped`
        for a flavor it cannot ask about (a note, the others go on) and
        :class:`NoHeadroom` when nothing can be answered.
    """
    rows, stranded, notes = [], [], []
    for flavorid, name in flavors:
        try:
            found = answer(flavorid)
        except FlavorSkipped as exc:
            notes.append('No headroom for flavor %s: %s' % (name, exc))
            continue
        rows.append(HeadroomRow(name, found['total'],
                                dict(found.get('per_zone') or {})))
        for rc, item in sorted((found.get('stranded') or {}).items()):
            stranded.append(StrandedRow(
                name, rc, item['free'], item['hosts'],
                reasons(item.get('by_reason') or {})))
    return rows, stranded, notes


NO_HEADROOM = ('Headroom and stranded capacity are not available here: '
               'they need the scheduler\'s headroom function '
               '(services.scheduler.capacity.headroom), which this '
               'installation does not have yet.')


def collect(ctxt, placement, api, default_zone, headroom=None,
            no_headroom=NO_HEADROOM):
    """The Report of the cloud as it is now.

    :param placement: a common.placement.client.PlacementClient.
    :param api: the api Database.
    :param default_zone: the zone of hosts in no zone aggregate.
    :param headroom: ``headroom()`` -> (HeadroomRows, StrandedRows[,
        notes]), or None; it may also return None or raise
        :class:`NoHeadroom` (not available).
    :param no_headroom: the note the page shows when there is none (or
        the message of the NoHeadroom raised).
    """
    report = Report(generated_at=datetime.datetime.now(
        datetime.timezone.utc).strftime('%Y-%m-%d %H:%M:%S UTC'))
    places = host_places(ctxt, api)
    hosts = node_hosts(ctxt, api)
    for uuid, (name, usage) in sorted(
            placement_usage(placement, ctxt).items(),
            key=lambda item: item[1][0]):
        host = hosts.get(uuid, name)
        zone, aggregates = places.get(host, (None, []))
        report.hosts.append(HostUsage(host=host, zone=zone or default_zone,
                                      aggregates=sorted(aggregates),
                                      usage=usage))
    try:
        rows = headroom() if headroom is not None else None
    except NoHeadroom as exc:
        rows, no_headroom = None, str(exc)
    if rows is None:
        report.notes.append(no_headroom)
    else:
        report.headroom, report.stranded = rows[0], rows[1]
        report.notes.extend(rows[2] if len(rows) > 2 else ())
    return report
