# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""os-simple-tenant-usage, as Nova's API reference describes it."""

import datetime

import pytest

from common.db import cells
from common.db import instance_records
from tests.unit.api.helpers import V

URL = V + '/os-simple-tenant-usage'
DAY = datetime.datetime(2026, 3, 1)
PERIOD = 'start=2026-03-01T00:00:00&end=2026-03-02T00:00:00'


def _instance(world, project='projA', launched=None, terminated=None,
              deleted=False, cell='cell1'):
    values = {'launched_at': launched}
    if terminated is not None:
        values['terminated_at'] = terminated
    uuid = world.add_instance(cell, host='node1', project_id=project,
                              **values)
    if deleted:
        instance_records.destroy_instance(
            world.admin_context(),
            cells.get_cell_database(world.urls[cell]), uuid)
    return uuid


@pytest.fixture
def usage_world(world):
    """projA: one server running all day (flavor 1 vCPU, 512 MB, 1 GB),
    one deleted at noon after starting at 06:00; projB: one launched the
    day before and still running; one never launched (not counted) and
    one terminated before the period (not counted).
    """
    world.add_host('node1')
    hour = datetime.timedelta(hours=1)
    world.ids = {
        'running': _instance(world, launched=DAY - hour),
        'deleted': _instance(world, launched=DAY + 6 * hour,
                             terminated=DAY + 12 * hour, deleted=True),
        'other': _instance(world, project='projB', launched=DAY - 24 * hour),
    }
    _instance(world)
    _instance(world, launched=DAY - 48 * hour, terminated=DAY - 24 * hour,
              deleted=True)
    return world


def test_list_all_projects_with_details(usage_world):
    status, body, _ = usage_world.client.get(URL + '?detailed=1&' + PERIOD)
    assert status == 200, body
    by_project = {u['tenant_id']: u for u in body['tenant_usages']}
    assert set(by_project) == {'projA', 'projB'}
    usage = by_project['projA']
    assert usage['total_hours'] == pytest.approx(24 + 6)
    assert usage['total_vcpus_usage'] == pytest.approx(30)
    assert usage['total_memory_mb_usage'] == pytest.approx(30 * 512)
    assert usage['total_local_gb_usage'] == pytest.approx(30)
    assert usage['start'] == '2026-03-01T00:00:00'
    assert usage['stop'] == '2026-03-02T00:00:00'
    servers = {s['instance_id']: s for s in usage['server_usages']}
    ids = usage_world.ids
    assert set(servers) == {ids['running'], ids['deleted']}
    gone = servers[ids['deleted']]
    assert gone['state'] == 'terminated' and gone['hours'] == 6
    assert gone['ended_at'] == '2026-03-01T12:00:00'
    assert gone['uptime'] == 6 * 3600
    live = servers[ids['running']]
    assert (live['state'], live['ended_at'], live['flavor']) == (
        'active', None, 'm1')
    assert set(live) == {'hours', 'flavor', 'instance_id', 'name',
                         'tenant_id', 'started_at', 'ended_at', 'state',
                         'uptime', 'vcpus', 'memory_mb', 'local_gb'}
    for query in ('', 'detailed=0&'):
        status, body, _ = usage_world.client.get(URL + '?' + query + PERIOD)
        assert all('server_usages' not in u for u in body['tenant_usages'])
    status, body, _ = usage_world.client.get(URL + '?detailed=True&' + PERIOD)
    assert all('server_usages' in u for u in body['tenant_usages'])


def test_show_one_project(usage_world):
    status, body, _ = usage_world.client.get(
        URL + '/projB?' + PERIOD, token='bob:projB')
    assert status == 200, body
    usage = body['tenant_usage']
    assert usage['total_hours'] == pytest.approx(24)
    assert [s['instance_id'] for s in usage['server_usages']] == [
        usage_world.ids['other']]
    assert usage_world.client.get(URL + '/projB?' + PERIOD,
                                  token='alice:projA')[0] == 403
    assert usage_world.client.get(URL, token='bob:projB')[0] == 403
    status, body, _ = usage_world.client.get(
        URL + '/nobody?' + PERIOD)
    assert (status, body) == (200, {'tenant_usage': {}})


@pytest.mark.parametrize('query,message', [
    ('start=yesterday', 'Invalid datetime string'),
    ('end=2026-13-01T00:00:00', 'Invalid datetime string'),
    ('start=2026-03-02T00:00:00&end=2026-03-01T00:00:00',
     'Invalid start time. The start time cannot occur after the end time.'),
])
def test_bad_periods_are_400(usage_world, query, message):
    status, body, _ = usage_world.client.get(URL + '?' + query)
    assert status == 400
    assert message in body['badRequest']['message']


def test_paging_from_2_40(usage_world):
    status, body, _ = usage_world.client.get(
        URL + '?detailed=1&limit=2&' + PERIOD, version='2.40')
    [link] = body['tenant_usages_links']
    assert link['rel'] == 'next' and 'limit=2' in link['href']
    first = [s['instance_id'] for u in body['tenant_usages']
             for s in u['server_usages']]
    assert len(first) == 2
    marker = link['href'].split('marker=')[1]
    assert marker == first[-1]
    status, body, _ = usage_world.client.get(
        URL + '?detailed=1&limit=2&marker=%s&' % marker + PERIOD,
        version='2.40')
    rest = [s['instance_id'] for u in body['tenant_usages']
            for s in u['server_usages']]
    assert set(first + rest) == set(usage_world.ids.values())
    assert 'tenant_usages_links' not in body
    # NOTE: before 2.40 limit is no paging parameter: everything comes.
    status, body, _ = usage_world.client.get(
        URL + '?detailed=1&limit=1&' + PERIOD, version='2.39')
    assert sum(len(u['server_usages']) for u in body['tenant_usages']) == 3
    assert usage_world.client.get(URL + '?marker=nope', version='2.40')[
        0] == 400
    status, body, _ = usage_world.client.get(
        URL + '/projA?limit=1&' + PERIOD, version='2.40')
    assert 'tenant_usage_links' in body
