# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""The end-to-end benchmark's moves phase: migrations and a host emptied.

After the actions phase, on the same cloud and servers, through the REST
API as an admin would (the fake driver, zero simulated copy time):

* cold migrations: ``--cold`` ACTIVE servers get ``migrate`` (the
  scheduler chooses) from ``--concurrency`` client threads; each is
  confirmed (``confirmResize``) as soon as its migration is
  ``finished`` (the server VERIFY_RESIZE) on another host. A migration's
  latency is from the POST to the first list showing it finished; the
  rate counts migrations over the time from the first POST to the last
  one finished;
* live migrations: ``--live`` other ACTIVE servers get ``os-migrateLive``
  with ``host`` null and ``block_migration`` auto; one is done when its
  migration is ``completed`` (the source writes it after the server is
  ACTIVE on its destination);
* a host emptied: ``--drain`` servers are booted onto one host (its
  zone's ``zone:host`` form, as an admin does), then all live-migrated
  away at once; the figure is the time until the host has no server;
* a host drained (processes mode): as many servers booted onto another
  host, then ``berth-manage host drain HOST --parallel <concurrency>``
  (disable, what-if plan over the whole cloud, live migrations to the
  planned hosts); the figure is the command's run time.

Each part ends by checking placement (every server's host provider holds
its flavor, and no allocation of consumer type MIGRATION is left) and the
servers (each one moved is ACTIVE, with no task, on another host). Each
part reports the CPU each process spent per moved server (``--profile``
records each part apart). The progress poll is one ``os-migrations`` list
per ``POLL`` seconds of the part's kind of migration changed since the
previous one (``changes-since``), as an admin watching moves does: a
migration's status says when it is ready to confirm (``finished``), done
(``confirmed``, ``completed``) or failed, and a migration is a smaller
record to render than a server's detail, which the API would otherwise
render about ten times per move for the measuring client alone.
"""

import datetime
import json
import os
import queue
import subprocess
import sys
import threading
import time

import httpx

from tests.bench import e2e_actions
from tests.bench import e2e_clouds as clouds
from tests.bench import e2e_load as load

POLL = 0.25
# NOTE: each incremental list starts this long before the previous one
# did: a row written while the previous list was read is seen again.
OVERLAP = 2.0
PAGE = 1000
COLD = 'migration'
LIVE = 'live-migration'
FAILED = ('error', 'failed')
DRAIN_FLAVOR = {'name': 'e2e.drain', 'vcpus': 1, 'ram': 128, 'disk': 1}


def _stamp(moment):
    """An API ``changes-since`` value (UTC, to the second) of ``moment``.
    """
    return datetime.datetime.fromtimestamp(
        moment, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


class Watcher(object):
    """The latest migration of each server, of one kind, kept by
    incremental ``os-migrations`` lists from ``since`` (epoch seconds).
    """

    def __init__(self, admin, migration_type, since):
        self.admin = admin
        self.migration_type = migration_type
        self.since = since

    def poll(self):
        """{server uuid: its newest migration} of those changed since the
        previous poll (or ``since``).
        """
        started = time.time()
        params = {'changes-since': _stamp(self.since - OVERLAP),
                  'migration_type': self.migration_type, 'limit': PAGE}
        changed = {}
        while True:
            body = self.admin.call('GET', '/os-migrations', params=params)
            page = body['migrations']
            # NOTE: newest first: a server's first row is its latest move.
            for migration in page:
                changed.setdefault(migration['instance_uuid'], migration)
            if not body.get('migrations_links') or not page:
                break
            params['marker'] = page[-1]['uuid']
        self.since = started
        return changed


class Moves(object):
    """One kind of move over ``servers``, watched by their migrations.

    :param post: (server uuid) -> (method, path, body) of the move.
    :param is_done: (migration, origin host) -> whether the move is over.
    :param then: (server uuid) -> (method, path, body) sent once the
        migration shows ``then_when`` (the confirm of a cold migration),
        or None.
    """

    def __init__(self, admin, servers, concurrency, timeout, post,
                 migration_type, is_done, then=None, then_when=None):
        self.admin = admin
        self.origin = {s['id']: s['OS-EXT-SRV-ATTR:host'] for s in servers}
        self.concurrency = concurrency
        self.timeout = timeout
        self.post = post
        self.migration_type = migration_type
        self.is_done = is_done
        self.then = then
        self.then_when = then_when
        self.sent = {}
        self.reached = {}
        self.followed = set()
        self.done = set()
        self.errors = []
        self.failed = set()
        self.todo = queue.Queue()
        self._lock = threading.Lock()

    def _send(self, server_id, request):
        method, path, body = request
        try:
            self.admin.call(method, path, body, expect=(202, 204))
        except Exception as exc:
            with self._lock:
                # NOTE: failed, so that a refused confirm is not waited
                # for until the timeout.
                self.failed.add(server_id)
                self.errors.append('%s %s: %s' % (path, server_id,
                                                  str(exc)[:200]))

    def _sender(self):
        while True:
            item = self.todo.get()
            if item is None:
                return
            server_id, request = item
            if server_id not in self.sent:
                with self._lock:
                    self.sent[server_id] = time.time()
            self._send(server_id, request)

    def _fail(self, uuid, migration):
        if uuid not in self.failed:
            self.failed.add(uuid)
            self.errors.append('migration %s of %s ended %s' % (
                migration['uuid'], uuid, migration['status']))

    def _see(self, now, uuid, migration):
        origin = self.origin[uuid]
        if migration['status'] in FAILED:
            return self._fail(uuid, migration)
        if self.is_done(migration, origin):
            self.done.add(uuid)
        if uuid in self.reached:
            return
        if self.then is None:
            if uuid in self.done:
                self.reached[uuid] = now
        elif self.then_when(migration, origin):
            self.reached[uuid] = now
            self.followed.add(uuid)
            self.todo.put((uuid, self.then(uuid)))

    def _observe(self, now, changed):
        """Take in one poll's migrations; whether every server reached
        its mark (or failed).
        """
        with self._lock:
            for uuid, migration in changed.items():
                if uuid in self.origin:
                    self._see(now, uuid, migration)
            return len(self.reached) + len(self.errors) >= len(self.origin)

    def _unsettled(self):
        """How many confirmed moves have not ended (nor failed) yet."""
        with self._lock:
            return len(self.followed - self.done - self.failed)

    def _settled(self):
        """Whether every confirmed move ended (or failed)."""
        return not self._unsettled()

    def run(self):
        threads = [threading.Thread(target=self._sender, daemon=True)
                   for _ in range(self.concurrency)]
        for thread in threads:
            thread.start()
        started = time.time()
        for uuid in self.origin:
            self.todo.put((uuid, self.post(uuid)))
        deadline = started + self.timeout
        moved_at = None
        watcher = Watcher(self.admin, self.migration_type, started)
        while time.time() < deadline:
            time.sleep(POLL)
            changed = watcher.poll()
            if self._observe(time.time(), changed) and moved_at is None:
                moved_at = time.time()
            if moved_at is not None and self._settled():
                break
        for _thread in threads:
            self.todo.put(None)
        return self.result(started)

    def result(self, started):
        ended = max(self.reached.values()) if self.reached else time.time()
        seconds = ended - started
        missing = len(self.origin) - len(self.reached) - len(self.errors)
        failures = list(self.errors[:5])
        if self.errors:
            failures.append('%d moves refused or failed' % len(self.errors))
        if missing > 0:
            failures.append('%d servers never moved' % missing)
        unsettled = self._unsettled()
        if unsettled:
            failures.append('%d moves never ended after their '
                            'confirmation' % unsettled)
        latencies = [self.reached[u] - self.sent[u] for u in self.reached
                     if u in self.sent]
        return {'servers': len(self.origin), 'moved': len(self.reached),
                'seconds': round(seconds, 1),
                'moves_per_s': (round(len(self.reached) / seconds, 1)
                                if seconds > 0 else None),
                'latency_ms': e2e_actions._dist(latencies),
                'failures': failures}

    def landing_check(self, servers):
        """Failures: a server this part moved that is not ACTIVE, with no
        task, on another host than its origin (``servers``: a detailed
        list read after the part).
        """
        seen = {s['id']: s for s in servers}
        wrong = [uuid for uuid in self.reached
                 if uuid not in seen or not _active_elsewhere(
                     seen[uuid], self.origin[uuid])]
        if not wrong:
            return []
        return ['%d moved servers not ACTIVE elsewhere, e.g. %s' % (
            len(wrong), wrong[0])]


def _active_elsewhere(server, origin):
    return (server['status'] == 'ACTIVE' and
            server['OS-EXT-STS:task_state'] is None and
            server['OS-EXT-SRV-ATTR:host'] not in (None, origin))


def _finished_elsewhere(migration, origin):
    """A cold migration ready to confirm (its server VERIFY_RESIZE)."""
    return (migration['status'] == 'finished' and
            migration['dest_compute'] not in (None, origin))


def _confirmed(migration, _origin):
    return migration['status'] == 'confirmed'


def _completed_elsewhere(migration, origin):
    return (migration['status'] == 'completed' and
            migration['dest_compute'] not in (None, origin))


def _migrate(uuid):
    return 'POST', '/servers/%s/action' % uuid, {'migrate': None}


def _confirm(uuid):
    return 'POST', '/servers/%s/action' % uuid, {'confirmResize': None}


def _live(uuid):
    return ('POST', '/servers/%s/action' % uuid,
            {'os-migrateLive': {'host': None, 'block_migration': 'auto'}})


def _placement(cloud, method, path, params=None, body=None,
               version='placement 1.38'):
    resp = httpx.request(method, cloud.placement_url.rstrip('/') + path,
                         params=params, json=body, headers={
                             'x-auth-token': load.ADMIN_TOKEN,
                             'openstack-api-version': version,
                             'accept': 'application/json'},
                         timeout=load.HTTP_TIMEOUT)
    resp.raise_for_status()
    return resp.json() if resp.content else None


def placement_check(cloud, admin, servers=None):
    """Failures: placement's VCPU usage differs from the servers' flavors,
    or a MIGRATION consumer still holds something.

    :param servers: the project's servers, detailed (None: listed here).
    """
    failures = []
    if servers is None:
        servers = load.list_servers(admin)
    held = sum((s.get('flavor') or {}).get('vcpus', 0) for s in servers)
    total = load.placement_usage(cloud.placement_url)
    if total.get('VCPU', 0) != held:
        failures.append('placement VCPU usage %s, the servers hold %s' % (
            total.get('VCPU', 0), held))
    found = _placement(cloud, 'GET', '/usages', params={
        'project_id': load.PROJECT, 'consumer_type': 'MIGRATION'})
    left = {rc: n for group in (found.get('usages') or {}).values()
            for rc, n in group.items() if rc != 'consumer_count' and n}
    if left:
        failures.append('MIGRATION consumers still hold %s' % left)
    return failures


def _raise_cpu_ratio(cloud, host, ratio=8.0):
    """Let ``host`` take more servers than a fake host's 64 vCPUs: its
    VCPU allocation ratio set in placement, as an operator does (the
    initial ratio is only applied when the provider is created).
    """
    found = _placement(cloud, 'GET', '/resource_providers',
                       params={'name': host})['resource_providers']
    uuid = found[0]['uuid']
    inventory = _placement(cloud, 'GET',
                           '/resource_providers/%s/inventories/VCPU' % uuid)
    inventory['allocation_ratio'] = ratio
    _placement(cloud, 'PUT',
               '/resource_providers/%s/inventories/VCPU' % uuid,
               body=inventory)


def _drain_flavor(admin):
    """The id of the drained servers' flavor, made on first use."""
    for flavor in admin.call('GET', '/flavors')['flavors']:
        if flavor['name'] == DRAIN_FLAVOR['name']:
            return flavor['id']
    return admin.call('POST', '/flavors', {'flavor': dict(DRAIN_FLAVOR)})[
        'flavor']['id']


def _boot_onto(admin, host, zone, count, image_id, timeout):
    """Boot ``count`` servers onto ``host`` (an admin's ``zone:host``)."""
    name = 'e2e-drain-%s' % host
    body = {'server': {'name': name, 'imageRef': image_id,
                       'flavorRef': _drain_flavor(admin),
                       'networks': 'none',
                       'availability_zone': '%s:%s' % (zone, host),
                       'min_count': count, 'max_count': count}}
    admin.call('POST', '/servers', body, expect=(202,))
    deadline = time.time() + timeout
    while time.time() < deadline:
        time.sleep(POLL)
        mine = [s for s in load.list_servers(admin)
                if s['name'].startswith(name)]
        if any(s['status'] == 'ERROR' for s in mine):
            raise load.APIError('a server booted onto %s went to ERROR'
                                % host)
        if len(mine) >= count and all(s['status'] == 'ACTIVE'
                                      for s in mine):
            return mine
    raise load.APIError('the servers booted onto %s did not become ACTIVE'
                        % host)


def drain(cloud, args, image_id):
    """Boot ``args.drain`` servers onto one host, live-migrate them all
    away; the seconds until the host is empty.

    NOTE: the servers belong to the benchmark's project, booted by an
    admin of it (noauth2 ``admin:<project>``): naming a host is an
    admin's right.
    """
    admin = load.Client(cloud.api_url, 'admin:%s' % load.PROJECT)
    try:
        servers = load.list_servers(admin)
        host = servers[0]['OS-EXT-SRV-ATTR:host']
        zone = servers[0]['OS-EXT-AZ:availability_zone'] or 'nova'
        _raise_cpu_ratio(cloud, host)
        booted = _boot_onto(admin, host, zone, args.drain, image_id,
                            args.timeout)
        return _empty(cloud, admin, args, host, booted)
    finally:
        admin.close()


def drain_tool(cloud, args, image_id, busy):
    """Boot ``args.drain`` servers onto another host than ``busy``, then
    empty it with ``berth-manage host drain --parallel <concurrency>``:
    the seconds the command takes (plan and moves), whether the host
    ended empty.
    """
    admin = load.Client(cloud.api_url, 'admin:%s' % load.PROJECT)
    try:
        server = next(s for s in load.list_servers(admin)
                      if s['OS-EXT-SRV-ATTR:host'] not in (None, busy))
        host = server['OS-EXT-SRV-ATTR:host']
        zone = server['OS-EXT-AZ:availability_zone'] or 'nova'
        _raise_cpu_ratio(cloud, host)
        _boot_onto(admin, host, zone, args.drain, image_id, args.timeout)
        on_host = [s for s in load.list_servers(admin)
                   if s['OS-EXT-SRV-ATTR:host'] == host]
    finally:
        admin.close()
    command = [sys.executable, '-m', 'services.manage.main',
               '--config-file', cloud.stack.conf_file, 'host', 'drain',
               host, '--parallel', str(args.concurrency), '--json']
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=args.timeout)
    seconds = time.time() - started
    failures = []
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        answer = {}
        failures.append('host drain exited %d: %s' % (
            done.returncode, (done.stdout + done.stderr)[-500:]))
    moved = [t for t in answer.get('servers', ())
             if t.get('outcome') == 'moved']
    if answer and not answer.get('empty'):
        failures.append('host drain left %s on %s (exit %d)' % (
            answer.get('remaining'), host, done.returncode))
    return {'servers': len(on_host), 'moved': len(moved), 'host': host,
            'seconds': round(seconds, 1),
            'moves_per_s': (round(len(moved) / seconds, 1)
                            if seconds > 0 else None),
            'latency_ms': {}, 'failures': failures}


def _empty(cloud, admin, args, host, booted):
    on_host = [s for s in booted if s['OS-EXT-SRV-ATTR:host'] == host]
    moves = Moves(admin, on_host, args.concurrency, args.timeout, _live,
                  LIVE, _completed_elsewhere)
    result = _checked(cloud, admin, moves, moves.run())
    result['host'] = host
    return result


def _measured(cloud, profiler, label, run):
    """``run()``'s result, with the CPU milliseconds each process spent
    per moved server, and the part's profiles when ``profiler`` is set.
    """
    before = cloud.cpu_seconds()
    if profiler is not None:
        profiler.start(cloud.pids(), label)
    result = run()
    profiles = profiler.stop() if profiler is not None else []
    after = cloud.cpu_seconds()
    moved = max(result['moved'], 1)
    result['cpu_ms_per_move'] = {
        name: round((after[name] - before.get(name, 0)) * 1000 / moved, 1)
        for name in after if after[name] is not None}
    result['profiles'] = {os.path.basename(p): clouds.summarize_profile(p)
                          for p in profiles}
    return result


def _checked(cloud, admin, moves, result):
    """``result`` with the failures of the checks after its part."""
    servers = load.list_servers(admin)
    result['failures'] += moves.landing_check(servers)
    result['failures'] += placement_check(cloud, admin, servers)
    return result


def run_phase(cloud, args, admin, servers, image_id, profiler=None):
    """Cold migrations, live migrations, a host emptied; a result dict."""
    active = [s for s in servers if s['status'] == 'ACTIVE']
    cold = active[:args.cold]
    live = active[args.cold:args.cold + args.live]
    result = {}
    if cold:
        moves = Moves(admin, cold, args.concurrency, args.timeout, _migrate,
                      COLD, _confirmed, then=_confirm,
                      then_when=_finished_elsewhere)
        result['cold'] = _checked(cloud, admin, moves, _measured(
            cloud, profiler, 'moves-cold', moves.run))
    if live:
        moves = Moves(admin, live, args.concurrency, args.timeout, _live,
                      LIVE, _completed_elsewhere)
        result['live'] = _checked(cloud, admin, moves, _measured(
            cloud, profiler, 'moves-live', moves.run))
    if args.drain:
        result['drain'] = drain(cloud, args, image_id)
        # NOTE: the command reads the cloud's config file, which only the
        # processes mode writes for berth-manage.
        if getattr(cloud, 'stack', None) is not None:
            result['drain_tool'] = drain_tool(cloud, args, image_id,
                                              result['drain']['host'])
            result['drain_tool']['failures'] += placement_check(cloud,
                                                                admin)
    return result


def failures(result):
    """Every failure of the phase."""
    return [f for part in result.values() for f in part['failures']]


def print_phase(result, out):
    """The human report of the moves phase."""
    names = {'cold': 'cold migrations (migrate + confirm)',
             'live': 'live migrations (scheduler-chosen)',
             'drain': 'host emptied by live migration',
             'drain_tool': 'host emptied by berth-manage host drain'}
    for key in ('cold', 'live', 'drain', 'drain_tool'):
        part = result.get(key)
        if part is None:
            continue
        out.write('\n%s: %d servers, %d moved in %.1fs\n' % (
            names[key], part['servers'], part['moved'], part['seconds']))
        if key in ('drain', 'drain_tool'):
            out.write('  host %s empty after    %.1f s\n' % (
                part['host'], part['seconds']))
        out.write('  moves/s                  %s\n' % part['moves_per_s'])
        latency = part['latency_ms']
        if latency:
            out.write('  p50 / p95 to moved       %s / %s ms (poll %.2fs)'
                      '\n' % (latency.get('p50', '-'),
                              latency.get('p95', '-'), POLL))
        cpu = part.get('cpu_ms_per_move')
        if cpu:
            out.write('  CPU ms per move          %s; total %.1f\n' % (
                ', '.join('%s %.1f' % item for item in sorted(cpu.items())),
                sum(cpu.values())))
        for name, summary in (part.get('profiles') or {}).items():
            out.write('  py-spy %s: %d samples; hottest Berth frames '
                      '(inclusive):\n' % (name, summary['samples']))
            for frame, share in summary['inclusive'][:12]:
                out.write('    %5.1f%%  %s\n' % (share * 100, frame))
        for failure in part['failures']:
            out.write('  FAILURE: %s\n' % failure)
