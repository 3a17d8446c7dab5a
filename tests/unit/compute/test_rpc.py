# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The compute service over ``fake://``: one RPC server for every host."""

import pytest

from common import context
from common.placement import client as placement_client
from common import rpc
from common import servicegroup
from common import servicegroup_conductor
from services.compute import cmd
from services.compute import manager
from services.compute import rpcapi
from services.compute import service as compute_service
from services.conductor import rpcapi as conductor_rpcapi
from tests.unit.compute import fakes
from tests.unit.compute import test_build
from tests.unit import rpc_versions
from tests.unit import waiting

CTXT = context.get_admin_context()


@pytest.fixture
def services(conf, placement):
    """Two simulated hosts' services, started on fake://."""
    rpc.register_opts(rpc.CONF)
    conf.config(transport_url='fake:///', rpc_response_timeout=5,
                report_interval=1)
    conf.config(group='fake_driver', host_count=2)
    rpc.init(rpc.CONF)
    made = cmd.build_services(
        conf.conf, conductor=fakes.FakeConductor(),
        scheduler=fakes.FakeScheduler(),
        placement=placement_client.PlacementClient(conf.conf,
                                                   adapter=placement),
        wait_for_conductor=False)
    for svc in made:
        svc.start()
    yield made
    for svc in made:
        svc.stop()
    for svc in made:
        svc.wait()
    rpc.cleanup()


def test_versions_in_sync():
    rpc_versions.assert_versions_in_sync(rpcapi.ComputeAPI,
                                         manager.ComputeManager)


def test_one_service_serves_every_host(services):
    assert len(services) == 1
    svc = services[0]
    assert isinstance(svc, compute_service.ComputeService)
    assert (svc.host, svc.hosts) == ('cn-0', ['cn-0', 'cn-1'])
    agent = svc.agent
    assert agent.joined == {'cn-0', 'cn-1'}
    conductor = agent.conductor
    assert {h for h, _b in conductor.services} == {'cn-0', 'cn-1'}
    assert set(conductor.nodes) == {('cn-0', 'cn-0'), ('cn-1', 'cn-1')}
    # NOTE: one listener for both hosts, and one heartbeat loop for both.
    assert len(svc.rpcserver.servers) == 1
    assert [loop.name for loop in svc._loops][:1] == [
        'berth-compute-heartbeat']
    assert waiting.wait_for(lambda: conductor.calls.count(
        'service_report_many') >= 1)


def test_casts_reach_the_named_host(services, placement):
    agent = services[0].agent
    inst, spec, sel = test_build._boot(agent, placement, host='cn-1')
    api = rpcapi.ComputeAPI()
    api.build_and_run_instance(CTXT, 'cn-1', inst, spec, sel, [])
    assert waiting.wait_for(lambda: agent.conductor.instances[inst['uuid']][
        'vm_state'] == 'active')
    assert list(agent.driver.list_guests('cn-1')) == [inst['uuid']]
    assert agent.driver.list_guests('cn-0') == {}
    api.terminate_instance(CTXT, 'cn-1', inst['uuid'])
    assert waiting.wait_for(lambda: inst['uuid'] in agent.conductor.deleted)
    assert agent.driver.list_guests('cn-1') == {}


def test_power_casts_reach_the_named_host(services, placement):
    agent = services[0].agent
    inst, spec, sel = test_build._boot(agent, placement, host='cn-1')
    api = rpcapi.ComputeAPI()
    api.build_and_run_instance(CTXT, 'cn-1', inst, spec, sel, [])
    row = agent.conductor.instances[inst['uuid']]
    assert waiting.wait_for(lambda: row['vm_state'] == 'active')
    for method, task, args, vm_state in (
            ('stop_instance', 'powering-off', {}, 'stopped'),
            ('start_instance', 'powering-on', {}, 'active'),
            ('reboot_instance', 'rebooting_hard', {'reboot_type': 'HARD'},
             'active'),
            ('pause_instance', 'pausing', {}, 'paused'),
            ('unpause_instance', 'unpausing', {}, 'active'),
            ('suspend_instance', 'suspending', {}, 'suspended'),
            ('resume_instance', 'resuming', {}, 'active')):
        row['task_state'] = task
        getattr(api, method)(CTXT, 'cn-1', inst['uuid'], **args)
        assert waiting.wait_for(lambda: (row['vm_state'], row[
            'task_state']) == (vm_state, None)), method


def test_a_cast_for_a_host_not_served_is_dropped(services, placement):
    agent = services[0].agent
    inst, spec, sel = test_build._boot(agent, placement, host='cn-1')
    mgr = services[0].manager
    with pytest.raises(manager.UnknownHost):
        mgr.build_and_run_instance(CTXT, inst, spec, sel, [], host='cn-9')
    assert agent.driver.list_guests('cn-1') == {}


def test_update_interval(conf):
    conf.config(update_resources_interval=0)
    assert compute_service.update_interval(conf.conf) == 60
    conf.config(update_resources_interval=5)
    assert compute_service.update_interval(conf.conf) == 5
    conf.config(update_resources_interval=-1)
    assert compute_service.update_interval(conf.conf) is None


def test_conductor_service_group_driver():
    conductor = fakes.FakeConductor()
    group = servicegroup.API(servicegroup_conductor.ConductorDriver(
        conductor))
    record = group.join('h1', 'berth-compute', 'compute')
    assert (record.host, record.report_count) == ('h1', 0)
    assert group.report('h1', 'berth-compute').report_count == 1
    group.driver.report_many(['h1'], 'berth-compute')
    assert group.get('h1', 'berth-compute').report_count == 2
    assert group.get('h2', 'berth-compute') is None
    assert group.service_is_up(group.get('h1', 'berth-compute'))
    with pytest.raises(NotImplementedError):
        group.get_all()


def test_servicegroup_driver_conductor_is_registered_by_the_agent(conf):
    # NOTE: common/ cannot build the conductor's client itself; the
    # compute agent's cmd registers the ``conductor`` name with one.
    rpc.register_opts(rpc.CONF)
    conf.config(transport_url='fake:///', servicegroup_driver='conductor')
    rpc.init(rpc.CONF)
    try:
        driver = servicegroup.API().driver
    finally:
        rpc.cleanup()
    assert isinstance(driver, servicegroup_conductor.ConductorDriver)
    assert isinstance(driver.conductor, conductor_rpcapi.ConductorAPI)
    assert driver.conductor.client.target.topic == 'conductor'


def test_image_pre_cache_call_answers_per_image(services):
    agent = services[0].agent
    api = rpcapi.ComputeAPI()
    image = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
    assert api.cache_images(CTXT, 'cn-1', [image]) == {image: 'cached'}
    assert api.cache_images(CTXT, 'cn-1', [image]) == {image: 'existing'}
    assert agent.driver.cached_images == {'cn-0': set(), 'cn-1': {image}}
