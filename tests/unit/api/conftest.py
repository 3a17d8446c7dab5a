# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The compute API in-process, on SQLite, with the other services faked.

Each test gets an api database, cell0 and cell1 (fresh SQLite files with
the tables made from the metadata), the WSGI app with noauth2, and fakes
that record what the API tells the others: the conductor's
``schedule_and_build_instances`` casts, the compute agents'
``terminate_instance`` casts, placement's requests and the schedulers'
``update_aggregates`` notices.
"""

import datetime
import json
import uuid

from oslo_utils import timeutils
import pytest
import sqlalchemy as sa
import webob

from common.conf import CONF
from common import config
from common import context as berth_context
from common.db import api_tables
from common.db import cell_tables
from common.db import cells
from common.db import instance_cells
from common import exception
from common.placement import client as placement_client
from common import rpc
from services.api import boot
from services.api import cell_hosts
from services.api import deletion
from services.api import deploy
from services.api import placement_sync
from services.api import policies
from services.api import server_lookup

CELL1_UUID = '4473067d-4c91-459f-93ae-79cb1e1203c7'
MAX_VERSION = '2.79'
_STATE = {}


class FakeConductor(object):
    """Records schedule_and_build_instances casts."""

    def __init__(self):
        self.builds = []
        self.fail = False

    def schedule_and_build_instances(self, ctxt, request_spec,
                                     instance_uuids, build_requests=None):
        if self.fail:
            raise RuntimeError('conductor unreachable')
        self.builds.append((request_spec, list(instance_uuids)))
        self.build_requests = build_requests

    def rebuild_instance(self, ctxt, **kwargs):
        self.rebuilds = getattr(self, 'rebuilds', [])
        self.rebuilds.append(kwargs)

    # --- resize and cold migration: recorded; ``no_valid_host`` makes
    # migrate_server answer as a scheduler that found nothing.
    def migrate_server(self, ctxt, **kwargs):
        self.moves = getattr(self, 'moves', [])
        self.moves.append(kwargs)
        reason = getattr(self, 'no_valid_host', None)
        if reason is not None:
            raise exception.NoValidHost(reason=reason)
        return 'dest'

    def live_migrate_instance(self, ctxt, instance_uuid, **kwargs):
        self.live_migrations = getattr(self, 'live_migrations', [])
        self.live_migrations.append(dict(kwargs, uuid=instance_uuid))

    def cache_images(self, ctxt, aggregate, image_ids):
        self.image_caches = getattr(self, 'image_caches', [])
        self.image_caches.append((aggregate, list(image_ids)))


class FakeCompute(object):
    """Records terminate_instance casts."""

    def __init__(self):
        self.terminated = []
        self.casts = []

    def terminate_instance(self, ctxt, host, instance_uuid):
        self.terminated.append((host, instance_uuid))

    def confirm_resize(self, ctxt, host, instance, migration):
        self.confirms = getattr(self, 'confirms', [])
        self.confirms.append((host, instance, migration))

    def revert_resize(self, ctxt, host, instance_uuid, migration_uuid,
                      reason=None):
        self.reverts = getattr(self, 'reverts', [])
        self.reverts.append((host, instance_uuid, migration_uuid, reason))

    def snapshot_instance(self, ctxt, host, instance_uuid, image_id):
        self.snapshots = getattr(self, 'snapshots', [])
        self.snapshots.append((host, instance_uuid, image_id))

    def __getattr__(self, name):
        # NOTE: the server actions' casts (stop_instance...), recorded as
        # (method, host, instance uuid, other arguments).
        if not name.endswith(('_instance', 'live_migration_abort',
                              'live_migration_force_complete')):
            raise AttributeError(name)

        def cast(ctxt, host, instance_uuid, **kwargs):
            self.casts.append((name, host, instance_uuid, kwargs))
        return cast


class FakePlacement(placement_client.PlacementCalls):
    """A tiny placement: provider aggregates, traits, allocations."""

    def __init__(self):
        self.calls = []
        self.aggregates = {}
        self.traits = {}
        self.generations = {}
        self.allocations = set()
        self.providers = set()

    def _ok(self, body=None, status=200):
        return placement_client.Response(status, body, {})

    def get(self, url, version, context=None, **kwargs):
        self.calls.append(('GET', url))
        if url == '/resource_providers':
            return self._ok({'resource_providers': [
                {'uuid': u, 'name': 'rp-%s' % u[:8], 'root_provider_uuid': u}
                for u in sorted(self.providers)]})
        uuid_ = url.split('/')[2]
        if uuid_ not in self.providers:
            return self._ok({'errors': [{'detail': 'nope'}]}, 404)
        gen = self.generations.get(uuid_, 0)
        if url.endswith('/inventories'):
            # NOTE: as the hosts add_host makes (the capacity report).
            return self._ok({'inventories': {
                'VCPU': {'total': 16, 'allocation_ratio': 4.0},
                'MEMORY_MB': {'total': 32768, 'reserved': 512}},
                'resource_provider_generation': gen})
        if url.endswith('/usages'):
            return self._ok({'usages': {'VCPU': 1, 'MEMORY_MB': 512},
                             'resource_provider_generation': gen})
        if url.endswith('/aggregates'):
            return self._ok({'aggregates': self.aggregates.get(uuid_, []),
                             'resource_provider_generation': gen})
        return self._ok({'traits': sorted(self.traits.get(uuid_, ())),
                         'resource_provider_generation': gen})

    def put(self, url, body, version, context=None, **kwargs):
        self.calls.append(('PUT', url, body))
        uuid_ = url.split('/')[2]
        self.generations[uuid_] = self.generations.get(uuid_, 0) + 1
        if url.endswith('/aggregates'):
            self.aggregates[uuid_] = list(body['aggregates'])
        else:
            self.traits[uuid_] = set(body['traits'])
        return self._ok({})

    def delete(self, url, version, context=None, **kwargs):
        self.calls.append(('DELETE', url))
        kind, ident = url.split('/')[1:3]
        if kind == 'allocations':
            self.allocations.discard(ident)
        else:
            self.providers.discard(ident)
        return self._ok(None, 204)


class Client(object):
    """Calls the WSGI app in-process and decodes the JSON answer."""

    def __init__(self, app):
        self.app = app

    def request(self, method, path, body=None, token='admin',
                version=MAX_VERSION, headers=None, raw=None):
        all_headers = {'X-Auth-Token': token} if token else {}
        if version:
            all_headers['OpenStack-API-Version'] = 'compute %s' % version
        all_headers.update(headers or {})
        req = webob.Request.blank(path, method=method, headers=all_headers)
        if body is not None or raw is not None:
            req.body = raw if raw is not None else json.dumps(
                body).encode()
            req.content_type = all_headers.get('Content-Type',
                                               'application/json')
        resp = req.get_response(self.app)
        data = None
        if resp.body and 'json' in (resp.content_type or ''):
            data = json.loads(resp.body)
        return resp.status_int, data, resp

    def get(self, path, **kw):
        return self.request('GET', path, **kw)

    def post(self, path, body, **kw):
        return self.request('POST', path, body=body, **kw)

    def put(self, path, body, **kw):
        return self.request('PUT', path, body=body, **kw)

    def delete(self, path, **kw):
        return self.request('DELETE', path, **kw)


class World(object):
    """Databases, fakes and helpers of one test."""

    def __init__(self, tmp_path, urls=None):
        """
        :param urls: {'api'/'cell0'/'cell1': URL of an empty database};
            SQLite files under ``tmp_path`` by default.
        """
        self.urls = urls or {
            n: 'sqlite:///%s' % (tmp_path / ('%s.sqlite' % n))
            for n in ('api', 'cell0', 'cell1')}
        self.api_db = cells.database_for_url('api test', self.urls['api'])
        api_tables.metadata.create_all(self.api_db.engine())
        for name in ('cell0', 'cell1'):
            engine = sa.create_engine(self.urls[name])
            cell_tables.metadata.create_all(engine)
            engine.dispose()
        self.conductor = FakeConductor()
        self.compute = FakeCompute()
        self.placement = FakePlacement()
        self.scheduler_notices = []
        self.cell_ids = {}

    def insert(self, db, table, **values):
        engine = (self.api_db.engine() if db == 'api'
                  else cells.get_cell_database(self.urls[db]).engine())
        with engine.begin() as conn:
            return conn.execute(table.insert().values(**values)
                                ).inserted_primary_key[0]

    def rows(self, db, table, **where):
        engine = (self.api_db.engine() if db == 'api'
                  else cells.get_cell_database(self.urls[db]).engine())
        query = sa.select(table)
        for key, value in where.items():
            query = query.where(table.c[key] == value)
        with engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def map_cells(self):
        for cell_uuid, name in ((cells.CELL0_UUID, 'cell0'),
                                (CELL1_UUID, 'cell1')):
            self.cell_ids[name] = self.insert(
                'api', api_tables.cell_mappings, uuid=cell_uuid, name=name,
                transport_url='none:///',
                database_connection=self.urls[name], disabled=False)

    def add_host(self, host, vcpus=16, memory_mb=32768, age=5,
                 forced_down=False, disabled=False, node=None):
        """A compute host in cell1: service, compute node, host mapping.
        """
        now = timeutils.utcnow()
        self.insert('cell1', cell_tables.services, uuid=str(uuid.uuid4()),
                    host=host, binary='berth-compute', topic='compute',
                    report_count=1, disabled=disabled,
                    forced_down=forced_down, version=0, deleted=0,
                    created_at=now - datetime.timedelta(hours=1),
                    last_seen_up=now - datetime.timedelta(seconds=age))
        node_uuid = str(uuid.uuid4())
        self.insert('cell1', cell_tables.compute_nodes, uuid=node_uuid,
                    host=host, hypervisor_hostname=node or host,
                    vcpus=vcpus, memory_mb=memory_mb, local_gb=100,
                    vcpus_used=0, memory_mb_used=512, local_gb_used=0,
                    hypervisor_type='fake', hypervisor_version=1,
                    cpu_info=json.dumps({'arch': 'x86_64'}),
                    running_vms=0, mapped=1, deleted=0, created_at=now)
        self.insert('api', api_tables.host_mappings,
                    cell_id=self.cell_ids['cell1'], host=host)
        self.placement.providers.add(node_uuid)
        return node_uuid

    def add_service(self, host, binary):
        self.insert('cell1', cell_tables.services, uuid=str(uuid.uuid4()),
                    host=host, binary=binary, topic=binary.split('-')[-1],
                    report_count=1, disabled=False, forced_down=False,
                    version=0, deleted=0, created_at=timeutils.utcnow(),
                    last_seen_up=timeutils.utcnow())

    def add_instance(self, cell, host=None, project_id='admin', **values):
        """A live instance row in a cell database; returns its uuid."""
        instance_uuid = str(uuid.uuid4())
        values.setdefault('vm_state', 'active')
        values.setdefault('user_id', 'admin')
        values.setdefault('display_name', 'vm-%s' % instance_uuid[:4])
        values.setdefault('flavor', json.dumps(
            {'name': 'm1', 'flavorid': 'm1', 'vcpus': 1, 'memory_mb': 512,
             'root_gb': 1, 'ephemeral_gb': 0, 'swap': 0,
             'extra_specs': {}}))
        self.insert(cell, cell_tables.instances, uuid=instance_uuid,
                    host=host, node=host, project_id=project_id,
                    deleted=0, created_at=timeutils.utcnow(), **values)
        self.insert('api', api_tables.instance_mappings,
                    instance_uuid=instance_uuid, project_id=project_id,
                    cell_id=self.cell_ids[cell], queued_for_delete=False)
        self.placement.allocations.add(instance_uuid)
        return instance_uuid

    def admin_context(self):
        return berth_context.get_admin_context()


@pytest.fixture
def world(tmp_path, monkeypatch):
    """One test's databases, fakes and app (``world.client``)."""
    yield from running_world(World(tmp_path), monkeypatch)


def running_world(world, monkeypatch):
    """Generator: set ``world`` up (app, fakes), yield it, clean up.

    Shared with the functional tests that run it on MariaDB and
    PostgreSQL.
    """
    monkeypatch.setattr(cells, 'api_db', world.api_db)
    world.map_cells()
    cell_hosts.forget_cells()
    monkeypatch.setattr(server_lookup, 'KNOWN_CELLS',
                        instance_cells.InstanceCells(
                            server_lookup.KNOWN_CELLS_SIZE))
    monkeypatch.setattr(boot, 'conductor_api', lambda: world.conductor)
    monkeypatch.setattr(deletion, 'compute_api',
                        lambda cell: world.compute)
    monkeypatch.setattr(placement_sync, 'client',
                        lambda conf: world.placement)
    monkeypatch.setattr(placement_sync, 'tell_schedulers',
                        lambda ctxt: world.scheduler_notices.append(1))
    if not _STATE.get('parsed'):
        config.parse_args([], default_config_files=[])
        _STATE['parsed'] = True
    CONF.set_override('auth_strategy', 'noauth2', group='api')
    rpc.register_opts(CONF)
    CONF.set_override('transport_url', 'fake://')
    policies.reset()
    world.app = deploy.loadapp(CONF)
    world.client = Client(world.app)
    yield world
    CONF.clear_override('auth_strategy', group='api')
    CONF.clear_override('transport_url')
    cell_hosts.forget_cells()
    cells.REGISTRY.reset()
    world.api_db.dispose()
    policies.reset()
