# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Why here: a boot through the real services keeps its decision record,
read back through the API extension and ``berth-manage scheduler why``.

Every service is its own process (tests/functional/stack.py) on RabbitMQ
and MariaDB. The hosts are identical and empty, so the first server's
host is drawn at random among them, which the record says; the second
server's ``same_host`` hint has no filter enabled, which it says too.

The same stack answers the capacity report: ``berth-manage capacity
report --html`` writes a page that fetches nothing, and berth-api serves
it to admins, with the headroom of each flavor asked of the scheduler;
headless Chromium draws the served page.
"""

import json
import re
import time

import httpx
import pytest

from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import stack as stack_mod
from tests.functional import stack_fixture
from tests.unit.capacity_report import fixtures as report_fixtures

HOSTS = 3
FILTERS = ('AvailabilityZoneFilter', 'ComputeFilter',
           'ComputeCapabilitiesFilter', 'ImagePropertiesFilter')


@pytest.fixture(scope='module')
def stack(database_servers, tmp_path_factory):  # noqa: F811
    with stack_fixture.deployed(
            database_servers, 'mysql',
            str(tmp_path_factory.mktemp('why-here')), hosts=HOSTS,
            extra_conf={
                ('filter_scheduler', 'enabled_filters'): ','.join(FILTERS),
                ('filter_scheduler', 'host_subset_size'): 1,
            }) as deployment:
        yield deployment


def _decisions(stack, server_id):
    return stack.compute.request(
        'GET', '/os-berth-scheduler/decisions/%s' % server_id)


def test_a_boot_keeps_why_it_landed_there(stack):
    api = stack.compute
    flavor = api.create_flavor('why-small', vcpus=1, ram=256, disk=1)
    image = api.create_image('why-image')
    first = api.wait_for_server(
        api.create_server('why-1', flavor, image)['id'])
    assert first['status'] == 'ACTIVE', first
    host = stack_mod.host_of(first)

    body = _decisions(stack, first['id'])
    assert body['host'] == host
    decision, = body['decisions']
    assert decision['kind'] == 'build' and decision['action'] == 'create'
    assert decision['selected'] == [host, host]
    assert decision['candidates'] == HOSTS
    assert [f['filter'] for f in decision['filters']] == list(FILTERS)
    pick = decision['random_pick']
    assert pick['equal_weight'] and pick['drawn_among'] == HOSTS
    assert sorted(h for h, _n in pick['pool']) == stack.host_names()
    assert any('was picked at random among %d hosts of equal weight'
               % HOSTS in note for note in decision['notes'])

    out = stack.manage('scheduler', 'why', first['id'])
    assert out.startswith('Server %s is on %s (%s).' % (first['id'], host,
                                                        host))
    assert 'build at ' in out and 'picked at random' in out


def test_an_ignored_hint_is_named(stack):
    api = stack.compute
    flavor = api.create_flavor('why-hint', vcpus=1, ram=256, disk=1)
    image = api.create_image('why-hint-image')
    anchor = api.wait_for_server(
        api.create_server('why-anchor', flavor, image)['id'])
    hinted = api.wait_for_server(api.create_server(
        'why-hinted', flavor, image,
        hints={'same_host': [anchor['id']]})['id'])
    assert hinted['status'] == 'ACTIVE', hinted
    decision, = _decisions(stack, hinted['id'])['decisions']
    assert decision['ignored_hints'] == [
        {'hint': 'same_host', 'needs': ['SameHostFilter']}]
    body = json.loads(stack.manage('scheduler', 'why', hinted['id'],
                                   '--json'))
    assert body['decisions'][0]['ignored_hints'] == decision[
        'ignored_hints']
    assert 'Ignored hint: same_host (needs SameHostFilter)' in stack.manage(
        'scheduler', 'why', hinted['id'])


def test_a_move_keeps_its_record_beside_the_boots(stack):
    api = stack.compute
    flavor = api.create_flavor('why-move', vcpus=1, ram=256, disk=1)
    image = api.create_image('why-move-image')
    server = api.wait_for_server(
        api.create_server('why-mover', flavor, image)['id'])
    source = stack_mod.host_of(server)
    api.request('POST', '/servers/%s/action' % server['id'],
                {'os-migrateLive': {'host': None,
                                    'block_migration': 'auto'}})
    moved = _wait_moved(api, server['id'], source)
    destination = stack_mod.host_of(moved)

    body = _decisions(stack, server['id'])
    assert body['host'] == destination
    newest, boot = body['decisions']
    assert boot['kind'] == 'build'
    assert newest['kind'] == 'live-migrate'
    assert newest['selected'][0] == destination
    # NOTE: placement offers the source too; the scheduler leaves it out.
    assert newest['candidates'] == HOSTS
    assert newest['filters'][0]['hosts_in'] == HOSTS - 1
    assert "ignored hosts ['%s']" % source in newest['notes']
    out = stack.manage('scheduler', 'why', server['id'], '--all')
    assert out.startswith('Server %s is on %s' % (server['id'],
                                                  destination))
    assert 'live-migrate at ' in out and 'build at ' in out


def _wait_moved(api, server_id, source, timeout=90):
    deadline = time.monotonic() + timeout
    while True:
        server = api.get_server(server_id)
        if (server['status'] == 'ACTIVE' and
                not server['OS-EXT-STS:task_state'] and
                stack_mod.host_of(server) != source):
            return server
        assert server['status'] != 'ERROR', server
        assert time.monotonic() < deadline, server
        time.sleep(0.25)


def test_the_capacity_report(stack, tmp_path):
    stack.compute.create_flavor('report-manage', vcpus=1, ram=256, disk=1)
    path = tmp_path / 'report.html'
    out = stack.manage('capacity', 'report', '--html', str(path))
    assert 'Wrote the capacity report of %d hosts' % HOSTS in out
    text = path.read_text(encoding='utf-8')
    for host in stack.host_names():
        assert '<td class="name">%s</td>' % host in text
    assert text.count('<svg') >= 2
    assert report_fixtures.external_references(text) == []
    answer = stack.compute.request(
        'GET', '/os-berth-capacity/headroom?flavor=report-manage')
    assert _headroom_row(text, 'report-manage') == \
        answer['headroom']['total'] > 0

    resp = httpx.get(stack.api_url + '/v2.1/os-berth-capacity/report',
                     headers={'X-Auth-Token': 'alice:demo'}, timeout=60)
    assert resp.status_code == 403


def _headroom_row(text, flavor):
    """The total of ``flavor``'s row in the page's headroom section."""
    section = re.search(r'<section id="headroom">(.*?)</section>', text,
                        re.S)
    assert section, text[:2000]
    row = re.search(r'<td class="name">%s</td><td>(\d+)</td>'
                    % re.escape(flavor), section.group(1))
    assert row, section.group(1)[-3000:]
    return int(row.group(1))


def test_the_served_report_in_headless_chromium(stack, tmp_path):
    """berth-api's page has headroom per flavor (from a scheduler, as the
    API's headroom answer), and draws in a real browser, offline.
    """
    stack.compute.create_flavor('report-small', vcpus=1, ram=256, disk=1)
    resp = httpx.get(stack.api_url + '/v2.1/os-berth-capacity/report',
                     headers={'X-Auth-Token': 'admin'}, timeout=120)
    assert resp.status_code == 200
    assert resp.headers['content-type'].startswith('text/html')
    text = resp.text
    assert all(host in text for host in stack.host_names())
    assert 'id="notes"' not in text, text[:3000]
    answer = stack.compute.request(
        'GET', '/os-berth-capacity/headroom?flavor=report-small')
    assert _headroom_row(text, 'report-small') == \
        answer['headroom']['total'] > 0
    assert report_fixtures.external_references(text) == []

    chromium = report_fixtures.chromium()
    path = tmp_path / 'served.html'
    path.write_text(text, encoding='utf-8')
    shot = tmp_path / 'served.png'
    result = report_fixtures.run_chromium(
        chromium, tmp_path, '--window-size=1280,2000',
        '--screenshot=%s' % shot, path.as_uri())
    assert shot.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n', \
        result.stderr[-2000:]
    dom = report_fixtures.run_chromium(chromium, tmp_path, '--dump-dom',
                                       path.as_uri()).stdout
    for section in ('utilization', 'headroom', 'stranded', 'placement'):
        assert 'id="%s"' % section in dom
    assert _headroom_row(dom, 'report-small') == \
        answer['headroom']['total']
    headroom = dom[dom.index('id="headroom"'):dom.index('id="stranded"')]
    assert '<svg' in headroom
