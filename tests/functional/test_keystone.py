# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``[api] auth_strategy = keystone`` against a real Keystone (issue 20).

Keystone comes from PyPI into a venv of its own (.tox/keystone, reused
by later runs; tests/functional/keystone_server.py), bootstrapped on
SQLite. It holds the catalog (compute, placement and image on Berth), a
service user ``berth`` (admin and service roles in project ``service``),
and projects ``alpha`` (member ``alice``, reader ``rita``) and ``beta``
(member ``bob``). Every Berth service runs as its own process
(tests/functional/stack.py) with the configuration doc/install-three-hosts.md
shows: berth-api and berth-placement-api validate tokens with
keystonemiddleware ``[keystone_authtoken]``, and the scheduler, conductor,
compute and API reach placement through the catalog with the service
user's password (``[placement]``). The ``openstack`` CLI logs in with a
password, as a user would.

Without PyPI (or RabbitMQ, MariaDB, the CLI) the tests skip; with
CI=true they fail instead.
"""

import time

import httpx
import pytest

from tests.functional import keystone_server
from tests.functional import osc
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional import scheduler_env
from tests.functional import skips
from tests.functional import stack
from tests.functional import stack_fixture

BOOT_TIMEOUT = 120
HOSTS = ('stack-host0', 'stack-host1')
SERVICE_PASSWORD = 'berth-service-secret'
# name: (password, project, roles)
USERS = {
    'alice': ('alice-secret', 'alpha', ('member',)),
    'rita': ('rita-secret', 'alpha', ('reader',)),
    'bob': ('bob-secret', 'beta', ('member',)),
}
pytestmark = osc.skip_without_cli


def _password_auth(keystone, username, password, project):
    """keystoneauth password options, as an [section] of berth.conf."""
    return {'auth_type': 'password', 'auth_url': keystone.auth_url,
            'username': username, 'password': password,
            'project_name': project,
            'user_domain_name': keystone_server.DOMAIN,
            'project_domain_name': keystone_server.DOMAIN}


class KeystoneStack(stack.Stack):
    """A :class:`stack.Stack` whose APIs trust only Keystone's tokens."""

    keystone = None

    def setup(self):
        """Catalog entries and users in Keystone, then Berth's set-up."""
        ks = self.keystone
        ks.endpoint('compute', 'berth', self.api_url + '/v2.1')
        ks.endpoint('placement', 'berth-placement', self.placement_url)
        ks.endpoint('image', 'berth-images', self.api_url + '/image')
        ks.user('berth', SERVICE_PASSWORD, 'service', ('admin', 'service'))
        for name, (password, project, roles) in USERS.items():
            ks.user(name, password, project, roles)
        self.admin_token = ks.token
        return super().setup()

    def _conf_groups(self):
        groups = super()._conf_groups()
        service = _password_auth(self.keystone, 'berth', SERVICE_PASSWORD,
                                 'service')
        groups['api'] = {'auth_strategy': 'keystone'}
        groups['keystone_authtoken'] = dict(
            service, www_authenticate_uri=self.keystone.auth_url)
        # NOTE: no endpoint_override: the services find placement in the
        # catalog, as the compute agents of doc/install-three-hosts.md do.
        groups['placement'] = dict(service,
                                   region_name=keystone_server.REGION)
        # NOTE: the noauth2 stack turns the new defaults off; here they are
        # oslo.policy's default again: a reader reads, a member creates.
        groups['oslo_policy'] = {'enforce_new_defaults': True}
        return groups


@pytest.fixture(scope='module')
def keystone(tmp_path_factory):
    """A bootstrapped, running Keystone; skips (fails in CI) without PyPI."""
    try:
        venv, seconds = keystone_server.ensure_venv()
    except scheduler_env.EnvironmentUnavailable as exc:
        skips.unavailable(str(exc))
    if seconds:
        print('installed %s in %.0fs' % (venv, seconds))
    server = keystone_server.Keystone(
        venv, str(tmp_path_factory.mktemp('keystone')))
    try:
        server.start()
    except scheduler_env.EnvironmentFailure as exc:
        server.stop()
        pytest.fail('%s\n%s' % (exc, server.log_tail()), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope='module')
def cloud(database_servers, keystone, tmp_path_factory):  # noqa: F811
    """Berth in keystone mode, with a flavor and a public image."""
    KeystoneStack.keystone = keystone
    with stack_fixture.deployed(
            database_servers, 'mysql', str(tmp_path_factory.mktemp('ks')),
            stack_class=KeystoneStack, hosts=len(HOSTS)) as deployment:
        admin = OSC(keystone, 'admin', keystone_server.ADMIN_PASSWORD,
                    'admin')
        admin.run('flavor', 'create', '--vcpus', '1', '--ram', '512',
                  '--disk', '1', 'tiny')
        admin.run('image', 'create', '--public', 'cirros')
        yield deployment


class OSC(osc.Client):
    """Runs ``openstack`` as one Keystone user (password, project scope)."""

    def __init__(self, keystone, user, password, project):
        self.keystone = keystone
        self.login = (user, password, project)
        super().__init__(
            OS_AUTH_TYPE='password', OS_AUTH_URL=keystone.auth_url,
            OS_IDENTITY_API_VERSION='3', OS_USERNAME=user,
            OS_PASSWORD=password, OS_PROJECT_NAME=project,
            OS_USER_DOMAIN_NAME=keystone_server.DOMAIN,
            OS_PROJECT_DOMAIN_NAME=keystone_server.DOMAIN,
            OS_REGION_NAME=keystone_server.REGION)

    @classmethod
    def of(cls, keystone, name):
        """The CLI of one of USERS."""
        password, project, _roles = USERS[name]
        return cls(keystone, name, password, project)

    def boot(self, api_url, name):
        """Create a server and wait until it is ACTIVE; returns it."""
        server_id = self.json('server', 'create', '--flavor', 'tiny',
                              '--image', 'cirros', name)['id']
        # NOTE: polled over HTTP with the user's token: a CLI run per poll
        # would log in to Keystone every time.
        token = self.keystone.issue_token(*self.login)
        deadline = time.monotonic() + BOOT_TIMEOUT
        while True:
            server = httpx.get(
                '%s/v2.1/servers/%s' % (api_url, server_id), timeout=30,
                headers={'x-auth-token': token}).json()['server']
            if server['status'] in ('ACTIVE', 'ERROR'):
                break
            if time.monotonic() > deadline:
                pytest.fail('%s still %s after %ds' % (
                    name, server['status'], BOOT_TIMEOUT))
            time.sleep(0.5)
        assert server['status'] == 'ACTIVE', server
        return server


@pytest.fixture(scope='module')
def servers(cloud):
    """One server booted by alice in alpha and one by bob in beta."""
    ks = cloud.keystone
    return {'alpha': OSC.of(ks, 'alice').boot(cloud.api_url, 'alpha-vm'),
            'beta': OSC.of(ks, 'bob').boot(cloud.api_url, 'beta-vm')}


def _names(listing):
    return sorted(s['Name'] for s in listing)


def test_members_see_only_their_project(cloud, servers):
    ks = cloud.keystone
    alice, bob = OSC.of(ks, 'alice'), OSC.of(ks, 'bob')
    assert _names(alice.json('server', 'list')) == ['alpha-vm']
    assert _names(bob.json('server', 'list')) == ['beta-vm']
    hidden = alice.run('server', 'show', servers['beta']['id'],
                       expect_ok=False)
    assert hidden.returncode != 0 and 'No Server found' in hidden.stderr
    # NOTE: a member of alpha asking for every project is refused.
    everyone = alice.run('server', 'list', '--all-projects',
                         expect_ok=False)
    assert everyone.returncode != 0 and '403' in everyone.stderr


def test_admin_lists_every_project(cloud, servers):
    ks = cloud.keystone
    admin = OSC(ks, 'admin', keystone_server.ADMIN_PASSWORD, 'admin')
    listing = admin.json('server', 'list', '--all-projects', '--long')
    assert {s['Name'] for s in listing} >= {'alpha-vm', 'beta-vm'}
    projects = {p['Name']: p['ID'] for p in admin.json('project', 'list')}
    owners = {s['Name']: s['Project ID'] for s in listing}
    assert owners['alpha-vm'] == projects['alpha']
    assert owners['beta-vm'] == projects['beta']


def test_reader_reads_but_cannot_create(cloud, servers):
    rita = OSC.of(cloud.keystone, 'rita')
    assert _names(rita.json('server', 'list')) == ['alpha-vm']
    refused = rita.run('server', 'create', '--flavor', 'tiny', '--image',
                       'cirros', 'by-reader', expect_ok=False)
    assert refused.returncode != 0
    assert '403' in refused.stderr, refused.stderr
    assert "os_compute_api:servers:create" in refused.stderr
    assert _names(rita.json('server', 'list')) == ['alpha-vm']


def test_bad_or_missing_token_is_401(cloud):
    ks = cloud.keystone
    for url in (cloud.api_url + '/v2.1/servers',
                cloud.placement_url + '/resource_providers'):
        for headers in ({}, {'x-auth-token': 'not-a-token'}):
            resp = httpx.get(url, headers=headers, timeout=30)
            assert resp.status_code == 401, (url, headers, resp.text)
            # NOTE: keystonemiddleware tells the client where to log in.
            assert ks.auth_url in resp.headers['www-authenticate']
    # A real token is accepted; the version documents need none.
    alice = ks.issue_token('alice', *USERS['alice'][:2])
    resp = httpx.get(cloud.api_url + '/v2.1/servers', timeout=30,
                     headers={'x-auth-token': alice})
    assert resp.status_code == 200
    assert httpx.get(cloud.api_url + '/', timeout=30).status_code == 200
    assert httpx.get(cloud.placement_url + '/', timeout=30).status_code == 200


def test_services_reach_placement_as_the_service_user(cloud, servers):
    ks = cloud.keystone
    admin = OSC(ks, 'admin', keystone_server.ADMIN_PASSWORD, 'admin')
    # The compute agent created its providers and their inventories ...
    providers = {p['name']: p['uuid']
                 for p in admin.json('resource', 'provider', 'list')}
    assert set(HOSTS) <= set(providers)
    inventory = admin.json('resource', 'provider', 'inventory', 'list',
                           providers[HOSTS[0]])
    assert {i['resource_class'] for i in inventory} >= {
        'VCPU', 'MEMORY_MB', 'DISK_GB'}
    # ... and the scheduler claimed every server's resources there.
    for server in servers.values():
        host = admin.json('server', 'show', server['id'])[
            'OS-EXT-SRV-ATTR:host']
        allocations = admin.json('resource', 'provider', 'allocation',
                                 'show', server['id'])
        assert [a['resource_provider'] for a in allocations] == [
            providers[host]]
    # Placement is closed to a project member, as upstream's.
    denied = OSC.of(ks, 'alice').run('resource', 'provider', 'list',
                                     expect_ok=False)
    assert denied.returncode != 0 and 'HTTP 403' in denied.stderr
