# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The availability zone of compute hosts, read from the api database.

For the hosts a scheduler older than RPC 1.1 chose without naming their
zones; the rule is :func:`common.zones.zone_name`'s.
"""

import sqlalchemy as sa

from common.db import api_tables
from common import zones

AZ_KEY = zones.AZ_KEY
_CHUNK = 500


def _zones(ctx, hosts):
    found = {}
    meta = api_tables.aggregate_metadata.c
    members = api_tables.aggregate_hosts.c
    for start in range(0, len(hosts), _CHUNK):
        chunk = hosts[start:start + _CHUNK]
        query = sa.select(members.host, meta.value).select_from(
            api_tables.aggregate_hosts.join(
                api_tables.aggregate_metadata,
                members.aggregate_id == meta.aggregate_id)).where(
            meta.key == AZ_KEY, members.host.in_(chunk))
        for row in ctx.session.execute(query):
            found.setdefault(row.host, set()).add(row.value)
    return found


def zones_in(ctx, hosts):
    """host -> its availability zone name, for every host in ``hosts``,
    in the api database transaction ``ctx`` has open.
    """
    found = _zones(ctx, hosts) if hosts else {}
    return {host: zones.zone_name(found.get(host)) for host in hosts}
