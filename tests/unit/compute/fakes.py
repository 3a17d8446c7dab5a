# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Stand-ins for the compute agent's peers in unit tests.

- :class:`FakeConductor`: the conductor's record proxy and build casts,
  with the contract's method names and signatures, on in-memory records.
- :class:`FakeScheduler`: records instance-info casts.
- :class:`WsgiAdapter`: a keystoneauth-like adapter that hands requests
  to the real placement WSGI application in this process (SQLite), and
  can simulate an outage.

Functional tests use the real conductor, RabbitMQ and a placement server.
"""

import copy
import itertools
import json
import threading
import uuid as uuid_lib

from keystoneauth1 import exceptions as ks_exc
import oslo_messaging as messaging
from oslo_utils import timeutils
import webob

from common import exception
from common.objects import flavor as flavor_obj
from common.objects import instance as instance_obj
from common.objects import migration as migration_obj
from common import servicegroup


def _now():
    return timeutils.utcnow().isoformat()


def _parse(iso):
    return timeutils.normalize_time(timeutils.parse_isotime(iso))


def _changed(row, since):
    stamp = row.get('updated_at') or row.get('created_at')
    return stamp is None or _parse(stamp) >= since


class FakeConductor(object):
    """In-memory records behind ConductorAPI's methods.

    Instance rows carry ``created_at``/``updated_at`` as the cell database
    stamps them (tests that change a row in place call :meth:`touch`), so
    the agent's incremental sync sees what it would see there.
    """

    # NOTE: the version it serves when tests put it behind RPC.
    target = messaging.Target(version='1.0')

    def __init__(self):
        self.lock = threading.Lock()
        self.services = {}
        self.nodes = {}
        self.instances = {}
        self.deleted = {}
        self.faults = []
        self.events = []
        self.rebuilds = []
        self.migrations = {}
        self.calls = []
        self._ids = itertools.count(1)

    def _log(self, name):
        with self.lock:
            self.calls.append(name)

    # --- services
    def service_join(self, ctxt, host, binary, topic):
        self._log('service_join')
        with self.lock:
            record = self.services.setdefault(
                (host, binary), servicegroup.ServiceRecord(
                    host=host, binary=binary, topic=topic,
                    created_at=timeutils.utcnow()))
            return record.to_primitive()

    def service_report(self, ctxt, host, binary):
        self._log('service_report')
        with self.lock:
            record = self.services[(host, binary)]
            record.report_count += 1
            record.updated_at = timeutils.utcnow()
            return record.to_primitive()

    def service_report_many(self, ctxt, hosts, binary):
        self._log('service_report_many')
        for host in hosts:
            with self.lock:
                record = self.services[(host, binary)]
                record.report_count += 1
                record.updated_at = timeutils.utcnow()

    def service_get(self, ctxt, host, binary):
        self._log('service_get')
        with self.lock:
            record = self.services.get((host, binary))
            return record.to_primitive() if record else None

    # --- compute nodes
    def compute_node_save(self, ctxt, host, nodename, values, brief=False):
        self._log('compute_node_save')
        return self._save_node(host, nodename, values, brief)

    def _save_node(self, host, nodename, values, brief):
        with self.lock:
            self.brief_saves = getattr(self, 'brief_saves', 0) + bool(brief)
            row = self.nodes.get((host, nodename))
            if row is None:
                row = {'id': next(self._ids),
                       'uuid': values.get('uuid') or str(uuid_lib.uuid4()),
                       'host': host, 'hypervisor_hostname': nodename}
                self.nodes[(host, nodename)] = row
            changes = {k: v for k, v in copy.deepcopy(values).items()
                       if k != 'uuid'}
            row.update(changes)
            if brief:
                return {'id': row['id'], 'uuid': row['uuid']}
            return dict(row)

    def compute_nodes_save(self, ctxt, nodes):
        self._log('compute_nodes_save')
        self.batches = getattr(self, 'batches', []) + [
            [(n['host'], n['nodename']) for n in nodes]]
        return [self._save_node(n['host'], n['nodename'], n['values'], True)
                for n in nodes]

    def compute_nodes_get_by_host(self, ctxt, host):
        self._log('compute_nodes_get_by_host')
        with self.lock:
            return [dict(r) for (h, _n), r in self.nodes.items()
                    if h == host]

    def compute_node_delete(self, ctxt, host, nodename):
        self._log('compute_node_delete')
        with self.lock:
            self.nodes.pop((host, nodename), None)

    # --- instances
    def add_instance(self, host, node=None, vcpus=1, memory_mb=512,
                     root_gb=1, uuid=None, **fields):
        """Put an instance row in place (what the conductor would)."""
        inst = instance_obj.Instance(
            uuid=uuid or str(uuid_lib.uuid4()), project_id='p1',
            user_id='u1', host=host, node=node or host,
            flavor=flavor_obj.Flavor(name='f', flavorid='f%d' % vcpus,
                                     vcpus=vcpus, memory_mb=memory_mb,
                                     root_gb=root_gb),
            vm_state=fields.pop('vm_state', instance_obj.ACTIVE), **fields)
        inst.created_at = fields.get('created_at') or _now()
        with self.lock:
            self.instances[inst.uuid] = inst.to_primitive()
        return inst.to_primitive()

    def touch(self, instance_uuid):
        """Stamp a row changed in place, as every database write does."""
        with self.lock:
            self.instances[instance_uuid]['updated_at'] = _now()

    def instances_get_by_host(self, ctxt, host, changed_since=None):
        self._log('instances_get_by_host')
        as_of, live = self._live_on(host)
        if changed_since is None:
            return live
        self._log('instances_get_by_host(changed_since)')
        return self._sync_reply(host, live, as_of, changed_since)

    def _live_on(self, host):
        with self.lock:
            return _now(), [copy.deepcopy(i) for i in self.instances.values()
                            if i['host'] == host]

    def _sync_reply(self, host, live, as_of, changed_since):
        since = _parse(changed_since)
        with self.lock:
            moves = [copy.deepcopy(m) for m in self.migrations.values()
                     if host in (m['source_compute'], m['dest_compute'])
                     and m['status'] not in migration_obj.NOT_COUNTED]
            moving = [copy.deepcopy(self.instances[m['instance_uuid']])
                      for m in moves
                      if m['instance_uuid'] in self.instances and
                      self.instances[m['instance_uuid']]['host'] != host]
            accepted = [m['uuid'] for m in self.migrations.values()
                        if m['dest_compute'] == host and
                        m['status'] == migration_obj.ACCEPTED]
        return {'instances': [i for i in live if _changed(i, since)],
                'uuids': [i['uuid'] for i in live], 'as_of': as_of,
                'migrations': moves, 'moving': moving,
                'accepted': accepted}

    def instances_sync_hosts(self, ctxt, since_by_host):
        self._log('instances_sync_hosts')
        replies = {}
        for host, since in since_by_host.items():
            as_of, live = self._live_on(host)
            replies[host] = self._sync_reply(host, live, as_of, since)
        return replies

    def add_migration(self, **values):
        """Record a migration (a Migration primitive's fields)."""
        migration = migration_obj.Migration(**values).to_primitive()
        with self.lock:
            self.migrations[migration['uuid']] = migration
        return migration

    def migration_get(self, ctxt, instance_uuid, migration_uuid):
        self._log('migration_get')
        with self.lock:
            if migration_uuid not in self.migrations:
                raise exception.MigrationNotFound(migration_id=migration_uuid)
            return copy.deepcopy(self.migrations[migration_uuid])

    def migration_update(self, ctxt, instance_uuid, migration_uuid, values,
                         expected_status=None, brief=False):
        self._log('migration_update')
        with self.lock:
            found = self._guarded_migration(migration_uuid, expected_status)
            found.update(copy.deepcopy(values))
            return None if brief else copy.deepcopy(found)

    def _guarded_migration(self, migration_uuid, expected_status):
        """The migration, if in ``expected_status`` (caller holds lock)."""
        if migration_uuid not in self.migrations:
            raise exception.MigrationNotFound(migration_id=migration_uuid)
        found = self.migrations[migration_uuid]
        if isinstance(expected_status, str):
            expected_status = [expected_status]
        if expected_status is not None and (
                found['status'] not in expected_status):
            raise exception.UnexpectedMigrationStatusError(
                migration_id=migration_uuid, expected=expected_status,
                actual=found['status'])
        return found

    def _guarded_instance(self, instance_uuid, expected):
        """The instance, if in task ``expected`` (caller holds lock)."""
        inst = self.instances.get(instance_uuid)
        if inst is None:
            raise exception.InstanceNotFound(instance_id=instance_uuid)
        if expected is not None:
            allowed = expected if isinstance(expected, list) else [expected]
            if inst['task_state'] not in allowed:
                raise exception.UnexpectedTaskStateError(
                    instance_uuid=instance_uuid, expected=allowed,
                    actual=inst['task_state'])
        return inst

    def _record_events(self, instance_uuid, action_events):
        for action_event in action_events or ():
            self.events.append((instance_uuid, action_event['event'],
                                action_event['phase'],
                                action_event.get('result')))

    def move_get(self, ctxt, instance_uuid, migration_uuid,
                 action_events=None):
        self._log('move_get')
        with self.lock:
            inst = self._guarded_instance(instance_uuid, None)
            migration = self._guarded_migration(migration_uuid, None)
            self._record_events(instance_uuid, action_events)
            return {'instance': copy.deepcopy(inst),
                    'migration': copy.deepcopy(migration)}

    def move_claim_expired(self, ctxt, instance_uuid, migration_uuid):
        """As the conductor's: ``confirming`` and a ``confirmResize``
        action for a RESIZED server with no task, ``error`` for one not
        RESIZED or gone (actions are kept in ``self.actions``).
        """
        self._log('move_claim_expired')
        with self.lock:
            inst = self.instances.get(instance_uuid)
            resized = inst is not None and inst['vm_state'] == 'resized'
            if resized:
                self._guarded_instance(instance_uuid, [None])
            migration = self._guarded_migration(migration_uuid, 'finished')
            migration['status'] = 'confirming' if resized else 'error'
            if resized:
                self.actions = getattr(self, 'actions', []) + [
                    (instance_uuid, 'confirmResize')]
            return {'instance': copy.deepcopy(inst),
                    'migration': copy.deepcopy(migration)}

    def move_update(self, ctxt, instance_uuid, migration_uuid, **changes):
        self._log('move_update')
        return self._move_update(instance_uuid, migration_uuid, **changes)

    def _move_update(self, instance_uuid, migration_uuid,
                     migration_values=None, expected_status=None,
                     instance_values=None, expected_task_state=None,
                     action_events=None, brief=False):
        with self.lock:
            migration = self._guarded_migration(
                migration_uuid, expected_status if migration_values
                else None)
            # NOTE: as the conductor, the instance is looked at only to
            # change it or to read it back.
            inst = None
            if instance_values or not brief:
                inst = self._guarded_instance(
                    instance_uuid, expected_task_state if instance_values
                    else None)
            migration.update(copy.deepcopy(migration_values or {}))
            if instance_values:
                inst.update(copy.deepcopy(instance_values))
                inst['updated_at'] = _now()
            self._record_events(instance_uuid, action_events)
            return {'instance': None if brief else copy.deepcopy(inst),
                    'migration': (None if brief and migration_values else
                                  copy.deepcopy(migration))}

    def move_updates(self, ctxt, updates):
        self._log('move_updates')
        results = []
        for update in updates:
            update = dict(update)
            try:
                results.append(self._move_update(
                    update.pop('instance_uuid'),
                    update.pop('migration_uuid'), **update))
            except (exception.InstanceNotFound, exception.MigrationNotFound,
                    exception.UnexpectedTaskStateError,
                    exception.UnexpectedMigrationStatusError,
                    ValueError) as exc:
                results.append(exc)
        return results

    def migrations_get_by_source(self, ctxt, host, migration_type,
                                 statuses):
        self._log('migrations_get_by_source')
        with self.lock:
            return [copy.deepcopy(m) for m in self.migrations.values()
                    if m['source_compute'] == host and
                    m['migration_type'] == migration_type and
                    m['status'] in statuses]

    def instance_get(self, ctxt, instance_uuid):
        self._log('instance_get')
        with self.lock:
            if instance_uuid not in self.instances:
                raise exception.InstanceNotFound(instance_id=instance_uuid)
            return copy.deepcopy(self.instances[instance_uuid])

    def instance_update(self, ctxt, instance_uuid, values,
                        expected_task_state=None, action_event=None,
                        brief=False):
        self._log('instance_update')
        with self.lock:
            self.brief_updates = getattr(self, 'brief_updates', 0) + bool(
                brief)
            inst = self._guarded_instance(instance_uuid, expected_task_state)
            inst.update(copy.deepcopy(values))
            inst['updated_at'] = _now()
            self._record_events(instance_uuid,
                                [action_event] if action_event else ())
            return None if brief else copy.deepcopy(inst)

    def instance_updates(self, ctxt, updates):
        self._log('instance_updates')
        results = []
        for update in updates:
            try:
                self.instance_update(
                    ctxt, update['instance_uuid'], update['values'],
                    update.get('expected_task_state'),
                    update.get('action_event'), brief=True)
                results.append(None)
            except (exception.InstanceNotFound,
                    exception.UnexpectedTaskStateError, ValueError) as exc:
                results.append(exc)
        return results

    def instance_destroy(self, ctxt, instance_uuid):
        self._log('instance_destroy')
        with self.lock:
            inst = self.instances.pop(instance_uuid, None)
            if inst is None:
                raise exception.InstanceNotFound(instance_id=instance_uuid)
            inst.update(vm_state='deleted', deleted=True)
            self.deleted[instance_uuid] = inst

    def instance_fault_create(self, ctxt, instance_uuid, code, message,
                              details=None, host=None):
        self._log('instance_fault_create')
        with self.lock:
            self.faults.append({'uuid': instance_uuid, 'code': code,
                                'message': message, 'host': host})

    def action_event_start(self, ctxt, instance_uuid, event, host):
        self._log('action_event_start')
        with self.lock:
            if instance_uuid not in self.instances:
                raise exception.InstanceNotFound(instance_id=instance_uuid)
            self.events.append((instance_uuid, event, 'start', None))

    def action_event_finish(self, ctxt, instance_uuid, event, host, result,
                            traceback=None):
        self._log('action_event_finish')
        with self.lock:
            self.events.append((instance_uuid, event, 'finish', result))

    def image_snapshot_done(self, ctxt, image_id, values=None):
        self._log('image_snapshot_done')
        with self.lock:
            images = self.__dict__.setdefault('images', {})
            if image_id not in images:
                return False
            if values is None:
                del images[image_id]
            else:
                images[image_id].update(values)
            return True

    def image_snapshot_abandoned(self, ctxt, instance_uuid):
        self._log('image_snapshot_abandoned')
        with self.lock:
            images = self.__dict__.setdefault('images', {})
            gone = [i for i, v in images.items()
                    if v.get('instance_uuid') == instance_uuid]
            for image_id in gone:
                del images[image_id]
            return len(gone)

    def build_instances(self, ctxt, instance, request_spec, alternates,
                        failed_host, failed_node, reason):
        self._log('build_instances')
        with self.lock:
            self.rebuilds.append({'instance': instance,
                                  'alternates': alternates,
                                  'failed_host': failed_host,
                                  'failed_node': failed_node,
                                  'reason': reason})

    # --- resize and cold migration: the conductor's casts, recorded

    def migrate_reschedule(self, ctxt, instance_uuid, migration_uuid,
                           request_spec, alternates, failed_host, reason):
        self._log('migrate_reschedule')
        with self.lock:
            self.__dict__.setdefault('move_calls', []).append(
                ('migrate_reschedule', instance_uuid, migration_uuid,
                 failed_host, reason))

    def revert_resize(self, ctxt, instance_uuid, migration_uuid,
                      reason=None):
        self._log('revert_resize')
        with self.lock:
            self.__dict__.setdefault('move_calls', []).append(
                ('revert_resize', instance_uuid, migration_uuid, reason))


class FakeScheduler(object):
    """Records the instance-info casts."""

    def __init__(self):
        self.infos = []
        self.forgotten = []

    def update_instance_info(self, ctxt, compute_uuid, instances):
        self.infos.append((compute_uuid, instances))

    def delete_instance_info(self, ctxt, compute_uuid):
        self.forgotten.append(compute_uuid)


class _Response(object):
    def __init__(self, resp):
        self.status_code = resp.status_int
        self.content = resp.body
        self.text = resp.text if resp.body else ''
        self.headers = {k.lower(): v for k, v in resp.headers.items()}


class WsgiAdapter(object):
    """A keystoneauth Adapter stand-in over a WSGI application.

    :ivar down: while True every request fails to connect.
    :ivar requests: (method, url) of every request made.
    """

    def __init__(self, app):
        self.app = app
        self.down = False
        self.requests = []

    def request(self, url, method, headers=None, raise_exc=False,
                timeout=None, json=None):
        self.requests.append((method, url))
        if self.down:
            raise ks_exc.ConnectFailure('placement is down (test)')
        body = b'' if json is None else _dumps(json)
        req = webob.Request.blank(url, method=method, body=body)
        for key, value in (headers or {}).items():
            req.headers[key] = value
        req.headers['X-Auth-Token'] = 'admin'
        if json is not None:
            req.content_type = 'application/json'
        return _Response(req.get_response(self.app))


def _dumps(data):
    return json.dumps(data).encode()
