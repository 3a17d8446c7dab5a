# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Who may call each route: every route of the compute API, the image
catalog and the noauth2 identity stand-in, called as each role.

``TABLE`` names, for every (method, route) the dispatcher declares, the
status each caller gets: an admin, a member and a reader of ``projA``
(which owns the server, image, group... the route acts on) and a member
of ``projB``. A route missing from the table, or a table row naming a
route that no longer exists, fails the test: a new route must say who
may call it.
"""

import collections
import datetime
import uuid as uuid_lib

from common.db import cell_tables
from services.api import handler
from services.api.handlers import capacity as capacity_handler
from services.api.handlers import network_proxies
from tests.unit.api import helpers
from tests.unit.api.helpers import V

CALLERS = collections.OrderedDict([
    ('admin', {'token': 'admin'}),
    ('member', {'token': 'alice:projA'}),
    ('reader', {'token': 'rita:projA', 'headers': {'X-Roles': 'reader'}}),
    ('other', {'token': 'bob:projB'}),
])


def _statuses(admin, member, reader, other):
    return {'admin': admin, 'member': member, 'reader': reader,
            'other': other}


ALL_200 = _statuses(200, 200, 200, 200)
ADMIN_ONLY = _statuses(200, 403, 403, 403)
# Reads of projA's resource: another project's caller is told it does
# not exist (Nova's servers, Glance's private images).
OWNER_READ = _statuses(200, 200, 200, 404)


def _owner_write(ok):
    return _statuses(ok, ok, 403, 404)


def _admin(ok):
    return _statuses(ok, 403, 403, 403)


Row = collections.namedtuple('Row', 'method route expect body')


def _row(method, route, expect, body=None):
    return Row(method, route, expect, body)


SERVER_NAME = {'server': {'name': 'renamed'}}
PUBLIC_KEY = ('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINviFH8ZSPBDer4G0rYTk'
              'RJHwks11Q3mkDHH/425iIle test')
# A request at 2.1 without a body (the resources removed later), and the
# answer to a write the network proxies refuse (no network service).
_OLD = ('at', '2.1', None)
_REFUSED = _statuses(400, 400, 403, 400)
FLAVOR = {'flavor': {'name': 'f-new', 'vcpus': 1, 'ram': 64, 'disk': 1}}

TABLE = [
    _row('GET', '/', ALL_200),
    _row('GET', '/servers', ALL_200),
    _row('GET', '/servers/detail', ALL_200),
    _row('POST', '/servers', _statuses(202, 202, 403, 202), 'boot'),
    _row('GET', '/servers/{server_id}', OWNER_READ),
    _row('PUT', '/servers/{server_id}', _owner_write(200), SERVER_NAME),
    _row('DELETE', '/servers/{server_id}', _owner_write(204)),
    # NOTE: the action's name is checked before the server is looked up.
    _row('POST', '/servers/{server_id}/action', _statuses(400, 400, 400, 400),
         {'no-such-action': None}),
    _row('POST', '/servers/{server_id}/action', _owner_write(202),
         'rebuild'),
    _row('POST', '/servers/{server_id}/action', _owner_write(202),
         {'createImage': {'name': 'snap'}}),
    # NOTE: a power, the lock and the reset-state action on an ACTIVE
    # server (each call adds a server to projA's usage, which the quota
    # row below must stay above).
    _row('POST', '/servers/{server_id}/action', _owner_write(202),
         {'os-stop': None}),
    _row('POST', '/servers/{server_id}/action', _owner_write(202),
         {'lock': None}),
    _row('POST', '/servers/{server_id}/action', _statuses(202, 403, 403, 404),
         {'os-resetState': {'state': 'error'}}),
    # NOTE: resize and cold migration (an ACTIVE server: confirm and
    # revert answer its owners 409, after the policy let them through).
    _row('POST', '/servers/{server_id}/action', _owner_write(202), 'resize'),
    _row('POST', '/servers/{server_id}/action', _statuses(202, 403, 403, 404),
         {'migrate': None}),
    _row('POST', '/servers/{server_id}/action', _statuses(409, 409, 403, 404),
         {'confirmResize': None}),
    _row('POST', '/servers/{server_id}/action', _statuses(409, 409, 403, 404),
         {'revertResize': None}),
    _row('POST', '/servers/{server_id}/action', _statuses(202, 403, 403, 404),
         {'os-migrateLive': {'host': None, 'block_migration': 'auto'}}),
    # NOTE: the fresh server is not migrating: an admin gets the 409.
    _row('POST', '/servers/{server_id}/migrations/{migration_id}/action',
         _statuses(409, 403, 403, 404), {'force_complete': None}),
    _row('DELETE', '/servers/{server_id}/migrations/{migration_id}',
         _statuses(409, 403, 403, 404)),
    # NOTE: moves (issue 21): an owner shelves; evacuate is an admin's,
    # refused (400) while the server's host is up, as here.
    _row('POST', '/servers/{server_id}/action', _owner_write(202),
         {'shelve': None}),
    _row('POST', '/servers/{server_id}/action', _statuses(400, 403, 403, 404),
         {'evacuate': {}}),
    _row('GET', '/servers/{server_id}/os-instance-actions', OWNER_READ),
    _row('GET', '/servers/{server_id}/os-instance-actions/{request_id}',
         OWNER_READ),
    _row('GET', '/servers/{server_id}/metadata', OWNER_READ),
    _row('POST', '/servers/{server_id}/metadata', _owner_write(200),
         {'metadata': {'k2': 'v'}}),
    _row('PUT', '/servers/{server_id}/metadata', _owner_write(200),
         {'metadata': {'k2': 'v'}}),
    _row('GET', '/servers/{server_id}/metadata/{key}', OWNER_READ),
    _row('PUT', '/servers/{server_id}/metadata/{key}', _owner_write(200),
         {'meta': {'k1': 'v2'}}),
    _row('DELETE', '/servers/{server_id}/metadata/{key}', _owner_write(204)),
    _row('GET', '/servers/{server_id}/tags', OWNER_READ),
    _row('PUT', '/servers/{server_id}/tags', _owner_write(200),
         {'tags': ['a', 'b']}),
    _row('DELETE', '/servers/{server_id}/tags', _owner_write(204)),
    _row('GET', '/servers/{server_id}/tags/{tag}',
         _statuses(204, 204, 204, 404)),
    _row('PUT', '/servers/{server_id}/tags/{tag}', _owner_write(204)),
    _row('DELETE', '/servers/{server_id}/tags/{tag}', _owner_write(204)),
    # NOTE: key pairs are the user's: each caller lists and creates its
    # own; another user's (alice's, named by user_id) is admin-only.
    _row('GET', '/os-keypairs', ALL_200),
    _row('POST', '/os-keypairs', _statuses(201, 201, 201, 201), 'keypair'),
    _row('GET', '/os-keypairs/{keypair_name}', _statuses(200, 200, 403,
                                                         403)),
    _row('DELETE', '/os-keypairs/{keypair_name}', _statuses(204, 204, 403,
                                                            403)),
    _row('GET', '/flavors', ALL_200),
    _row('GET', '/flavors/detail', ALL_200),
    _row('POST', '/flavors', ADMIN_ONLY, FLAVOR),
    # NOTE: the flavor is private to projA: projB does not see it.
    _row('GET', '/flavors/{flavor_id}', OWNER_READ),
    _row('PUT', '/flavors/{flavor_id}', ADMIN_ONLY,
         {'flavor': {'description': 'd'}}),
    _row('DELETE', '/flavors/{flavor_id}', _admin(202)),
    _row('POST', '/flavors/{flavor_id}/action', ADMIN_ONLY,
         {'addTenantAccess': {'tenant': 'projC'}}),
    _row('POST', '/flavors/{flavor_id}/action', ADMIN_ONLY,
         {'removeTenantAccess': {'tenant': 'projA'}}),
    _row('GET', '/flavors/{flavor_id}/os-flavor-access', ADMIN_ONLY),
    _row('GET', '/flavors/{flavor_id}/os-extra_specs', OWNER_READ),
    _row('POST', '/flavors/{flavor_id}/os-extra_specs', ADMIN_ONLY,
         {'extra_specs': {'hw:mem_page_size': 'large'}}),
    _row('GET', '/flavors/{flavor_id}/os-extra_specs/{key}', OWNER_READ),
    _row('PUT', '/flavors/{flavor_id}/os-extra_specs/{key}', ADMIN_ONLY,
         {'hw:cpu_policy': 'shared'}),
    _row('DELETE', '/flavors/{flavor_id}/os-extra_specs/{key}', ADMIN_ONLY),
    _row('GET', '/os-aggregates', ADMIN_ONLY),
    _row('POST', '/os-aggregates', ADMIN_ONLY,
         {'aggregate': {'name': 'agg-new'}}),
    _row('GET', '/os-aggregates/{aggregate_id}', ADMIN_ONLY),
    _row('PUT', '/os-aggregates/{aggregate_id}', ADMIN_ONLY,
         {'aggregate': {'name': 'agg-renamed'}}),
    _row('DELETE', '/os-aggregates/{aggregate_id}', ADMIN_ONLY),
    _row('POST', '/os-aggregates/{aggregate_id}/action', ADMIN_ONLY,
         {'set_metadata': {'metadata': {'k': 'v'}}}),
    _row('POST', '/os-aggregates/{aggregate_id}/action', ADMIN_ONLY,
         'add_host'),
    _row('POST', '/os-aggregates/{aggregate_id}/images', _admin(202),
         'cache_images'),
    _row('GET', '/os-availability-zone', ALL_200),
    _row('GET', '/os-availability-zone/detail', ADMIN_ONLY),
    _row('GET', '/os-server-groups', ALL_200),
    _row('POST', '/os-server-groups', _statuses(200, 200, 403, 200),
         {'server_group': {'name': 'g-new', 'policy': 'affinity'}}),
    # NOTE: as Nova, a group of another project is refused, not hidden.
    _row('GET', '/os-server-groups/{group_id}', _statuses(200, 200, 200,
                                                          403)),
    _row('DELETE', '/os-server-groups/{group_id}', _statuses(204, 204, 403,
                                                             403)),
    _row('GET', '/os-services', ADMIN_ONLY),
    _row('PUT', '/os-services/{service_id}', ADMIN_ONLY,
         {'status': 'disabled'}),
    _row('DELETE', '/os-services/{service_id}', _admin(204)),
    _row('GET', '/os-hypervisors', ADMIN_ONLY),
    _row('GET', '/os-hypervisors/detail', ADMIN_ONLY),
    _row('GET', '/os-hypervisors/statistics', ADMIN_ONLY),
    _row('GET', '/os-hypervisors/{hypervisor_id}', ADMIN_ONLY),
    # NOTE: allowed, and then 501 as Nova's for drivers without uptime.
    _row('GET', '/os-hypervisors/{hypervisor_id}/uptime', _admin(501)),
    # NOTE: removed at 2.53: a 404 at the table's version, after policy.
    _row('GET', '/os-hypervisors/{pattern}/search', _admin(404)),
    _row('GET', '/os-hypervisors/{pattern}/servers', _admin(404)),
    _row('GET', '/os-quota-sets/{project_id}', _statuses(200, 200, 200,
                                                         403)),
    _row('PUT', '/os-quota-sets/{project_id}', ADMIN_ONLY,
         {'quota_set': {'cores': 1000}}),
    _row('DELETE', '/os-quota-sets/{project_id}', _admin(202)),
    _row('GET', '/os-quota-sets/{project_id}/defaults', ALL_200),
    _row('GET', '/os-quota-sets/{project_id}/detail', _statuses(200, 200,
                                                                200, 403)),
    _row('GET', '/limits', ALL_200),
    _row('GET', '/os-simple-tenant-usage', ADMIN_ONLY),
    _row('GET', '/os-simple-tenant-usage/{tenant_id}', _statuses(200, 200,
                                                                 200, 403)),
    # Berth extensions
    _row('GET', '/os-berth-capacity/report', ADMIN_ONLY),
    _row('GET', '/os-berth-scheduler/decisions/{server_id}', ADMIN_ONLY),
    _row('GET', '/os-berth-capacity/headroom', ADMIN_ONLY, 'headroom'),
    # small and legacy resources (the legacy ones at 2.1: 404 later)
    _row('GET', '/os-quota-class-sets/{class_name}', ADMIN_ONLY),
    _row('PUT', '/os-quota-class-sets/{class_name}', ADMIN_ONLY,
         {'quota_class_set': {'metadata_items': 128}}),
    _row('GET', '/servers/{server_id}/ips', OWNER_READ),
    # NOTE: no server is on a network: every label is unknown.
    _row('GET', '/servers/{server_id}/ips/{network_label}',
         _statuses(404, 404, 404, 404)),
    _row('GET', '/servers/{server_id}/os-server-password', OWNER_READ),
    _row('DELETE', '/servers/{server_id}/os-server-password',
         _owner_write(204)),
    _row('GET', '/servers/{server_id}/topology', OWNER_READ),
    # NOTE: allowed, then 409: the fixture's server has no power state.
    _row('GET', '/servers/{server_id}/diagnostics',
         _statuses(409, 403, 403, 404)),
    _row('GET', '/servers/{server_id}/os-security-groups', OWNER_READ,
         _OLD),
    _row('GET', '/os-security-groups', ALL_200, _OLD),
    _row('POST', '/os-security-groups', _REFUSED, _OLD),
    # NOTE: the id is projA's default group: the admin's project has
    # another one.
    _row('GET', '/os-security-groups/{security_group_id}',
         _statuses(404, 200, 200, 404), _OLD),
    _row('PUT', '/os-security-groups/{security_group_id}', _REFUSED, _OLD),
    _row('DELETE', '/os-security-groups/{security_group_id}', _REFUSED,
         _OLD),
    _row('POST', '/os-security-group-rules', _REFUSED, _OLD),
    _row('GET', '/os-networks', ALL_200, _OLD),
    _row('POST', '/os-networks', _admin(400), _OLD),
    _row('GET', '/os-tenant-networks', ALL_200, _OLD),
    _row('POST', '/os-tenant-networks', _REFUSED, _OLD),
    _row('GET', '/os-floating-ips', ALL_200, _OLD),
    _row('POST', '/os-floating-ips', _REFUSED, _OLD),
    _row('GET', '/os-instance_usage_audit_log', ADMIN_ONLY),
    _row('GET', '/os-instance_usage_audit_log/{before_timestamp}',
         ADMIN_ONLY),
    _row('GET', '/os-hosts', ADMIN_ONLY, _OLD),
    _row('GET', '/os-hosts/{host_name}', ADMIN_ONLY, _OLD),
    _row('PUT', '/os-hosts/{host_name}', ADMIN_ONLY,
         ('at', '2.1', {'status': 'enable'})),
    _row('GET', '/os-hosts/{host_name}/reboot', _admin(501), _OLD),
    _row('GET', '/os-hosts/{host_name}/shutdown', _admin(501), _OLD),
    _row('GET', '/os-hosts/{host_name}/startup', _admin(501), _OLD),
    _row('GET', '/images', ALL_200, _OLD),
    _row('GET', '/images/detail', ALL_200, _OLD),
    _row('GET', '/images/{image_id}', OWNER_READ, _OLD),
    _row('DELETE', '/images/{image_id}', _owner_write(204), _OLD),
    _row('GET', '/images/{image_id}/metadata', OWNER_READ, _OLD),
    _row('GET', '/images/{image_id}/metadata/{meta_key}', OWNER_READ,
         _OLD),
    _row('PUT', '/images/{image_id}/metadata', _owner_write(200),
         ('at', '2.1', {'metadata': {'os_distro': 'fedora'}})),
    _row('POST', '/images/{image_id}/metadata', _owner_write(200),
         ('at', '2.1', {'metadata': {'os_version': '40'}})),
    _row('PUT', '/images/{image_id}/metadata/{meta_key}', _owner_write(200),
         ('at', '2.1', {'meta': {'os_distro': 'fedora'}})),
    _row('DELETE', '/images/{image_id}/metadata/{meta_key}',
         _owner_write(204), _OLD),
    _row('POST', '/os-server-external-events', ADMIN_ONLY, 'event'),
    # NOTE: server moves; the migration is a live one in progress.
    _row('GET', '/os-migrations', ADMIN_ONLY),
    _row('GET', '/servers/{server_id}/migrations',
         _statuses(200, 403, 403, 404)),
    _row('GET', '/servers/{server_id}/migrations/{migration_id}',
         _statuses(200, 403, 403, 404)),
    _row('GET', '/extensions', ALL_200),
    _row('GET', '/extensions/{alias}', ALL_200),
    # the built-in image catalog
    _row('GET', '/image', ALL_200),
    _row('GET', '/image/v2/images', ALL_200),
    _row('POST', '/image/v2/images', _statuses(201, 201, 403, 201),
         {'name': 'new', 'disk_format': 'raw',
          'container_format': 'bare'}),
    _row('GET', '/image/v2/images/{image_id}', OWNER_READ),
    _row('PATCH', '/image/v2/images/{image_id}', _owner_write(200),
         'patch'),
    _row('DELETE', '/image/v2/images/{image_id}', _owner_write(204)),
    _row('GET', '/image/v2/images/{image_id}/file', _statuses(204, 204, 204,
                                                              404)),
    _row('PUT', '/image/v2/images/{image_id}/file', _owner_write(204),
         'octets'),
    _row('PUT', '/image/v2/images/{image_id}/tags/{tag}', _owner_write(204)),
    _row('DELETE', '/image/v2/images/{image_id}/tags/{tag}',
         _owner_write(204)),
    # the noauth2 identity stand-in
    _row('GET', '/identity', ALL_200),
    _row('GET', '/identity/v3', ALL_200),
    # NOTE: a token request needs no token; anyone may validate a token.
    _row('POST', '/identity/v3/auth/tokens', _statuses(201, 201, 201, 201),
         {'auth': {'identity': {'methods': ['password'], 'password': {
             'user': {'name': 'u', 'password': 'p'}}}}}),
    _row('GET', '/identity/v3/auth/tokens', ALL_200, 'subject'),
    _row('GET', '/identity/v3/projects', ALL_200),
    _row('GET', '/identity/v3/projects/{project_id}', ALL_200),
]


def _declared():
    routes = set()
    for declarations in (handler.ROUTE_DECLARATIONS,
                         handler.IMAGE_ROUTE_DECLARATIONS,
                         handler.IDENTITY_ROUTE_DECLARATIONS):
        for route, methods in declarations.items():
            routes.update((method, route) for method in methods)
    return routes


def _full_path(route):
    if route in ('/image', '/identity') or route.startswith(
            ('/image/', '/identity/')):
        return route
    return V + (route if route != '/' else '/')


_PATCH_TYPE = 'application/openstack-images-v2.1-json-patch'


class _Scheduler(object):
    """The scheduler's headroom RPC, answered here."""

    def headroom(self, ctxt, spec, aggregate=None):
        return {'total': 0}


class Fixtures(object):
    """Fresh projA resources for each call, so that deletes can repeat."""

    def __init__(self, world, monkeypatch=None):
        self.world = world
        if monkeypatch is not None:
            monkeypatch.setattr(capacity_handler, 'scheduler_api',
                                lambda: _Scheduler())
        self.client = world.client
        self.count = 0
        world.add_host('node0')
        self.public_flavor = helpers.make_flavor(self.client, name='pub')
        self.public_image = helpers.make_image(self.client, name='pub',
                                               visibility='public')

    def _next(self):
        self.count += 1
        return self.count

    def server_id(self, values):
        uuid = self.world.add_instance('cell1', host='node0',
                                       project_id='projA',
                                       metadata='{"k1": "v1"}')
        now = datetime.datetime(2026, 1, 1)
        self.world.insert('cell1', cell_tables.instance_actions,
                          action='create', instance_uuid=uuid,
                          request_id='req-%s' % uuid, user_id='alice',
                          project_id='projA', start_time=now, deleted=0,
                          created_at=now)
        self.world.insert('cell1', cell_tables.tags, resource_id=uuid,
                          tag='t1')
        values['request_id'] = 'req-%s' % uuid
        values['key'] = 'k1'
        values['tag'] = 't1'
        return uuid

    def flavor_id(self, values):
        flavor = helpers.make_flavor(
            self.client, name='priv-%d' % self._next(), public=False,
            specs={'hw:cpu_policy': 'dedicated'})
        status, body, _r = self.client.post(
            V + '/flavors/%s/action' % flavor,
            {'addTenantAccess': {'tenant': 'projA'}})
        assert status == 200, body
        values['key'] = 'hw:cpu_policy'
        return flavor

    def aggregate_id(self, values):
        status, body, _r = self.client.post(V + '/os-aggregates', {
            'aggregate': {'name': 'agg-%d' % self._next()}})
        assert status == 200, body
        return str(body['aggregate']['id'])

    def group_id(self, values):
        status, body, _r = self.client.post(V + '/os-server-groups', {
            'server_group': {'name': 'g', 'policy': 'affinity'}},
            **CALLERS['member'])
        assert status == 200, body
        return body['server_group']['id']

    def _host(self):
        host = 'host-%d' % self._next()
        node = self.world.add_host(host)
        return host, node

    def service_id(self, values):
        host, _node = self._host()
        [row] = self.world.rows('cell1', cell_tables.services, host=host)
        return row['uuid']

    def hypervisor_id(self, values):
        return self._host()[1]

    def pattern(self, values):
        return self._host()[0]

    def project_id(self, values):
        return 'projA'

    tenant_id = project_id

    def image_id(self, values):
        status, body, _r = self.client.post('/image/v2/images', {
            'name': 'img', 'disk_format': 'raw', 'container_format': 'bare',
            'tags': ['blue'], 'os_distro': 'cirros'}, **CALLERS['member'])
        assert status == 201, body
        values['tag'] = 'blue'
        values['meta_key'] = 'os_distro'
        return body['id']

    def keypair_name(self, values):
        name = 'kp-%d' % self._next()
        status, body, _r = self.client.post(V + '/os-keypairs', {
            'keypair': {'name': name, 'public_key': PUBLIC_KEY}},
            **CALLERS['member'])
        assert status == 201, body
        return name + '?user_id=alice'

    def class_name(self, values):
        return 'default'

    def network_label(self, values):
        return 'private'

    def security_group_id(self, values):
        return network_proxies.default_group('projA')['id']

    def before_timestamp(self, values):
        return '2026-01-01 00:00:00'

    def host_name(self, values):
        return self._host()[0]

    def alias(self, values):
        return 'servers'

    def migration_id(self, values):
        return str(self.world.insert(
            'cell1', cell_tables.migrations, uuid=str(uuid_lib.uuid4()),
            instance_uuid=values['server_id'], status='running',
            migration_type='live-migration', source_compute='node0',
            hidden=False, cross_cell_move=False, deleted=0,
            created_at=datetime.datetime(2026, 1, 1)))

    def path(self, route):
        values = {}
        for name in ('server_id', 'flavor_id', 'aggregate_id', 'group_id',
                     'service_id', 'hypervisor_id', 'project_id',
                     'image_id', 'pattern', 'tenant_id', 'keypair_name',
                     'class_name', 'network_label', 'security_group_id',
                     'before_timestamp', 'host_name', 'alias',
                     'migration_id'):
            if '{%s}' % name in route:
                values[name] = getattr(self, name)(values)
        if route == '/os-berth-capacity/headroom':
            return _full_path(route) + '?flavor=pub'
        return _full_path(route).format(**values)

    def body(self, row):
        """(body, raw, headers) of ``row``'s request."""
        if isinstance(row.body, tuple) and row.body[0] == 'at':
            return row.body[2], None, {
                'OpenStack-API-Version': 'compute %s' % row.body[1]}
        if row.body == 'boot':
            return {'server': {'name': 'vm', 'flavorRef': self.public_flavor,
                               'imageRef': self.public_image,
                               'networks': 'none'}}, None, {}
        if row.body == 'keypair':
            return {'keypair': {'name': 'kp-new-%d' % self._next(),
                                'public_key': PUBLIC_KEY}}, None, {}
        if row.body == 'resize':
            return {'resize': {'flavorRef': self.public_flavor}}, None, {}
        if row.body == 'rebuild':
            return {'rebuild': {'imageRef': self.public_image}}, None, {}
        if row.body == 'event':
            uuid = self.world.add_instance('cell1', host='node0',
                                           project_id='projA')
            return {'events': [{'name': 'network-changed',
                                'server_uuid': uuid}]}, None, {}
        if row.body == 'cache_images':
            return {'cache': [{'id': self.public_image}]}, None, {
                'OpenStack-API-Version': 'compute 2.81'}
        if row.body == 'add_host':
            host, _node = self._host()
            return {'add_host': {'host': host}}, None, {}
        if row.body == 'patch':
            patch = b'[{"op": "replace", "path": "/name", "value": "x"}]'
            return None, patch, {'Content-Type': _PATCH_TYPE}
        if row.body == 'subject':
            return None, None, {'X-Subject-Token': 'alice:projA'}
        if row.body == 'octets':
            return None, b'data', {
                'Content-Type': 'application/octet-stream'}
        return row.body, None, {}


def _call(fixtures, row, caller):
    path = fixtures.path(row.route)
    body, raw, headers = fixtures.body(row)
    kwargs = dict(CALLERS[caller])
    kwargs['headers'] = dict(kwargs.get('headers', {}), **headers)
    status, data, _r = fixtures.client.request(row.method, path, body=body,
                                               raw=raw, **kwargs)
    return status, data


def test_table_lists_every_route():
    listed = {(row.method, row.route) for row in TABLE}
    declared = _declared()
    assert not declared - listed, (
        'routes without a row in TABLE (say who may call them): %s'
        % sorted(declared - listed))
    assert not listed - declared, (
        'rows for routes that do not exist: %s' % sorted(listed - declared))
    for row in TABLE:
        assert set(row.expect) == set(CALLERS), row


def test_every_route_answers_each_role_as_listed(world, monkeypatch):
    fixtures = Fixtures(world, monkeypatch)
    wrong = []
    for row in TABLE:
        for caller, expected in row.expect.items():
            status, data = _call(fixtures, row, caller)
            if status != expected:
                wrong.append('%s %s as %s: %s, expected %s (%s)' % (
                    row.method, row.route, caller, status, expected, data))
    assert not wrong, '\n'.join(wrong)


def test_other_projects_server_is_not_found_on_every_route(world):
    fixtures = Fixtures(world)
    uuid = fixtures.server_id({})
    for method, suffix, body in (
            ('GET', '', None), ('PUT', '', SERVER_NAME),
            ('DELETE', '', None), ('GET', '/os-instance-actions', None),
            ('GET', '/os-instance-actions/req-%s' % uuid, None),
            ('GET', '/metadata', None), ('DELETE', '/metadata/k1', None),
            ('PUT', '/metadata', {'metadata': {}}),
            ('GET', '/tags', None), ('DELETE', '/tags/t1', None),
            ('PUT', '/tags', {'tags': []})):
        status, data, _r = world.client.request(
            method, V + '/servers/' + uuid + suffix, body=body,
            **CALLERS['other'])
        assert status == 404, (method, suffix, data)
        assert data['itemNotFound']['message'] == (
            'Instance %s could not be found.' % uuid)
    # NOTE: nothing was changed or deleted by the refused calls.
    status, data, _r = world.client.get(V + '/servers/' + uuid)
    assert status == 200 and data['server']['name'].startswith('vm-')
    assert world.compute.terminated == []


def test_all_tenants_is_refused_to_a_member(world):
    fixtures = Fixtures(world)
    mine = fixtures.server_id({})
    theirs = world.add_instance('cell1', host='node0', project_id='projB')
    for path in ('/servers', '/servers/detail'):
        for query in ('all_tenants=1', 'all_tenants', 'all_tenants=true'):
            status, data, _r = world.client.get(
                V + path + '?' + query, **CALLERS['member'])
            assert status == 403, (path, query, data)
            assert 'get_all_tenants' in data['forbidden']['message']
        status, data, _r = world.client.get(V + path + '?all_tenants=0',
                                            **CALLERS['member'])
        assert status == 200
        assert [s['id'] for s in data['servers']] == [mine]
        status, data, _r = world.client.get(V + path + '?all_tenants=maybe')
        assert status == 400, data
        status, data, _r = world.client.get(V + path + '?all_tenants=1')
        assert status == 200
        assert {s['id'] for s in data['servers']} == {mine, theirs}


def test_project_id_in_url_must_be_the_callers(world):
    Fixtures(world)
    status, _d, _r = world.client.get(V + '/projA/servers',
                                      **CALLERS['member'])
    assert status == 200
    status, data, _r = world.client.get(V + '/projB/servers',
                                        **CALLERS['member'])
    assert status == 400
    assert data['badRequest']['message'] == (
        "Malformed request URL: URL's project_id 'projB' doesn't match "
        "Context's project_id 'projA'")
    # NOTE: admins too, as Nova: the URL names the token's project.
    assert world.client.get(V + '/projB/flavors')[0] == 400
    assert world.client.get(V + '/admin/flavors')[0] == 200
    # An unknown route stays a 404 whatever project the URL names.
    assert world.client.get(V + '/projB/nothing')[0] == 404
