# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The noauth2 identity stand-in: discovery, tokens, catalog, projects."""

from common.conf import CONF
from tests.unit.api import helpers

TOKENS = '/identity/v3/auth/tokens'
PLACEMENT = 'http://127.0.0.1:18778'


def _password(user='alice', scope=None, methods=('password',)):
    auth = {'identity': {
        'methods': list(methods),
        'password': {'user': {'name': user, 'password': 'anything',
                              'domain': {'name': 'Default'}}}}}
    if scope is not None:
        auth['scope'] = scope
    return {'auth': auth}


def _project(name):
    return {'project': {'name': name, 'domain': {'name': 'Default'}}}


def _issue(world, body):
    return world.client.post(TOKENS, body, token=None, version=None)


def test_discovery_and_projects(world):
    status, body, _ = world.client.get('/identity', token=None)
    assert status == 200
    [version] = body['versions']['values']
    assert version['id'].startswith('v3')
    status, body, _ = world.client.get('/identity/v3/projects/demo')
    assert body['project']['id'] == 'demo'
    _s, body, _ = world.client.get('/identity/v3/projects?name=p9')
    assert [p['id'] for p in body['projects']] == ['p9']


def test_password_token_is_a_noauth2_token_for_the_project(world,
                                                           override):
    override('endpoint_override', PLACEMENT, group='placement')
    status, body, resp = _issue(world, _password('alice',
                                                 _project('projA')))
    assert status == 201, body
    token = resp.headers['X-Subject-Token']
    assert token == 'alice:projA'
    doc = body['token']
    assert doc['user']['name'] == 'alice'
    assert doc['project'] == {'id': 'projA', 'name': 'projA',
                              'domain': {'id': 'default',
                                         'name': 'Default'}}
    assert sorted(r['name'] for r in doc['roles']) == ['member', 'reader']
    assert doc['methods'] == ['password']
    assert doc['expires_at'] > doc['issued_at']
    urls = {(s['type'], e['interface']): e['url']
            for s in doc['catalog'] for e in s['endpoints']}
    assert urls[('compute', 'public')] == 'http://localhost/v2.1'
    assert urls[('image', 'public')] == 'http://localhost/image'
    assert urls[('identity', 'public')] == 'http://localhost/identity'
    assert urls[('placement', 'public')] == PLACEMENT
    assert {s['type'] for s in doc['catalog']} == {
        'identity', 'compute', 'image', 'placement'}
    assert {e['region_id'] for s in doc['catalog']
            for e in s['endpoints']} == {'RegionOne'}
    # NOTE: the token works at the compute API as the member it names.
    status, body, _r = world.client.get(helpers.V + '/servers',
                                        token=token)
    assert status == 200, body
    status, _b, _r = world.client.get(helpers.V + '/os-hypervisors',
                                      token=token)
    assert status == 403


def test_admin_token_has_the_admin_role(world):
    status, body, resp = _issue(world, _password('admin',
                                                 _project('admin')))
    assert status == 201
    assert resp.headers['X-Subject-Token'] == 'admin:admin'
    assert 'admin' in [r['name'] for r in body['token']['roles']]
    status, _b, _r = world.client.get(
        helpers.V + '/os-hypervisors', token='admin:admin')
    assert status == 200


def test_no_scope_is_the_users_own_project(world):
    for scope in (None, 'unscoped'):
        status, body, resp = _issue(world, _password('bob', scope))
        assert status == 201
        assert resp.headers['X-Subject-Token'] == 'bob:bob'
        assert body['token']['project']['id'] == 'bob'


def test_token_method_rescopes_or_keeps_the_project(world):
    body = {'auth': {'identity': {'methods': ['token'],
                                  'token': {'id': 'alice:projA'}},
                     'scope': {'project': {'id': 'projB'}}}}
    status, _b, resp = _issue(world, body)
    assert status == 201
    assert resp.headers['X-Subject-Token'] == 'alice:projB'
    del body['auth']['scope']
    status, doc, resp = _issue(world, body)
    assert resp.headers['X-Subject-Token'] == 'alice:projA'
    assert doc['token']['methods'] == ['token']


def test_no_catalog(world):
    status, body, _r = world.client.post(TOKENS + '?nocatalog',
                                         _password(), token=None)
    assert status == 201
    assert 'catalog' not in body['token']


def test_refusals(world):
    # NOTE: a scope noauth2 cannot express, an unknown method, a method
    # without its section, a name that would break "user:project".
    cases = [
        (_password(scope={'domain': {'name': 'Default'}}), 401,
         'scoped to a project'),
        (_password(scope={'system': {'all': True}}), 401,
         'scoped to a project'),
        (_password(methods=('password', 'totp')), 401,
         'unsupported method'),
        ({'auth': {'identity': {'methods': ['token']}}}, 400,
         'Expecting to find token in identity'),
        (_password('a:b'), 400, 'auth/identity/password/user/name'),
        (_password(scope=_project('x:y')), 400, 'scope/project/name'),
        ({'auth': {}}, 400, 'identity'),
        (_password(scope='all'), 400, 'Invalid scope'),
    ]
    for body, status, message in cases:
        got, answer, _r = _issue(world, body)
        assert got == status, (body, answer)
        assert message in str(answer), (body, answer)
    status, _b, _r = _issue(world, {'auth': {'identity': {
        'methods': ['token'], 'token': {'id': ':projA'}}}})
    assert status == 401


def test_validation(world):
    status, body, resp = world.client.get(
        TOKENS, token='admin', headers={'X-Subject-Token': 'carol:p1'})
    assert status == 200
    assert resp.headers['X-Subject-Token'] == 'carol:p1'
    assert body['token']['user']['id'] == 'carol'
    assert body['token']['project']['id'] == 'p1'
    status, _b, _r = world.client.get(
        TOKENS, token=None, headers={'X-Subject-Token': 'carol:p1'})
    assert status == 401
    status, _b, _r = world.client.get(TOKENS, token='admin')
    assert status == 400


def test_catalog_names_a_configured_glance_and_no_absent_placement(
        world, override):
    override('endpoint_override', 'http://glance:9292', group='glance')
    _s, body, _r = _issue(world, _password())
    catalog = {s['type']: s['endpoints'][0]['url']
               for s in body['token']['catalog']}
    assert catalog == {'identity': 'http://localhost/identity',
                       'compute': 'http://localhost/v2.1',
                       'image': 'http://glance:9292'}


def test_absent_with_keystone(world):
    CONF.set_override('auth_strategy', 'keystone', group='api')
    try:
        # NOTE: the app was built for noauth2; the handler itself checks
        # the configured strategy, as a keystone deployment would see it.
        status, _b, _r = world.client.get('/identity', token=None)
        assert status == 404
        status, _b, _r = _issue(world, _password())
        assert status == 404
    finally:
        CONF.set_override('auth_strategy', 'noauth2', group='api')
