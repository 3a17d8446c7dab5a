# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Fill a request spec's server group: policy, rules, members, hosts.

The affinity filters and weighers need the hosts the group's members
already run on. The API names the group (``group`` hint, or the spec's
``instance_group.uuid``); the conductor loads it from the api database
and finds its members' hosts in their cells just before scheduling, so
that members placed a moment ago count.
"""

import json
import logging

import sqlalchemy as sa

from common.db import api as db_api
from common.db import api_tables
from common.db import boot_records
from common.db import cell_tables
from common import exception
from common.objects import instance_group as group_obj

LOG = logging.getLogger(__name__)

_G = api_tables.instance_groups.c
_P = api_tables.instance_group_policy.c
_M = api_tables.instance_group_member.c
_IN = cell_tables.instances.c


def group_uuid(spec):
    """The uuid of the spec's server group, or None."""
    if spec.instance_group is not None and spec.instance_group.uuid:
        return spec.instance_group.uuid
    hint = spec.get_scheduler_hint('group')
    if isinstance(hint, list):
        hint = hint[0] if hint else None
    return hint


def _load(ctx, uuid):
    row = ctx.session.execute(sa.select(_G.id, _G.uuid, _G.name).where(
        _G.uuid == uuid)).first()
    if row is None:
        return None
    policy = ctx.session.execute(sa.select(_P.policy, _P.rules).where(
        _P.group_id == row.id).order_by(_P.id)).first()
    members = list(ctx.session.execute(sa.select(_M.instance_uuid).where(
        _M.group_id == row.id).order_by(_M.id)).scalars())
    rules = {}
    if policy is not None and policy.rules:
        try:
            rules = json.loads(policy.rules) or {}
        except ValueError:
            LOG.warning('Ignoring undecodable rules of group %s', uuid)
    return group_obj.InstanceGroup(
        uuid=row.uuid, name=row.name or '',
        policy=policy.policy if policy is not None else None,
        rules=rules, members=members)


def _hosts_in_cell(ctx, uuids):
    hosts = []
    for chunk in db_api.chunks(uuids):
        hosts.extend(ctx.session.execute(sa.select(_IN.host).where(
            _IN.uuid.in_(chunk), _IN.deleted == 0,
            _IN.host.is_not(None))).scalars())
    return hosts


def member_hosts(ctxt, cell_access, members, exclude=()):
    """The hosts of the live members (one entry per member), sorted."""
    excluded = set(exclude)
    wanted = [m for m in members if m not in excluded]
    if not wanted:
        return []
    by_cell = {}
    mappings = boot_records.get_instance_mappings(ctxt, wanted,
                                                  database=cell_access.api)
    for uuid, mapping in mappings.items():
        if mapping['cell_uuid'] and not mapping['queued_for_delete']:
            by_cell.setdefault(mapping['cell_uuid'], []).append(uuid)
    hosts = []
    for cell_uuid, uuids in by_cell.items():
        database = cell_access.database(cell_uuid)
        hosts.extend(database.reader(_hosts_in_cell)(ctxt, uuids))
    return sorted(hosts)


def setup_instance_group(ctxt, cell_access, spec, exclude=()):
    """Set ``spec.instance_group`` from the api database; no-op without.

    :param exclude: instance uuids whose hosts do not count (the
        instances being scheduled, on a reschedule).
    :raises common.exception.InstanceGroupNotFound: the group is gone.
    """
    uuid = group_uuid(spec)
    if not uuid:
        return None
    group = cell_access.api.reader(_load)(ctxt, uuid)
    if group is None:
        raise exception.InstanceGroupNotFound(group_uuid=uuid)
    if group.policy is None and spec.instance_group is not None:
        group.policy = spec.instance_group.policy
        group.rules = dict(spec.instance_group.rules)
    group.hosts = member_hosts(ctxt, cell_access, group.members, exclude)
    spec.instance_group = group
    LOG.debug('Server group %s (%s): members %d on hosts %s', group.uuid,
              group.policy, len(group.members), group.hosts)
    return group
