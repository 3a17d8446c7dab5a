# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""The user side of the end-to-end benchmark: REST calls only.

Everything here talks to ``berth-api`` over HTTP exactly as a user (and,
for set-up and read-back, an admin) would: seed a flavor, an image and the
project's quota; boot N servers with ``POST /servers`` from several client
threads (one server per request, or multi-create batches); watch progress
with one cheap list call per interval rather than one GET per server; read
the results back once at the end; sample a few servers' instance actions
for the per-stage split; delete everything.

Times: the client stamps each POST with the wall clock (``time.time()``)
and the compute stamps ``launched_at`` when the server goes ACTIVE; both
clocks are this machine's, so ``launched_at - sent`` is the API-to-ACTIVE
latency, independent of how often the progress poll runs.
"""

import calendar
import datetime
import math
import queue
import sys
import threading
import time

import httpx

COMPUTE_VERSION = 'compute 2.79'
PLACEMENT_VERSION = 'placement 1.9'
ADMIN_TOKEN = 'admin'
USER = 'e2e-user'
PROJECT = 'e2e-project'
USER_TOKEN = '%s:%s' % (USER, PROJECT)
HTTP_TIMEOUT = 120
FLAVOR = {'name': 'e2e.tiny', 'vcpus': 1, 'ram': 256, 'disk': 1}
BUILD_EVENT = 'compute_build_and_run_instance'


class APIError(RuntimeError):
    """An unexpected HTTP answer."""


def _log(message):
    sys.stderr.write(message + '\n')
    sys.stderr.flush()


def parse_time(value):
    """Epoch seconds of an API timestamp (UTC, with or without 'Z')."""
    if not value:
        return None
    text = value.rstrip('Z').replace(' ', 'T')
    if '+' in text[10:]:
        text = text[:10] + text[10:].split('+', 1)[0]
    fmt = '%Y-%m-%dT%H:%M:%S.%f' if '.' in text else '%Y-%m-%dT%H:%M:%S'
    moment = datetime.datetime.strptime(text, fmt)
    return calendar.timegm(moment.timetuple()) + moment.microsecond / 1e6


class Client(object):
    """One caller of the compute API (one HTTP connection pool per thread).

    :param url: ``http://host:port`` of berth-api.
    :param token: the noauth2 token (``admin`` or ``user:project``).
    """

    def __init__(self, url, token):
        self.url = url.rstrip('/')
        self.token = token
        self._local = threading.local()
        self._all = []
        self._lock = threading.Lock()

    def _http(self):
        http = getattr(self._local, 'http', None)
        if http is None:
            http = httpx.Client(timeout=HTTP_TIMEOUT, headers={
                'x-auth-token': self.token,
                'openstack-api-version': COMPUTE_VERSION,
                'accept': 'application/json'})
            self._local.http = http
            with self._lock:
                self._all.append(http)
        return http

    def call(self, method, path, body=None, params=None,
             expect=(200, 201, 202, 204), prefix='/v2.1'):
        """One request; returns the decoded body (None when empty).

        :raises APIError: for a status not in ``expect``.
        """
        resp = self._http().request(method, self.url + prefix + path,
                                    json=body, params=params)
        if resp.status_code not in expect:
            raise APIError('%s %s answered %d: %s' % (
                method, path, resp.status_code, resp.text[:500]))
        return resp.json() if resp.content else None

    def close(self):
        """Close every thread's connections."""
        with self._lock:
            for http in self._all:
                http.close()
            self._all = []


# NOTE: the default quota (10 instances) would stop the user at once; an
# operator raises it first, as for any big tenant. ``counted``: finite
# limits far above the run, so the API counts the project's usage on every
# boot as it does for a real tenant; ``unlimited``: -1, counting skipped.
QUOTAS = {
    'counted': {'instances': 1000000, 'cores': 10000000,
                'ram': 1000000000},
    'unlimited': {'instances': -1, 'cores': -1, 'ram': -1},
}


def seed(admin, quota='counted', project=PROJECT):
    """Flavor, public image and the project's quota; (flavor, image)."""
    flavor = admin.call('POST', '/flavors', {'flavor': dict(FLAVOR)})
    image = admin.call('POST', '/image/v2/images', {
        'name': 'e2e-image', 'disk_format': 'raw',
        'container_format': 'bare', 'visibility': 'public'}, prefix='')
    admin.call('PUT', '/os-quota-sets/%s' % project,
               {'quota_set': dict(QUOTAS[quota])})
    return flavor['flavor']['id'], image['id']


class BootRecord(object):
    """One POST /servers: when it was sent and answered, what it made."""

    __slots__ = ('index', 'name', 'count', 'offset', 'sent', 'answered',
                 'error')

    def __init__(self, index, name, count, offset):
        self.index = index
        self.name = name
        self.count = count
        # NOTE: servers requested before this one (open-loop pacing).
        self.offset = offset
        self.sent = None
        self.answered = None
        self.error = None


def _requests(servers, batch, prefix):
    count = math.ceil(servers / batch)
    return [BootRecord(i, '%s-%05d' % (prefix, i),
                       min(batch, servers - i * batch), i * batch)
            for i in range(count)]


class Boot(object):
    """Boot ``servers`` servers in requests of ``batch``; wait for them.

    :param user: the Client booting (a non-admin user).
    :param concurrency: client threads sending POSTs back to back.
    :param rate: when set, servers per second to offer (open loop); else
        each thread sends its next request as soon as the last answered.
    """

    def __init__(self, user, flavor_id, image_id, servers, batch,
                 concurrency, rate=None, prefix='e2e', poll_interval=1.0,
                 timeout=900, stall=180):
        self.user = user
        self.flavor_id = flavor_id
        self.image_id = image_id
        self.records = _requests(servers, batch, prefix)
        self._by_name = {r.name: r for r in self.records}
        self.concurrency = concurrency
        self.rate = rate
        self.poll_interval = poll_interval
        self.timeout = timeout
        self.stall = stall
        self._todo = queue.Queue()
        self._posted = 0
        self._lock = threading.Lock()
        self.polls = []
        self.started = None
        self.finished = None
        self.timed_out = False
        self.stalled = False

    def _body(self, record):
        return {'server': {
            'name': record.name, 'flavorRef': self.flavor_id,
            'imageRef': self.image_id, 'networks': 'none',
            'min_count': record.count, 'max_count': record.count}}

    def _sender(self):
        while True:
            try:
                record = self._todo.get_nowait()
            except queue.Empty:
                return
            if self.rate:
                # NOTE: open loop: request i leaves at its planned time
                # whatever the answers before it took.
                due = self.started + record.offset / self.rate
                time.sleep(max(0.0, due - time.time()))
            record.sent = time.time()
            try:
                self.user.call('POST', '/servers', self._body(record),
                               expect=(202,))
            except Exception as exc:
                record.error = str(exc)[:300]
            record.answered = time.time()
            if record.error is None:
                with self._lock:
                    self._posted += record.count

    def _building(self):
        """How many of the project's servers are in BUILD (None: >= page).
        """
        started = time.time()
        body = self.user.call('GET', '/servers',
                              params={'status': 'BUILD'})
        self.polls.append(time.time() - started)
        if body.get('servers_links'):
            return None
        return len(body['servers'])

    def run(self):
        """Send every request, poll until none is in BUILD; returns self."""
        for record in self.records:
            self._todo.put(record)
        self.started = time.time()
        threads = [threading.Thread(target=self._sender,
                                    name='e2e-client-%d' % i, daemon=True)
                   for i in range(self.concurrency)]
        for thread in threads:
            thread.start()
        deadline = self.started + self.timeout
        last_report = 0
        last_change, last_seen = self.started, None
        while True:
            time.sleep(self.poll_interval)
            with self._lock:
                posted = self._posted
            senders_done = not any(t.is_alive() for t in threads)
            building = self._building()
            now = time.time()
            if (posted, building) != last_seen:
                last_change, last_seen = now, (posted, building)
            if now - last_report >= 5:
                last_report = now
                _log('  %5.0fs: %d servers requested, %s in BUILD' % (
                    now - self.started, posted,
                    '>=page' if building is None else building))
            if senders_done and building == 0:
                break
            if now > deadline:
                self.timed_out = True
                _log('  timed out after %ds' % self.timeout)
                break
            if senders_done and now - last_change > self.stall:
                # NOTE: nothing moved for minutes: builds are lost (e.g. a
                # compute gave up on a conductor call), not slow.
                self.stalled = True
                _log('  no progress for %ds; giving up' % self.stall)
                break
        self.finished = time.time()
        for thread in threads:
            thread.join(HTTP_TIMEOUT)
        return self

    def owner(self, server_name):
        """The BootRecord a server name belongs to (multi-create: name-N).
        """
        return self._by_name.get(server_name) or self._by_name.get(
            server_name.rsplit('-', 1)[0])


def list_servers(admin, project=PROJECT, page=1000, params=None):
    """Every live server of ``project`` (detailed, admin view), paged;
    ``params`` are more filters of the list.
    """
    result = []
    params = dict(params or {}, all_tenants='1', project_id=project,
                  limit=page)
    while True:
        body = admin.call('GET', '/servers/detail', params=params)
        result.extend(body['servers'])
        if not body.get('servers_links') or not body['servers']:
            return result
        params['marker'] = body['servers'][-1]['id']


def placement_usage(placement_url, project=PROJECT):
    """The project's usages in placement ({} when it has none)."""
    resp = httpx.get(placement_url.rstrip('/') + '/usages',
                     params={'project_id': project},
                     headers={'x-auth-token': ADMIN_TOKEN,
                              'openstack-api-version': PLACEMENT_VERSION,
                              'accept': 'application/json'},
                     timeout=HTTP_TIMEOUT)
    resp.raise_for_status()
    return resp.json()['usages']


def _spread(items, count):
    if len(items) <= count:
        return list(items)
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def stage_samples(admin, boot, servers, count):
    """Per-stage seconds of ``count`` ACTIVE servers (instance actions).

    Stages: ``api`` (POST answered), ``to_cell`` (answer -> the conductor
    created the instance in its cell after scheduling: RPC queue,
    conductor, scheduler), ``to_compute`` (-> the compute started the
    build: cast, compute queue, build slots), ``build`` (-> ACTIVE:
    claim, record updates, spawn).
    """
    active = sorted((s for s in servers if s['status'] == 'ACTIVE'),
                    key=lambda s: s['OS-SRV-USG:launched_at'])
    samples = []
    for server in _spread(active, count):
        record = boot.owner(server['name'])
        if record is None:
            continue
        actions = admin.call('GET', '/servers/%s/os-instance-actions'
                             % server['id'])['instanceActions']
        create = [a for a in actions if a['action'] == 'create']
        if not create:
            continue
        detail = admin.call('GET', '/servers/%s/os-instance-actions/%s' % (
            server['id'], create[0]['request_id']))['instanceAction']
        events = {e['event']: e for e in detail.get('events') or []}
        build = events.get(BUILD_EVENT)
        if build is None:
            continue
        created = parse_time(create[0]['start_time'])
        build_start = parse_time(build['start_time'])
        active_at = parse_time(server['OS-SRV-USG:launched_at'])
        samples.append({
            'api': record.answered - record.sent,
            'to_cell': created - record.answered,
            'to_compute': build_start - created,
            'build': active_at - build_start,
        })
    return samples


def delete_all(user, servers, concurrency, timeout=900):
    """DELETE every server, wait until the project lists none.

    :returns: seconds it took.
    """
    started = time.time()
    todo = queue.Queue()
    for server in servers:
        todo.put(server['id'])
    errors = []

    def worker():
        while True:
            try:
                server_id = todo.get_nowait()
            except queue.Empty:
                return
            try:
                user.call('DELETE', '/servers/%s' % server_id,
                          expect=(204, 404))
            except Exception as exc:
                errors.append(str(exc)[:200])

    threads = [threading.Thread(target=worker, daemon=True)
               for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    deadline = started + timeout
    while time.time() < deadline:
        if not user.call('GET', '/servers', params={'limit': 1})['servers']:
            break
        time.sleep(1)
    else:
        raise APIError('servers still listed %ds after their deletion'
                       % timeout)
    if errors:
        raise APIError('%d deletes failed, e.g. %s' % (len(errors),
                                                       errors[0]))
    return time.time() - started
