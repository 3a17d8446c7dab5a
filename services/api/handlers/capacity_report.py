# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handler for /os-berth-capacity/report (a Berth extension): the
capacity report page, as ``berth-manage capacity report --html`` writes
it (common.capacity_report), for admins.

berth-api runs no scheduler: the headroom and stranded capacity of each
public flavor are asked of one over RPC (its ``headroom`` call, as
``GET /os-berth-capacity/headroom`` does), and turned into the page's
rows by the same code as the manage command's.
"""

import oslo_messaging as messaging

import webob

from common.capacity_report import data as report_data
from common.db import cells
from services.api import errors
from services.api.handlers import capacity
from services.api import placement_sync
from services.api import policies
from services.api import util

NO_SCHEDULER = ('Headroom and stranded capacity are not available: no '
                'scheduler answered the headroom request in time.')


def _headroom_rows(req):
    """(HeadroomRows, StrandedRows, notes) of every public flavor, each
    asked of a scheduler.

    :raises report_data.NoHeadroom: no scheduler answered.
    """
    ctx = util.context(req)
    scheduler = capacity.scheduler_api()

    def answer(flavorid):
        try:
            spec = capacity.build_spec(req, {'flavor': flavorid})
            return scheduler.headroom(ctx, spec)
        except errors.BadRequest as exc:
            raise report_data.FlavorSkipped(exc.message)
        except messaging.MessagingTimeout:
            # NOTE: the first flavor tells: the others would wait as long.
            raise report_data.NoHeadroom(NO_SCHEDULER)
        except messaging.RemoteError as exc:
            raise report_data.FlavorSkipped(
                'the scheduler failed: %s' % exc.value)
    return report_data.headroom_rows(
        report_data.public_flavors(ctx, cells.api_db), answer)


def show_report(req):
    """GET /os-berth-capacity/report (admin): text/html.

    :raises errors.Forbidden: not an admin (``berth:capacity:report``).
    """
    # NOTE: late: matplotlib is loaded by the first report, not by every
    # berth-api start.
    from common.capacity_report import page
    policies.authorize(req, 'berth:capacity:report')
    conf = util.conf(req)
    found = report_data.collect(
        util.context(req), placement_sync.client(conf), cells.api_db,
        conf.default_availability_zone,
        headroom=lambda: _headroom_rows(req))
    return webob.Response(body=page.render(found).encode('utf-8'),
                          content_type='text/html', charset='utf-8')
