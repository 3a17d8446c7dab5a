# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Stand-ins for the conductor's neighbours, and a small cells world.

* :class:`FakePlacement`: the HTTP placement API the conductor uses
  (allocations with consumer generations and capacity, provider
  listings), answering :class:`common.placement.client.PlacementCalls`'
  get/put/delete.
* :class:`FakeScheduler`: select_destinations answering from a list of
  hosts, claiming in the fake placement like the real one.
* :class:`FakeCompute`: records build_and_run_instance casts.
* :class:`World`: api, cell0 and cell1 databases on SQLite files, mapped,
  and a ConductorManager wired to the fakes.
"""

import json
import threading
import uuid as uuid_lib

from oslo_utils import timeutils

from common import cell_rpc
from common.conf import CONF
from common.db import api_tables
from common.db import boot_records
from common.db import cell_tables
from common.db import cells
from common.db import compute_records
from common import exception
from common.objects import selection as selection_obj
from common.placement import client as placement_client
from common.placement import move_allocations
from services.conductor import manager
from tests.unit.db import records_fixtures as fx

CELL1_UUID = fx.CELL1_UUID


class FakePlacement(placement_client.PlacementCalls):
    """Allocations and providers in memory, answering like placement."""

    def __init__(self):
        self.capacity = {}
        self.roots = {}
        self.aggregates = {}
        self.consumers = {}
        self.calls = []
        self._lock = threading.Lock()

    def add_provider(self, uuid, root=None, **capacity):
        """A provider with ``capacity`` (resource class -> total)."""
        self.capacity[uuid] = dict(capacity or {'VCPU': 16,
                                                'MEMORY_MB': 32768,
                                                'DISK_GB': 1000})
        self.roots[uuid] = root or uuid

    def allocations(self, consumer):
        """provider -> resources held by ``consumer`` ({} when none)."""
        found = self.consumers.get(consumer)
        return dict(found['allocations']) if found else {}

    def used(self, rp):
        total = {}
        for consumer in self.consumers.values():
            for rc, n in consumer['allocations'].get(rp, {}).items():
                total[rc] = total.get(rc, 0) + n
        return total

    @staticmethod
    def _answer(status, body=None):
        return placement_client.Response(status, body, {})

    def _conflict(self, detail):
        return self._answer(409, {'errors': [{'detail': detail}]})

    def get(self, url, version, context=None, **kwargs):
        self.calls.append(('GET', url))
        parts = url.strip('/').split('/')
        with self._lock:
            if parts == ['resource_providers']:
                return self._answer(200, {'resource_providers': [
                    {'uuid': u, 'name': u, 'root_provider_uuid': r}
                    for u, r in sorted(self.roots.items())]})
            if parts[0] == 'resource_providers':
                if parts[1] not in self.roots:
                    return self._answer(404, {'errors': []})
                if parts[2] == 'aggregates':
                    aggs, generation = self.aggregates.get(parts[1],
                                                           ([], 0))
                    return self._answer(200, {
                        'aggregates': list(aggs),
                        'resource_provider_generation': generation})
                return self._answer(200, {'allocations': {
                    c: {'resources': data['allocations'][parts[1]]}
                    for c, data in self.consumers.items()
                    if parts[1] in data['allocations']}})
            found = self.consumers.get(parts[1])
            if found is None:
                return self._answer(200, {'allocations': {}})
            return self._answer(200, {
                'allocations': {rp: {'resources': res} for rp, res in
                                found['allocations'].items()},
                'consumer_generation': found['generation'],
                'project_id': found['project_id'],
                'user_id': found['user_id']})

    def put(self, url, body, version, context=None, **kwargs):
        self.calls.append(('PUT', url))
        if url.endswith('/aggregates'):
            return self._put_aggregates(url.strip('/').split('/')[1], body)
        consumer = url.strip('/').split('/')[1]
        wanted = {rp: dict(a['resources'])
                  for rp, a in body['allocations'].items()}
        with self._lock:
            current = self.consumers.get(consumer)
            generation = body.get('consumer_generation')
            if (current is None and generation is not None) or (
                    current is not None and
                    generation != current['generation']):
                return self._conflict('consumer generation conflict')
            for rp, resources in wanted.items():
                if rp not in self.capacity:
                    return self._answer(400, {'errors': [
                        {'detail': 'no provider %s' % rp}]})
                used = self.used(rp)
                for held_rp, held in (current or {}).get(
                        'allocations', {}).items():
                    if held_rp == rp:
                        for rc, n in held.items():
                            used[rc] = used.get(rc, 0) - n
                for rc, n in resources.items():
                    if used.get(rc, 0) + n > self.capacity[rp].get(rc, 0):
                        return self._conflict('Unable to allocate %s' % rc)
            if not wanted:
                self.consumers.pop(consumer, None)
            else:
                self.consumers[consumer] = {
                    'allocations': wanted,
                    'generation': (current or {'generation': -1})[
                        'generation'] + 1,
                    'project_id': body.get('project_id'),
                    'user_id': body.get('user_id')}
        return self._answer(204)

    def post(self, url, body, version, context=None, **kwargs):
        """``POST /allocations``: several consumers at once, all or
        nothing, each guarded by its generation.
        """
        self.calls.append(('POST', url))
        with self._lock:
            for consumer, entry in body.items():
                current = self.consumers.get(consumer)
                generation = entry.get('consumer_generation')
                if (current is None and generation is not None) or (
                        current is not None and
                        generation != current['generation']):
                    return self._conflict('consumer generation conflict')
            for consumer, entry in body.items():
                current = self.consumers.get(consumer)
                wanted = {rp: dict(a['resources'])
                          for rp, a in entry['allocations'].items()}
                if not wanted:
                    self.consumers.pop(consumer, None)
                    continue
                self.consumers[consumer] = {
                    'allocations': wanted,
                    'generation': (current or {'generation': -1})[
                        'generation'] + 1,
                    'project_id': entry.get('project_id'),
                    'user_id': entry.get('user_id'),
                    'consumer_type': entry.get('consumer_type')}
        return self._answer(204)

    def _put_aggregates(self, rp, body):
        with self._lock:
            if rp not in self.roots:
                return self._answer(404, {'errors': []})
            _aggs, generation = self.aggregates.get(rp, ([], 0))
            if body['resource_provider_generation'] != generation:
                return self._conflict('resource provider generation '
                                      'conflict')
            self.aggregates[rp] = (list(body['aggregates']), generation + 1)
        return self._answer(200, {})

    def delete(self, url, version, context=None, **kwargs):
        self.calls.append(('DELETE', url))
        consumer = url.strip('/').split('/')[1]
        with self._lock:
            if self.consumers.pop(consumer, None) is None:
                return self._answer(404, {'errors': []})
        return self._answer(204)


class FakeScheduler(object):
    """select_destinations over a fixed list of (host, node uuid, cell).

    Hosts are taken round-robin; each instance is claimed in the fake
    placement and gets the other hosts as alternates. ``fail`` makes the
    next call raise it instead.
    """

    def __init__(self, placement, hosts):
        self.placement = placement
        self.hosts = list(hosts)
        self.calls = []
        self.fail = None
        self.before = None
        #: the hand_over of each call (None: a plain claim).
        self.hand_overs = []
        # NOTE: host -> zone ('nova' for others), as the real scheduler
        # names each selection's zone from its host state's aggregates.
        self.zones = {}

    def select_destinations(self, ctxt, spec, uuids, return_alternates,
                            hand_over=None):
        self.calls.append((spec.to_primitive(), list(uuids)))
        self.hand_overs.append(hand_over)
        if self.before is not None:
            self.before(spec, uuids)
        if self.fail is not None:
            raise self.fail
        result = []
        for index, uuid in enumerate(uuids):
            order = self.hosts[index % len(self.hosts):] + \
                self.hosts[:index % len(self.hosts)]
            selections = [self._selection(spec, h) for h in order]
            for selection in selections:
                selection.availability_zone = self.zones.get(
                    selection.service_host, 'nova')
            self._claim(spec, uuid, json.loads(
                selections[0].allocation_request)['allocations'], hand_over)
            result.append(selections)
        return result

    def _claim(self, spec, uuid, destination, hand_over):
        """The claim as the scheduler writes it (with the hand-over of a
        moving instance's source to its migration).
        """
        if hand_over is None:
            # NOTE: refused for a consumer that holds something (a
            # rebuild's check, which the real scheduler does not claim).
            self.placement.put('/allocations/%s' % uuid, {
                'allocations': destination,
                'project_id': spec.project_id, 'user_id': spec.user_id,
                'consumer_generation': None}, '1.36')
            return
        resp = self.placement.post(
            '/allocations', move_allocations.hand_over_body(
                uuid, destination, hand_over, spec.project_id,
                spec.user_id), '1.38')
        assert resp.ok, resp.body

    @staticmethod
    def _selection(spec, host):
        name, node_uuid, cell_uuid = host
        resources = {'VCPU': spec.flavor.vcpus,
                     'MEMORY_MB': spec.flavor.memory_mb,
                     'DISK_GB': spec.flavor.root_gb}
        return selection_obj.Selection(
            service_host=name, nodename=name, compute_node_uuid=node_uuid,
            cell_uuid=cell_uuid, limits={},
            allocation_request=json.dumps({'allocations': {
                node_uuid: {'resources': resources}}}),
            allocation_request_version='1.36')


class FakeCompute(object):
    """A compute RPC API that records its casts."""

    def __init__(self):
        self.builds = []
        self.client = None
        self.done = threading.Event()

    def build_and_run_instance(self, ctxt, host, instance, request_spec,
                               selection, alternates, node=None):
        self.builds.append({'host': host, 'node': node,
                            'instance': instance,
                            'request_spec': request_spec,
                            'selection': selection,
                            'alternates': alternates})
        self.done.set()

    def rebuild_instance(self, ctxt, host, instance_uuid, image_ref,
                         orig_vm_state, preserve_ephemeral=False):
        self.__dict__.setdefault('rebuilds', []).append({
            'host': host, 'instance_uuid': instance_uuid,
            'image_ref': image_ref, 'orig_vm_state': orig_vm_state,
            'preserve_ephemeral': preserve_ephemeral})

    # --- resize and cold migration: recorded by method name

    def _record(self, method, **kwargs):
        self.__dict__.setdefault('moves', []).append(dict(kwargs,
                                                          method=method))

    def prep_resize(self, ctxt, host, instance, migration_uuid, flavor,
                    request_spec, selection, alternates, node=None):
        self._record('prep_resize', host=host, instance=instance,
                     migration_uuid=migration_uuid, flavor=flavor,
                     request_spec=request_spec, selection=selection,
                     alternates=alternates, node=node)

    def revert_resize(self, ctxt, host, instance_uuid, migration_uuid,
                      reason=None):
        self._record('revert_resize', host=host,
                     instance_uuid=instance_uuid,
                     migration_uuid=migration_uuid, reason=reason)

    def _cast(self, name, **kwargs):
        self.__dict__.setdefault('casts', []).append((name, kwargs))

    def start_instance(self, ctxt, host, instance_uuid):
        self._cast('start_instance', host=host,
                   instance_uuid=instance_uuid)

    def unshelve_instance(self, ctxt, **kwargs):
        self._cast('unshelve_instance', **kwargs)

    def evacuate_instance(self, ctxt, **kwargs):
        self._cast('evacuate_instance', **kwargs)


class FakeNotifier(object):
    """Records notifications."""

    def __init__(self):
        self.sent = []

    def info(self, ctxt, event, payload):
        self.sent.append(('INFO', event, payload))

    def error(self, ctxt, event, payload):
        self.sent.append(('ERROR', event, payload))


class World(object):
    """api, cell0 and cell1 databases with mappings, and the fakes."""

    def __init__(self, tmp_path, hosts=('h1', 'h2', 'h3')):
        self.registry = cells.CellDatabases(CONF)
        self.api = fx.api_database(tmp_path)
        urls = {name: 'sqlite:///%s' % (tmp_path / ('%s.sqlite' % name))
                for name in ('cell0', 'cell1')}
        self._insert(self.api, api_tables.cell_mappings, [
            dict(uuid=cells.CELL0_UUID, name='cell0',
                 transport_url='none:///', database_connection=urls['cell0'],
                 disabled=False),
            dict(uuid=CELL1_UUID, name='cell1', transport_url='fake://',
                 database_connection=urls['cell1'], disabled=False)])
        self.cell0 = self.registry.get(urls['cell0'])
        self.cell1 = self.registry.get(urls['cell1'])
        for database in (self.cell0, self.cell1):
            cell_tables.metadata.create_all(database.engine())
        self.placement = FakePlacement()
        self.nodes = {}
        for host in hosts:
            node = compute_records.save_compute_node(
                fx.ctxt(), self.cell1, host, host,
                dict(vcpus=16, memory_mb=32768, local_gb=1000))
            self.nodes[host] = node['uuid']
            self.placement.add_provider(node['uuid'])
            boot_records.create_host_mapping(fx.ctxt(), host, CELL1_UUID,
                                             database=self.api)
        self.scheduler = FakeScheduler(
            self.placement, [(h, self.nodes[h], CELL1_UUID) for h in hosts])
        self.compute = FakeCompute()
        self.notifier = FakeNotifier()
        self.manager = manager.ConductorManager(
            host='conductor-1', scheduler_api=self.scheduler,
            compute_clients=cell_rpc.CellClients(lambda: self.compute),
            placement=self.placement, api_database=self.api,
            cell_databases=self.registry, notifier=self.notifier)

    @staticmethod
    def _insert(database, table, rows):
        def insert(ctx):
            for row in rows:
                ctx.session.execute(table.insert().values(
                    created_at=timeutils.utcnow(), **row))
        database.writer(insert)(fx.ctxt())

    def add_zone(self, zone, hosts):
        """An aggregate with availability_zone metadata over ``hosts``."""
        def insert(ctx):
            agg_id = ctx.session.execute(api_tables.aggregates.insert(
            ).values(uuid=str(uuid_lib.uuid4()), name=zone)
            ).inserted_primary_key[0]
            for host in hosts:
                ctx.session.execute(api_tables.aggregate_hosts.insert(
                ).values(aggregate_id=agg_id, host=host))
            ctx.session.execute(api_tables.aggregate_metadata.insert(
            ).values(aggregate_id=agg_id, key='availability_zone',
                     value=zone))
        self.api.writer(insert)(fx.ctxt())
        # NOTE: the scheduler's host states see the aggregate too.
        self.scheduler.zones.update(dict.fromkeys(hosts, zone))

    def boot(self, count=1, **spec_values):
        """Build requests as the API writes them; (spec, instances)."""
        items = []
        for index in range(count):
            instance = fx.instance(launch_index=index)
            items.append((instance, fx.spec_for(instance, count,
                                                **spec_values)))
        boot_records.create_build_requests(fx.ctxt(), items,
                                           database=self.api)
        spec = fx.spec_for(items[0][0], count, **spec_values)
        return spec, [instance for instance, _spec in items]

    def mapping(self, uuid):
        return boot_records.get_instance_mapping(fx.ctxt(), uuid,
                                                 database=self.api)

    def close(self):
        self.registry.reset()
        self.api.dispose()


def no_valid_host(summary='3 hosts: 3 rejected by RamFilter (ram)'):
    """A NoValidHost as the scheduler raises it, with its explanation."""
    return exception.NoValidHost(reason=summary, explanation={
        'summary': summary, 'hosts': 3,
        'filters': [{'filter': 'RamFilter', 'hosts_in': 3,
                     'hosts_out': 0, 'removed': []}]})
