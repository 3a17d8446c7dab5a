# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The availability zone of a compute host, as an instance records it.

A zone is a host aggregate with ``availability_zone`` metadata; a host in
no such aggregate is in ``[DEFAULT] default_availability_zone``. A host in
several zone aggregates gets their names joined with commas in name
order, as upstream shows it.
"""

import sqlalchemy as sa

import common.conf
from common.db import api_tables

CONF = common.conf.CONF
AZ_KEY = 'availability_zone'
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
    return {host: ','.join(sorted(found[host])) if host in found
            else CONF.default_availability_zone for host in hosts}
