# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""Scheduler benchmark: ``select_destinations`` as one RPC over RabbitMQ.

For each size N (100, 1000, 10000 hosts) the benchmark seeds fresh SQLite
placement, api and cell databases (see :mod:`tests.bench.scheduler_seed`),
starts ``berth-placement-api`` and ``berth-scheduler`` as subprocesses and
times, from the client side, ``SchedulerAPI.select_destinations`` for a
mixed request set: placement query, filters, weighers and the claim in
placement, plus the RPC round trip. Every answer is checked against the
seeded data (zone, trait, anti-affinity, instance count).

The mixed set repeats a few flavors, so most of its requests get a
placement answer another request asked for (``[scheduler]
share_placement_queries``). With one worker a second pass sends requests
whose placement queries all differ (each flavor a few MB larger), so that
no answer is shared: the uncached path, beside the shared one.

Where the time goes comes from the measured run itself: the scheduler
process records each request's stage timings (``timings_ms`` of its
explanation) and its own wall time (:mod:`tests.bench.scheduler_stages`),
and the stage table averages those of the measured requests; the rest of
each request's client time is RPC overhead. ``--profile`` adds a cProfile
pass of an in-process Scheduler on the same databases and placement.
"""

import collections
import concurrent.futures
import cProfile
import fcntl
import io
import json
import logging
import math
import multiprocessing
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import warnings

from tests.bench import scheduler_seed as data
from tests.bench import scheduler_stages
from tests.bench import servers
from tests.bench import upstream

SEED = 20240611
DEFAULT_SIZES = (100, 1000, 10000)
QUICK_SIZES = (100, 1000)
TARGETS_MS = {1000: 25.0, 10000: 100.0}
# NOTE: the size where the scheduler also runs with two workers, measured
# with one client (latency) and two concurrent clients (throughput).
TWO_WORKERS_SIZE = 1000
# The two request sets of the 1-worker run: the mixed set (most answers
# shared) and the one whose placement queries all differ (none shared).
MIXED, DISTINCT = 'mixed', 'distinct'
# MB added to the flavor of the n-th request of the distinct set, per n.
DISTINCT_STEP_MB = 1
RABBIT_URL = os.environ.get('BERTH_BENCH_RABBIT_URL',
                            'rabbit://guest:guest@127.0.0.1:5672/')
# NOTE: the functional tests' broker lock: held shared, so that a test
# restarting RabbitMQ waits for the benchmark to end.
BROKER_LOCK = os.path.join(tempfile.gettempdir(), 'berth-test-rabbit.lock')
PINGS = 30

# NOTE: oslo.service imports eventlet, which warns at import time; neither
# this process nor the in-process scheduler uses it.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')


def plan_for(size, quick):
    """Warm-up and measured request counts for ``size`` hosts.

    ``stage_samples`` is the size of the ``--profile`` pass.
    """
    # NOTE: a warm-up of 20 visits every zone and kind, so the measured
    # requests see a warm host-state cache, as a scheduler in service does.
    if quick:
        return {'warmup': 20, 'requests': 40, 'stage_samples': 15}
    return {'warmup': 20, 'requests': 100 if size <= 1000 else 50,
            'stage_samples': 30 if size <= 1000 else 20}


def percentile(values, fraction):
    """Nearest-rank percentile of ``values``."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(fraction * len(ordered))) - 1]


def group_cpu_seconds(pgid):
    """User + system CPU seconds of the live processes of group ``pgid``.

    NOTE: CPU time per request is what the scheduler and placement cost
    whatever else the shared machine runs; wall time is not. Linux /proc
    only; None elsewhere.
    """
    return _cpu_seconds(lambda comm, fields: int(fields[2]) == pgid)


def command_cpu_seconds(commands):
    """User + system CPU seconds of the live processes whose command name
    is one of ``commands`` (e.g. the database server's); None without
    /proc.
    """
    return _cpu_seconds(lambda comm, fields: comm in commands)


def _cpu_seconds(wanted):
    """CPU seconds of the processes for which ``wanted(command name,
    stat fields after the name)`` is true.
    """
    total = 0
    try:
        names = os.listdir('/proc')
    except OSError:
        return None
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name) as f:
                head, tail = f.read().rsplit(')', 1)
        except (OSError, ValueError):
            continue
        fields = tail.split()
        # Fields after the command: state, ppid, pgrp, ... utime (12th),
        # stime (13th), in clock ticks.
        if len(fields) > 12 and wanted(head.split('(', 1)[-1], fields):
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf('SC_CLK_TCK')


def load_average():
    """The 1-minute load average.

    NOTE: reported with every run: on a shared machine it says how far the
    numbers can be trusted.
    """
    return round(os.getloadavg()[0], 2)


def _log(message):
    sys.stderr.write(message + '\n')
    sys.stderr.flush()


# ------------------------------------------------------------------ broker

class Broker(object):
    """RabbitMQ for one run: a private virtual host when possible.

    NOTE: oslo.messaging names a topic's queue after the topic alone
    (``scheduler``), whatever the exchange; a scheduler of another test on
    the same virtual host would consume this run's requests. A private
    virtual host (rabbitmqctl, deleted at the end) isolates fully; without
    rabbitmqctl the run falls back to the base URL and a unique exchange.
    """

    def __init__(self, base_url=RABBIT_URL):
        self.base_url = base_url
        self.vhost = None
        self.url = base_url
        self._lock = None

    def _ctl(self, *args):
        return subprocess.run(['rabbitmqctl', '-q'] + list(args),
                              capture_output=True, text=True, timeout=60,
                              check=True).stdout

    def __enter__(self):
        self._lock = open(BROKER_LOCK, 'a')
        fcntl.flock(self._lock, fcntl.LOCK_SH)
        name = 'berth-bench-%s' % uuid.uuid4().hex[:10]
        if 'BERTH_BENCH_RABBIT_URL' not in os.environ:
            try:
                self._ctl('add_vhost', name)
                self.vhost = name
                self._ctl('set_permissions', '-p', name, 'guest',
                          '.*', '.*', '.*')
                self.url = self.base_url.rstrip('/') + '/' + name
            except (OSError, subprocess.SubprocessError) as exc:
                _log('note: no private RabbitMQ vhost (%s); using %s' % (
                    str(exc).splitlines()[0], self.base_url))
        return self

    def consumers(self, queue):
        """Consumers of ``queue`` in the private vhost (None: unknown)."""
        if self.vhost is None:
            return None
        out = self._ctl('list_queues', '-p', self.vhost,
                        '--no-table-headers', 'name', 'consumers')
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == queue:
                return int(parts[1])
        return 0

    def __exit__(self, *exc):
        if self.vhost is not None:
            try:
                self._ctl('delete_vhost', self.vhost)
            except (OSError, subprocess.SubprocessError) as err:
                _log('could not delete vhost %s: %s' % (self.vhost, err))
        fcntl.flock(self._lock, fcntl.LOCK_UN)
        self._lock.close()


# ------------------------------------------------------------- processes

class SchedulerProcess(servers.ServerProcess):
    """``berth-scheduler``: ready once its workers consume the topic.

    It runs through :mod:`tests.bench.scheduler_stages`, which appends
    each request's stage timings to ``stages_path``.
    """

    def __init__(self, config_file, log_path, ready, stages_path):
        argv = [sys.executable, '-m', 'tests.bench.scheduler_stages',
                stages_path]
        super().__init__('berth-scheduler', argv + [
            '--config-file', config_file], '', log_path,
            cwd=upstream.REPO_ROOT)
        self._ready = ready
        self.stages_path = stages_path

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            if self._ready():
                return
            time.sleep(0.2)
        self.stop()
        raise servers.ServerError('berth-scheduler not ready after %ss:\n%s'
                                  % (timeout, self.log_tail()))


def placement_server(workdir, db_url, port):
    """``berth-placement-api`` on ``db_url`` (not started)."""
    config = servers.write_config(
        os.path.join(workdir, 'placement.conf'), {
            'DEFAULT': {'debug': False},
            'api': {'auth_strategy': 'noauth2'},
            'placement_database': {'connection': db_url},
        })
    script = servers.console_script('berth-placement-api')
    argv = [script] if script else [
        sys.executable, '-m', 'services.placement.server']
    return servers.ServerProcess(
        'berth placement', argv + [
            '--config-file', config, '--host', '127.0.0.1',
            '--port', str(port)],
        'http://127.0.0.1:%d' % port, os.path.join(workdir, 'placement.log'),
        cwd=upstream.REPO_ROOT)


def scheduler_config(path, urls, broker_url, exchange, placement_url,
                     workers, max_placement_results=None):
    """Write the config shared by the scheduler, the seeder and the sampler.

    NOTE: service_down_time is a day: the seeded compute services
    heartbeat once, at seeding; they must stay up for the whole run.
    """
    scheduler = {'workers': workers}
    if max_placement_results:
        scheduler['max_placement_results'] = max_placement_results
    return servers.write_config(path, {
        'DEFAULT': {'transport_url': broker_url,
                    'control_exchange': exchange, 'host': 'bench-scheduler',
                    'servicegroup_driver': 'db', 'service_down_time': 86400,
                    'rpc_response_timeout': 120, 'debug': False},
        'database': {'connection': urls['cell']},
        'api_database': {'connection': urls['api']},
        'placement_database': {'connection': urls['placement']},
        'scheduler': scheduler,
        'placement': {'auth_type': 'admin_token', 'token': 'admin',
                      'endpoint': placement_url,
                      'endpoint_override': placement_url},
    })


def in_child(func, *args):
    """``func(*args)`` in a fresh interpreter.

    NOTE: Berth's databases are configured once per process, and every
    size has its own database files.
    """
    with multiprocessing.get_context('spawn').Pool(1) as pool:
        return pool.apply(func, args)


# ----------------------------------------------------------- RPC client

class Client(object):
    """The SchedulerAPI of this process, on one run's exchange."""

    def __init__(self, broker_url, exchange):
        from common import baserpc
        from common.conf import CONF
        from common import context
        from common import rpc
        from services.scheduler import rpcapi

        rpc.cleanup()
        rpc.register_opts(CONF)
        CONF.set_override('transport_url', broker_url)
        CONF.set_override('control_exchange', exchange)
        CONF.set_override('rpc_response_timeout', 120)
        rpc.init(CONF)
        self.api = rpcapi.SchedulerAPI()
        self.base = baserpc.BaseAPI(rpcapi.RPC_TOPIC)
        self.ctxt = context.RequestContext(user_id=data.USER,
                                           project_id=data.project_name(0))

    def ping(self):
        """True when a scheduler answers within two seconds."""
        try:
            self.base.ping(self.ctxt, 'bench', timeout=2)
            return True
        except Exception:
            return False

    def ping_ms(self, count=PINGS):
        """Median round trip of ``ping``: the floor of any RPC."""
        times = []
        for _ in range(count):
            start = time.perf_counter()
            self.base.ping(self.ctxt, 'bench')
            times.append((time.perf_counter() - start) * 1000)
        return round(statistics.median(times), 2)

    @staticmethod
    def close():
        from common import rpc
        rpc.cleanup()


def distinct_queries(requests):
    """``requests`` with flavors made distinct, so that no two of them
    (nor any of the mixed set) send the same placement query.
    """
    for index, request in enumerate(requests):
        request.spec.flavor.memory_mb += (index + 1) * DISTINCT_STEP_MB
    return requests


def measure(client, dataset, requests, threads=1, processes=None,
            stages_path=None):
    """Time ``requests`` (client wall time); check every answer.

    :param processes: {name: process group id} whose CPU time per request
        is reported as ``cpu_ms_per_request``.
    :param stages_path: the scheduler's stage records; their summary for
        these requests is ``stages`` (see
        :func:`tests.bench.scheduler_stages.summary`).
    """
    processes = processes or {}
    cpu_before = {k: group_cpu_seconds(v) for k, v in processes.items()}
    by_name = {h.name: h for h in dataset.hosts}
    latencies, failures, problems = [], [], []
    by_uuid = {}

    def one(request):
        start = time.perf_counter()
        try:
            selections = client.api.select_destinations(
                client.ctxt, request.spec, request.instance_uuids)
        except Exception as exc:
            failures.append('%s: %s' % (request.kind, str(exc)[:300]))
            return
        elapsed = (time.perf_counter() - start) * 1000
        latencies.append((request.kind, elapsed))
        by_uuid[request.instance_uuids[0]] = elapsed
        problems.extend(data.check_selections(dataset, request, selections,
                                              by_name))

    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, requests))
    wall = time.perf_counter() - start
    cpu = {}
    for name, pgid in processes.items():
        after = group_cpu_seconds(pgid)
        if after is not None and cpu_before[name] is not None:
            cpu[name] = round((after - cpu_before[name]) * 1000 /
                              len(requests), 1)
    values = [ms for _kind, ms in latencies] or [0.0]
    by_kind = collections.defaultdict(list)
    for kind, ms in latencies:
        by_kind[kind].append(ms)
    stages = scheduler_stages.summary(scheduler_stages.read(
        stages_path, by_uuid), by_uuid) if stages_path else None
    return {'clients': threads, 'requests': len(requests),
            'stages': stages,
            'p50_ms': round(statistics.median(values), 2),
            'p95_ms': round(percentile(values, 0.95), 2),
            'mean_ms': round(statistics.mean(values), 2),
            'max_ms': round(max(values), 2),
            'per_s': round(len(latencies) / wall, 1),
            'cpu_ms_per_request': cpu,
            'p50_ms_by_kind': {k: round(statistics.median(v), 2)
                               for k, v in sorted(by_kind.items())},
            'failures': len(failures), 'failure_examples': failures[:3],
            'problems': problems[:10], 'problem_count': len(problems)}


# --------------------------------------------------------- stage timings

def profile_in_process(config_file, size, seed_value, samples, warmup,
                       profile_path):
    """Run the Scheduler in this (fresh) process, under cProfile.

    A timed pass of ``samples`` requests comes first (its figures carry
    no profiler overhead), then a second pass of ``samples`` runs under
    cProfile; the statistics go to ``profile_path`` (.pstats and .txt).
    """
    from common import config
    from common import context
    from common import gc_tuning
    from services.scheduler import manager
    from services.scheduler import scheduling

    config.parse_args(['--config-file', config_file],
                      default_config_files=[])
    logging.basicConfig(level=logging.WARNING)
    scheduler = manager.SchedulerManager(host='bench-inprocess').scheduler
    dataset = data.build_dataset(size, seed_value)
    requests = data.build_requests(dataset, warmup + 2 * samples,
                                   '%s-inprocess' % seed_value)
    ctxt = context.RequestContext(user_id=data.USER,
                                  project_id=data.project_name(0))

    def call(request):
        try:
            return scheduler.select_destinations(
                ctxt, request.spec, request.instance_uuids)[1]
        except scheduling.NoValidHost as exc:
            return dict(exc.explanation, failed=True)

    for request in requests[:warmup]:
        call(request)
    # NOTE: as a started service does (common/service.py).
    gc_tuning.settle()
    stages, walls, counts, failed = collections.Counter(), [], [], 0
    cpu_start = time.process_time()
    for request in requests[warmup:warmup + samples]:
        start = time.perf_counter()
        explanation = call(request)
        walls.append((time.perf_counter() - start) * 1000)
        stages.update(explanation.get('timings_ms', {}))
        counts.append((explanation['candidates'], explanation['hosts']))
        failed += bool(explanation.get('failed'))
    result = {
        'samples': samples, 'failures': failed,
        'cpu_ms_mean': round((time.process_time() - cpu_start) * 1000 /
                             samples, 3),
        'wall_ms_mean': round(statistics.mean(walls), 3),
        'wall_ms_p50': round(statistics.median(walls), 3),
        'stages_ms_mean': {k: round(v / samples, 3)
                           for k, v in stages.items()},
        'candidates_mean': round(statistics.mean(c for c, _h in counts)),
        'hosts_mean': round(statistics.mean(h for _c, h in counts))}
    profiler = cProfile.Profile()
    profiler.enable()
    for request in requests[warmup + samples:]:
        call(request)
    profiler.disable()
    profiler.dump_stats(profile_path + '.pstats')
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats('tottime').print_stats(30)
    stats.sort_stats('cumulative').print_stats(45)
    with open(profile_path + '.txt', 'w') as f:
        f.write(text.getvalue())
    result['profile'] = profile_path + '.txt'
    return result


# -------------------------------------------------------------- one size

class SizeRun(object):
    """One size: its databases, its placement, its schedulers."""

    def __init__(self, size, args, broker, run_id):
        self.size = size
        self.args = args
        self.broker = broker
        self.plan = plan_for(size, args.quick)
        self.workdir = os.path.join(args.workdir, str(size))
        os.makedirs(self.workdir, exist_ok=True)
        self.urls = {name: servers.recreate_database('sqlite', name,
                                                     self.workdir)
                     for name in ('placement', 'api', 'cell')}
        self.port = servers.free_port()
        self.placement_url = 'http://127.0.0.1:%d' % self.port
        self.exchange = 'berth-bench-%s-%d' % (run_id, size)
        self.dataset = data.build_dataset(size, SEED)
        self.client = None
        self.placement = None

    def config(self, workers):
        """Write the config for ``workers`` scheduler workers."""
        return scheduler_config(
            os.path.join(self.workdir, 'scheduler-%d.conf' % workers),
            self.urls, self.broker.url, self.exchange, self.placement_url,
            workers, self.args.max_placement_results)

    def run(self):
        """Seed, start the servers, measure; return the size's results."""
        result = {'plan': self.plan, 'runs': [],
                  'load_before': load_average()}
        result['seed'] = in_child(data.seed, self.config(1), self.size, SEED,
                                  self.broker.url)
        _log('N = %d: seeded %d hosts, %d instances in %.1fs' % (
            self.size, self.size, result['seed']['instances'],
            result['seed']['seconds']))
        placement = placement_server(self.workdir, self.urls['placement'],
                                     self.port)
        self.client = Client(self.broker.url, self.exchange)
        self.placement = placement
        try:
            with placement.start():
                result['runs'] += self.measure_scheduler(1)
                if self.args.profile:
                    result['profile'] = self.profile()
                if self.size == TWO_WORKERS_SIZE:
                    result['runs'] += self.measure_scheduler(2)
                placement.check_alive()
        finally:
            self.client.close()
        result['load_after'] = load_average()
        return result

    def profile(self):
        """A cProfile pass of an in-process Scheduler (a fresh process)."""
        found = in_child(
            profile_in_process, self.config(1), self.size, SEED,
            self.plan['stage_samples'], self.plan['warmup'],
            os.path.join(self.workdir, 'profile'))
        _log('  in-process: %.1f ms mean over %d requests' % (
            found['wall_ms_mean'], found['samples']))
        return found

    def _ready(self, workers):
        if not self.client.ping():
            return False
        found = self.broker.consumers('scheduler')
        return found is None or found >= workers

    def measure_scheduler(self, workers):
        """Start a scheduler with ``workers`` workers; measure it."""
        process = SchedulerProcess(
            self.config(workers),
            os.path.join(self.workdir, 'scheduler-%d.log' % workers),
            lambda: self._ready(workers),
            os.path.join(self.workdir, 'stages-%d.jsonl' % workers))
        runs = []
        with process.start():
            if workers > 1 and self.broker.vhost is None:
                time.sleep(3)
            phase = '%s-w%d' % (SEED, workers)
            measure(self.client, self.dataset, data.build_requests(
                self.dataset, self.plan['warmup'], phase + '-warmup'))
            ping_ms = self.client.ping_ms()
            passes = [(MIXED, threads) for threads in (
                [1, 2] if workers > 1 else [1])]
            if workers == 1:
                passes.append((DISTINCT, 1))
            for queries, threads in passes:
                # NOTE: the distinct set has seeds (and instance uuids,
                # the consumers of its claims) of its own.
                requests = data.build_requests(
                    self.dataset, self.plan['requests'],
                    '%s-%d' % (phase, threads) if queries == MIXED else
                    '%s-%s' % (phase, queries))
                if queries == DISTINCT:
                    requests = distinct_queries(requests)
                stats = measure(self.client, self.dataset, requests,
                                threads, {
                                    'scheduler': process.proc.pid,
                                    'placement': self.placement.proc.pid},
                                process.stages_path)
                stats.update(workers=workers, ping_ms=ping_ms,
                             load=load_average(), queries=queries)
                runs.append(stats)
                _log('  %d worker(s), %d client(s), %s queries: p50 %.1f '
                     'ms, p95 %.1f ms, %.1f req/s, %d failures, %d '
                     'problems' % (
                         workers, threads, queries, stats['p50_ms'],
                         stats['p95_ms'], stats['per_s'], stats['failures'],
                         stats['problem_count']))
            process.check_alive()
        return runs


# ---------------------------------------------------------------- report

def stage_columns(size_result):
    """[(label, a scheduler_stages.summary entry)] of one size's 1-worker
    runs: the mixed set's requests on a shared answer and on their own,
    and the distinct set's (none shared).
    """
    columns = []
    for run in size_result['runs']:
        if run['workers'] != 1 or run['clients'] != 1 or \
                not run.get('stages'):
            continue
        queries = run.get('queries', MIXED)
        for group in ('shared', 'own'):
            summary = run['stages'][group]
            if summary['requests']:
                columns.append(('%s: %s' % (queries, group), summary))
    return columns


def print_report(results, out=sys.stdout):
    """Print the latency table, the stage shares and the verdict."""
    w = out.write
    w('\nScheduler benchmark: select_destinations as one RPC over '
      'RabbitMQ (client wall time)\n')
    w('filters: %s\nweighers: %s; SQLite databases; max_placement_results '
      '%s\n' % (', '.join(results['filters']),
                ', '.join(results['weighers']),
                results['max_placement_results']))
    w('\n%6s %3s %3s %-8s %5s %7s %7s %7s %7s %6s %7s %7s %5s %5s %4s\n' % (
        'hosts', 'wrk', 'cli', 'queries', 'reqs', 'p50 ms', 'p95 ms',
        'mean', 'max', 'req/s', 'sch cpu', 'plc cpu', 'ping', 'load',
        'fail'))
    for size, size_result in results['sizes'].items():
        for run in size_result['runs']:
            cpu = run['cpu_ms_per_request']
            w('%6s %3d %3d %-8s %5d %7.1f %7.1f %7.1f %7.1f %6.1f %7s %7s '
              '%5.1f %5.1f %4d\n' % (
                  size, run['workers'], run['clients'],
                  run.get('queries', MIXED), run['requests'],
                  run['p50_ms'], run['p95_ms'], run['mean_ms'],
                  run['max_ms'], run['per_s'], cpu.get('scheduler', '-'),
                  cpu.get('placement', '-'), run['ping_ms'], run['load'],
                  run['failures'] + run['problem_count']))
    w('queries: mixed, the request mix (most placement answers shared); '
      'distinct, every\nplacement query different (no answer shared). '
      'sch cpu / plc cpu: CPU ms per\nrequest of the scheduler and of '
      'placement (what they cost whatever the load);\nping: median ms of '
      'the baseapi ping RPC (the floor of any call); load: 1-minute\nload '
      'average after the run (2 cores)\n')
    sized = [(size, stage_columns(r)) for size, r in
             results['sizes'].items()]
    if any(columns for _s, columns in sized):
        w('\nWhere the time goes (1 worker, 1 client): the stages each '
          'measured request\nspent in the scheduler (its explanation\'s '
          'timings, recorded by the scheduler\nprocess of the run above), '
          'mean ms and share of the same requests\' mean client\ntime, by '
          'request set and by whether the placement answer was shared\n')
        for size, columns in sized:
            if columns:
                scheduler_stages.print_table(w, size, columns)
    w('\nTargets (p50, 1 worker, 1 client):\n')
    for size, target in sorted(TARGETS_MS.items()):
        size_result = results['sizes'].get(str(size))
        if size_result is None:
            continue
        p50 = size_result['runs'][0]['p50_ms']
        w('  %5d hosts < %3.0f ms: %6.1f ms  %s\n' % (
            size, target, p50, 'MET' if p50 < target else 'NOT MET'))
    for size, size_result in results['sizes'].items():
        for run in size_result['runs']:
            for line in run['failure_examples'] + run['problems']:
                w('FAILURE (%s hosts, %d workers): %s\n' % (
                    size, run['workers'], line))
        profile = size_result.get('profile', {})
        if profile.get('failures'):
            w('FAILURE (%s hosts, in-process): %d NoValidHost\n' % (
                size, profile['failures']))
        if profile.get('profile'):
            w('profile (%s hosts): %s\n' % (size, profile['profile']))


def failed(results):
    """True when any request failed or any answer broke a constraint."""
    return any(run['failures'] or run['problem_count']
               for r in results['sizes'].values() for run in r['runs']) or \
        any(r.get('profile', {}).get('failures')
            for r in results['sizes'].values())


# ------------------------------------------------------------------ main

def add_arguments(parser):
    """Add this benchmark's options to ``parser``."""
    parser.add_argument('--sizes', default=None,
                        help='comma-separated host counts (default '
                        '100,1000,10000; 100,1000 with --quick)')
    parser.add_argument('--quick', action='store_true',
                        help='100 and 1000 hosts, fewer requests')
    parser.add_argument('--profile', action='store_true',
                        help='also run an in-process Scheduler under '
                        'cProfile (profile.pstats/.txt in each size '
                        'directory)')
    parser.add_argument('--max-placement-results', type=int,
                        help='[scheduler] max_placement_results for the '
                        'scheduler (default: the option\'s default, 1000)')
    parser.add_argument('--json', help='write the results to this file')
    parser.add_argument('--workdir',
                        help='keep configs, logs and SQLite files here '
                        '(default: a temporary directory, removed after '
                        'a successful run)')


def _sizes(args):
    if args.sizes:
        return [int(size) for size in args.sizes.split(',')]
    return list(QUICK_SIZES if args.quick else DEFAULT_SIZES)


def _pipeline(args):
    from common.conf import CONF

    return {'filters': list(CONF.filter_scheduler.enabled_filters),
            'weighers': list(CONF.filter_scheduler.weight_classes),
            'max_placement_results': args.max_placement_results or
            CONF.scheduler.max_placement_results}


def run(args):
    """Run the benchmark; return 0, or 1 on failures or wrong answers."""
    keep = bool(args.workdir)
    args.workdir = os.path.abspath(
        args.workdir or tempfile.mkdtemp(prefix='berth-bench-sched-'))
    os.makedirs(args.workdir, exist_ok=True)
    run_id = uuid.uuid4().hex[:8]
    results = dict(_pipeline(args), seed=SEED, quick=args.quick, sizes={})
    started = time.monotonic()
    with Broker() as broker:
        results['broker'] = ('private vhost' if broker.vhost
                             else broker.url.rsplit('@', 1)[-1])
        for size in _sizes(args):
            _log('N = %d (logs in %s/%d)' % (size, args.workdir, size))
            results['sizes'][str(size)] = SizeRun(
                size, args, broker, run_id).run()
    results['seconds'] = round(time.monotonic() - started, 1)
    print_report(results)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(results, f, indent=2, sort_keys=True)
    bad = failed(results)
    if not keep and not bad and not args.profile:
        shutil.rmtree(args.workdir, ignore_errors=True)
    return 1 if bad else 0
