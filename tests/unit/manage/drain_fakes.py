# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A fake compute API for the drain's tests: servers that move.

It answers the calls of services.manage.compute_client.ComputeAPI. A
move asked for changes the server at once (its task state) and then,
one GET of the server at a time, through the steps a real move shows:
a live migration lands on its destination (or, for a host in
``failing``, comes back with a failed event); a cold migration reaches
VERIFY_RESIZE on the destination, and its confirmation ends it with the
status it had. Every call is recorded in ``calls``.
"""

import threading

from services.manage import compute_client


class FakeComputeAPI(object):
    """The compute API of one small cloud."""

    def __init__(self, hosts=('h0', 'h1', 'h2')):
        self.services = {h: {'id': 'svc-%s' % h, 'host': h,
                             'status': 'enabled', 'disabled_reason': None}
                         for h in hosts}
        self.servers = {}
        self.steps = {}
        self.rows = []
        self.errors = {}
        self.failing = set()
        self.refusals = {}
        self.calls = []
        self._lock = threading.Lock()

    # --- set-up -----------------------------------------------------------

    def add(self, uuid, host, status='ACTIVE', task=None, name=None):
        """A server on ``host``."""
        self.servers[uuid] = {
            'id': uuid, 'name': name or uuid, 'status': status,
            'OS-EXT-SRV-ATTR:host': host, 'OS-EXT-STS:task_state': task}
        return self.servers[uuid]

    def migration(self, uuid, source, dest, status, kind='migration'):
        """A migration row (newest last); returns it."""
        row = {'id': len(self.rows) + 1, 'instance_uuid': uuid,
               'source_compute': source, 'dest_compute': dest,
               'status': status, 'migration_type': kind}
        self.rows.append(row)
        return row

    def then(self, uuid, *changes):
        """What the next GETs of ``uuid`` show, one change each."""
        self.steps.setdefault(uuid, []).extend(changes)

    # --- the API ----------------------------------------------------------

    def _record(self, *call):
        with self._lock:
            self.calls.append(call)

    def moves(self):
        """The move calls made, in order: (call, uuid, host)."""
        return [c for c in self.calls if c[0] in (
            'live_migrate', 'migrate', 'confirm_resize', 'disable')]

    def compute_service(self, host):
        self._record('compute_service', host)
        service = self.services.get(host)
        return dict(service) if service else None

    def disable_service(self, service_id, reason):
        self._record('disable', service_id, reason)
        service = next(s for s in self.services.values()
                       if s['id'] == service_id)
        service.update(status='disabled', disabled_reason=reason)
        return dict(service)

    def servers_on(self, host):
        return [dict(s) for s in self.servers.values()
                if s['OS-EXT-SRV-ATTR:host'] == host]

    def get_server(self, uuid):
        self._record('get', uuid)
        server = self.servers.get(uuid)
        if server is None:
            return None
        steps = self.steps.get(uuid)
        if steps:
            change = steps.pop(0)
            if change is None:
                del self.servers[uuid]
                return None
            server.update(change)
        return dict(server)

    def _refused(self, uuid, call):
        refusal = self.refusals.get(uuid)
        if refusal is not None:
            raise compute_client.APIError('POST', '/servers/%s/action'
                                          % uuid, refusal[0], refusal[1])

    def live_migrate(self, uuid, host):
        self._record('live_migrate', uuid, host)
        self._refused(uuid, 'live')
        server = self.servers[uuid]
        source = server['OS-EXT-SRV-ATTR:host']
        server['OS-EXT-STS:task_state'] = 'migrating'
        row = self.migration(uuid, source, host, 'running',
                             kind='live-migration')
        if host in self.failing:
            row['status'] = 'error'
            self.errors[uuid] = 'Migration pre-check error: %s refused' % (
                host)
            self.then(uuid, {}, {'OS-EXT-STS:task_state': None})
        else:
            self.then(uuid, {}, {'OS-EXT-SRV-ATTR:host': host,
                                 'OS-EXT-STS:task_state': None})
            row['status'] = 'completed'

    def migrate(self, uuid, host):
        self._record('migrate', uuid, host)
        self._refused(uuid, 'cold')
        server = self.servers[uuid]
        server['OS-EXT-STS:task_state'] = 'resize_prep'
        server['was'] = server['status']
        self.migration(uuid, server['OS-EXT-SRV-ATTR:host'], host,
                       'finished')
        self.then(uuid, {'OS-EXT-STS:task_state': 'resize_migrating'},
                  {'OS-EXT-SRV-ATTR:host': host, 'status': 'VERIFY_RESIZE',
                   'OS-EXT-STS:task_state': None})

    def confirm_resize(self, uuid):
        self._record('confirm_resize', uuid)
        server = self.servers[uuid]
        if server['status'] != 'VERIFY_RESIZE':
            raise compute_client.APIError(
                'POST', '/servers/%s/action' % uuid, 409,
                "Cannot 'confirmResize' instance %s while it is in "
                "vm_state active" % uuid)
        for row in self.rows:
            if row['instance_uuid'] == uuid and row['status'] == 'finished':
                row['status'] = 'confirmed'
        self.then(uuid, {}, {'status': server.pop('was', 'ACTIVE')})

    def migrations(self, **filters):
        self._record('migrations', tuple(sorted(filters.items())))
        return [dict(r) for r in reversed(self.rows)
                if all(r.get(k) == v for k, v in filters.items())]

    def last_error(self, uuid):
        return self.errors.get(uuid)
