# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""GET /os-berth-capacity/report: the capacity report page, for admins."""

from tests.unit.api.helpers import V
from tests.unit.capacity_report import fixtures


def test_admins_get_the_page(world):
    world.add_host('node1')
    world.add_host('node2')
    status, body, _r = world.client.post(V + '/os-aggregates', {
        'aggregate': {'name': 'rack7', 'availability_zone': 'az7'}})
    assert status == 200
    status, _b, _r = world.client.post(
        V + '/os-aggregates/%s/action' % body['aggregate']['id'],
        {'add_host': {'host': 'node2'}})
    assert status == 200
    status, _body, resp = world.client.get(V + '/os-berth-capacity/report')
    assert status == 200
    assert resp.content_type == 'text/html'
    text = resp.body.decode('utf-8')
    assert text.startswith('<!DOCTYPE html>')
    assert '2 compute hosts' in text and text.count('<svg') == 3
    assert '1 / 64' in text  # VCPU: used / (16 x 4.0)
    assert '<td class="name">node2</td><td>az7</td><td>rack7</td>' in text
    assert 'not computed by berth-api' in text
    assert fixtures.external_references(text) == []


def test_others_are_refused(world):
    status, body, _r = world.client.get(V + '/os-berth-capacity/report',
                                        token='alice:projA')
    assert status == 403
    assert body['forbidden']['message'] == (
        "Policy doesn't allow berth:capacity:report to be performed.")
