# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handlers for /servers/{server_id}/os-instance-actions.

What was done to a server (``create``, ``delete``...) and, for admins,
each action's events (``conductor_schedule_and_build_instances``,
``compute_build_and_run_instance``...) with their results, and from 2.84
the ``details`` of a failed one. A server that
is still a build request has no actions yet: they live in its cell.
"""

from oslo_utils import timeutils

from common.db import action_records
from common.db import decision_records
from services.api import cell_hosts
from services.api import errors
from services.api.handlers import servers as server_handlers
from services.api import policies
from services.api import server_view
from services.api import util

UPDATED_AT_VERSION = (2, 58)
# NOTE: paging (limit, marker, changes-since) came with 2.58,
# changes-before with 2.66; both filter on the action's updated_at.
PAGING_VERSION = (2, 58)
CHANGES_BEFORE_VERSION = (2, 66)
EVENT_HOST_VERSION = (2, 62)
# NOTE: from 2.84 an event shows ``details``: what went wrong when it
# failed (Nova's fault wording), else null.
EVENT_DETAILS_VERSION = (2, 84)
# NOTE: from 2.21 a deleted server's actions stay readable, as Nova.
DELETED_VERSION = (2, 21)


def _actions(req, action):
    instance, cell = server_handlers.find_authorized(
        req, action, read_deleted=util.at_least(req, DELETED_VERSION))
    if cell is None:
        return instance, []
    return instance, action_records.list_actions(
        util.context(req), cell_hosts.database(cell), instance.uuid)


def _action_view(req, action):
    body = {
        'action': action['action'],
        'instance_uuid': action['instance_uuid'],
        'request_id': action['request_id'],
        'user_id': action['user_id'],
        'project_id': action['project_id'],
        'start_time': util.iso_micro(action['start_time']),
        'message': action['message'],
    }
    if util.at_least(req, UPDATED_AT_VERSION):
        body['updated_at'] = util.iso_micro(action['updated_at'])
    return body


def _event_view(req, event, project_id, show_traceback):
    body = {
        'event': event['event'],
        'start_time': util.iso_micro(event['start_time']),
        'finish_time': util.iso_micro(event['finish_time']),
        'result': event['result'],
    }
    if show_traceback:
        body['traceback'] = event['traceback']
    if util.at_least(req, EVENT_HOST_VERSION):
        body['hostId'] = server_view.host_id(project_id, event['host'])
        if show_traceback:
            body['host'] = event['host']
    if util.at_least(req, EVENT_DETAILS_VERSION):
        body['details'] = _failure_details(event)
    return body


def _failure_details(event):
    """What went wrong with a failed event, else None.

    NOTE: a placing event's details column holds the decision record of
    the placement (common/db/decision_records.py), Berth's own and not
    shown here; Nova fills details only when an event fails.
    """
    if (event['result'] or '').lower() != 'error':
        return None
    if decision_records.is_record(event['details']):
        return None
    return event['details']


def _time_param(req, name):
    text = req.GET.get(name)
    if text is None:
        return None
    try:
        return timeutils.normalize_time(timeutils.parse_isotime(text))
    except ValueError:
        raise errors.BadRequest(
            "Invalid input for query parameters %s. Value: %s. '%s' is "
            "not a 'date-time'" % (name, text, text))


def _changed(action):
    value = action['updated_at'] or action['start_time']
    return None if value is None else timeutils.normalize_time(
        timeutils.parse_isotime(value) if isinstance(value, str) else value)


def _filter_times(req, actions):
    since = _time_param(req, 'changes-since')
    before = (_time_param(req, 'changes-before')
              if util.at_least(req, CHANGES_BEFORE_VERSION) else None)
    if since and before and since > before:
        raise errors.BadRequest('The value of changes-since must be less '
                                'than or equal to changes-before.')
    if since is not None:
        actions = [a for a in actions if _changed(a) and
                   _changed(a) >= since]
    if before is not None:
        actions = [a for a in actions if _changed(a) and
                   _changed(a) <= before]
    return actions


def _page(req, instance, actions):
    """(the page of ``actions``, a next link or None) from 2.58."""
    if not util.at_least(req, PAGING_VERSION):
        return actions, None
    actions = _filter_times(req, actions)
    marker = req.GET.get('marker')
    if marker is not None:
        ids = [a['request_id'] for a in actions]
        if marker not in ids:
            raise errors.BadRequest('Marker %s could not be found.'
                                    % marker)
        actions = actions[ids.index(marker) + 1:]
    max_limit = util.conf(req).api.max_limit
    limit = min(util.query_int(req, 'limit', max_limit), max_limit)
    page = actions[:limit]
    if not page or len(page) < limit:
        return page, None
    href = '%s?limit=%d&marker=%s' % (
        util.self_link(req, 'servers', instance.uuid,
                       'os-instance-actions'), limit,
        page[-1]['request_id'])
    return page, [{'rel': 'next', 'href': href}]


def list_actions(req):
    """GET /servers/{server_id}/os-instance-actions: newest first.

    From 2.58 ``limit``, ``marker`` (a request id) and ``changes-since``
    page and filter (on ``updated_at``), from 2.66 ``changes-before``.
    """
    instance, actions = _actions(
        req, 'os_compute_api:os-instance-actions:list')
    page, links = _page(req, instance, actions)
    body = {'instanceActions': [_action_view(req, a) for a in page]}
    if links:
        body['links'] = links
    return util.json_response(body)


def show_action(req):
    """GET /servers/{server_id}/os-instance-actions/{request_id}.

    :raises errors.NotFound: the server has no action of that request.
    """
    instance, actions = _actions(
        req, 'os_compute_api:os-instance-actions:show')
    request_id = req.urlvars['request_id']
    found = [a for a in actions if a['request_id'] == request_id]
    if not found:
        raise errors.NotFound('Action for request_id %s on instance %s not '
                              'found' % (request_id, instance.uuid))
    action = found[0]
    body = _action_view(req, action)
    show_events = policies.authorize(
        req, 'os_compute_api:os-instance-actions:events',
        {'project_id': instance.project_id}, fatal=False)
    if show_events or util.at_least(req, (2, 51)):
        body['events'] = [
            _event_view(req, e, instance.project_id, show_events)
            for e in action['events']]
    return util.json_response({'instanceAction': body})
