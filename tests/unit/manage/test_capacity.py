# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""berth-manage capacity headroom / what-if: what they print, exit codes.
"""

import json

import pytest

from common.db import api_tables
from common.objects import instance_group as group_obj
from services.manage import capacity
from services.manage import capacity_servers
from services.manage import scheduler as explain_mod
from tests.unit.db import records_fixtures as fx
from tests.unit.scheduler import fakes
from tests.unit.scheduler import test_scheduling


@pytest.fixture
def pipeline(manage, world, monkeypatch):
    def insert(ctx):
        ctx.session.execute(api_tables.flavors.insert().values(
            flavorid='f1', name='m1.small', vcpus=4, memory_mb=4096,
            root_gb=10))
    world.api.writer(insert)(fx.ctxt())
    scheduler, _placement = test_scheduling.make(
        [fakes.host('h1', vcpus_total=16), fakes.host('h2', vcpus_total=8),
         fakes.host('lost', vcpus_total=8)], filters=None)
    monkeypatch.setattr(explain_mod, 'reachable',
                        lambda conf, timeout=None: None)
    monkeypatch.setattr(capacity, '_pipeline', lambda conf: scheduler)
    return scheduler


def _headroom(manage, **args):
    values = dict(flavor='m1.small', image=None, az=None, aggregate=None,
                  hint=None, project_id='admin', json=False)
    values.update(args)
    return manage(capacity.headroom, 'capacity', **values)


def test_headroom_prints_totals_and_stranded(pipeline, manage, capsys):
    assert _headroom(manage) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ('Headroom for flavor m1.small (4 vCPU, 4096 MiB RAM, '
                      '10 GiB disk): 8 more server(s)')
    assert '  h1: 4 (placement: no VCPU (0 free, 4 needed))' in out
    assert any(line.startswith('  MEMORY_MB ') for line in out)
    assert _headroom(manage, json=True, aggregate='nope') == 0
    assert json.loads(capsys.readouterr().out)['total'] == 0
    assert _headroom(manage, flavor='nope') == 127


def test_what_if_plans_and_reports_what_does_not_fit(pipeline, manage,
                                                     monkeypatch, capsys):
    group = fakes.group(group_obj.ANTI_AFFINITY, hosts=['lost', 'lost'],
                        rules={'max_server_per_host': 1})
    servers = [capacity_servers_server(n, group) for n in ('a', 'b', 'c')]
    monkeypatch.setattr(capacity_servers, 'lost_hosts',
                        lambda ctxt, source, args: ['lost'])
    monkeypatch.setattr(
        capacity_servers, 'servers_on',
        lambda ctxt, source, hosts, cls: (servers, [
            ('u-d', 'd', 'lost', 'no stored request spec')]))
    args = dict(lose='lost', lose_aggregate=None, lose_az=None, json=False)
    assert manage(capacity.what_if, 'capacity', **args) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == 'Losing lost: 4 server(s) to re-place'
    assert out[-1] == 'Result: 2 of 4 server(s) cannot be re-placed.'
    assert '  d (u-d) on lost: no stored request spec' in out
    args['json'] = True
    assert manage(capacity.what_if, 'capacity', **args) == 1
    answer = json.loads(capsys.readouterr().out)
    assert sorted(m['destination'] for m in answer['moves']) == ['h1', 'h2']
    args.update(json=False, lose_az='az1')
    assert manage(capacity.what_if, 'capacity', **args) == 127


def capacity_servers_server(name, group):
    from services.scheduler.capacity import what_if
    return what_if.Server(uuid='u-' + name, name=name, host='lost',
                          spec=fakes.spec(vcpus=1, memory_mb=512,
                                          group=group))
