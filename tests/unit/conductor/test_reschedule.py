# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""build_instances: a failed build moves to its alternates, or ends."""

import pytest

from common.conf import CONF
from common.db import boot_records
from common.db import instance_records
from common.objects import instance as instance_obj
from common.objects import request_spec as spec_obj
from common.objects import selection as selection_obj
from services.conductor import build_flow
from services.conductor import reschedule
from tests.unit.conductor import fakes
from tests.unit.db import records_fixtures as fx


@pytest.fixture
def world(tmp_path):
    world = fakes.World(tmp_path)
    yield world
    world.close()


def _built(world):
    """One instance built on h1; (instance, spec, alternates) as the
    compute holds them, after it removed its own allocation.
    """
    spec, instances = world.boot(1)
    build_flow.schedule_and_build_instances(world.manager, fx.ctxt(), spec,
                                            [instances[0].uuid], instances)
    build = world.compute.builds.pop()
    world.placement.delete('/allocations/%s' % instances[0].uuid, '1.36')
    return (instance_obj.Instance.from_primitive(build['instance']),
            spec_obj.RequestSpec.from_primitive(build['request_spec']),
            [selection_obj.Selection.from_primitive(a)
             for a in build['alternates']])


def _reschedule(world, instance, spec, alternates, reason='spawn failed'):
    return reschedule.build_instances(world.manager, fx.ctxt(), instance,
                                      spec, alternates, 'h1', 'h1', reason)


def test_moves_to_the_first_alternate_and_its_allocation(world):
    instance, spec, alternates = _built(world)
    assert _reschedule(world, instance, spec, alternates) == 'h2'
    row = instance_records.get_instance(fx.ctxt(), world.cell1,
                                        instance.uuid)
    assert (row.host, row.node, row.task_state) == ('h2', 'h2',
                                                    'scheduling')
    assert list(world.placement.allocations(instance.uuid)) == [
        world.nodes['h2']]
    build, = world.compute.builds
    assert build['host'] == 'h2'
    assert [a['service_host'] for a in build['alternates']] == ['h3']
    assert build['request_spec']['retry'] == {
        'num_attempts': 2, 'hosts': [['h1', 'h1']]}
    saved = boot_records.get_request_spec(fx.ctxt(), instance.uuid,
                                          database=world.api)
    assert saved.retry.num_attempts == 2


def test_skips_an_alternate_that_is_full(world):
    instance, spec, alternates = _built(world)
    world.placement.capacity[world.nodes['h2']]['VCPU'] = 0
    assert _reschedule(world, instance, spec, alternates) == 'h3'
    assert list(world.placement.allocations(instance.uuid)) == [
        world.nodes['h3']]
    assert world.compute.builds[0]['alternates'] == []


def test_claims_with_the_consumer_generation_when_needed(world):
    instance, spec, alternates = _built(world)
    # A consumer that still exists in placement, holding nothing.
    world.placement.consumers[instance.uuid] = {
        'allocations': {}, 'generation': 4, 'project_id': 'p1',
        'user_id': 'u1'}
    assert _reschedule(world, instance, spec, alternates) == 'h2'


def test_no_alternate_left_is_an_error_without_allocation(world):
    instance, spec, alternates = _built(world)
    for node in world.nodes.values():
        world.placement.capacity[node]['VCPU'] = 0
    assert _reschedule(world, instance, spec, alternates,
                       reason='disk full') is None
    row = instance_records.get_instance(fx.ctxt(), world.cell1,
                                        instance.uuid)
    assert row.vm_state == 'error' and row.host is None
    assert row.fault['message'].startswith(
        'Exceeded maximum number of retries. Exhausted all hosts')
    assert 'disk full' in row.fault['details']
    assert world.placement.allocations(instance.uuid) == {}
    assert world.compute.builds == []
    assert world.notifier.sent[-1][1] == 'instance.create.error'


def test_attempts_are_bounded_by_max_attempts(world):
    instance, spec, alternates = _built(world)
    CONF.set_override('max_attempts', 2, group='scheduler')
    try:
        assert _reschedule(world, instance, spec, alternates) == 'h2'
        instance = instance_obj.Instance.from_primitive(
            world.compute.builds[0]['instance'])
        spec = spec_obj.RequestSpec.from_primitive(
            world.compute.builds[0]['request_spec'])
        world.placement.delete('/allocations/%s' % instance.uuid, '1.36')
        left = [selection_obj.Selection.from_primitive(a)
                for a in world.compute.builds[0]['alternates']]
        assert left
        assert reschedule.build_instances(
            world.manager, fx.ctxt(), instance, spec, left, 'h2', 'h2',
            'again') is None
    finally:
        CONF.clear_override('max_attempts', group='scheduler')
    row = instance_records.get_instance(fx.ctxt(), world.cell1,
                                        instance.uuid)
    assert row.vm_state == 'error'
    assert world.placement.allocations(instance.uuid) == {}


def test_deleted_during_the_reschedule_gives_the_claim_back(world):
    instance, spec, alternates = _built(world)
    instance_records.destroy_instance(fx.ctxt(), world.cell1, instance.uuid)
    assert _reschedule(world, instance, spec, alternates) is None
    assert world.placement.allocations(instance.uuid) == {}
    assert world.compute.builds == []
