# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""The end-to-end benchmark's actions phase: stop/start pairs.

After the last boot phase, the ACTIVE servers are stopped and started
again through the REST API (``os-stop`` then ``os-start``), ``--actions``
pairs (default 1000: every server of the 1000-server run once). The stops
go out from ``--concurrency`` client threads; a server is started as soon
as it is seen stopped, so stops and starts overlap as they would in real
use. An action is done when the server reaches its end state (vm_state
``stopped`` / ``active`` and no task); the phase polls one detailed list
per ``POLL`` seconds, never one GET per server, so a latency is the time
from the POST to the first list that shows the end state (it is late by
up to one poll interval: POLL is small for that reason).

Reported: actions/s (both actions over the time from the first POST to
the last end state), p50/p95 latency of each kind, failures (a 4xx/5xx
answer, or a server that never reached its end state), and whether
placement's usage stayed what it was: power actions must not move
allocations.
"""

import queue
import threading
import time

from tests.bench import e2e_load as load

POLL = 0.25


class Pairs(object):
    """One stop/start run over ``servers`` (detailed bodies)."""

    def __init__(self, user, admin, servers, concurrency, timeout):
        self.user = user
        self.admin = admin
        self.ids = [s['id'] for s in servers]
        self.concurrency = concurrency
        self.timeout = timeout
        self.sent = {}          # (id, action) -> time the POST was sent
        self.done = {}          # (id, action) -> time its end was seen
        self.errors = []
        self.todo = queue.Queue()
        self._lock = threading.Lock()

    def _post(self, server_id, action):
        body = {'os-stop': None} if action == 'stop' else {'os-start': None}
        with self._lock:
            self.sent[(server_id, action)] = time.time()
        try:
            self.user.call('POST', '/servers/%s/action' % server_id, body,
                           expect=(202,))
        except Exception as exc:
            with self._lock:
                self.errors.append('%s %s: %s' % (action, server_id,
                                                  str(exc)[:200]))

    def _sender(self):
        while True:
            item = self.todo.get()
            if item is None:
                return
            self._post(*item)

    def _observe(self, now):
        """Mark the end states the list shows; True when all are done."""
        for server in load.list_servers(self.admin):
            if server['OS-EXT-STS:task_state'] is not None:
                continue
            state = server['OS-EXT-STS:vm_state']
            uuid = server['id']
            with self._lock:
                if state == 'stopped' and (uuid, 'stop') in self.sent and \
                        (uuid, 'stop') not in self.done:
                    self.done[(uuid, 'stop')] = now
                    self.todo.put((uuid, 'start'))
                elif state == 'active' and (uuid, 'start') in self.sent \
                        and (uuid, 'start') not in self.done:
                    self.done[(uuid, 'start')] = now
        with self._lock:
            failed = len(self.errors)
        return len(self.done) + failed >= 2 * len(self.ids)

    def run(self):
        """Send, poll until every action ended or ``timeout``; a dict."""
        threads = [threading.Thread(target=self._sender, daemon=True)
                   for _ in range(self.concurrency)]
        for thread in threads:
            thread.start()
        started = time.time()
        for uuid in self.ids:
            self.todo.put((uuid, 'stop'))
        deadline = started + self.timeout
        while time.time() < deadline:
            time.sleep(POLL)
            if self._observe(time.time()):
                break
        for _thread in threads:
            self.todo.put(None)
        return self.result(started)

    def _latencies(self, action):
        return [self.done[key] - self.sent[key] for key in self.done
                if key[1] == action]

    def result(self, started):
        ended = max(self.done.values()) if self.done else time.time()
        actions = len(self.done)
        missing = 2 * len(self.ids) - actions - len(self.errors)
        failures = list(self.errors[:5])
        if self.errors:
            failures.append('%d actions refused' % len(self.errors))
        if missing:
            failures.append('%d actions never reached their end state'
                            % missing)
        seconds = ended - started
        return {'pairs': len(self.ids), 'actions': actions,
                'seconds': round(seconds, 1),
                'actions_per_s': (round(actions / seconds, 1)
                                  if seconds > 0 else None),
                'stop_ms': _dist(self._latencies('stop')),
                'start_ms': _dist(self._latencies('start')),
                'all_ms': _dist(self._latencies('stop') +
                                self._latencies('start')),
                'failures': failures}


def _dist(values):
    if not values:
        return {}
    values = sorted(values)

    def rank(fraction):
        index = max(0, min(len(values) - 1,
                           int(round(fraction * len(values) + 0.5)) - 1))
        return round(values[index] * 1000, 1)
    return {'p50': rank(0.5), 'p95': rank(0.95),
            'max': round(values[-1] * 1000, 1)}


def run_phase(cloud, args, admin, user, servers):
    """Stop/start ``args.actions`` of the ACTIVE ``servers``; the result
    dict, with placement's usage before and after.
    """
    active = [s for s in servers if s['status'] == 'ACTIVE'][:args.actions]
    usage = load.placement_usage(cloud.placement_url)
    result = Pairs(user, admin, active, args.concurrency,
                   args.timeout).run()
    after = load.placement_usage(cloud.placement_url)
    result['placement_usage'] = [usage, after]
    if after != usage:
        result['failures'].append('placement usage moved from %s to %s'
                                  % (usage, after))
    return result


def print_phase(result, out):
    """The human report of the actions phase."""
    def dist(name):
        d = result[name]
        return '%s / %s ms' % (d.get('p50', '-'), d.get('p95', '-'))
    out.write('\nactions: %d stop/start pairs, %d actions done in %.1fs\n'
              % (result['pairs'], result['actions'], result['seconds']))
    out.write('  actions/s                %s\n' % result['actions_per_s'])
    out.write('  p50 / p95 to end state   all %s; stop %s; start %s '
              '(poll %.2fs)\n' % (dist('all_ms'), dist('stop_ms'),
                                  dist('start_ms'), POLL))
    out.write('  placement usage          %s\n' % (
        'unchanged' if result['placement_usage'][0] ==
        result['placement_usage'][1] else 'CHANGED'))
    for failure in result['failures']:
        out.write('  FAILURE: %s\n' % failure)
