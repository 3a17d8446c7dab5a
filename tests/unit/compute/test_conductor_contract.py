# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The agent through the real ConductorAPI client over ``fake://``.

The conductor's side is the in-memory FakeConductor served as an RPC
endpoint: what crosses the wire is exactly what the client sends, so a
method name or keyword the contract does not have fails here.
"""

import oslo_messaging as messaging
import pytest

from common import context
from common.placement import client as placement_client
from common import rpc
from services.compute import build
from services.compute import cmd
from services.compute import delete
from services.conductor import rpcapi as conductor_rpcapi
from tests.unit.compute import fakes
from tests.unit.compute import test_build
from tests.unit import waiting

CTXT = context.get_admin_context()


@pytest.fixture(params=[fakes.FakeConductor])
def wired(request, conf, placement):
    """(agent, in-memory conductor) with RPC between them."""
    rpc.register_opts(rpc.CONF)
    conf.config(transport_url='fake:///', rpc_response_timeout=5)
    rpc.init(rpc.CONF)
    records = request.param()
    topics = [conductor_rpcapi.RPC_TOPIC, conductor_rpcapi.RECORDS_TOPIC]
    server = rpc.ServerGroup([rpc.get_server(messaging.Target(
        topic=topic, server='conductor-1'), [records]) for topic in topics])
    server.start()
    agent = cmd.build_agent(
        conf.conf, conductor=conductor_rpcapi.ConductorAPI(),
        scheduler=fakes.FakeScheduler(),
        placement=placement_client.PlacementClient(conf.conf,
                                                   adapter=placement),
        wait_for_conductor=False)
    yield agent, records
    agent.stop()
    server.stop()
    server.wait()
    rpc.cleanup()


def test_records_and_heartbeats(wired):
    agent, records = wired
    agent.start()
    assert ('cn', 'cn') in records.nodes
    record = agent.servicegroup.join('cn', 'berth-compute', 'compute')
    agent.joined_service('cn')
    assert record.host == 'cn'
    agent.report_services()
    assert records.services[('cn', 'berth-compute')].report_count == 1


def test_build_failure_and_delete(wired, placement, conf):
    agent, records = wired
    agent.start()
    # NOTE: the instance rows live with the endpoint; the helper adds
    # them there and returns the build arguments.
    agent.conductor, real = records, agent.conductor
    inst, spec, sel = test_build._boot(agent, placement)
    agent.conductor = real
    conf.config(group='fake_driver', fail_hosts=['cn'])
    build.BuildTask(agent, CTXT, 'cn', inst, spec, sel,
                    [dict(sel, service_host='b')]).run()
    # NOTE: build_instances is a cast: wait for it to arrive.
    assert waiting.wait_for(lambda: records.rebuilds)
    assert records.rebuilds[0]['failed_host'] == 'cn'
    assert records.faults and records.instances[inst['uuid']][
        'task_state'] == 'scheduling'
    conf.config(group='fake_driver', fail_hosts=[])
    records.instances[inst['uuid']].update(host='cn', node='cn')
    build.BuildTask(agent, CTXT, 'cn', inst, spec, sel, []).run()
    assert records.instances[inst['uuid']]['vm_state'] == 'active'
    delete.terminate(agent, CTXT, 'cn', inst['uuid'])
    assert inst['uuid'] in records.deleted
    # NOTE: a second delete meets InstanceNotFound across RPC: handled.
    delete.terminate(agent, CTXT, 'cn', inst['uuid'])


def test_instances_are_synced_incrementally(wired):
    agent, records = wired
    records.add_instance('cn', vcpus=3)
    agent.start()
    agent.update_all()
    assert records.nodes[('cn', 'cn')]['vcpus_used'] == 3
    assert agent.tracker('cn').instances.fetches == {
        'full': 1, 'incremental': 1}


def test_build_records_its_action_event(wired, placement):
    """The events ride on the instance updates; no calls of their own."""
    agent, records = wired
    agent.start()
    agent.conductor, real = records, agent.conductor
    inst, spec, sel = test_build._boot(agent, placement)
    agent.conductor = real
    del records.calls[:]

    build.BuildTask(agent, CTXT, 'cn', inst, spec, sel, []).run()

    assert records.instances[inst['uuid']]['vm_state'] == 'active'
    assert [e[2:] for e in records.events] == [
        ('start', None), ('finish', 'Success')]
    assert not {'action_event_start', 'action_event_finish'} & set(
        records.calls)
    assert records.calls.count('instance_update') == 2
    # Neither update is read back.
    assert getattr(records, 'brief_updates', 0) == 2


def test_node_saves_ask_for_the_uuid_only(wired):
    """A node save is answered with the node's id and uuid only."""
    agent, records = wired
    agent.start()
    agent.update_all()
    saves = records.calls.count('compute_node_save')
    assert saves >= 1
    assert records.brief_saves == saves
    assert agent.tracker('cn').nodes['cn'].uuid == \
        records.nodes[('cn', 'cn')]['uuid']
