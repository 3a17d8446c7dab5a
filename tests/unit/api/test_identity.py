# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The noauth2 identity stand-in the openstack CLI discovers."""

from common.conf import CONF


def test_discovery_and_projects(world):
    status, body, _ = world.client.get('/identity', token=None)
    assert status == 200
    [version] = body['versions']['values']
    assert version['id'].startswith('v3')
    status, body, _ = world.client.get('/identity/v3/projects/demo')
    assert body['project']['id'] == 'demo'
    _s, body, _ = world.client.get('/identity/v3/projects?name=p9')
    assert [p['id'] for p in body['projects']] == ['p9']


def test_absent_with_keystone(world):
    CONF.set_override('auth_strategy', 'keystone', group='api')
    try:
        # NOTE: the app was built for noauth2; the handler itself checks
        # the configured strategy, as a keystone deployment would see it.
        status, _b, _r = world.client.get('/identity', token=None)
        assert status == 404
    finally:
        CONF.set_override('auth_strategy', 'noauth2', group='api')
