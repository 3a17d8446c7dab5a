# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handler for /os-berth-capacity/report (a Berth extension): the
capacity report page, as ``berth-manage capacity report --html`` writes
it (common.capacity_report), for admins.

NOTE: berth-api runs no scheduler, so its page has no headroom or
stranded capacity yet (the page says so); the manage command computes
them.
"""

import webob

from common.capacity_report import data as report_data
from common.db import cells
from services.api import placement_sync
from services.api import policies
from services.api import util

NO_HEADROOM = ('Headroom and stranded capacity are not computed by '
               'berth-api: they run the scheduler\'s filters, which '
               '"berth-manage capacity report --html FILE" does.')


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
        headroom=None, no_headroom=NO_HEADROOM)
    return webob.Response(body=page.render(found).encode('utf-8'),
                          content_type='text/html', charset='utf-8')
