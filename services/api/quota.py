# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Quota limits and usage: counted, never reserved.

A project's limit is its row in ``quotas``, else the ``default`` quota
class's (os-quota-class-sets, ``quota_classes``), else the ``[quota]``
option; -1 is unlimited. Usage is counted when a boot is checked: instances,
cores and RAM of the project's live instances in every cell database
(cell0's errored ones included, as Nova counts them) plus its build
requests. As in Nova's counting quotas, two boots racing past the check
are caught by a recheck after their records are written
(:func:`recheck`), which undoes the loser.

``[quota] driver = noop`` turns every limit into -1 (benchmarks).
"""

from common.db import boot_records
from common.db import instance_records
from common import exception
from services.api import cell_hosts
from services.api.records import quotas as quota_records
from services.api.records import server_groups as group_records

RESOURCES = ('instances', 'cores', 'ram', 'metadata_items', 'key_pairs',
             'server_groups', 'server_group_members')
COUNTED = ('instances', 'cores', 'ram')


class QuotaExceeded(exception.BerthException):
    """A request over a limit; the API's 403."""

    msg_fmt = ('Quota exceeded for %(overs)s: Requested %(req)s, but '
               'already used %(used)s of %(allowed)s %(overs)s')


DEFAULT_CLASS = 'default'


def _override(result, values):
    for name, value in values.items():
        if name in result and value is not None:
            result[name] = value
    return result


def configured_defaults(conf):
    """resource -> the ``[quota]`` option's limit."""
    if conf.quota.driver == 'noop':
        return dict.fromkeys(RESOURCES, -1)
    return {name: getattr(conf.quota, name) for name in RESOURCES}


def class_limits(ctxt, conf, class_name):
    """resource -> the limit of quota class ``class_name``: its rows over
    the ``[quota]`` options (as Nova's DB quota driver).
    """
    result = configured_defaults(conf)
    if conf.quota.driver == 'noop':
        return result
    return _override(result, quota_records.get_class_limits(ctxt,
                                                            class_name))


def defaults(ctxt, conf):
    """resource -> the default limit of every project: the ``default``
    quota class's, else the ``[quota]`` option's.
    """
    return class_limits(ctxt, conf, DEFAULT_CLASS)


def limits(ctxt, conf, project_id):
    """resource -> the limit of ``project_id``: its rows over the
    :func:`defaults`.
    """
    result = configured_defaults(conf)
    if conf.quota.driver == 'noop':
        return result
    by_class, by_project = quota_records.get_limits(ctxt, project_id,
                                                    DEFAULT_CLASS)
    return _override(_override(result, by_class), by_project)


def usage(ctxt, project_id, groups=True):
    """{'instances', 'cores', 'ram', 'server_groups'} in use by a project.

    :param groups: also count server groups (else left out: the boot
        checks do not need them).
    """
    count = cores = ram = 0
    for cell in cell_hosts.all_cells(ctxt):
        found = instance_records.count_instances_by_project(
            ctxt, cell_hosts.database(cell), project_id)
        count += found[0]
        cores += found[1]
        ram += found[2]
    building = boot_records.count_build_requests(ctxt, project_id)
    count += building[0]
    cores += building[1]
    ram += building[2]
    used = {'instances': count, 'cores': cores, 'ram': ram}
    if groups:
        used['server_groups'] = group_records.count_groups(ctxt, project_id)
    return used


def _room(limit, used, per_instance):
    """How many more instances fit under one limit (None: unlimited)."""
    if limit is None or limit < 0 or per_instance <= 0:
        return None
    return max(0, (limit - used) // per_instance)


def allowed_count(ctxt, conf, project_id, flavor, min_count, max_count,
                  project_limits=None):
    """How many of ``max_count`` instances of ``flavor`` the quota allows.

    :param project_limits: the project's :func:`limits`, when the caller
        read them already.
    :returns: a number between ``min_count`` and ``max_count``.
    :raises QuotaExceeded: not even ``min_count`` fit.
    """
    if conf.quota.driver == 'noop':
        return max_count
    if project_limits is None:
        project_limits = limits(ctxt, conf, project_id)
    if all(project_limits[name] < 0 for name in COUNTED):
        # NOTE: nothing to count against; counting scans every cell.
        return max_count
    used = usage(ctxt, project_id, groups=False)
    per_instance = {'instances': 1, 'cores': flavor.vcpus,
                    'ram': flavor.memory_mb}
    allowed = max_count
    over = None
    for name in COUNTED:
        room = _room(project_limits[name], used[name], per_instance[name])
        if room is not None and room < allowed:
            allowed = room
            if room < min_count and over is None:
                over = name
    if over is not None:
        raise QuotaExceeded(overs=over, req=per_instance[over] * min_count,
                            used=used[over], allowed=project_limits[over])
    return allowed


def recheck(ctxt, conf, project_id, project_limits=None):
    """Raise QuotaExceeded if the project is now over a counted limit.

    Called after a boot's records are written, so that of two boots that
    both passed :func:`allowed_count` the one that went over undoes
    itself. The usage is counted again; the limits may be the ones the
    check used (``project_limits``): the recheck guards against other
    boots, not against an administrator's change of a limit.
    """
    if conf.quota.driver == 'noop':
        return
    if project_limits is None:
        project_limits = limits(ctxt, conf, project_id)
    if all(project_limits[name] < 0 for name in COUNTED):
        return
    used = usage(ctxt, project_id, groups=False)
    for name in COUNTED:
        limit = project_limits[name]
        if limit is not None and limit >= 0 and used[name] > limit:
            raise QuotaExceeded(overs=name, req=used[name] - limit,
                                used=used[name], allowed=limit)


def check_server_groups(ctxt, conf, project_id):
    """Raise QuotaExceeded when the project has no room for a new group."""
    limit = limits(ctxt, conf, project_id)['server_groups']
    if limit < 0:
        return
    used = group_records.count_groups(ctxt, project_id)
    if used + 1 > limit:
        raise QuotaExceeded(overs='server_groups', req=1, used=used,
                            allowed=limit)
