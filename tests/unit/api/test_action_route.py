# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""POST /servers/{id}/action: the envelope and the dispatch table."""

import pytest

from services.api import actions
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
