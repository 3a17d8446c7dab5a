# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage capacity report --html FILE``: the capacity report page.

Writes one self-contained HTML page (common.capacity_report): per-host
utilization per resource class as a heat map, headroom per flavor,
stranded capacity and hosts by zone and aggregate. Utilization comes from
placement, zones and aggregates from the api database; headroom and
stranded capacity from the scheduler's headroom function
(:func:`_headroom_rows`), run here on the databases as a dry run; the
rows are made by :func:`common.capacity_report.data.headroom_rows`, as
berth-api makes its own from a scheduler's answers. The page fetches
nothing: it opens offline. berth-api serves the same page to admins at
``/os-berth-capacity/report``.
"""

import argparse

from common.capacity_report import data as report_data
from common import context
from common.db import cells
from common.placement import client as placement_client


def _api(conf):
    """The api Database (a function, so that tests can give their own)."""
    return cells.configure_api(conf)


def _placement(conf):
    """The placement client (a function, for the same reason)."""
    return placement_client.PlacementClient(conf)


def _headroom_rows(conf, ctxt, api):
    """(HeadroomRows, StrandedRows, notes) of every public flavor.

    :raises report_data.NoHeadroom: the scheduling pipeline cannot be
        built (the page says why).
    """
    from services.manage import scheduler as scheduler_cmd
    from services.scheduler.capacity import headroom as headroom_mod
    from services.scheduler import offline
    # NOTE: the pipeline built in this process over the databases and
    # placement, as "capacity headroom" runs it; headroom claims nothing.
    try:
        scheduler = offline.build(conf)
    except offline.Unreachable as exc:
        raise report_data.NoHeadroom(
            'Headroom and stranded capacity are not available: the '
            'scheduling pipeline cannot be built here (%s).' % exc)

    def answer(flavorid):
        try:
            spec = scheduler_cmd.build_spec(conf, argparse.Namespace(
                flavor=flavorid, image=None, image_property=None,
                availability_zone=None, hint=None, num_instances=1,
                project_id='admin'))
        except scheduler_cmd.InvalidInput as exc:
            raise report_data.FlavorSkipped(str(exc))
        return headroom_mod.headroom(scheduler, ctxt, spec).to_dict()
    return report_data.headroom_rows(
        report_data.public_flavors(ctxt, api), answer)


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
