# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The placement client: its calls, their microversions and timeouts,
its retries on 409, and the environment read once, not on every call.
"""

import json

from keystoneauth1 import session as ks_session
from oslo_config import cfg
import pytest

from common.conf import placement as placement_conf
from common.placement import client as placement_client
from common.placement import microversions

_ENV = ('http_proxy', 'HTTPS_PROXY', 'no_proxy', 'NETRC',
        'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE')


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('HOME', str(tmp_path))
    return monkeypatch


def test_nothing_to_find_turns_the_lookups_off(clean_env):
    session = ks_session.Session()
    placement_client.skip_environment_lookups(session)
    assert session.session.trust_env is False
    assert session.verify is True


def test_a_ca_bundle_is_read_once(clean_env):
    clean_env.setenv('REQUESTS_CA_BUNDLE', '/etc/pki/bundle.pem')
    session = ks_session.Session()
    placement_client.skip_environment_lookups(session)
    assert session.session.trust_env is False
    assert session.verify == '/etc/pki/bundle.pem'
    # An explicit [placement] cafile or insecure is kept.
    explicit = ks_session.Session(verify='/etc/berth/ca.pem')
    placement_client.skip_environment_lookups(explicit)
    assert explicit.verify == '/etc/berth/ca.pem'


@pytest.mark.parametrize('name', ['https_proxy', 'HTTPS_PROXY', 'NETRC'])
def test_proxies_or_netrc_keep_the_lookups(clean_env, name):
    clean_env.setenv(name, 'http://proxy.example:3128')
    session = ks_session.Session()
    placement_client.skip_environment_lookups(session)
    assert session.session.trust_env is True


def test_a_netrc_file_keeps_the_lookups(clean_env, tmp_path):
    (tmp_path / '.netrc').write_text('machine placement login x\n')
    session = ks_session.Session()
    placement_client.skip_environment_lookups(session)
    assert session.session.trust_env is True


# --- every call: its request, its microversion, a timeout --------------------

class _Context(object):
    global_id = 'req-5a3b1c2d-0000-4000-8000-00000000000a'


CTXT = _Context()
RP = '6b1a2a6e-0000-4000-8000-000000000001'
CONSUMER = '6b1a2a6e-0000-4000-8000-0000000000c1'


class _Answer(object):
    def __init__(self, status, body):
        self.status_code = status
        self.headers = {'content-type': 'application/json'}
        self.content = json.dumps(body).encode()


class RecordingAdapter(object):
    """A keystoneauth Adapter stand-in: records, answers from a list."""

    def __init__(self, *answers):
        self.seen = []
        self.answers = list(answers)

    def request(self, url, method, **kwargs):
        self.seen.append(dict(kwargs, url=url, method=method))
        status, body = self.answers.pop(0) if self.answers else (200, {})
        return _Answer(status, body)


@pytest.fixture
def make_client(tmp_path):
    """Factory: a client over ``adapter`` with [placement] timeout set.

    NOTE: the timeout goes through a config file, not set_override: the
    [placement] OptGroup is shared, and an override would outlive the test.
    """
    def _make(adapter, timeout=None):
        path = tmp_path / 'berth.conf'
        path.write_text('[placement]\n' + (
            'timeout = %s\n' % timeout if timeout is not None else ''))
        conf = cfg.ConfigOpts()
        placement_conf.register_opts(conf)
        conf(['--config-file', str(path)], project='berth',
             default_config_files=[])
        return placement_client.PlacementClient(conf, adapter=adapter)
    return _make


V = microversions
CALLS = [
    (lambda c: c.get_allocation_candidates(
        CTXT, [('resources', 'VCPU:1'), ('required', 'in:A,B')],
        version=V.CANDIDATES),
     'GET', '/allocation_candidates?resources=VCPU:1&required=in:A,B',
     None, '1.39'),
    (lambda c: c.put_allocations(
        CTXT, CONSUMER, {RP: {'resources': {'VCPU': 1}}}, 'p', 'u', None,
        'INSTANCE', version=V.SCHEDULER_CLAIM),
     'PUT', '/allocations/' + CONSUMER,
     {'allocations': {RP: {'resources': {'VCPU': 1}}}, 'project_id': 'p',
      'user_id': 'u', 'consumer_generation': None,
      'consumer_type': 'INSTANCE'}, '1.38'),
    (lambda c: c.put_allocations(
        CTXT, CONSUMER, {}, 'p', 'u', 3,
        version=V.CONDUCTOR_ALLOCATIONS),
     'PUT', '/allocations/' + CONSUMER,
     {'allocations': {}, 'project_id': 'p', 'user_id': 'u',
      'consumer_generation': 3}, '1.36'),
    (lambda c: c.get_allocations(CTXT, CONSUMER,
                                 version=V.CONDUCTOR_ALLOCATIONS),
     'GET', '/allocations/' + CONSUMER, None, '1.36'),
    (lambda c: c.delete_allocations(CTXT, CONSUMER, version=V.LOCAL_DELETE),
     'DELETE', '/allocations/' + CONSUMER, None, '1.28'),
    (lambda c: c.list_providers(CTXT, version=V.PROVIDER_LISTING),
     'GET', '/resource_providers', None, '1.14'),
    (lambda c: c.list_providers(CTXT, version=V.PROVIDER_TREE, in_tree=RP),
     'GET', '/resource_providers?in_tree=' + RP, None, '1.39'),
    (lambda c: c.list_providers(CTXT, version=V.PROVIDER_TREE,
                                name='cn 1/a'),
     'GET', '/resource_providers?name=cn%201/a', None, '1.39'),
    (lambda c: c.create_provider(CTXT, RP, 'gpu', 'root',
                                 version=V.PROVIDER_TREE),
     'POST', '/resource_providers',
     {'uuid': RP, 'name': 'gpu', 'parent_provider_uuid': 'root'}, '1.39'),
    (lambda c: c.update_provider(CTXT, RP, 'cn', version=V.PROVIDER_TREE),
     'PUT', '/resource_providers/' + RP, {'name': 'cn'}, '1.39'),
    (lambda c: c.delete_provider(CTXT, RP, version=V.PROVIDER_DELETE),
     'DELETE', '/resource_providers/' + RP, None, '1.14'),
    (lambda c: c.get_provider_allocations(CTXT, RP,
                                          version=V.PROVIDER_LISTING),
     'GET', '/resource_providers/%s/allocations' % RP, None, '1.14'),
    (lambda c: c.put_inventories(CTXT, RP, 4, {'VCPU': {'total': 8}},
                                 version=V.PROVIDER_TREE),
     'PUT', '/resource_providers/%s/inventories' % RP,
     {'resource_provider_generation': 4,
      'inventories': {'VCPU': {'total': 8}}}, '1.39'),
    (lambda c: c.put_provider_traits(CTXT, RP, 5, ['A', 'B'],
                                     version=V.TRAITS),
     'PUT', '/resource_providers/%s/traits' % RP,
     {'resource_provider_generation': 5, 'traits': ['A', 'B']}, '1.6'),
    (lambda c: c.put_provider_aggregates(CTXT, RP, 6, ['agg'],
                                         version=V.AGGREGATES),
     'PUT', '/resource_providers/%s/aggregates' % RP,
     {'aggregates': ['agg'], 'resource_provider_generation': 6}, '1.19'),
    (lambda c: c.ensure_resource_class(CTXT, 'CUSTOM_X',
                                       version=V.PROVIDER_TREE),
     'PUT', '/resource_classes/CUSTOM_X', None, '1.39'),
    (lambda c: c.ensure_trait(CTXT, 'CUSTOM_T', version=V.PROVIDER_TREE),
     'PUT', '/traits/CUSTOM_T', None, '1.39'),
]


@pytest.mark.parametrize('call,method,url,body,version', CALLS)
def test_each_call_sends_its_request_microversion_and_timeout(
        make_client, call, method, url, body, version):
    adapter = RecordingAdapter()
    resp = call(make_client(adapter, timeout=7))
    assert resp.ok and resp.method == method and resp.url == url
    [seen] = adapter.seen
    assert (seen['method'], seen['url']) == (method, url)
    assert seen.get('json') == body
    assert seen['headers']['OpenStack-API-Version'] == 'placement ' + version
    assert seen['headers']['X-OpenStack-Request-ID'] == CTXT.global_id
    assert seen['timeout'] == 7


def test_without_a_configured_timeout_the_default_applies(make_client):
    adapter = RecordingAdapter()
    make_client(adapter).get_provider_traits(None, RP, version=V.TRAITS)
    assert adapter.seen[0]['timeout'] == placement_client.DEFAULT_TIMEOUT
    assert 'X-OpenStack-Request-ID' not in adapter.seen[0]['headers']


# --- retries on 409 ----------------------------------------------------------

def _conflict(detail='generation conflict'):
    return placement_client.Response(409, {'errors': [{
        'code': placement_client.CONCURRENT_UPDATE, 'detail': detail}]}, {})


def test_a_conflict_is_tried_again_until_it_succeeds():
    answers = [_conflict(), _conflict(), 'written']
    tries = []

    def attempt():
        tries.append(1)
        return answers[len(tries) - 1]
    assert placement_client.retry_conflicts(attempt, 3, 'x') == 'written'
    assert len(tries) == 3


def test_after_n_conflicts_it_gives_up_with_a_clear_error():
    tries = []

    def attempt():
        tries.append(1)
        return _conflict('provider generation 7 is not 6')
    with pytest.raises(placement_client.GenerationConflict) as err:
        placement_client.retry_conflicts(attempt, 4, 'traits of provider X')
    assert len(tries) == 4
    message = str(err.value)
    assert 'traits of provider X' in message and 'all 4 attempts' in message
    assert 'provider generation 7 is not 6' in message
    assert err.value.response.status == 409


@pytest.mark.parametrize('answer', [
    False, None, placement_client.Response(400, {'errors': []}, {}),
    placement_client.Response(404, None, {})])
def test_anything_but_a_409_ends_the_retries_at_once(answer):
    tries = []

    def attempt():
        tries.append(1)
        return answer
    assert placement_client.retry_conflicts(attempt, 5, 'x') is answer
    assert len(tries) == 1


def test_a_read_modify_write_through_the_client_is_retried(make_client):
    gen_body = {'resource_provider_generation': 1, 'traits': []}
    conflict = {'errors': [{'code': placement_client.CONCURRENT_UPDATE,
                            'detail': 'moved'}]}
    adapter = RecordingAdapter((200, gen_body), (409, conflict),
                               (200, gen_body), (200, {}))
    client = make_client(adapter, timeout=3)

    def attempt():
        read = client.get_provider_traits(CTXT, RP, version=V.TRAITS)
        return client.put_provider_traits(
            CTXT, RP, read.body['resource_provider_generation'], ['T'],
            version=V.TRAITS)
    assert placement_client.retry_conflicts(attempt, 2, 'traits').ok
    assert [s['method'] for s in adapter.seen] == ['GET', 'PUT', 'GET',
                                                   'PUT']
    assert all(s['timeout'] == 3 for s in adapter.seen)
