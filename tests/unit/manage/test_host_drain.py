# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""berth-manage host drain: what it prints, changes and exits with."""

import json

from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg
from oslo_log import log as oslo_log
import pytest

from common.conf import opts
from services.allinone import state as state_mod
from services.manage import compute_client
from services.manage import drain_moves as moves
from services.manage import host_drain
from services.manage import scheduler as explain_mod
from services.scheduler.capacity import what_if
from tests.unit.manage import conftest
from tests.unit.manage import drain_fakes

ANTI_AFFINITY = '2 host(s), rejected: ServerGroupAntiAffinityFilter 2'


@pytest.fixture
def cloud(monkeypatch):
    """h0 holds a (ACTIVE), s (SHUTOFF) and g (no room in its group)."""
    api = drain_fakes.FakeComputeAPI()
    api.add('a', 'h0', name='web')
    api.add('s', 'h0', status='SHUTOFF', name='db')
    api.add('g', 'h0', name='spread-3')
    plans = []

    def plan(conf, host):
        on_host = {s['id'] for s in api.servers_on(host)}
        result = what_if.Plan(lost=[host])
        for uuid, destination in (('s', 'h2'), ('a', 'h1')):
            if uuid in on_host:
                result.moves.append(what_if.Move(
                    server=uuid, name=api.servers[uuid]['name'],
                    source=host, destination=destination,
                    why='best of 2 host(s) that fit (weight 1.000)'))
        if 'g' in on_host:
            result.unplaced.append(what_if.Move(
                server='g', name='spread-3', source=host,
                why=ANTI_AFFINITY))
        plans.append(result)
        return result, []
    monkeypatch.setattr(host_drain, '_compute_api', lambda conf: api)
    monkeypatch.setattr(host_drain, '_plan', plan)
    monkeypatch.setattr(moves, 'POLL_INTERVAL', 0)
    api.plans = plans
    return api


def _drain(host='h0', **args):
    values = dict(drained_host=host, live=False, cold=False, dry_run=False,
                  parallel=1, reason=None, timeout=60, json=False)
    values.update(args)
    return host_drain.drain(conftest.Conf('host', **values))


def test_a_drain_disables_moves_and_leaves_what_cannot_move(cloud, capsys):
    assert _drain(reason='new disks') == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == 'Disabled the compute service of h0: new disks'
    assert cloud.services['h0']['disabled_reason'] == 'new disks'
    assert out[1] == 'Losing h0: 3 server(s) to re-place'
    assert cloud.moves() == [
        ('disable', 'svc-h0', 'new disks'), ('migrate', 's', 'h2'),
        ('confirm_resize', 's'), ('live_migrate', 'a', 'h1')]
    assert out[-4].startswith('Drain of h0 ended in ')
    assert out[-4].endswith(': 2 moved, 1 left, 0 failed.')
    assert out[-3:] == [
        'Left where they are (1):',
        '  spread-3 (g) on h0: left: %s' % ANTI_AFFINITY,
        'Result: 1 server(s) remain on h0.']
    assert cloud.servers['g']['OS-EXT-SRV-ATTR:host'] == 'h0'


def test_a_second_run_on_an_empty_host_says_so(cloud, capsys):
    del cloud.servers['g']
    assert _drain() == 0
    assert capsys.readouterr().out.splitlines()[-1] == 'Result: h0 is empty.'
    reason = cloud.services['h0']['disabled_reason']
    assert reason.startswith('drained by berth-manage at ')
    assert _drain() == 0
    assert capsys.readouterr().out.splitlines() == [
        'The compute service of h0 is already disabled: %s' % reason,
        'Host h0 has no servers: nothing to drain.']


def test_a_rerun_after_an_interruption_finishes_the_job(cloud, capsys):
    # NOTE: killed while db (cold) waited for its confirmation and web
    # (live) was copying: the rerun confirms one, waits for the other.
    del cloud.servers['g']
    cloud.servers['s'].update({'status': 'VERIFY_RESIZE', 'was': 'SHUTOFF',
                               'OS-EXT-SRV-ATTR:host': 'h2'})
    cloud.migration('s', 'h0', 'h2', 'finished')
    cloud.servers['a']['OS-EXT-STS:task_state'] = 'migrating'
    cloud.migration('a', 'h0', 'h1', 'running', kind='live-migration')
    cloud.then('a', {}, {'OS-EXT-SRV-ATTR:host': 'h1',
                         'OS-EXT-STS:task_state': None})
    assert _drain() == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:4] == ['2 move(s) from h0 already under way:',
                        '  s -> h2: migration finished',
                        '  a -> h1: live-migration running']
    assert out[-2].endswith(': 2 moved, 0 left, 0 failed.')
    assert out[-1] == 'Result: h0 is empty.'
    assert [c for c in cloud.moves() if c[0] != 'disable'] == [
        ('confirm_resize', 's')]
    assert cloud.servers['s']['status'] == 'SHUTOFF'


def test_a_users_resize_from_the_host_is_not_confirmed(cloud, capsys):
    del cloud.servers['g']
    del cloud.servers['a']
    cloud.servers['s'].update({'status': 'VERIFY_RESIZE',
                               'OS-EXT-SRV-ATTR:host': 'h2'})
    cloud.migration('s', 'h0', 'h2', 'finished', kind='resize')
    assert _drain() == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == [
        'Left where they are (1):',
        "  db (s) on h2: left: a resize awaiting its owner's confirmation "
        "or revert (the host keeps its allocation until then)",
        'Result: no server is on h0, but 1 move(s) from it did not end '
        '(see above).']
    assert [c for c in cloud.moves() if c[0] != 'disable'] == []


def test_dry_run_changes_nothing(cloud, capsys):
    cloud.migration('x', 'h0', 'h1', 'finished')
    assert _drain(dry_run=True, live=True) == 1
    out = capsys.readouterr().out.splitlines()
    assert cloud.moves() == []
    assert cloud.services['h0']['status'] == 'enabled'
    assert out[0] == 'Would disable the compute service of h0 (dry run).'
    assert out[1] == ('1 move(s) from h0 already under way (a drain would '
                      'wait for or confirm them):')
    assert out[-4:] == [
        '  db (s): left: a SHUTOFF server is not live-migrated (--live '
        'moves ACTIVE and PAUSED servers)',
        '  web (a) h0 -> h1: live migration',
        '  spread-3 (g): left: %s' % ANTI_AFFINITY,
        'Result (dry run): 1 of 3 server(s) would be moved.']
    del cloud.servers['g']
    assert _drain(dry_run=True, json=True) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [(s['server'], s['kind'], s['destination'])
            for s in answer['servers']] == [
        ('s', 'cold', 'h2'), ('a', 'live', 'h1')]
    assert cloud.moves() == []


def test_json_says_where_each_server_went(cloud, capsys):
    cloud.failing.add('h1')
    assert _drain(json=True, parallel=2) == 1
    answer = json.loads(capsys.readouterr().out)
    assert answer['empty'] is False
    assert answer['remaining'] == ['a', 'g']
    assert {s['server']: (s['outcome'], s['host'])
            for s in answer['servers']} == {
        's': ('moved', 'h2'), 'a': ('failed', 'h0'), 'g': ('left', 'h0')}
    assert answer['plan']['unplaced'][0]['why'] == ANTI_AFFINITY


def test_bad_input_and_an_unreachable_cloud(cloud, monkeypatch, capsys):
    assert _drain(host='nohost') == 127
    assert capsys.readouterr().out == \
        'Compute host nohost could not be found.\n'
    assert _drain(parallel=0) == 127
    assert capsys.readouterr().out == '--parallel must be at least 1, not 0\n'

    def unreachable(conf, host):
        raise explain_mod.Unreachable('placement at 127.0.0.1:8778 is '
                                      'unreachable: Connection refused')
    monkeypatch.setattr(host_drain, '_plan', unreachable)
    assert _drain() == 2
    assert capsys.readouterr().out.splitlines()[-1] == (
        'placement at 127.0.0.1:8778 is unreachable: Connection refused')


def _conf(*args):
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    oslo_log.register_options(conf)
    conf(list(args))
    return conf


def test_without_compute_api_options_the_error_says_what_to_set(
        monkeypatch, capsys):
    conf = _conf()
    conf.category = conftest.Conf('host').category
    with pytest.raises(compute_client.NotConfigured) as caught:
        compute_client.ComputeAPI(conf)
    assert '[compute_api]' in str(caught.value)
    monkeypatch.setattr(host_drain, '_compute_api',
                        compute_client.ComputeAPI)
    assert host_drain.drain(_Args(conf, drained_host='h0')) == 2
    assert 'endpoint_override' in capsys.readouterr().out


class _Args(object):
    """A ConfigOpts with a command's arguments in ``category``."""

    def __init__(self, conf, **args):
        self._conf = conf
        values = dict(live=False, cold=False, dry_run=False, parallel=1,
                      reason=None, timeout=60, json=False)
        values.update(args)
        self.category = conftest.Conf('host', **values).category

    def __getattr__(self, name):
        return getattr(self._conf, name)

    def __getitem__(self, name):
        return self._conf[name]


def test_the_all_in_one_config_reaches_its_api(tmp_path):
    """The derived berth.conf carries [compute_api] with noauth2's token.
    """
    conf = _conf()
    state = state_mod.StateDir(str(tmp_path))
    state_mod.use_compute_api(conf, 'http://127.0.0.1:8774/v2.1')
    again = _conf('--config-file', state_mod.write_config(conf, state))
    adapter = compute_client._adapter(again)
    assert adapter.endpoint_override == 'http://127.0.0.1:8774/v2.1'
    assert adapter.session.auth.get_token(adapter.session) == 'admin'


class _Response(object):
    def __init__(self, status, body):
        self.status_code = status
        self._body = body
        self.content = b'' if body is None else b'{}'
        self.text = json.dumps(body)

    def json(self):
        return self._body


class _Adapter(object):
    """Answers queued responses (or raises), records the requests."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests = []

    def request(self, url, method, **kwargs):
        self.requests.append((method, url, kwargs))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_the_client_sends_a_microversion_and_a_timeout_and_reads_errors():
    conf = _conf()
    adapter = _Adapter(
        _Response(202, None),
        _Response(400, {'badRequest': {
            'code': 400, 'message': 'No valid host was found. '}}),
        _Response(404, {'itemNotFound': {'code': 404, 'message': 'gone'}}),
        ks_exc.ConnectFailure('Connection refused'))
    api = compute_client.ComputeAPI(conf, adapter=adapter)
    api.live_migrate('u1', 'h1')
    method, url, kwargs = adapter.requests[0]
    assert (method, url) == ('POST', '/servers/u1/action')
    assert kwargs['json'] == {'os-migrateLive': {
        'host': 'h1', 'block_migration': 'auto'}}
    assert kwargs['headers']['OpenStack-API-Version'] == 'compute 2.59'
    assert kwargs['timeout'] == compute_client.DEFAULT_TIMEOUT
    with pytest.raises(compute_client.APIError) as caught:
        api.migrate('u1', 'h1')
    assert (caught.value.status, caught.value.message) == (
        400, 'No valid host was found. ')
    assert api.get_server('u1') is None
    with pytest.raises(compute_client.Unreachable):
        api.get_server('u1')


def test_listings_follow_their_pages():
    conf = _conf()
    adapter = _Adapter(
        _Response(200, {'migrations': [{'id': 2}], 'migrations_links': [{
            'rel': 'next', 'href': 'http://api/v2.1/os-migrations?'
            'source_compute=h0&marker=m2'}]}),
        _Response(200, {'migrations': [{'id': 1}]}))
    api = compute_client.ComputeAPI(conf, adapter=adapter)
    assert api.migrations(source_compute='h0') == [{'id': 2}, {'id': 1}]
    assert adapter.requests[1][2]['params'] == {'source_compute': 'h0',
                                                'marker': 'm2'}
