# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Moves in progress count on both of their nodes until they end."""

import uuid

from common.objects import flavor as flavor_obj
from common.objects import migration as migration_obj
from tests.unit.compute import test_resource_tracker as rt_tests


def _flavor(vcpus, memory_mb=512):
    return flavor_obj.Flavor(name='f%d' % vcpus, flavorid='f%d' % vcpus,
                             vcpus=vcpus, memory_mb=memory_mb,
                             root_gb=1).to_primitive()


def _migrate(conductor, instance, source, dest, old, new, **fields):
    return conductor.add_migration(
        uuid=str(uuid.uuid4()), instance_uuid=instance['uuid'],
        migration_type=fields.pop('migration_type', migration_obj.RESIZE),
        status=fields.pop('status', migration_obj.PRE_MIGRATING),
        source_compute=source, source_node=source, dest_compute=dest,
        dest_node=dest, old_flavor=old, new_flavor=new, **fields)


def _used(agent):
    agent.update_all()
    row = agent.conductor.nodes[('cn', 'cn')]
    return row['vcpus_used'], row['memory_mb_used'] - 512


def test_incoming_move_counts_the_new_flavor_and_its_pins(make_agent):
    agent = make_agent()
    conductor = agent.conductor
    agent.start()
    moving = conductor.add_instance('other', vcpus=1, memory_mb=256)
    conductor.instances[moving['uuid']]['migration_context'] = {
        'new_numa_topology': rt_tests._pinned([4, 5], memory=1024)}
    migration = _migrate(conductor, moving, 'other', 'cn', _flavor(1, 256),
                         _flavor(2, 1024))
    assert _used(agent) == (2, 1024)
    cell = conductor.nodes[('cn', 'cn')]['numa_topology']['cells'][0]
    assert cell['pinned_cpus'] == [4, 5]
    migration['status'] = migration_obj.ERROR
    conductor.migrations[migration['uuid']] = migration
    assert _used(agent) == (0, 0)


def test_outgoing_move_keeps_the_old_flavor_until_it_ends(make_agent):
    agent = make_agent()
    conductor = agent.conductor
    agent.start()
    # NOTE: the resize finished on the destination: the row is there.
    moved = conductor.add_instance('other', vcpus=2, memory_mb=1024)
    migration = _migrate(conductor, moved, 'cn', 'other', _flavor(1, 256),
                         _flavor(2, 1024), status=migration_obj.FINISHED)
    assert _used(agent) == (1, 256)
    conductor.migrations[migration['uuid']]['status'] = \
        migration_obj.CONFIRMED
    assert _used(agent) == (0, 0)


def test_same_host_resize_counts_both_flavors(make_agent):
    agent = make_agent()
    conductor = agent.conductor
    resized = conductor.add_instance('cn', vcpus=1, memory_mb=256)
    agent.start()
    migration = _migrate(conductor, resized, 'cn', 'cn', _flavor(1, 256),
                         _flavor(2, 1024))
    assert _used(agent) == (3, 1280)
    # NOTE: finished: the row has the new flavor, the old one is still
    # held for a revert.
    conductor.instances[resized['uuid']]['flavor'] = _flavor(2, 1024)
    conductor.migrations[migration['uuid']]['status'] = \
        migration_obj.FINISHED
    assert _used(agent) == (3, 1280)
    conductor.migrations[migration['uuid']]['status'] = \
        migration_obj.CONFIRMED
    assert _used(agent) == (2, 1024)


def test_move_claim_counts_once_before_and_after_it_finishes(make_agent):
    agent = make_agent()
    conductor = agent.conductor
    agent.start()
    moving = conductor.add_instance('other', vcpus=1, memory_mb=256)
    migration = _migrate(conductor, moving, 'other', 'cn', _flavor(1, 256),
                         _flavor(1, 256),
                         migration_type=migration_obj.MIGRATION)
    tracker = agent.tracker('cn')
    claim = tracker.move_claim(moving, migration['uuid'], _flavor(1, 256),
                               {}, 'cn', None)
    assert claim.migration_uuid == migration['uuid']
    assert _used(agent) == (1, 256)
    # NOTE: the compute finishes the move: the row names this node.
    conductor.instances[moving['uuid']].update(host='cn', node='cn')
    tracker.finish_move_claim(migration['uuid'])
    conductor.migrations[migration['uuid']]['status'] = \
        migration_obj.FINISHED
    assert _used(agent) == (1, 256)


def test_schedulers_hear_of_rows_only(make_agent, conf):
    conf.config(group='filter_scheduler', track_instance_changes=True)
    agent = make_agent()
    conductor = agent.conductor
    mine = conductor.add_instance('cn')
    agent.start()
    moving = conductor.add_instance('other')
    migration = _migrate(conductor, moving, 'other', 'cn', _flavor(1),
                         _flavor(1), migration_type=migration_obj.MIGRATION)
    assert _used(agent) == (2, 1024)
    told = [i['uuid'] for i in agent.tracker('cn').scheduler.infos[-1][1]]
    assert told == [mine['uuid']]
    assert migration['uuid'] not in told


def test_audit_keeps_the_allocations_of_moves(make_agent, placement):
    agent = make_agent()
    conductor = agent.conductor
    agent.start()
    root = conductor.nodes[('cn', 'cn')]['uuid']
    moving = conductor.add_instance('other')
    migration = _migrate(conductor, moving, 'other', 'cn', _flavor(1),
                         _flavor(1), migration_type=migration_obj.MIGRATION)
    leaving = conductor.add_instance('far')
    outgoing = _migrate(conductor, leaving, 'cn', 'far', _flavor(1),
                        _flavor(1), migration_type=migration_obj.MIGRATION)
    gone = str(uuid.uuid4())
    for consumer in (moving['uuid'], outgoing['uuid'], gone):
        rt_tests._allocate(placement, consumer, root)
    agent.update_all()
    assert rt_tests._allocations(placement, root) == {
        moving['uuid'], outgoing['uuid']}
    del migration


def test_claims_of_ended_moves_are_dropped(make_agent):
    agent = make_agent()
    conductor = agent.conductor
    agent.start()
    moving = conductor.add_instance('other', vcpus=2, memory_mb=1024)
    migration = _migrate(conductor, moving, 'other', 'cn', _flavor(2, 1024),
                         _flavor(2, 1024),
                         migration_type=migration_obj.MIGRATION)
    agent.tracker('cn').move_claim(moving, migration['uuid'],
                                   _flavor(2, 1024), {}, 'cn', None)
    assert _used(agent) == (2, 1024)
    # NOTE: the conductor ended the move (a stuck one, or an error): the
    # destination stops counting its claim at the next update.
    conductor.migrations[migration['uuid']]['status'] = migration_obj.ERROR
    assert _used(agent) == (0, 0)
    assert migration['uuid'] not in agent.tracker('cn').nodes['cn'].claims


def test_claim_of_a_live_migration_not_started_stands(make_agent):
    # NOTE: between the destination's pre-check (its claim) and the
    # source starting the copy, the migration is still accepted: an
    # update in that window must not take the claim away.
    agent = make_agent()
    conductor = agent.conductor
    agent.start()
    moving = conductor.add_instance('other', vcpus=2, memory_mb=1024)
    migration = _migrate(conductor, moving, 'other', 'cn', _flavor(2, 1024),
                         _flavor(2, 1024), status=migration_obj.ACCEPTED,
                         migration_type=migration_obj.LIVE_MIGRATION)
    tracker = agent.tracker('cn')
    tracker.move_claim(moving, migration['uuid'], _flavor(2, 1024), {},
                       'cn', None)
    assert _used(agent) == (2, 1024)
    assert _used(agent) == (2, 1024)
    assert tracker.holds_claim(migration['uuid'])
    conductor.migrations[migration['uuid']]['status'] = migration_obj.ERROR
    assert _used(agent) == (0, 0)
    assert not tracker.holds_claim(migration['uuid'])
