# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The build_near_host_ip and cidr scheduler hints: Nova's validation."""

import pytest

from tests.unit.api import helpers


@pytest.mark.parametrize('hints', [
    {'build_near_host_ip': '192.0.2.10'},
    {'build_near_host_ip': '192.0.2.10', 'cidr': '/24'},
    {'build_near_host_ip': '192.0.2.10', 'cidr': '/255.255.255.0'},
    {'build_near_host_ip': '2001:db8::5', 'cidr': '/64'},
    {'build_near_host_ip': 'fe80::1'},
])
def test_accepted(world, hints):
    world.add_host('node1')
    flavor = helpers.make_flavor(world.client)
    image = helpers.make_image(world.client)
    status, body = helpers.boot(world.client, flavor, image, hints=hints)
    assert status == 202, body
    [(spec, _uuids)] = world.conductor.builds
    for key, value in hints.items():
        assert spec.get_scheduler_hint(key) == value


@pytest.mark.parametrize('hints,field', [
    ({'build_near_host_ip': 'host1'}, 'build_near_host_ip'),
    ({'build_near_host_ip': '192.0.2.300'}, 'build_near_host_ip'),
    ({'build_near_host_ip': 42}, 'build_near_host_ip'),
    ({'build_near_host_ip': '192.0.2.1', 'cidr': '24'}, 'cidr'),
    ({'build_near_host_ip': '192.0.2.1', 'cidr': '/24 '}, 'cidr'),
    ({'build_near_host_ip': '192.0.2.1', 'cidr': '/x'}, 'cidr'),
    ({'build_near_host_ip': '192.0.2.1', 'cidr': ''}, 'cidr'),
])
def test_refused(world, hints, field):
    world.add_host('node1')
    flavor = helpers.make_flavor(world.client)
    image = helpers.make_image(world.client)
    status, body = helpers.boot(world.client, flavor, image, hints=hints)
    assert status == 400, body
    message = body['badRequest']['message']
    assert message.startswith(
        'Invalid input for field/attribute os:scheduler_hints/%s.' % field)
    assert world.conductor.builds == []
