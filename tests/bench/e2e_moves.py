# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""The end-to-end benchmark's moves phase: migrations and a host emptied.

After the actions phase, on the same cloud and servers, through the REST
API as an admin would (the fake driver, zero simulated copy time):

* cold migrations: ``--cold`` ACTIVE servers get ``migrate`` (the
  scheduler chooses) from ``--concurrency`` client threads; each is
  confirmed (``confirmResize``) as soon as it shows VERIFY_RESIZE. A
  migration's latency is from the POST to the first list showing
  VERIFY_RESIZE on another host; the rate counts migrations over the
  time from the first POST to the last VERIFY_RESIZE;
* live migrations: ``--live`` other ACTIVE servers get ``os-migrateLive``
  with ``host`` null and ``block_migration`` auto; one is done when it is
  ACTIVE with no task on another host;
* a host emptied: ``--drain`` servers are booted onto one host (its
  zone's ``zone:host`` form, as an admin does), then all live-migrated
  away at once; the figure is the time until the host has no server;
* a host drained (processes mode): as many servers booted onto another
  host, then ``berth-manage host drain HOST --parallel <concurrency>``
  (disable, what-if plan over the whole cloud, live migrations to the
  planned hosts); the figure is the command's run time.

Each part ends by checking placement: every server's host provider holds
its flavor, and no allocation of consumer type MIGRATION is left. Each
part reports the CPU each process spent per moved server (``--profile``
records each part apart). The progress poll is one detailed list per
``POLL`` seconds of the servers changed since the previous one
(``changes-since``), as a client watching many servers does: a full list
of a thousand servers four times a second would cost the API more than
the moves.
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
DRAIN_FLAVOR = {'name': 'e2e.drain', 'vcpus': 1, 'ram': 128, 'disk': 1}


class Watcher(object):
    """The servers of the benchmark's project as last seen, kept by
    incremental detailed lists.
    """

    def __init__(self, admin):
        self.admin = admin
        self.servers = {}
        self.since = None

    def poll(self):
        """The servers seen changed since the previous poll (every one
        on the first).
        """
        started = time.time()
        if self.since is None:
            changed = load.list_servers(self.admin)
        else:
            stamp = datetime.datetime.fromtimestamp(
                self.since - OVERLAP, datetime.timezone.utc)
            changed = load.list_servers(self.admin, params={
                'changes-since': stamp.strftime('%Y-%m-%dT%H:%M:%SZ')})
        self.since = started
        self.servers.update((s['id'], s) for s in changed)
        return changed


class Moves(object):
    """One kind of move over ``servers``; done per server by ``is_done``.

    :param post: (server) -> (method, path, body) of the move.
    :param then: (server) -> (method, path, body) sent once the server
        shows ``then_when`` (the confirm of a cold migration), or None.
    """

    def __init__(self, admin, servers, concurrency, timeout, post,
                 is_done, then=None, then_when=None):
        self.admin = admin
        self.origin = {s['id']: s['OS-EXT-SRV-ATTR:host'] for s in servers}
        self.concurrency = concurrency
        self.timeout = timeout
        self.post = post
        self.is_done = is_done
        self.then = then
        self.then_when = then_when
        self.sent = {}
        self.reached = {}
        self.followed = set()
        self.errors = []
        self.todo = queue.Queue()
        self._lock = threading.Lock()

    def _send(self, server_id, request):
        method, path, body = request
        try:
            self.admin.call(method, path, body, expect=(202, 204))
        except Exception as exc:
            with self._lock:
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

    def _observe(self, now, servers):
        for server in servers:
            uuid = server['id']
            if uuid not in self.origin or uuid in self.reached:
                continue
            if self.then is not None and uuid not in self.followed and \
                    self.then_when(server, self.origin[uuid]):
                with self._lock:
                    self.reached[uuid] = now
                    self.followed.add(uuid)
                self.todo.put((uuid, self.then(server)))
            elif self.then is None and self.is_done(server,
                                                    self.origin[uuid]):
                with self._lock:
                    self.reached[uuid] = now
        with self._lock:
            return len(self.reached) + len(self.errors) >= len(self.origin)

    def _settled(self, servers):
        if self.then is None:
            return True
        pending = [s for s in servers if s['id'] in self.followed and
                   not self.is_done(s, self.origin[s['id']])]
        return not pending

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
        watcher = Watcher(self.admin)
        while time.time() < deadline:
            time.sleep(POLL)
            changed = watcher.poll()
            if moved_at is None and self._observe(time.time(), changed):
                moved_at = time.time()
            if moved_at is not None and self._settled(
                    list(watcher.servers.values())):
                break
        for _thread in threads:
            self.todo.put(None)
        return self.result(started, moved_at)

    def result(self, started, moved_at):
        ended = max(self.reached.values()) if self.reached else time.time()
        seconds = ended - started
        missing = len(self.origin) - len(self.reached) - len(self.errors)
        failures = list(self.errors[:5])
        if self.errors:
            failures.append('%d moves refused' % len(self.errors))
        if missing:
            failures.append('%d servers never moved' % missing)
        latencies = [self.reached[u] - self.sent[u] for u in self.reached
                     if u in self.sent]
        return {'servers': len(self.origin), 'moved': len(self.reached),
                'seconds': round(seconds, 1),
                'moves_per_s': (round(len(self.reached) / seconds, 1)
                                if seconds > 0 else None),
                'latency_ms': e2e_actions._dist(latencies),
                'failures': failures}


def _active_elsewhere(server, origin):
    return (server['status'] == 'ACTIVE' and
            server['OS-EXT-STS:task_state'] is None and
            server['OS-EXT-SRV-ATTR:host'] not in (None, origin))


def _verify_elsewhere(server, origin):
    return (server['status'] == 'VERIFY_RESIZE' and
            server['OS-EXT-SRV-ATTR:host'] not in (None, origin))


def _migrate(uuid):
    return 'POST', '/servers/%s/action' % uuid, {'migrate': None}


def _confirm(server):
    return ('POST', '/servers/%s/action' % server['id'],
            {'confirmResize': None})


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


def placement_check(cloud, admin):
    """Failures: placement's VCPU usage differs from the servers' flavors,
    or a MIGRATION consumer still holds something.
    """
    failures = []
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
        return _empty(admin, args, host, booted)
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


def _empty(admin, args, host, booted):
    on_host = [s for s in booted if s['OS-EXT-SRV-ATTR:host'] == host]
    result = Moves(admin, on_host, args.concurrency, args.timeout, _live,
                   _active_elsewhere).run()
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


def run_phase(cloud, args, admin, servers, image_id, profiler=None):
    """Cold migrations, live migrations, a host emptied; a result dict."""
    active = [s for s in servers if s['status'] == 'ACTIVE']
    cold = active[:args.cold]
    live = active[args.cold:args.cold + args.live]
    result = {}
    if cold:
        result['cold'] = _measured(cloud, profiler, 'moves-cold', Moves(
            admin, cold, args.concurrency, args.timeout, _migrate,
            _active_elsewhere, then=_confirm,
            then_when=_verify_elsewhere).run)
        result['cold']['failures'] += placement_check(cloud, admin)
    if live:
        result['live'] = _measured(cloud, profiler, 'moves-live', Moves(
            admin, live, args.concurrency, args.timeout, _live,
            _active_elsewhere).run)
        result['live']['failures'] += placement_check(cloud, admin)
    if args.drain:
        result['drain'] = drain(cloud, args, image_id)
        result['drain']['failures'] += placement_check(cloud, admin)
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
