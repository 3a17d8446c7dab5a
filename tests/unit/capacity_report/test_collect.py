# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The capacity report's data from the real placement service (in
process) and an api database, and ``berth-manage capacity report``.
"""

import uuid

import pytest

from common.capacity_report import data
from common.conf import CONF
from common.db import api_tables
from common.placement import client as placement_client
from common.placement import microversions
from services.manage import capacity_report
from services.scheduler.capacity import headroom as headroom_mod
from services.scheduler import offline
from tests.unit.capacity_report import fixtures
from tests.unit.compute import fakes as compute_fakes
from tests.unit.db import records_fixtures as fx
from tests.unit.manage.conftest import Conf
from tests.unit.placement import fixtures as placement_fixtures

V = microversions.PROVIDER_TREE


def _uuid(name):
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, name))


@pytest.fixture
def cloud(tmp_path):
    """Two hosts in placement (one with a child provider), an aggregate
    with a zone over one of them, a flavor.
    """
    app = placement_fixtures.setup_app()
    placement_fixtures.wipe_database()
    client = placement_client.PlacementClient(
        CONF, adapter=compute_fakes.WsgiAdapter(app))
    for name, parent in (('cmp1', None), ('cmp2', None),
                         ('cmp1-numa0', 'cmp1')):
        resp = client.create_provider(None, _uuid(name), name,
                                      parent and _uuid(parent), version=V)
        assert resp.ok, resp.body
    for name, inventories in (
            ('cmp1', {'VCPU': {'total': 8, 'allocation_ratio': 2.0},
                      'MEMORY_MB': {'total': 4096, 'reserved': 512}}),
            ('cmp2', {'VCPU': {'total': 8}}),
            ('cmp1-numa0', {'PCPU': {'total': 4}})):
        resp = client.put_inventories(None, _uuid(name), 0, inventories,
                                      version=V)
        assert resp.ok, resp.body
    resp = client.put('/allocations/%s' % _uuid('vm1'), {
        'allocations': {
            _uuid('cmp1'): {'resources': {'VCPU': 4, 'MEMORY_MB': 1024}},
            _uuid('cmp1-numa0'): {'resources': {'PCPU': 2}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None},
        '1.36')
    assert resp.ok, resp.body
    api = fx.api_database(tmp_path)

    def insert(ctx):
        agg = ctx.session.execute(api_tables.aggregates.insert().values(
            uuid=_uuid('agg'), name='rack1')).inserted_primary_key[0]
        ctx.session.execute(api_tables.aggregate_hosts.insert().values(
            aggregate_id=agg, host='cmp1'))
        ctx.session.execute(api_tables.aggregate_metadata.insert().values(
            aggregate_id=agg, key='availability_zone', value='az1'))
        ctx.session.execute(api_tables.flavors.insert().values(
            flavorid='f1', name='m1.small', vcpus=1, memory_mb=512,
            root_gb=1))
    api.writer(insert)(fx.ctxt())
    return client, api


def test_usage_per_host_summed_over_its_tree(cloud):
    client, api = cloud
    report = data.collect(fx.ctxt(), client, api, 'nova')
    cmp1, cmp2 = report.hosts
    assert (cmp1.host, cmp1.zone) == ('cmp1', 'az1')
    assert cmp1.aggregates == ['rack1']
    assert cmp1.usage == {'VCPU': (4, 16), 'MEMORY_MB': (1024, 3584),
                          'PCPU': (2, 4)}
    assert (cmp2.host, cmp2.zone, cmp2.usage) == ('cmp2', 'nova',
                                                  {'VCPU': (0, 8)})
    assert report.headroom is None and report.stranded is None
    assert report.notes == [data.NO_HEADROOM]


def test_headroom_rows_given_by_the_caller(cloud):
    client, api = cloud
    rows = [data.HeadroomRow('m1.small', 3, {'az1': 3})]
    report = data.collect(fx.ctxt(), client, api, 'nova',
                          headroom=lambda: (rows, []))
    assert report.headroom == rows and report.stranded == []
    assert report.notes == []


def test_the_command_writes_an_offline_page(cloud, monkeypatch, tmp_path,
                                            capsys):
    # NOTE: no scheduling pipeline can be built here.
    def unreachable(conf):
        raise offline.Unreachable('placement is down')
    monkeypatch.setattr(offline, 'build', unreachable)
    path = tmp_path / 'report.html'
    client, api = cloud
    monkeypatch.setattr(capacity_report, '_api', lambda conf: api)
    monkeypatch.setattr(capacity_report, '_placement', lambda conf: client)
    assert capacity_report.report(Conf('capacity', html=str(path))) == 0
    out = capsys.readouterr().out
    assert 'Wrote the capacity report of 2 hosts to %s' % path in out
    assert 'Note: Headroom and stranded capacity are not available' in out
    text = path.read_text(encoding='utf-8')
    assert 'cmp1' in text and 'rack1' in text and '<svg' in text
    assert fixtures.external_references(text) == []


class _Headroom(object):
    @staticmethod
    def to_dict():
        return {'total': 5, 'per_zone': {'az1': 2, 'nova': 3},
                'stranded': {'MEMORY_MB': {
                    'free': 2560, 'hosts': 1,
                    'by_reason': {'no VCPU left': 2560}}}}


def test_the_command_wires_the_headroom_function(cloud, monkeypatch,
                                                 tmp_path):
    client, api = cloud
    calls = []

    def headroom(scheduler, ctxt, spec):
        calls.append((scheduler, spec.flavor.name))
        return _Headroom()
    from services.manage import scheduler as scheduler_cmd
    monkeypatch.setattr(headroom_mod, 'headroom', headroom)
    monkeypatch.setattr(scheduler_cmd, '_api', lambda conf: api)
    monkeypatch.setattr(offline, 'build', lambda conf: 'sched')
    rows, stranded, notes = capacity_report._headroom_rows(CONF, fx.ctxt(),
                                                           api)
    assert calls == [('sched', 'm1.small')] and notes == []
    assert rows == [data.HeadroomRow('m1.small', 5, {'az1': 2,
                                                     'nova': 3})]
    assert stranded == [data.StrandedRow('m1.small', 'MEMORY_MB', 2560, 1,
                                         'no VCPU left (2560)')]


def test_public_flavors_smallest_first(cloud):
    _client, api = cloud

    def insert(ctx):
        for flavorid, name, memory, public, disabled in (
                ('f2', 'm1.large', 8192, True, False),
                ('f3', 'secret', 256, False, False),
                ('f4', 'retired', 256, True, True),
                ('f5', 'm1.tiny', 256, True, False)):
            ctx.session.execute(api_tables.flavors.insert().values(
                flavorid=flavorid, name=name, vcpus=1, memory_mb=memory,
                root_gb=1, is_public=public, disabled=disabled))
    api.writer(insert)(fx.ctxt())
    assert data.public_flavors(fx.ctxt(), api) == [
        ('f5', 'm1.tiny'), ('f1', 'm1.small'), ('f2', 'm1.large')]


def test_a_flavor_that_cannot_be_asked_is_a_note():
    def answer(flavorid):
        if flavorid == 'bad':
            raise data.FlavorSkipped('hw:cpu_policy is invalid')
        return {'total': 4, 'per_zone': {'nova': 4}, 'stranded': {
            'VCPU': {'free': 3, 'hosts': 2,
                     'by_reason': {'a': 1, 'b': 2}}}}
    rows, stranded, notes = data.headroom_rows(
        [('bad', 'broken'), ('f1', 'm1.small')], answer)
    assert rows == [data.HeadroomRow('m1.small', 4, {'nova': 4})]
    assert stranded == [data.StrandedRow('m1.small', 'VCPU', 3, 2,
                                         'b (2); a (1)')]
    assert notes == ['No headroom for flavor broken: hw:cpu_policy is '
                     'invalid']


def test_no_headroom_at_all_says_why(cloud):
    client, api = cloud

    def headroom():
        raise data.NoHeadroom('no scheduler answered')
    report = data.collect(fx.ctxt(), client, api, 'nova', headroom=headroom)
    assert report.headroom is None and report.stranded is None
    assert report.notes == ['no scheduler answered']
    assert len(report.hosts) == 2
