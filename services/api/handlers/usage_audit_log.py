# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /os-instance_usage_audit_log (admin).

Nova's compute agents, with ``instance_usage_audit`` on, run a periodic
audit of each month's instance usage and log it per host in
``task_log``. Berth's agents run no such audit and keep no task log, so
the answer is the one Nova gives when the audit is off: the period is
the last completed month before the given time, every compute host is
in ``hosts_not_run``, and nothing is counted.
"""

import datetime

from oslo_utils import timeutils

from services.api import cell_hosts
from services.api import errors
from services.api import policies
from services.api import util

_FORMATS = ('%Y-%m-%d %H:%M:%S', '%Y-%m-%d %H:%M:%S.%f')


def audit_period(before):
    """(beginning, ending) of the last whole month ending before
    ``before`` (Nova's default ``instance_usage_audit_period``).
    """
    ending = before.replace(day=1, hour=0, minute=0, second=0,
                            microsecond=0)
    beginning = (ending - datetime.timedelta(days=1)).replace(day=1)
    return beginning, ending


def _parse(text):
    for fmt in _FORMATS:
        try:
            return datetime.datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise errors.BadRequest('Invalid timestamp for date %s' % text)


def _log(req, before):
    hosts = sorted({s['host'] for _c, s in cell_hosts.list_services(
        util.context(req), binary=cell_hosts.COMPUTE_BINARY)})
    beginning, ending = audit_period(before)
    return {
        'hosts_not_run': hosts,
        'log': {},
        'num_hosts': len(hosts),
        'num_hosts_done': 0,
        'num_hosts_not_run': len(hosts),
        'num_hosts_running': 0,
        'overall_status': '0 of %d hosts done. 0 errors.' % len(hosts),
        'period_beginning': str(beginning),
        'period_ending': str(ending),
        'total_errors': 0,
        'total_instances': 0,
    }


def list_audit_logs(req):
    """GET /os-instance_usage_audit_log: the last completed period."""
    policies.authorize(req, 'os_compute_api:os-instance-usage-audit-log:list')
    return util.json_response({'instance_usage_audit_logs': _log(
        req, timeutils.utcnow())})


def show_audit_log(req):
    """GET /os-instance_usage_audit_log/{before_timestamp}.

    :raises errors.BadRequest: not ``YYYY-MM-DD HH:MM:SS[.ffffff]``.
    """
    policies.authorize(req, 'os_compute_api:os-instance-usage-audit-log:show')
    before = _parse(req.urlvars['before_timestamp'])
    return util.json_response({'instance_usage_audit_log': _log(req,
                                                                before)})
