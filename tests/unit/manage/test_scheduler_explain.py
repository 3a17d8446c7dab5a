# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""berth-manage scheduler explain: the request it builds, what it prints."""

import json

import pytest

from common.conf import CONF
from common.db import api_tables
from common import rpc
from services.manage import scheduler
from tests.unit.db import records_fixtures as fx

EXPLAINED = {
    'placement_query': 'resources=DISK_GB:1,MEMORY_MB:512,VCPU:2',
    'candidates': 3, 'hosts': 3,
    'filters': [{'filter': 'AvailabilityZoneFilter', 'hosts_in': 3,
                 'hosts_out': 2, 'removed': [['h3', 'h3']]}],
    'rejections': {'h3:h3': {'filter': 'AvailabilityZoneFilter',
                             'reason': 'zone az1 requested'}},
    'weighed': [{'host': 'h1', 'node': 'h1', 'weight': 1.5,
                 'weighers': {'RAMWeigher': 1.0, 'CPUWeigher': 0.5}}],
    'selected': [['h1', 'h1']], 'notes': [], 'summary': '3 hosts'}


class _Scheduler(object):
    def __init__(self, answer):
        self.answer = answer
        self.specs = []

    def explain(self, ctxt, spec, timeout=None):
        self.specs.append(spec)
        self.timeout = timeout
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.fixture
def explain(manage, world, monkeypatch):
    """``explain(answer, **args)`` -> (exit code, the spec sent)."""
    def insert(ctx):
        flavor_id = ctx.session.execute(api_tables.flavors.insert().values(
            flavorid='f2', name='m1.pinned', vcpus=2, memory_mb=512,
            root_gb=1)).inserted_primary_key[0]
        ctx.session.execute(api_tables.flavor_extra_specs.insert().values(
            flavor_id=flavor_id, key='hw:cpu_policy', value='dedicated'))
    world.api.writer(insert)(fx.ctxt())
    rpc.register_opts(CONF)
    CONF.set_override('transport_url', 'fake:///')
    monkeypatch.setattr(scheduler, 'reachable', lambda conf: None)

    def run(answer, **args):
        fake = _Scheduler(answer)
        monkeypatch.setattr(scheduler, '_scheduler', lambda: fake)
        values = dict(flavor='m1.pinned', image=None, image_property=None,
                      availability_zone=None, hint=None, num_instances=1,
                      project_id='admin', json=False, via_scheduler=True,
                      timeout=5)
        values.update(args)
        code = manage(scheduler.explain, 'scheduler', **values)
        return code, fake.specs[0] if fake.specs else None
    yield run
    CONF.clear_override('transport_url')


def test_explain_prints_each_stage(explain, capsys):
    code, spec = explain(EXPLAINED, availability_zone='az1:h1',
                         hint=['different_host=abc'],
                         image_property=['hw_cpu_thread_policy=prefer'])
    assert code == 0
    assert (spec.availability_zone, spec.force_hosts) == ('az1', ['h1'])
    assert spec.scheduler_hints == {'different_host': ['abc']}
    assert spec.image.properties == {'hw_cpu_thread_policy': 'prefer'}
    assert spec.numa_topology is not None
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith('Request: flavor m1.pinned (2 vCPU')
    assert 'Filter AvailabilityZoneFilter: 3 -> 2 (removed h3:h3)' in out
    assert '  h3:h3: AvailabilityZoneFilter: zone az1 requested' in out
    assert out[-1] == 'Would select: h1 (h1)'


def test_explain_no_valid_host_and_json(explain, capsys):
    answer = dict(EXPLAINED, selected=[], summary='3 hosts: 3 rejected')
    assert explain(answer)[0] == 1
    assert capsys.readouterr().out.splitlines()[-1] == \
        'No valid host: 3 hosts: 3 rejected'
    assert explain(answer, json=True)[0] == 1
    assert json.loads(capsys.readouterr().out)['summary'] == \
        '3 hosts: 3 rejected'


def test_explain_refuses_bad_input(explain, capsys):
    assert explain(EXPLAINED, flavor='nope') == (127, None)
    assert explain(EXPLAINED, hint=['novalue']) == (127, None)
    assert explain(EXPLAINED, availability_zone='a:b:c:d') == (127, None)
    assert explain(EXPLAINED, image_property=[
        'hw_cpu_thread_policy=avoid']) == (127, None)
    assert explain(EXPLAINED, hint=['group=nope']) == (127, None)
    assert explain(EXPLAINED, num_instances=0) == (127, None)


def test_unreachable_scheduler_is_one_line(explain, capsys):
    code, _spec = explain(RuntimeError('MessagingTimeout'))
    assert code == scheduler.UNREACHABLE
    assert capsys.readouterr().out == \
        'no scheduler answered within 5s: RuntimeError\n'


def test_offline_dry_run_is_the_default(explain, monkeypatch, capsys):
    from tests.unit.scheduler import fakes as sched_fakes
    from tests.unit.scheduler import test_scheduling
    pipeline, _placement = test_scheduling.make(
        [sched_fakes.host('h1'), sched_fakes.host('h2')], filters=[])
    monkeypatch.setattr(scheduler, '_offline', lambda conf: pipeline)
    code, spec = explain(EXPLAINED, via_scheduler=False, image_property=[
        'hw_cpu_policy=shared'], flavor='m1.pinned')
    assert spec is None                 # the RPC client was not asked
    out = capsys.readouterr().out.splitlines()
    # NOTE: the fake placement has no PCPU: the pinned flavor fits nowhere.
    assert code == 1 and out[-1].startswith('No valid host')

    def down(conf):
        raise scheduler.Unreachable('the api database at db:3306 is '
                                    'unreachable: Connection refused')
    monkeypatch.setattr(scheduler, 'reachable', down)
    code, _spec = explain(EXPLAINED, via_scheduler=False)
    assert code == scheduler.UNREACHABLE
    assert capsys.readouterr().out.count('\n') == 1
