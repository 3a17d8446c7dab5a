# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The conductor's rebuild: the host check for a new image, the cast."""

import pytest

from common.db import action_records
from common.db import boot_records
from common.db import instance_records
from common.objects import image as image_obj
from services.conductor import build_flow
from services.conductor import rebuild_flow
from tests.unit.conductor import fakes
from tests.unit.db import records_fixtures as fx


@pytest.fixture
def world(tmp_path):
    world = fakes.World(tmp_path)
    yield world
    world.close()


def _active(world):
    """A server built on h1, then marked rebuilding with image img-new as
    the API leaves it; its uuid.
    """
    spec, instances = world.boot(1)
    build_flow.schedule_and_build_instances(world.manager, fx.ctxt(), spec,
                                            [instances[0].uuid], instances)
    world.compute.builds.pop()
    uuid = instances[0].uuid
    instance_records.update_instance(
        fx.ctxt(), world.cell1, uuid, {'vm_state': 'active',
                                       'task_state': None,
                                       'image_ref': 'img-old'})
    instance_records.begin_action(
        fx.ctxt(), world.cell1, uuid, 'rebuild',
        {'task_state': 'rebuilding', 'image_ref': 'img-new',
         'image_meta': {'hw_arch': 'x86_64'}})
    world.scheduler.calls[:] = []
    return uuid


def _rebuild(world, uuid, image_ref='img-new'):
    rebuild_flow.rebuild_instance(world.manager, fx.ctxt(),
                                  rebuild_flow.Rebuild(
                                      instance_uuid=uuid,
                                      image_ref=image_ref,
                                      orig_image_ref='img-old',
                                      orig_vm_state='active',
                                      image_meta=image_obj.ImageMeta(
                                          id=image_ref, properties={
                                              'hw_arch': 'x86_64'}
                                      ).to_primitive(),
                                      orig_image_meta={'os': 'old'}))
    return instance_records.get_instance(fx.ctxt(), world.cell1, uuid)


def test_same_image_casts_without_asking_the_scheduler(world):
    uuid = _active(world)
    _rebuild(world, uuid, image_ref='img-old')
    assert world.scheduler.calls == []
    [cast] = world.compute.rebuilds
    assert cast == {'host': 'h1', 'instance_uuid': uuid,
                    'image_ref': 'img-old', 'orig_vm_state': 'active',
                    'preserve_ephemeral': False}


def test_new_image_checks_only_the_current_host_and_saves_the_spec(world):
    uuid = _active(world)
    allocations = world.placement.allocations(uuid)
    _rebuild(world, uuid)
    [(spec, uuids)] = world.scheduler.calls
    assert uuids == [uuid]
    assert spec['scheduler_hints']['_nova_check_type'] == ['rebuild']
    assert spec['requested_destination']['host'] == 'h1'
    assert spec['requested_destination']['node'] == 'h1'
    assert spec['image']['id'] == 'img-new'
    assert world.compute.rebuilds[0]['image_ref'] == 'img-new'
    stored = boot_records.get_request_spec(fx.ctxt(), uuid,
                                           database=world.api)
    assert stored.image.id == 'img-new'
    sent = [e for _p, e, _d in world.notifier.sent]
    assert sent == ['instance.rebuild_scheduled.start',
                    'instance.rebuild_scheduled.end']
    assert world.placement.allocations(uuid) == allocations


def test_a_host_that_no_longer_fits_puts_the_server_in_error(world):
    uuid = _active(world)
    allocations = world.placement.allocations(uuid)
    world.scheduler.fail = fakes.no_valid_host(
        '1 host: 1 rejected by ImagePropertiesFilter (arch)')
    row = _rebuild(world, uuid)
    assert (row.vm_state, row.task_state) == ('error', None)
    assert row.image_ref == 'img-old'
    assert row.image_meta == {'os': 'old'}
    assert row.fault['message'].startswith('No valid host was found.')
    assert 'ImagePropertiesFilter' in row.fault['message']
    assert not getattr(world.compute, 'rebuilds', [])
    priority, event, payload = world.notifier.sent[-1]
    assert (priority, event) == ('ERROR', 'instance.rebuild_scheduled.error')
    assert payload['nova_object.data']['fault']['exception'] == \
        'NoValidHost'
    stored = boot_records.get_request_spec(fx.ctxt(), uuid,
                                           database=world.api)
    assert stored.image is None or stored.image.id != 'img-new'
    assert world.placement.allocations(uuid) == allocations
    action = action_records.list_actions(fx.ctxt(), world.cell1, uuid)[0]
    assert action['action'] == 'rebuild'
    assert [(e['event'], e['result']) for e in action['events']] == [
        (rebuild_flow.EVENT, 'Error')]


def test_a_server_deleted_meanwhile_is_left_alone(world):
    uuid = _active(world)
    instance_records.destroy_instance(fx.ctxt(), world.cell1, uuid)
    rebuild_flow.rebuild_instance(world.manager, fx.ctxt(),
                                  rebuild_flow.Rebuild(
                                      instance_uuid=uuid, image_ref='i',
                                      orig_image_ref='img-old',
                                      orig_vm_state='active', image_meta={}))
    assert not getattr(world.compute, 'rebuilds', [])
    assert world.scheduler.calls == []
