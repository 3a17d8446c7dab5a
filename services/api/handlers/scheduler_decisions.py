# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handler for /os-berth-scheduler/decisions/{server_id} (a Berth
extension): why a server is where it is.

Each placement of the server (its boot, later each move) kept the
scheduler's decision record, bounded in size (doc/operations.md, "Why a
server is where it is"); admins read them here, newest first. A server
still waiting for its host has none yet; one that found no host has its
fault instead.
"""

from common.db import decision_records
from services.api import cell_hosts
from services.api import policies
from services.api import server_lookup
from services.api import util


def show_decisions(req):
    """GET /os-berth-scheduler/decisions/{server_id} (admin).

    :raises errors.Forbidden: not an admin (``berth:scheduler:why``).
    :raises errors.NotFound: no such server.
    """
    policies.authorize(req, 'berth:scheduler:why')
    ctxt = util.context(req)
    instance, cell = server_lookup.find(ctxt, req.urlvars['server_id'])
    found = []
    if cell is not None:
        found = decision_records.decisions(ctxt, cell_hosts.database(cell),
                                           instance.uuid)
    return util.json_response({'server_id': instance.uuid,
                               'host': instance.host,
                               'node': instance.node,
                               'decisions': found})
