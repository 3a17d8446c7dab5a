# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The e2e benchmark's actions phase against a fake compute API."""

import threading

from tests.bench import e2e_actions


class FakeAPI(object):
    """Servers that reach an action's end state as soon as it is asked;
    ``refuse`` answers that many starts with an error.
    """

    def __init__(self, count, refuse=0):
        self.states = {'s%d' % i: 'active' for i in range(count)}
        self.refuse = refuse
        self.lock = threading.Lock()

    def call(self, method, path, body=None, params=None, expect=None):
        if method == 'GET':
            with self.lock:
                return {'servers': [
                    {'id': uuid, 'status': state.upper(),
                     'OS-EXT-STS:vm_state': state,
                     'OS-EXT-STS:task_state': None}
                    for uuid, state in self.states.items()]}
        uuid = path.split('/')[2]
        with self.lock:
            if 'os-start' in body and self.refuse:
                self.refuse -= 1
                raise RuntimeError('409 conflict')
            self.states[uuid] = 'stopped' if 'os-stop' in body else 'active'


def test_every_pair_is_measured():
    api = FakeAPI(20)
    servers = api.call('GET', '/servers/detail')['servers']
    result = e2e_actions.Pairs(api, api, servers, 4, timeout=10).run()
    assert (result['pairs'], result['actions'], result['failures']) == (
        20, 40, [])
    assert result['stop_ms']['p50'] >= 0 and result['start_ms']['p95'] >= 0
    assert set(api.states.values()) == {'active'}


def test_refused_actions_are_failures():
    api = FakeAPI(5, refuse=2)
    servers = api.call('GET', '/servers/detail')['servers']
    result = e2e_actions.Pairs(api, api, servers, 2, timeout=10).run()
    assert result['actions'] == 8
    assert result['failures'][-1] == '2 actions refused'
