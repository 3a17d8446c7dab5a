# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Compute node records saved in batches after builds and deletes."""

import threading

from services.compute import record_saver
from tests.unit.compute import fakes
from tests.unit.compute import test_build


class _Conductor(object):
    """Records each compute_nodes_save call; may fail or hold calls."""

    def __init__(self, fail=False):
        self.calls = []
        self.fail = fail
        self.called = threading.Event()

    def compute_nodes_save(self, ctxt, nodes):
        self.calls.append([(n['host'], n['nodename'], n['values']['used'])
                           for n in nodes])
        self.called.set()
        if self.fail:
            raise RuntimeError('conductor away')
        return [{'id': 1, 'uuid': 'uuid-%s' % n['nodename']}
                for n in nodes]


class _Tracker(object):
    """A tracker whose nodes' usage the test sets."""

    def __init__(self, host, nodes):
        self.host = host
        self.used = dict.fromkeys(nodes, 0)
        self.saved = {}

    def record_to_save(self, nodename):
        used = self.used[nodename]
        if self.saved.get(nodename, (None, None))[0] == used:
            return None
        return {'used': used}

    def record_saved(self, nodename, values, row):
        self.saved[nodename] = (values['used'], row['uuid'])


def _saver(conductor, delay=0.05, hosts=('h1', 'h2')):
    trackers = {h: _Tracker(h, ['%s-a' % h, '%s-b' % h]) for h in hosts}
    return record_saver.RecordSaver(trackers, conductor, delay), trackers


def test_changes_of_a_moment_are_saved_in_one_call():
    conductor = _Conductor()
    saver, trackers = _saver(conductor)
    trackers['h1'].used['h1-a'] = 1
    trackers['h2'].used['h2-b'] = 2
    saver.changed(None, 'h1', 'h1-a')
    saver.changed(None, 'h2', 'h2-b')
    saver.changed(None, 'h1', 'h1-a')
    assert conductor.called.wait(5)
    saver.stop()
    assert conductor.calls == [[('h1', 'h1-a', 1), ('h2', 'h2-b', 2)]]
    assert trackers['h1'].saved == {'h1-a': (1, 'uuid-h1-a')}
    assert trackers['h2'].saved == {'h2-b': (2, 'uuid-h2-b')}


def test_an_unchanged_record_costs_no_call():
    conductor = _Conductor()
    saver, trackers = _saver(conductor, delay=0)
    trackers['h1'].used['h1-a'] = 1
    saver.changed(None, 'h1', 'h1-a')
    saver.changed(None, 'h1', 'h1-a')
    saver.changed(None, 'ghost', 'ghost')
    # NOTE: no delay: saved at once, in the caller's thread.
    assert conductor.calls == [[('h1', 'h1-a', 1)]]


def test_a_failed_save_is_tried_again_with_the_next_change():
    conductor = _Conductor(fail=True)
    saver, trackers = _saver(conductor, delay=0)
    trackers['h1'].used['h1-a'] = 1
    saver.changed(None, 'h1', 'h1-a')
    assert trackers['h1'].saved == {}
    conductor.fail = False
    saver.changed(None, 'h1', 'h1-a')
    assert trackers['h1'].saved == {'h1-a': (1, 'uuid-h1-a')}


def test_stop_saves_what_is_pending():
    conductor = _Conductor()
    saver, trackers = _saver(conductor, delay=30)
    trackers['h2'].used['h2-a'] = 3
    saver.changed(None, 'h2', 'h2-a')
    saver.stop()
    assert conductor.calls == [[('h2', 'h2-a', 3)]]


def test_big_batches_are_split():
    conductor = _Conductor()
    hosts = ['h%03d' % i for i in range(record_saver.BATCH + 5)]
    saver, trackers = _saver(conductor, delay=30, hosts=hosts)
    for host in hosts:
        trackers[host].used['%s-a' % host] = 1
        saver.changed(None, host, '%s-a' % host)
    saver.flush()
    assert [len(c) for c in conductor.calls] == [record_saver.BATCH, 5]
    saver.stop()


def test_a_build_saves_its_node_through_the_saver(make_agent, placement,
                                                  conf):
    agent, _inst = test_build.build_with_batches(make_agent, placement)
    assert isinstance(agent.conductor, fakes.FakeConductor)
    assert 'compute_nodes_save' in agent.conductor.calls
    assert 'compute_node_save' not in agent.conductor.calls
    assert agent.conductor.nodes[('cn', 'cn')]['vcpus_used'] == 1
