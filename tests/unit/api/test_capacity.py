# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""GET /os-berth-capacity/headroom: the spec it sends, its refusals."""

import oslo_messaging as messaging
import pytest

from services.api.handlers import capacity
from tests.unit.api import helpers
from tests.unit.api.helpers import V

PATH = V + '/os-berth-capacity/headroom'


class _Scheduler(object):
    def __init__(self, error=None):
        self.calls = []
        self.error = error

    def headroom(self, ctxt, spec, aggregate=None):
        self.calls.append((spec, aggregate))
        if self.error:
            raise self.error
        return {'total': 7, 'per_host': {'h1': 7}}


@pytest.fixture
def scheduler(monkeypatch):
    fake = _Scheduler()
    monkeypatch.setattr(capacity, 'scheduler_api', lambda: fake)
    return fake


def test_headroom_builds_the_boot_spec(world, scheduler):
    client = world.client
    helpers.make_flavor(client, name='pinned', vcpus=2)
    image = helpers.make_image(client, name='cirros', visibility='public')
    status, body, _r = client.get(
        PATH + '?flavor=pinned&image=cirros&az=az1&aggregate=rack1'
        '&hint=k%3Dv&hint=k%3Dw')
    assert status == 200, body
    assert body == {'headroom': {'total': 7, 'per_host': {'h1': 7}}}
    spec, aggregate = scheduler.calls[0]
    assert (spec.flavor.name, spec.image.id, spec.availability_zone,
            aggregate) == ('pinned', image, 'az1', 'rack1')
    assert spec.scheduler_hints == {'k': ['v', 'w']}


@pytest.mark.parametrize('query, message', [
    ('', "'flavor' is a required property"),
    ('?flavor=nope', 'Flavor nope could not be found.'),
    ('?flavor=pub&colour=red', 'Additional properties'),
    ('?flavor=pub&flavor=pub', 'more than once'),
    ('?flavor=pub&hint=novalue', 'does not match'),
    ('?flavor=pub&image=nope', 'nope could not be found'),
    ('?flavor=pub&hint=group%3Dnope', 'nope'),
])
def test_bad_queries_are_400(world, scheduler, query, message):
    helpers.make_flavor(world.client, name='pub')
    status, body, _r = world.client.get(PATH + query)
    assert status == 400, body
    assert message in body['badRequest']['message']
    assert scheduler.calls == []


def test_no_scheduler_is_503(world, monkeypatch):
    monkeypatch.setattr(capacity, 'scheduler_api', lambda: _Scheduler(
        messaging.MessagingTimeout('late')))
    helpers.make_flavor(world.client, name='pub')
    status, body, _r = world.client.get(PATH + '?flavor=pub')
    assert status == 503, body
