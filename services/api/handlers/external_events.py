# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Handler for POST /os-server-external-events (admin).

Other services tell Nova about a server's ports, volumes, power or
accelerators with these events. As in Nova, each event is answered on its
own: ``code`` 200 for a server on a host, 404 (``failed``) for an unknown
server, 422 (``failed``) for one no host has (still a build request, or
in cell0); the response is a 404 when no event was accepted, else 207
when some event failed, else 200.

What an accepted event does in Berth, which has no network, volume or
accelerator service and so never waits for one of their events:

* ``power-update`` (2.76; ``tag`` POWER_ON or POWER_OFF, what a bare
  metal service reports after a power change Berth did not make): an
  ACTIVE server becomes STOPPED (power state SHUTDOWN) or a STOPPED one
  ACTIVE (RUNNING), with a ``power_update`` instance action, in one
  write guarded on no task running. A server already in the target
  state, or busy with a task, is left alone (Nova ignores it too).
* every other event: logged; there is nothing that waits for it. That
  is also true of ``accelerator-request-bound`` (2.82; a flavor naming an
  accelerator device profile is refused, so no server waits for its
  devices) and ``volume-reimaged`` (2.93; no server boots from a volume).
"""

import logging

from common.db import instance_records
from common import exception
from common.objects import instance as instance_obj
from services.api import cell_hosts
from services.api import errors
from services.api import policies
from services.api.schemas import external_events as schema
from services.api import server_lookup
from services.api import util

LOG = logging.getLogger(__name__)

POWER_ON, POWER_OFF = 'POWER_ON', 'POWER_OFF'
# tag -> (vm_state expected, vm_state set, power_state set)
_POWER = {
    POWER_ON: ('stopped', 'active', instance_obj.RUNNING),
    POWER_OFF: ('active', 'stopped', instance_obj.SHUTDOWN),
}


def _schema(req):
    for first, body_schema in schema.CREATE_BY_VERSION:
        if util.at_least(req, first):
            return body_schema
    return schema.CREATE_BY_VERSION[-1][1]


def _find(ctx, uuid):
    """(instance, cell) of a server on a host, else a failure code."""
    try:
        instance, cell = server_lookup.find(ctx, uuid)
    except errors.NotFound:
        return None, 404
    if cell is None or not instance.host:
        return None, 422
    return (instance, cell), 200


def power_update(ctx, instance, cell, tag):
    """Record the power change ``tag`` reports; True when it applied."""
    expected, vm_state, power_state = _POWER[tag]
    if instance.vm_state != expected or instance.task_state is not None:
        LOG.info('Ignoring power-update %s for server %s: vm_state %s, '
                 'task_state %s', tag, instance.uuid, instance.vm_state,
                 instance.task_state)
        return False
    try:
        instance_records.begin_action(
            ctx, cell_hosts.database(cell), instance.uuid, 'power_update',
            {'vm_state': vm_state, 'power_state': power_state},
            expected_task_state=(None,))
    except (exception.UnexpectedTaskStateError,
            exception.InstanceNotFound):
        LOG.info('Ignoring power-update %s for server %s: it changed '
                 'meanwhile', tag, instance.uuid)
        return False
    return True


def _check_tags(events):
    for event in events:
        if event['name'] == 'power-update' and event.get('tag') not in (
                POWER_ON, POWER_OFF):
            raise errors.BadRequest(
                'Invalid tag for power-update event %s: it must be %s or '
                '%s.' % (event['server_uuid'], POWER_ON, POWER_OFF))


def create_events(req):
    """POST /os-server-external-events: 200, 207 or 404.

    :raises errors.BadRequest: a bad body, or a power-update whose tag is
        neither POWER_ON nor POWER_OFF (nothing is applied).
    :raises errors.NotFound: no event names a server on a host.
    """
    policies.authorize(req, 'os_compute_api:os-server-external-events:'
                            'create')
    events = util.extract_json(req, _schema(req))['events']
    _check_tags(events)
    ctx = util.context(req)
    answers = []
    for event in events:
        answer = dict(event)
        answer.setdefault('status', 'completed')
        found, answer['code'] = _find(ctx, event['server_uuid'])
        if found is None:
            answer['status'] = 'failed'
        elif event['name'] == 'power-update':
            power_update(ctx, found[0], found[1], event['tag'])
        else:
            LOG.info('External event %s (%s) for server %s: nothing in '
                     'Berth waits for it', event['name'],
                     event.get('tag'), event['server_uuid'])
        answers.append(answer)
    if all(a['code'] != 200 for a in answers):
        raise errors.NotFound('No instances found for any event')
    status = 200 if all(a['code'] == 200 for a in answers) else 207
    return util.json_response({'events': answers}, status=status)
