# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""POST /servers/{id}/action: the envelope and the dispatch table."""

import pytest
import webob

from common import context
from services.api import actions
from services.api.actions import checks
from services.api import errors
from services.api import server_lookup
from services.api import util as api_util
from tests.unit.api.helpers import V


def _message(body):
    [fault] = body.values()
    return fault['message']


def test_unknown_action_is_a_400_naming_it(world):
    server = world.add_instance('cell1', host='c1')
    status, body, _ = world.client.post(
        V + '/servers/%s/action' % server, {'os-explode': None})
    assert status == 400
    assert _message(body) == 'There is no such action: os-explode'


@pytest.mark.parametrize('body', [{}, {'os-stop': None, 'os-start': None},
                                  [], 'os-stop'])
def test_a_body_must_name_exactly_one_action(world, body):
    server = world.add_instance('cell1', host='c1')
    status, reply, _ = world.client.post(
        V + '/servers/%s/action' % server, body)
    assert status == 400, reply


def test_an_action_name_is_claimed_once():
    class One(object):
        ACTIONS = {'os-stop': None}

    with pytest.raises(ValueError, match='os-stop'):
        actions._join([One, One])


def _instance(world, server):
    return server_lookup.find(world.admin_context(), server)


def test_begin_records_the_action_and_the_task_state_at_once(world):
    server = world.add_instance('cell1', host='c1')
    instance, cell = _instance(world, server)

    req = webob.Request.blank('/')
    req.environ[api_util.CONTEXT_KEY] = world.admin_context()
    updated = checks.begin(req, instance, cell, 'stop', 'stop',
                           {'task_state': 'powering-off'})
    assert updated.task_state == 'powering-off'
    status, body, _ = world.client.get(
        V + '/servers/%s/os-instance-actions' % server)
    assert [a['action'] for a in body['instanceActions']] == ['stop']
    with pytest.raises(errors.Conflict,
                       match='while it is in task_state powering-off'):
        checks.begin(req, instance, cell, 'stop', 'stop',
                     {'task_state': 'powering-off'})
    status, body, _ = world.client.get(
        V + '/servers/%s/os-instance-actions' % server)
    assert len(body['instanceActions']) == 1


def test_a_locked_server_refuses_non_admins(world):
    server = world.add_instance('cell1', host='c1', locked=True,
                                locked_by='owner')
    instance, _cell = _instance(world, server)
    checks.check_locked(world.admin_context(), instance)
    with pytest.raises(errors.Conflict, match='Instance %s is locked'
                       % server):
        checks.check_locked(context.RequestContext(
            user_id='u', project_id='admin'), instance)
