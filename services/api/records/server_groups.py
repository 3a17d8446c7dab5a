# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server groups in the api database: policy, rules and members.

A group is a dict: ``id``, ``uuid``, ``name``, ``project_id``,
``user_id``, ``policy`` (one of affinity, anti-affinity, soft-affinity,
soft-anti-affinity), ``rules`` (e.g. ``{"max_server_per_host": 2}``) and
``members`` (instance uuids in the order they joined). The API adds a
member when it writes the instance's build request; the conductor reads
the group to tell the scheduler where the members already are.
"""

import json
import uuid as uuid_lib

from oslo_utils import timeutils
import sqlalchemy as sa

from common.db import api_tables as t
from common import exception
from common.objects import instance_group as group_obj
from services.api import records

_G = t.instance_groups.c
_P = t.instance_group_policy.c
_M = t.instance_group_member.c

# NOTE: a boot with a ``group`` hint reads its group and adds its members:
# these statements are built once, their parameters bound per call.
_GROUP = sa.select(t.instance_groups).where(
    _G.uuid == sa.bindparam('group_uuid'))
_POLICIES_OF = sa.select(_P.group_id, _P.policy, _P.rules).where(
    _P.group_id.in_(sa.bindparam('ids', expanding=True))).order_by(_P.id)
_MEMBERS_OF = sa.select(_M.group_id, _M.instance_uuid).where(
    _M.group_id.in_(sa.bindparam('ids', expanding=True))).order_by(_M.id)
_COUNT_GROUPS = sa.select(sa.func.count()).select_from(
    t.instance_groups).where(_G.project_id == sa.bindparam('project_id'))
_INSERT_MEMBERS = t.instance_group_member.insert()
_DELETE_MEMBERS = t.instance_group_member.delete().where(
    _M.instance_uuid.in_(sa.bindparam('uuids', expanding=True)))


# NOTE: the conductor raises the same class; one name for both.
InstanceGroupNotFound = exception.InstanceGroupNotFound


def to_object(group):
    """The :class:`common.objects.instance_group.InstanceGroup` of a dict.

    ``hosts`` is left empty: the conductor fills it in from the members'
    instances just before scheduling.
    """
    return group_obj.InstanceGroup(
        uuid=group['uuid'], name=group['name'] or '',
        policy=group['policy'], rules=dict(group['rules']),
        members=list(group['members']))


def _load(conn, rows):
    """Group dicts of ``rows`` with their policy, rules and members, read
    on ``conn`` (the transaction's Connection or Session).
    """
    groups = [dict(row._mapping) for row in rows]
    if not groups:
        return []
    by_id = {g['id']: g for g in groups}
    for group in groups:
        group.update(policy=None, rules={}, members=[])
    ids = {'ids': list(by_id)}
    for row in conn.execute(_POLICIES_OF, ids):
        by_id[row.group_id]['policy'] = row.policy
        by_id[row.group_id]['rules'] = json.loads(row.rules or '{}')
    for row in conn.execute(_MEMBERS_OF, ids):
        by_id[row.group_id]['members'].append(row.instance_uuid)
    return groups


def _get(conn, group_uuid):
    found = _load(conn, conn.execute(
        _GROUP, {'group_uuid': group_uuid}).all())
    if not found:
        raise InstanceGroupNotFound(group_uuid=group_uuid)
    return found[0]


@records.reader_connection
def get_group(ctxt, group_uuid):
    """The group ``group_uuid``.

    :raises InstanceGroupNotFound: when there is none.
    """
    return _get(ctxt.connection, group_uuid)


@records.reader_connection
def list_groups(ctxt, project_id=None, limit=None, offset=0):
    """Groups (of one project, or all), in creation order."""
    query = sa.select(t.instance_groups).order_by(_G.id)
    if project_id is not None:
        query = query.where(_G.project_id == project_id)
    if offset:
        query = query.offset(offset)
    if limit is not None:
        query = query.limit(limit)
    conn = ctxt.connection
    return _load(conn, conn.execute(query).all())


@records.reader_connection
def count_groups(ctxt, project_id):
    """How many groups ``project_id`` has."""
    return ctxt.connection.execute(
        _COUNT_GROUPS, {'project_id': project_id}).scalar()


@records.reader_connection
def groups_of_instance(ctxt, instance_uuid):
    """The uuids of the groups ``instance_uuid`` is a member of."""
    return list(ctxt.connection.execute(
        sa.select(_G.uuid).select_from(t.instance_groups.join(
            t.instance_group_member, _M.group_id == _G.id)).where(
            _M.instance_uuid == instance_uuid)).scalars())


@records.writer
def create_group(ctxt, name, policy, rules, project_id, user_id):
    """Create a group; return it."""
    now = timeutils.utcnow()
    group_uuid = str(uuid_lib.uuid4())
    group_id = ctxt.session.execute(t.instance_groups.insert().values(
        uuid=group_uuid, name=name, project_id=project_id, user_id=user_id,
        created_at=now)).inserted_primary_key[0]
    ctxt.session.execute(t.instance_group_policy.insert().values(
        group_id=group_id, policy=policy,
        rules=json.dumps(rules or {}), created_at=now))
    return _get(ctxt.session, group_uuid)


@records.writer
def delete_group(ctxt, group_uuid):
    """Delete a group with its policy and member list."""
    group = _get(ctxt.session, group_uuid)
    for table, column in ((t.instance_group_member, _M.group_id),
                          (t.instance_group_policy, _P.group_id)):
        ctxt.session.execute(table.delete().where(column == group['id']))
    ctxt.session.execute(t.instance_groups.delete().where(
        _G.id == group['id']))


@records.writer_connection
def add_members(ctxt, group_uuid, instance_uuids, max_members=None):
    """Add instances to a group, within its member quota.

    :param max_members: the most members the group may have; None or -1
        for no limit.
    :raises InstanceGroupNotFound: no such group.
    :raises exception.BerthException: ``GroupMembersOverQuota`` when the
        new members would exceed ``max_members``.
    """
    group = _get(ctxt.connection, group_uuid)
    new = [u for u in instance_uuids if u not in group['members']]
    if max_members is not None and max_members >= 0 and (
            len(group['members']) + len(new) > max_members):
        raise GroupMembersOverQuota(group_uuid=group_uuid,
                                    limit=max_members)
    now = timeutils.utcnow()
    if new:
        # NOTE: one executemany for a whole multi-create.
        ctxt.connection.execute(_INSERT_MEMBERS, [
            {'group_id': group['id'], 'instance_uuid': instance_uuid,
             'created_at': now} for instance_uuid in new])
    return _get(ctxt.connection, group_uuid)


@records.writer_connection
def remove_members(ctxt, instance_uuids):
    """Take instances out of every group (they were deleted)."""
    ctxt.connection.execute(_DELETE_MEMBERS,
                            {'uuids': list(instance_uuids)})


class GroupMembersOverQuota(exception.BerthException):
    msg_fmt = ('Quota exceeded, too many servers in group %(group_uuid)s '
               '(limit %(limit)s)')
