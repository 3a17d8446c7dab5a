# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server list filters: who may use which, by microversion (2.73 locked,
2.83 the instance fields, 2.90 hostname), and how each matches.
"""

import datetime

import pytest

from tests.unit.api.helpers import V

MEMBER = 'alice:projA'


@pytest.fixture
def servers(world):
    """Three servers of projA, each unlike the others."""
    world.add_host('node1')
    world.add_host('node2')
    launched = datetime.datetime(2026, 3, 1, 10, 0, 0)
    made = {
        'web': world.add_instance(
            'cell1', host='node1', project_id='projA', user_id='alice',
            display_name='web', hostname='web-1.example.org',
            availability_zone='az1', key_name='alice-key', power_state=1,
            launched_at=launched),
        'db': world.add_instance(
            'cell1', host='node2', project_id='projA', user_id='bob',
            display_name='db', hostname='db', availability_zone='az2',
            vm_state='stopped', power_state=4, locked=True,
            locked_by='owner', launched_at=launched.replace(day=2)),
        'job': world.add_instance(
            'cell1', host='node2', project_id='projA', user_id='alice',
            display_name='job', hostname='job', availability_zone='az10',
            task_state='rebooting', power_state=1,
            launched_at=launched.replace(month=4)),
    }
    return {uuid: name for name, uuid in made.items()}


def _names(world, servers, query, version, token=MEMBER):
    status, body, _ = world.client.get(V + '/servers/detail?' + query,
                                       version=version, token=token)
    assert status == 200, body
    return sorted(servers[s['id']] for s in body['servers'])


ALL = ['db', 'job', 'web']


@pytest.mark.parametrize('query,expected', [
    ('availability_zone=az1', ['job', 'web']),
    ('availability_zone=^az1$', ['web']),
    ('key_name=alice', ['web']),
    ('user_id=alice', ['job', 'web']),
    ('vm_state=stopped', ['db']),
    ('task_state=rebooting', ['job']),
    ('power_state=4', ['db']),
    ('launched_at=2026-03-0', ['db', 'web']),
    ('terminated_at=2026', []),
    ('config_drive=True', []),
    ('progress=0', ['web']),
])
def test_2_83_opens_the_instance_fields_to_members(world, servers, query,
                                                   expected):
    assert _names(world, servers, query, '2.83') == expected
    # NOTE: below 2.83 a member's filter is dropped, not refused.
    assert _names(world, servers, query, '2.82') == ALL
    # An admin had them at every version.
    assert _names(world, servers, query + '&all_tenants=1', '2.1',
                  token='admin') == expected


def test_locked_from_2_73(world, servers):
    assert _names(world, servers, 'locked=true', '2.73') == ['db']
    assert _names(world, servers, 'locked=0', '2.73') == ['job', 'web']
    assert _names(world, servers, 'locked=true', '2.72') == ALL
    status, body, _ = world.client.get(V + '/servers?locked=maybe',
                                       version='2.73', token=MEMBER)
    assert status == 400
    assert body['badRequest']['message'].startswith(
        "Invalid input received: Unrecognized value 'maybe'")


def test_hostname_from_2_90(world, servers):
    assert _names(world, servers, 'hostname=example', '2.90') == ['web']
    assert _names(world, servers, 'hostname=example', '2.89') == ALL
    assert _names(world, servers, 'hostname=example&all_tenants=1', '2.1',
                  token='admin') == ['web']


def test_node_stays_an_admin_filter(world, servers):
    assert _names(world, servers, 'node=node2', '2.95') == ALL
    assert _names(world, servers, 'node=node2&all_tenants=1', '2.95',
                  token='admin') == ['db', 'job']
