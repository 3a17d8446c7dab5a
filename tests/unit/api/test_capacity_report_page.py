# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""GET /os-berth-capacity/report: the capacity report page, for admins.

berth-api asks a scheduler (its ``headroom`` RPC, replaced here) for the
headroom of each public flavor, and the page shows it as the manage
command's does.
"""

import re

import oslo_messaging as messaging
import pytest

from services.api.handlers import capacity
from tests.unit.api import helpers
from tests.unit.api.helpers import V
from tests.unit.capacity_report import fixtures

PATH = V + '/os-berth-capacity/report'


class _Scheduler(object):
    """Answers headroom by flavor name; raises ``error`` when given."""

    def __init__(self, error=None):
        self.asked = []
        self.specs = {}
        self.error = error

    def headroom(self, ctxt, spec, aggregate=None):
        self.asked.append(spec.flavor.name)
        self.specs[spec.flavor.name] = spec
        if self.error:
            raise self.error
        if spec.flavor.name == 'pinned':
            return {'total': 0, 'per_zone': {}, 'stranded': {
                'MEMORY_MB': {'free': 4096, 'hosts': 2, 'by_reason': {
                    'NUMA: the instance topology does not fit': 4096}}}}
        return {'total': 9, 'per_zone': {'az7': 4, 'nova': 5},
                'stranded': {}}


@pytest.fixture
def scheduler(monkeypatch):
    fake = _Scheduler()
    monkeypatch.setattr(capacity, 'scheduler_api', lambda: fake)
    return fake


def _section(text, section_id):
    found = re.search(r'<section id="%s">(.*?)</section>' % section_id,
                      text, re.S)
    assert found, section_id
    return found.group(1)


def test_admins_get_the_page(world, scheduler):
    world.add_host('node1')
    world.add_host('node2')
    status, body, _r = world.client.post(V + '/os-aggregates', {
        'aggregate': {'name': 'rack7', 'availability_zone': 'az7'}})
    assert status == 200
    status, _b, _r = world.client.post(
        V + '/os-aggregates/%s/action' % body['aggregate']['id'],
        {'add_host': {'host': 'node2'}})
    assert status == 200
    status, _body, resp = world.client.get(PATH)
    assert status == 200
    assert resp.content_type == 'text/html'
    text = resp.body.decode('utf-8')
    assert text.startswith('<!DOCTYPE html>')
    assert '2 compute hosts' in text
    assert '1 / 64' in text  # VCPU: used / (16 x 4.0)
    assert '<td class="name">node2</td><td>az7</td><td>rack7</td>' in text
    assert fixtures.external_references(text) == []


def test_the_page_shows_headroom_per_flavor(world, scheduler):
    world.add_host('node1')
    helpers.make_flavor(world.client, name='small', vcpus=1, ram=512)
    helpers.make_flavor(world.client, name='pinned', vcpus=2, ram=1024,
                        specs={'hw:cpu_policy': 'dedicated'})
    status, _body, resp = world.client.get(PATH)
    assert status == 200
    text = resp.body.decode('utf-8')
    assert 'id="notes"' not in text
    # NOTE: smallest first, each asked once, with the boot's NUMA request.
    assert scheduler.asked == ['small', 'pinned']
    assert scheduler.specs['small'].numa_topology is None
    assert scheduler.specs['pinned'].numa_topology is not None
    headroom = _section(text, 'headroom')
    assert '<svg' in headroom
    assert '<th>az7</th><th>nova</th>' in headroom
    assert '<td class="name">small</td><td>9</td><td>4</td><td>5</td>' \
        in headroom
    assert '<td class="name">pinned</td><td>0</td>' in headroom
    stranded = _section(text, 'stranded')
    assert '<svg' in stranded
    assert ('<td class="name">pinned</td><td>MEMORY_MB</td><td>4096</td>'
            '<td>2</td><td>NUMA: the instance topology does not fit '
            '(4096)</td>') in stranded
    # NOTE: heat map, headroom, stranded, zones (no aggregate: no chart).
    assert text.count('<svg') == 4


def test_no_scheduler_leaves_a_note_not_an_error(world, monkeypatch):
    late = _Scheduler(messaging.MessagingTimeout('late'))
    monkeypatch.setattr(capacity, 'scheduler_api', lambda: late)
    world.add_host('node1')
    helpers.make_flavor(world.client, name='small')
    helpers.make_flavor(world.client, name='big', ram=4096)
    status, _body, resp = world.client.get(PATH)
    assert status == 200
    text = resp.body.decode('utf-8')
    # NOTE: the first flavor's silence tells; the next is not waited for.
    assert late.asked == ['small']
    assert 'no scheduler answered the headroom request in time' in text
    assert 'Not available' in _section(text, 'headroom')
    assert 'node1' in text


def test_a_failing_flavor_is_named_and_the_others_shown(world, monkeypatch):
    class _Failing(_Scheduler):
        def headroom(self, ctxt, spec, aggregate=None):
            if spec.flavor.name == 'odd':
                raise messaging.RemoteError('ValueError', 'boom')
            return super().headroom(ctxt, spec, aggregate)
    monkeypatch.setattr(capacity, 'scheduler_api', lambda: _Failing())
    world.add_host('node1')
    helpers.make_flavor(world.client, name='small')
    helpers.make_flavor(world.client, name='odd', ram=4096)
    status, _body, resp = world.client.get(PATH)
    assert status == 200
    text = resp.body.decode('utf-8')
    assert 'No headroom for flavor odd: the scheduler failed: boom' in text
    assert '<td class="name">small</td><td>9</td>' in _section(
        text, 'headroom')


def test_others_are_refused(world, scheduler):
    status, body, _r = world.client.get(PATH, token='alice:projA')
    assert status == 403
    assert body['forbidden']['message'] == (
        "Policy doesn't allow berth:capacity:report to be performed.")
    assert scheduler.asked == []


def test_a_flavor_a_boot_would_refuse_is_named(world, scheduler):
    world.add_host('node1')
    helpers.make_flavor(world.client, name='small')
    # NOTE: more NUMA nodes than vCPUs: a boot gets a 400 for it.
    helpers.make_flavor(world.client, name='split', vcpus=1, ram=1024,
                        specs={'hw:numa_nodes': '4'})
    status, _body, resp = world.client.get(PATH)
    assert status == 200
    text = resp.body.decode('utf-8')
    assert scheduler.asked == ['small']
    assert 'No headroom for flavor split: ' in text
    assert '<td class="name">split</td>' not in _section(text, 'headroom')
