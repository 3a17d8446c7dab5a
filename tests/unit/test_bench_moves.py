# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The e2e benchmark's moves phase against a fake compute API that keeps
migrations as Nova lists them (newest first, paged).
"""

import threading

from tests.bench import e2e_moves as moves


class FakeAPI(object):
    """Servers on host ``a``; a move finishes (or completes) on ``b`` as
    soon as it is asked, a confirm confirms; ``fail`` ends that many
    moves ``error``. ``page`` is the list's page size.
    """

    def __init__(self, count, fail=0, page=1000, refuse_confirm=0):
        self.hosts = {'s%d' % i: 'a' for i in range(count)}
        self.migrations = []
        self.fail = fail
        self.refuse_confirm = refuse_confirm
        self.page = page
        self.lists = []
        self.lock = threading.Lock()

    def servers(self):
        return [{'id': uuid, 'OS-EXT-SRV-ATTR:host': host,
                 'status': 'ACTIVE', 'OS-EXT-STS:task_state': None}
                for uuid, host in self.hosts.items()]

    def _list(self, params):
        self.lists.append(dict(params))
        rows = [m for m in reversed(self.migrations)
                if m['migration_type'] == params['migration_type']]
        if 'marker' in params:
            at = [m['uuid'] for m in rows].index(params['marker'])
            rows = rows[at + 1:]
        page = [dict(m) for m in rows[:self.page]]
        body = {'migrations': page}
        if len(page) == self.page:
            body['migrations_links'] = [{'rel': 'next', 'href': 'x'}]
        return body

    def _move(self, uuid, kind, status):
        status = 'error' if self.fail else status
        self.fail = max(0, self.fail - 1)
        if status != 'error':
            self.hosts[uuid] = 'b'
        self.migrations.append({
            'uuid': 'm%d' % len(self.migrations), 'instance_uuid': uuid,
            'migration_type': kind, 'status': status,
            'source_compute': 'a', 'dest_compute': 'b'})

    def call(self, method, path, body=None, params=None, expect=None):
        with self.lock:
            if method == 'GET':
                return self._list(params)
            uuid = path.split('/')[2]
            if 'migrate' in body:
                self._move(uuid, moves.COLD, 'finished')
            elif 'os-migrateLive' in body:
                self._move(uuid, moves.LIVE, 'completed')
            elif self.refuse_confirm:
                self.refuse_confirm -= 1
                raise RuntimeError('400 Instance has not been resized.')
            else:
                latest = [m for m in self.migrations
                          if m['instance_uuid'] == uuid][-1]
                latest['status'] = 'confirmed'


def _cold(api, count):
    servers = api.servers()[:count]
    return moves.Moves(api, servers, 4, 10, moves._migrate, moves.COLD,
                       moves._confirmed, then=moves._confirm,
                       then_when=moves._finished_elsewhere)


def test_cold_migrations_are_confirmed_and_end_confirmed():
    api = FakeAPI(12, page=5)
    cold = _cold(api, 12)
    result = cold.run()
    assert (result['moved'], result['failures']) == (12, [])
    assert {m['status'] for m in api.migrations} == {'confirmed'}
    assert cold.landing_check(api.servers()) == []
    # NOTE: the pages of one poll were followed from marker to marker.
    assert any('marker' in params for params in api.lists)


def test_live_migrations_are_done_when_completed_elsewhere():
    api = FakeAPI(6)
    servers = api.servers()
    result = moves.Moves(api, servers, 2, 10, moves._live, moves.LIVE,
                         moves._completed_elsewhere).run()
    assert (result['moved'], result['failures']) == (6, [])
    assert set(api.hosts.values()) == {'b'}
    assert all(params['migration_type'] == 'live-migration'
               for params in api.lists)


def test_a_failed_migration_is_a_failure_not_a_wait():
    api = FakeAPI(4, fail=1)
    result = _cold(api, 4).run()
    assert result['moved'] == 3
    assert result['failures'][0].endswith('ended error')
    assert result['failures'][-1] == '1 moves refused or failed'


def test_a_refused_confirm_is_a_failure_not_a_wait():
    api = FakeAPI(3, refuse_confirm=1)
    cold = _cold(api, 3)
    result = cold.run()
    # NOTE: settled: the run ended without waiting for that confirm.
    assert cold._settled()
    assert result['failures'][-1] == '1 moves refused or failed'
    assert sorted(m['status'] for m in api.migrations) == [
        'confirmed', 'confirmed', 'finished']


def test_a_server_left_behind_fails_the_landing_check():
    api = FakeAPI(3)
    cold = _cold(api, 3)
    cold.run()
    api.hosts['s1'] = 'a'
    assert cold.landing_check(api.servers()) == [
        '1 moved servers not ACTIVE elsewhere, e.g. s1']
