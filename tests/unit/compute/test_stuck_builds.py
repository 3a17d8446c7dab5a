# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Builds that never finish: ended at start-up and by the build timeout."""

import datetime

from oslo_utils import timeutils
import pytest

from common import context
from services.compute import agent as agent_mod
from services.compute import build
from services.compute import service as service_mod
from services.compute import stuck_builds
from services.compute.virt import fake
from tests.unit.compute import test_build

CTXT = context.get_admin_context()


@pytest.fixture
def agent(make_agent):
    made = make_agent()
    made.start()
    return made


def _ago(seconds):
    return (timeutils.utcnow() -
            datetime.timedelta(seconds=seconds)).isoformat()


def _faults(conductor, uuid):
    return [f['message'] for f in conductor.faults if f['uuid'] == uuid]


class Clock(object):
    """A monotonic clock the test moves."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _restarted(agent, conf, placement, clock=None):
    """A new agent of the same hosts, conductor and placement."""
    restarted = agent_mod.ComputeAgent(
        conf.conf, fake.FakeDriver(conf.conf), agent.conductor,
        agent.report, scheduler=agent.scheduler, wait_for_conductor=False)
    if clock is not None:
        restarted.pending_builds = stuck_builds.PendingBuilds(
            conf.conf.compute.restart_build_grace, clock=clock)
    return restarted


def test_restart_ends_the_builds_the_last_agent_dropped(agent, conf,
                                                        placement):
    # NOTE: taken by the agent that stopped before it spawned (task
    # scheduling), one cast while it was down (still queued), and one it
    # was spawning.
    taken, _spec, _sel = test_build._boot(agent, placement)
    queued, spec, sel = test_build._boot(agent, placement)
    spawning = agent.conductor.add_instance('cn', vm_state='building',
                                            task_state='spawning')['uuid']
    active = agent.conductor.add_instance('cn')['uuid']
    agent.stop()

    clock = Clock()
    restarted = _restarted(agent, conf, placement, clock)
    try:
        restarted.start()
        rows = agent.conductor.instances
        assert (rows[spawning]['vm_state'], rows[spawning]['task_state']) \
            == ('error', None)
        for uuid in (taken['uuid'], queued['uuid']):
            assert rows[uuid]['task_state'] == 'scheduling'
        # NOTE: the queued cast arrives once the agent consumes again.
        build.BuildTask(restarted, CTXT, 'cn', queued, spec, sel,
                        []).run()
        assert rows[queued['uuid']]['vm_state'] == 'active'
        assert restarted.end_unclaimed_builds() == []
        clock.now += 60
        assert restarted.end_unclaimed_builds() == [taken['uuid']]
        assert restarted.end_unclaimed_builds() == []
    finally:
        restarted.stop()
    for uuid in (taken['uuid'], spawning):
        assert (rows[uuid]['vm_state'], rows[uuid]['task_state']) == (
            'error', None)
        assert rows[uuid]['host'] == 'cn'
        assert 'interrupted by a restart' in _faults(agent.conductor,
                                                     uuid)[0]
    for uuid in (active, queued['uuid']):
        assert rows[uuid]['vm_state'] == 'active'
        assert not _faults(agent.conductor, uuid)
    # NOTE: an instance in ERROR on a host keeps its allocation until it
    # is deleted, as in Nova.
    assert test_build._allocation(placement, taken['uuid'])


def test_without_grace_every_build_ends_at_start(make_agent, conf,
                                                 placement):
    agent = make_agent(compute={'restart_build_grace': 0})
    agent.start()
    inst, _spec, _sel = test_build._boot(agent, placement)
    agent.stop()
    restarted = _restarted(agent, conf, placement)
    try:
        restarted.start()
        assert len(restarted.pending_builds) == 0
    finally:
        restarted.stop()
    assert agent.conductor.instances[inst['uuid']]['vm_state'] == 'error'


def test_a_cast_arriving_after_the_end_keeps_the_error(agent, placement):
    inst, spec, sel = test_build._boot(agent, placement)
    assert stuck_builds.error_out(agent.conductor, CTXT, 'cn', inst, 'x')
    # NOTE: the build cast that waited in the host's queue too long.
    build.BuildTask(agent, CTXT, 'cn', inst, spec, sel, []).run()
    row = agent.conductor.instances[inst['uuid']]
    assert (row['vm_state'], row['task_state']) == ('error', None)
    assert agent.driver.list_guests('cn') == {}
    assert test_build._allocation(placement, inst['uuid'])


def test_a_failed_end_is_tried_again(agent, monkeypatch):
    inst = agent.conductor.add_instance('cn', vm_state='building',
                                        task_state='scheduling')
    clock = Clock()
    agent.pending_builds = stuck_builds.PendingBuilds(0.5, clock=clock)
    agent.pending_builds.add('cn', inst)
    clock.now += 1
    calls = []

    def down(*args, **kwargs):
        calls.append(args)
        raise RuntimeError('conductor unreachable')
    monkeypatch.setattr(agent.conductor, 'instance_update', down)
    assert agent.end_unclaimed_builds() == []
    assert len(agent.pending_builds) == 1 and calls
    monkeypatch.undo()
    clock.now += 1
    assert agent.end_unclaimed_builds() == [inst['uuid']]


def test_build_timeout(make_agent, placement):
    agent = make_agent(compute={'instance_build_timeout': 60})
    agent.start()
    conductor = agent.conductor
    old = conductor.add_instance('cn', vm_state='building',
                                 task_state='scheduling',
                                 created_at=_ago(120))['uuid']
    young = conductor.add_instance('cn', vm_state='building',
                                   task_state='scheduling',
                                   created_at=_ago(5))['uuid']
    old_active = conductor.add_instance('cn', created_at=_ago(600))['uuid']
    deleting = conductor.add_instance('cn', vm_state='building',
                                      task_state='deleting',
                                      created_at=_ago(600))['uuid']
    elsewhere = conductor.add_instance('other', vm_state='building',
                                       task_state='scheduling',
                                       created_at=_ago(600))['uuid']

    assert agent.check_build_timeouts() == [old]
    rows = conductor.instances
    assert (rows[old]['vm_state'], rows[old]['task_state']) == (
        'error', None)
    assert rows[old]['host'] == 'cn'
    assert 'timed out' in _faults(conductor, old)[-1]
    assert rows[young]['vm_state'] == 'building'
    assert rows[old_active]['vm_state'] == 'active'
    assert rows[deleting]['task_state'] == 'deleting'
    assert rows[elsewhere]['vm_state'] == 'building'
    assert _faults(conductor, young) == []
    # NOTE: nothing is left to end on the next check.
    assert agent.check_build_timeouts() == []


def test_build_timeout_disabled_does_nothing(make_agent):
    agent = make_agent()
    agent.start()
    uuid = agent.conductor.add_instance('cn', vm_state='building',
                                        task_state='scheduling',
                                        created_at=_ago(10 ** 6))['uuid']
    assert agent.check_build_timeouts() == []
    assert agent.conductor.instances[uuid]['vm_state'] == 'building'


def test_a_build_that_moved_on_is_left_alone(make_agent):
    agent = make_agent()
    conductor = agent.conductor
    inst = conductor.add_instance('cn', vm_state='building',
                                  task_state='scheduling')
    conductor.instances[inst['uuid']]['task_state'] = 'spawning'
    assert not stuck_builds.error_out(conductor, CTXT, 'cn', inst, 'x')
    assert conductor.instances[inst['uuid']]['vm_state'] == 'building'
    assert not conductor.faults
    conductor.instance_destroy(CTXT, inst['uuid'])
    assert not stuck_builds.error_out(conductor, CTXT, 'cn', inst, 'x')


def test_check_interval():
    assert stuck_builds.check_interval(0) is None
    assert stuck_builds.check_interval(15) == 15
    assert stuck_builds.check_interval(3600) == 60


def test_the_service_runs_the_check_only_when_configured(make_agent):
    def loops(agent):
        svc = service_mod.ComputeService(agent, manager=None)
        svc._start_loops()
        try:
            return [loop.name for loop in svc._loops]
        finally:
            for loop in svc._loops:
                loop.stop()

    assert 'berth-compute-build-timeouts' not in loops(make_agent())
    assert 'berth-compute-build-timeouts' in loops(
        make_agent(compute={'instance_build_timeout': 30}))
    agent = make_agent()
    assert 'berth-compute-build-recovery' not in loops(agent)
    agent.pending_builds.add('cn', {'uuid': 'u'})
    assert 'berth-compute-build-recovery' in loops(agent)
