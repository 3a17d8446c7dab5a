# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The agent's incremental copy of a host's instances, and the usage the
periodic update builds from it when others change those instances."""

import datetime

from oslo_utils import timeutils
import pytest

from common import context
from services.compute import instance_sync
from tests.unit.compute import fakes

CTXT = context.get_admin_context()
DAY_AGO = (timeutils.utcnow() - datetime.timedelta(days=1)).isoformat()


class Unreachable(Exception):
    pass


class CountingConductor(fakes.FakeConductor):
    """The fake conductor, remembering each sync's ``changed_since`` and
    the hosts of each batched sync.
    """

    def __init__(self):
        super().__init__()
        self.asked = []
        self.synced_together = []
        self.fail = False

    def instances_sync_hosts(self, ctxt, since_by_host):
        self.synced_together.append(sorted(since_by_host))
        return super().instances_sync_hosts(ctxt, since_by_host)

    def instances_get_by_host(self, ctxt, host, changed_since=None):
        self.asked.append(changed_since)
        if self.fail:
            raise Unreachable()
        return super().instances_get_by_host(ctxt, host, changed_since)


@pytest.fixture
def conductor():
    return CountingConductor()


def _uuids(rows):
    return sorted(r['uuid'] for r in rows)


def _old(conductor, host='cn', **fields):
    return conductor.add_instance(host, created_at=DAY_AGO, **fields)['uuid']


def test_first_a_full_fetch_then_only_changes(conductor):
    kept = _old(conductor)
    _old(conductor, host='other')
    sync = instance_sync.HostInstances(conductor, 'cn')
    assert _uuids(sync.fetch(CTXT)) == [kept]
    assert sync.fetch(CTXT)[0]['uuid'] == kept
    assert conductor.asked[0] == '1970-01-01T00:00:00'
    since = timeutils.parse_isotime(conductor.asked[1]).replace(tzinfo=None)
    # NOTE: the overlap: the sync starts before the last reply's time.
    assert timeutils.utcnow() - since >= instance_sync.OVERLAP
    assert sync.fetches == {'full': 1, 'incremental': 1}


def test_changes_by_others_are_seen_at_the_next_fetch(conductor):
    resized = _old(conductor)
    deleted = _old(conductor)
    moved = _old(conductor)
    sync = instance_sync.HostInstances(conductor, 'cn')
    sync.fetch(CTXT)
    conductor.instance_update(CTXT, resized, {'flavor': {'vcpus': 4}})
    conductor.instance_destroy(CTXT, deleted)
    conductor.instance_update(CTXT, moved, {'host': 'other'})
    arrived = conductor.add_instance('cn')['uuid']
    came_back = _old(conductor, host='other')
    conductor.instance_update(CTXT, came_back, {'host': 'cn'})
    rows = {r['uuid']: r for r in sync.fetch(CTXT)}
    assert sorted(rows) == sorted([resized, arrived, came_back])
    assert rows[resized]['flavor'] == {'vcpus': 4}
    assert sync.fetches['full'] == 1


def test_a_row_without_a_recent_change_makes_a_full_fetch(conductor):
    sync = instance_sync.HostInstances(conductor, 'cn')
    sync.fetch(CTXT)
    # NOTE: created with its build request's older time, never updated.
    late = _old(conductor)
    assert _uuids(sync.fetch(CTXT)) == [late]
    assert sync.fetches == {'full': 2, 'incremental': 1}
    assert conductor.asked[-1] == '1970-01-01T00:00:00'


def test_a_full_fetch_every_so_often(conductor):
    _old(conductor)
    sync = instance_sync.HostInstances(conductor, 'cn', full_sync_every=2)
    for _ in range(7):
        sync.fetch(CTXT)
    # NOTE: full, 2 incremental, full, 2 incremental, full.
    assert sync.fetches == {'full': 3, 'incremental': 4}


def test_a_failed_fetch_leaves_the_copy_and_its_time(conductor):
    kept = _old(conductor)
    sync = instance_sync.HostInstances(conductor, 'cn')
    sync.fetch(CTXT)
    sync.fetch(CTXT)
    conductor.fail = True
    with pytest.raises(Unreachable):
        sync.fetch(CTXT)
    conductor.fail = False
    assert _uuids(sync.fetch(CTXT)) == [kept]
    assert conductor.asked[-1] == conductor.asked[-2]


def test_usage_follows_what_others_did_between_updates(make_agent):
    agent = make_agent()
    conductor = agent.conductor
    resized = conductor.add_instance('cn', vcpus=1, created_at=DAY_AGO)
    deleted = conductor.add_instance('cn', vcpus=2, created_at=DAY_AGO)
    moved = conductor.add_instance('cn', vcpus=1, created_at=DAY_AGO)
    agent.start()
    agent.update_all()
    assert conductor.nodes[('cn', 'cn')]['vcpus_used'] == 4
    flavor = dict(resized['flavor'], vcpus=3)
    conductor.instance_update(CTXT, resized['uuid'], {'flavor': flavor})
    conductor.instance_destroy(CTXT, deleted['uuid'])
    conductor.instance_update(CTXT, moved['uuid'], {'host': 'elsewhere'})
    conductor.add_instance('cn', vcpus=2)
    agent.update_all()
    row = conductor.nodes[('cn', 'cn')]
    assert (row['vcpus_used'], row['running_vms']) == (5, 2)
    sync = agent.tracker('cn').instances
    assert sync.fetches['incremental'] >= 2 and sync.fetches['full'] == 1


def test_an_agent_of_many_hosts_reads_and_saves_them_together(make_agent):
    """One instances_sync_hosts call and one compute_nodes_save per
    update for every host of the agent, and usage still follows what
    changed on each host.
    """
    agent = make_agent(fake_driver={'host_count': 3})
    conductor = agent.conductor
    hosts = sorted(agent.trackers)
    first = conductor.add_instance(hosts[0], vcpus=1, created_at=DAY_AGO)
    conductor.add_instance(hosts[2], vcpus=2, created_at=DAY_AGO)
    agent.start()
    agent.update_all()
    del conductor.calls[:]
    flavor = dict(first['flavor'], vcpus=3)
    conductor.instance_update(CTXT, first['uuid'], {'flavor': flavor})
    conductor.add_instance(hosts[1], vcpus=2)
    result = agent.update_all()
    assert conductor.calls.count('instances_sync_hosts') == 1
    assert 'instances_get_by_host' not in conductor.calls
    assert 'compute_node_save' not in conductor.calls
    assert conductor.calls.count('compute_nodes_save') == 1
    assert result.records_saved == 2
    used = {host: conductor.nodes[(host, host)]['vcpus_used']
            for host in hosts}
    assert used == {hosts[0]: 3, hosts[1]: 2, hosts[2]: 2}


def test_full_syncs_of_busy_hosts_are_read_in_smaller_batches(conductor):
    """A batch's full syncs are bounded by the rows each host returned
    last time; incremental ones count one row each.
    """
    copies = []
    for index, count in enumerate((3, 3, 5, 1)):
        host = 'h%d' % index
        for _ in range(count):
            conductor.add_instance(host, vcpus=1, created_at=DAY_AGO)
        kept = instance_sync.HostInstances(conductor, host,
                                           full_sync_every=0)
        kept.fetch(CTXT)
        copies.append(kept)
    replies = instance_sync.sync_many(conductor, CTXT, copies, batch=10,
                                      rows=6)
    assert sorted(replies) == ['h0', 'h1', 'h2', 'h3']
    assert [len(replies[h]['uuids']) for h in sorted(replies)] == [
        3, 3, 5, 1]
    assert conductor.synced_together == [['h0', 'h1'], ['h2', 'h3']]
