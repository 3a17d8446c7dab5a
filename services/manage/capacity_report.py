# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage capacity report --html FILE``: the capacity report page.

Writes one self-contained HTML page (common.capacity_report): per-host
utilization per resource class as a heat map, headroom per flavor,
stranded capacity and hosts by zone and aggregate. Utilization comes from
placement, zones and aggregates from the api database; headroom and
stranded capacity from the scheduler's headroom function
(:func:`_headroom_rows`), run here on the databases as a dry run. The
page fetches nothing: it opens offline. berth-api serves the same page
to admins at ``/os-berth-capacity/report``.
"""

import argparse

import sqlalchemy as sa

from common.capacity_report import data as report_data
from common import context
from common.db import api_tables
from common.db import cells
from common.placement import client as placement_client


def _api(conf):
    """The api Database (a function, so that tests can give their own)."""
    return cells.configure_api(conf)


def _placement(conf):
    """The placement client (a function, for the same reason)."""
    return placement_client.PlacementClient(conf)


def _flavor_names(ctxt, api):
    t = api_tables.flavors

    def read(ctx):
        return [row.name for row in ctx.session.execute(
            sa.select(t.c.name).where(t.c.is_public.is_(True),
                                      t.c.disabled.is_(False)).order_by(
                t.c.memory_mb, t.c.vcpus, t.c.name))]
    return api.reader(read)(ctxt)


def _headroom_rows(conf, ctxt, api):
    """(HeadroomRows, StrandedRows) of every public flavor, or None when
    the scheduling pipeline cannot be built (the page says so).
    """
    from services.manage import scheduler as scheduler_cmd
    from services.scheduler.capacity import headroom as headroom_mod
    from services.scheduler import offline
    # NOTE: the pipeline built in this process over the databases and
    # placement, as "capacity headroom" runs it; headroom claims nothing.
    try:
        scheduler = offline.build(conf)
    except offline.Unreachable:
        return None
    rows, stranded = [], []
    for name in _flavor_names(ctxt, api):
        spec = scheduler_cmd.build_spec(conf, argparse.Namespace(
            flavor=name, image=None, image_property=None,
            availability_zone=None, hint=None, num_instances=1,
            project_id='admin'))
        found = headroom_mod.headroom(scheduler, ctxt, spec)
        rows.append(report_data.HeadroomRow(name, found.total,
                                            dict(found.per_zone)))
        for rc, item in sorted(found.stranded.items()):
            stranded.append(report_data.StrandedRow(
                name, rc, item['free'], item['hosts'],
                _reasons(item.get('by_reason') or {})))
    return rows, stranded


def _reasons(by_reason):
    """One line of the reasons free capacity is stranded, largest first."""
    return '; '.join('%s (%d)' % (reason, amount) for reason, amount in
                     sorted(by_reason.items(), key=lambda i: (-i[1], i[0])))


def build(conf, ctxt):
    """The Report of the cloud now, headroom included when it can be."""
    api = _api(conf)
    return report_data.collect(
        ctxt, _placement(conf), api, conf.default_availability_zone,
        headroom=lambda: _headroom_rows(conf, ctxt, api))


def report(conf):
    """The command; see the module docstring."""
    # NOTE: late: every berth-manage command imports this module, and
    # only this one needs matplotlib.
    from common.capacity_report import page
    args = conf.category
    found = build(conf, context.get_admin_context())
    with open(args.html, 'w', encoding='utf-8') as out:
        out.write(page.render(found))
    print('Wrote the capacity report of %d host%s to %s' % (
        len(found.hosts), '' if len(found.hosts) == 1 else 's', args.html))
    for note in found.notes:
        print('Note: %s' % note)
    return 0


def add_parser(commands):
    """Add ``report`` to the ``capacity`` commands."""
    cmd = commands.add_parser(
        'report', help='Write the capacity report page (HTML).')
    cmd.add_argument('--html', required=True, metavar='FILE',
                     help='Where to write the page.')
    cmd.set_defaults(action_fn=report)
