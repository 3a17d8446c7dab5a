# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""End-to-end benchmark: servers booted through the REST API to ACTIVE.

``python -m tests.bench e2e`` starts a cloud whose fake compute driver
simulates ``--hosts`` hosts (1000), then, as a user, boots ``--servers``
servers (1000) with ``POST /servers`` from ``--concurrency`` client
threads and waits until none is in BUILD, polling one cheap list call per
second (never one GET per server). For every ``--batch`` size (default
``1,10``) it is one phase: batch 1 is one server per request, the honest
rate of single requests; a larger batch is multi-create (``min_count =
max_count = batch``), which the report labels as such. Between phases the
servers are deleted, so that every phase starts on empty hosts. After
the last one, the actions phase (``--actions`` stop/start pairs, 0 to
skip; see :mod:`tests.bench.e2e_actions`) stops and starts the servers,
and the moves phase (``--cold`` migrations, ``--live`` migrations, a host
of ``--drain`` servers emptied; see :mod:`tests.bench.e2e_moves`) moves
them.

Reported per phase: servers/s to ACTIVE (ACTIVE servers over the time from
the first POST to the last ``launched_at``), p50/p95 API-to-ACTIVE latency
(``launched_at`` minus the moment the POST was sent), the POST latency, the
per-stage split of a sample of servers (their instance actions: API, to
the cell = queue + conductor + scheduler, to the compute, build), the
scheduler's own stage timings (in-process only: the explanation of every
decision), and the CPU each process spent per server (in processes mode
also the database server's and RabbitMQ's, shared with whatever else
runs on the machine), with their total. The run fails (exit
1) when a server does not become ACTIVE, placement's usage does not match,
or the single-request rate misses the target (50 servers/s).

``--mode processes`` (default): every service its own process on
RabbitMQ and MariaDB (default) or PostgreSQL, as deployed; the only mode
that uses more than one core. ``--mode inprocess``: the all-in-one in
this interpreter on ``fake://`` and SQLite (``--db mysql|postgresql``
for scratch databases on the local servers), bound to one core by the
GIL. ``--profile`` records each process with py-spy during every phase
and prints the hottest frames.
"""

import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
import traceback
import warnings

from tests.bench import e2e_actions as actions
from tests.bench import e2e_clouds as clouds
from tests.bench import e2e_load as load
from tests.bench import e2e_moves as moves
from tests.bench import scheduler as scheduler_bench

TARGET_SERVERS_PER_S = 50.0
SCHEDULER_STAGES = ('request_filters', 'placement_query', 'host_states',
                    'filters', 'weighers', 'claim', 'consume')
SAMPLE_STAGES = ('api', 'to_cell', 'to_compute', 'build')

warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')


def _log(message):
    sys.stderr.write(message + '\n')
    sys.stderr.flush()


def percentile(values, fraction):
    """Nearest-rank percentile; None for no values."""
    return scheduler_bench.percentile(values, fraction) if values else None


def _ms(value):
    return None if value is None else round(value * 1000, 1)


def _dist_ms(values):
    if not values:
        return {}
    return {'p50': _ms(percentile(values, 0.5)),
            'p95': _ms(percentile(values, 0.95)),
            'mean': _ms(statistics.fmean(values)),
            'max': _ms(max(values))}


# ---------------------------------------------------------------- analysis

def _latencies(boot, servers):
    """(API-to-ACTIVE seconds per ACTIVE server, launched_at epochs)."""
    latencies, launched = [], []
    for server in servers:
        if server['status'] != 'ACTIVE':
            continue
        record = boot.owner(server['name'])
        active_at = load.parse_time(server.get('OS-SRV-USG:launched_at'))
        if record is None or active_at is None or record.sent is None:
            continue
        latencies.append(active_at - record.sent)
        launched.append(active_at)
    return latencies, launched


def _scheduler_stages(decisions):
    if not decisions:
        return None
    totals = [sum(t.values()) for _n, t in decisions]
    stages = {stage: round(statistics.fmean(t.get(stage, 0.0)
                                            for _n, t in decisions), 2)
              for stage in SCHEDULER_STAGES}
    return {'decisions': len(decisions),
            'instances': sum(n for n, _t in decisions),
            'ms_per_decision': {'p50': round(percentile(totals, 0.5), 1),
                                'p95': round(percentile(totals, 0.95), 1),
                                'mean': round(statistics.fmean(totals), 1)},
            'stage_mean_ms': stages}


def _sample_stages(samples):
    if not samples:
        return None
    means = {s: statistics.fmean(x[s] for x in samples)
             for s in SAMPLE_STAGES}
    total = sum(means.values()) or 1.0
    return {'samples': len(samples),
            'mean_ms': {s: _ms(v) for s, v in means.items()},
            'p50_ms': {s: _ms(percentile([x[s] for x in samples], 0.5))
                       for s in SAMPLE_STAGES},
            'share': {s: round(v / total, 3) for s, v in means.items()}}


def analyse(boot, servers, cpu_before, cpu_after, decisions, samples,
            usage):
    """The numbers of one phase as a JSON-ready dict."""
    statuses = {}
    for server in servers:
        statuses[server['status']] = statuses.get(server['status'], 0) + 1
    latencies, launched = _latencies(boot, servers)
    sent = [r.sent for r in boot.records if r.sent is not None]
    answered = [r.answered for r in boot.records if r.error is None
                and r.answered is not None]
    requested = sum(r.count for r in boot.records)
    active = statuses.get('ACTIVE', 0)
    span = (max(launched) - min(sent)) if launched and sent else None
    hosts = {}
    for server in servers:
        host = server.get('OS-EXT-SRV-ATTR:host')
        if host:
            hosts[host] = hosts.get(host, 0) + 1
    post_errors = [r.error for r in boot.records if r.error]
    failures = []
    if post_errors:
        failures.append('%d POST /servers failed, e.g. %s'
                        % (len(post_errors), post_errors[0]))
    if active != requested:
        errored = [s for s in servers if s['status'] != 'ACTIVE']
        failures.append('%d of %d servers ACTIVE (%s)%s' % (
            active, requested, statuses,
            ('; e.g. %s' % errored[0].get('fault', {}).get('message'))
            if errored else ''))
    if boot.timed_out:
        failures.append('timed out after %ss' % boot.timeout)
    if boot.stalled:
        failures.append('stalled: no server left BUILD for %ss'
                        % boot.stall)
    vcpus = usage.get('VCPU', 0)
    if vcpus != active * load.FLAVOR['vcpus']:
        failures.append('placement VCPU usage %s for %d ACTIVE servers'
                        % (vcpus, active))
    cpu = {name: round((cpu_after[name] - cpu_before.get(name, 0)) * 1000 /
                       max(active, 1), 2)
           for name in cpu_after if cpu_after[name] is not None}
    return {
        'batch': boot.records[0].count if boot.records else 0,
        'kind': ('single-server requests' if boot.records and
                 boot.records[0].count == 1 else 'multi-create batches'),
        'requests': len(boot.records),
        'servers': requested,
        'statuses': statuses,
        'servers_per_s': round(active / span, 2) if span else None,
        'seconds': round(span, 2) if span else None,
        'api_to_active_ms': _dist_ms(latencies),
        'post_ms': _dist_ms([r.answered - r.sent for r in boot.records
                             if r.answered is not None]),
        'post_servers_per_s': round(requested / (max(answered) -
                                                 min(sent)), 2)
        if answered else None,
        'polls': len(boot.polls),
        'poll_ms': _dist_ms(boot.polls),
        'hosts_used': len(hosts),
        'max_servers_per_host': max(hosts.values()) if hosts else 0,
        'placement_usage': usage,
        'cpu_ms_per_server': cpu,
        'scheduler': _scheduler_stages(decisions),
        'stages': _sample_stages(samples),
        'failures': failures,
    }


# ------------------------------------------------------------------ phases

def run_phase(cloud, args, admin, user, flavor_id, image_id, batch,
              profiler):
    """Boot, measure, read back one phase; returns its result dict."""
    label = 'batch%d' % batch
    _log('phase %s: %d servers, %s, %d client threads%s' % (
        label, args.servers,
        'one per request' if batch == 1 else 'multi-create of %d' % batch,
        args.concurrency,
        ', %s servers/s offered' % args.rate if args.rate else ''))
    load_before = scheduler_bench.load_average()
    if cloud.mode == 'inprocess':
        cloud.timings.take()
    cpu_before = cloud.cpu_seconds()
    if profiler is not None:
        profiler.start(cloud.pids(), label)
    boot = load.Boot(user, flavor_id, image_id, args.servers, batch,
                     args.concurrency, rate=args.rate, prefix=label,
                     poll_interval=args.poll_interval,
                     timeout=args.timeout, stall=args.stall).run()
    profiles = profiler.stop() if profiler is not None else []
    cpu_after = cloud.cpu_seconds()
    decisions = (cloud.timings.take() if cloud.mode == 'inprocess'
                 else None)
    servers = load.list_servers(admin)
    samples = load.stage_samples(admin, boot, servers, args.sample)
    usage = load.placement_usage(cloud.placement_url)
    result = analyse(boot, servers, cpu_before, cpu_after, decisions,
                     samples, usage)
    result['load_average'] = [load_before, scheduler_bench.load_average()]
    result['profiles'] = {os.path.basename(p): clouds.summarize_profile(p)
                          for p in profiles}
    return result, servers


def _delete(user, servers, args, cloud):
    _log('deleting %d servers' % len(servers))
    seconds = load.delete_all(user, servers, args.concurrency,
                              args.timeout)
    usage = load.placement_usage(cloud.placement_url)
    _log('  deleted in %.1fs (%.1f/s); placement usage now %s' % (
        seconds, len(servers) / seconds if seconds else 0, usage))
    failure = None
    if any(usage.values()):
        failure = 'placement usage %s left after deleting everything' % (
            usage)
    return {'seconds': round(seconds, 1), 'servers': len(servers),
            'placement_usage_after': usage, 'failure': failure}


# ------------------------------------------------------------------ report

def _fmt(value, fmt='%.1f'):
    return '-' if value is None else fmt % value


def print_phase(phase, out):
    """The human report of one phase."""
    lat, post = phase['api_to_active_ms'], phase['post_ms']
    out.write('\n%s (batch %d): %d requests, %d servers, %s\n' % (
        phase['kind'], phase['batch'], phase['requests'], phase['servers'],
        phase['statuses']))
    out.write('  servers/s to ACTIVE      %s   (%ss from first POST to '
              'last ACTIVE)\n' % (_fmt(phase['servers_per_s']),
                                  _fmt(phase['seconds'])))
    out.write('  API-to-ACTIVE ms         p50 %s  p95 %s  max %s\n' % (
        _fmt(lat.get('p50')), _fmt(lat.get('p95')), _fmt(lat.get('max'))))
    out.write('  POST /servers ms         p50 %s  p95 %s  (API accepted '
              '%s servers/s)\n' % (_fmt(post.get('p50')),
                                   _fmt(post.get('p95')),
                                   _fmt(phase['post_servers_per_s'])))
    out.write('  progress polls           %d, p50 %s ms\n' % (
        phase['polls'], _fmt(phase['poll_ms'].get('p50'))))
    out.write('  hosts used               %d (at most %d servers on one)\n'
              % (phase['hosts_used'], phase['max_servers_per_host']))
    stages = phase['stages']
    if stages:
        out.write('  stages (%d samples, mean ms / share): %s\n' % (
            stages['samples'], ', '.join(
                '%s %s / %.0f%%' % (s, _fmt(stages['mean_ms'][s]),
                                    stages['share'][s] * 100)
                for s in SAMPLE_STAGES)))
    sched = phase['scheduler']
    if sched:
        out.write('  scheduler (%d decisions) ms p50 %s p95 %s; mean by '
                  'stage: %s\n' % (
                      sched['decisions'],
                      _fmt(sched['ms_per_decision']['p50']),
                      _fmt(sched['ms_per_decision']['p95']),
                      ', '.join('%s %.1f' % item for item in
                                sched['stage_mean_ms'].items())))
    cpu = phase['cpu_ms_per_server']
    out.write('  CPU ms per server        %s; total %.1f\n' % (', '.join(
        '%s %.1f' % item for item in sorted(cpu.items())),
        sum(cpu.values())))
    out.write('  load average             %s -> %s\n' % tuple(
        phase['load_average']))
    for name, summary in phase['profiles'].items():
        out.write('  py-spy %s: %d samples; hottest Berth frames '
                  '(inclusive):\n' % (name, summary['samples']))
        for frame, share in summary['inclusive'][:12]:
            out.write('    %5.1f%%  %s\n' % (share * 100, frame))
    for failure in phase['failures']:
        out.write('  FAILURE: %s\n' % failure)


def verdicts(results):
    """[(line, met)] for the target."""
    lines = []
    for phase in results['phases']:
        rate = phase['servers_per_s']
        met = rate is not None and rate >= TARGET_SERVERS_PER_S
        lines.append(('%s (batch %d): %s servers/s, target >= %.0f: %s' % (
            phase['kind'], phase['batch'], _fmt(rate),
            TARGET_SERVERS_PER_S, 'met' if met else 'MISSED'),
            met or phase['batch'] != 1))
    boots = _single_boots(results)
    for key in ('cold', 'live'):
        part = (results.get('moves') or {}).get(key)
        if part is None:
            continue
        rate = part['moves_per_s']
        met = rate is not None and rate >= TARGET_SERVERS_PER_S
        lines.append(('%s migrations: %s moves/s, target >= %.0f: %s%s' % (
            key, _fmt(rate), TARGET_SERVERS_PER_S,
            'met' if met else 'MISSED', _against_boots(part, boots)), met))
    return lines


def _single_boots(results):
    """The single-server boot phase of ``results``, or None."""
    for phase in results['phases']:
        if phase['batch'] == 1:
            return phase
    return None


def _against_boots(part, boots):
    """A move's rate and CPU beside the same run's boots: the absolute
    rates follow the machine (doc/benchmarks.md), the ratios what a move
    costs against a boot on the same one.
    """
    if boots is None or not boots.get('servers_per_s') or \
            not part.get('moves_per_s'):
        return ''
    text = ' (%.2f of this run\'s boot rate' % (
        part['moves_per_s'] / boots['servers_per_s'])
    move_cpu = sum((part.get('cpu_ms_per_move') or {}).values())
    boot_cpu = sum((boots.get('cpu_ms_per_server') or {}).values())
    if move_cpu and boot_cpu:
        text += '; CPU per move %.2f of a boot\'s' % (move_cpu / boot_cpu)
    return text + ')'


def print_report(results, out=sys.stdout):
    """Every phase, then the target verdicts."""
    cloud = results['cloud']
    out.write('\nBerth end-to-end: %d servers onto %d hosts, %s mode '
              '(%s, %s), %d client threads; start-up %.0fs\n' % (
                  results['servers'], cloud['hosts'], cloud['mode'],
                  cloud['db'], cloud['transport'], results['concurrency'],
                  results['startup_seconds']))
    out.write('idle CPU %% of one core: %s\n' % ', '.join(
        '%s %.0f' % item for item in
        sorted(results.get('idle_cpu_percent', {}).items())))
    for phase in results['phases']:
        print_phase(phase, out)
    for deletion in results['deletions']:
        out.write('\ndeleted %d servers in %.1fs%s\n' % (
            deletion['servers'], deletion['seconds'],
            '; FAILURE: %s' % deletion['failure']
            if deletion['failure'] else ''))
    if results.get('actions'):
        actions.print_phase(results['actions'], out)
    if results.get('moves'):
        moves.print_phase(results['moves'], out)
    out.write('\n')
    for line, _met in verdicts(results):
        out.write(line + '\n')
    out.flush()


# --------------------------------------------------------------------- cli

def add_arguments(parser):
    """Options of ``python -m tests.bench e2e``."""
    parser.add_argument('--servers', type=int, default=1000,
                        help='servers booted per phase (default 1000)')
    parser.add_argument('--hosts', type=int, default=1000,
                        help='hosts the fake driver simulates (1000)')
    parser.add_argument('--batch', default='1,10',
                        help='comma-separated servers per request, one '
                             'phase each: 1 = single-server requests, '
                             'N > 1 = multi-create (default 1,10)')
    parser.add_argument('--concurrency', type=int, default=8,
                        help='client threads sending POSTs (default 8)')
    parser.add_argument('--rate', type=float, default=None,
                        help='offer this many servers/s (open loop) '
                             'instead of sending back to back')
    parser.add_argument('--mode', choices=('inprocess', 'processes'),
                        default='processes')
    parser.add_argument('--db', choices=('sqlite', 'mysql', 'postgresql'),
                        default=None, help='sqlite (inprocess default) or '
                        'a scratch database on the local MariaDB '
                        '(processes default) or PostgreSQL')
    parser.add_argument('--set', action='append', default=[],
                        metavar='GROUP.OPTION=VALUE',
                        help='a config option for every service '
                             '(repeatable), e.g. compute.'
                             'max_concurrent_builds=50')
    parser.add_argument('--sample', type=int, default=50,
                        help='servers whose instance actions give the '
                             'stage split (default 50)')
    parser.add_argument('--actions', type=int, default=1000,
                        help='stop/start pairs after the last phase, on '
                             'its servers (default 1000; 0 skips)')
    parser.add_argument('--cold', type=int, default=500,
                        help='cold migrations (migrate + confirm) after '
                             'the actions phase (default 500; 0 skips)')
    parser.add_argument('--live', type=int, default=400,
                        help='live migrations of other servers after '
                             'that (default 400; 0 skips)')
    parser.add_argument('--drain', type=int, default=100,
                        help='servers booted onto one host, then all '
                             'live-migrated away (default 100; 0 skips)')
    parser.add_argument('--poll-interval', type=float, default=1.0)
    parser.add_argument('--timeout', type=float, default=900,
                        help='seconds a phase may take (default 900)')
    parser.add_argument('--stall', type=float, default=180,
                        help='give a phase up when no server left BUILD '
                             'for this many seconds (default 180)')
    parser.add_argument('--quota', choices=sorted(load.QUOTAS),
                        default='counted',
                        help='counted (default): finite limits far above '
                             'the run, counted on every boot as for a '
                             'real tenant; unlimited: -1, no counting')
    parser.add_argument('--settle', type=float, default=20,
                        help='seconds to wait after start-up, measuring '
                             'the idle CPU of each process (default 20)')
    parser.add_argument('--profile', action='store_true',
                        help='record every process with py-spy during '
                             'each phase (raw files kept in the workdir)')
    parser.add_argument('--profile-rate', type=int, default=100,
                        help='py-spy samples per second (default 100; '
                             'lower it for processes with 1000s of '
                             'threads)')
    parser.add_argument('--profile-gil', action='store_true',
                        help='with --profile: only samples holding the '
                             'GIL (py-spy --gil)')
    parser.add_argument('--json', help='write the results to this file')
    parser.add_argument('--workdir',
                        help='keep logs, configs, profiles here (default: '
                             'a temporary directory, kept on failure)')


def idle_cpu(cloud, seconds):
    """CPU % (of one core) each process uses with nothing to build.

    NOTE: 1000 simulated hosts cost something even when idle (RPC
    listeners, heartbeats, periodic updates); this is the floor under
    every phase's CPU per server.
    """
    before = cloud.cpu_seconds()
    started = time.monotonic()
    time.sleep(seconds)
    after = cloud.cpu_seconds()
    elapsed = time.monotonic() - started
    return {name: round((after[name] - before.get(name, 0)) * 100 /
                        elapsed, 1)
            for name in after if after[name] is not None}


def _terminate(signum, _frame):
    # NOTE: SIGTERM (timeout, Ctrl-C's cousin) must unwind through the
    # clean-up: stop the services, drop the databases, delete the vhost.
    # The in-process launcher installs its own handler; this one replaces
    # it once the cloud is up.
    raise SystemExit('terminated by signal %d' % signum)


def _batches(text):
    batches = [int(b) for b in text.split(',') if b.strip()]
    if not batches or min(batches) < 1:
        raise SystemExit('--batch: positive integers, e.g. 1,10')
    return batches


def _phases(cloud, args, results):
    admin = load.Client(cloud.api_url, load.ADMIN_TOKEN)
    user = load.Client(cloud.api_url, load.USER_TOKEN)
    profiler = (clouds.PySpy(os.path.join(args.workdir, 'profiles'),
                             rate=args.profile_rate, gil=args.profile_gil)
                if args.profile else None)
    try:
        flavor_id, image_id = load.seed(admin, args.quota)
        batches = _batches(args.batch)
        for index, batch in enumerate(batches):
            phase, servers = run_phase(cloud, args, admin, user, flavor_id,
                                       image_id, batch, profiler)
            results['phases'].append(phase)
            print_phase(phase, sys.stderr)
            if phase['failures'] and index < len(batches) - 1:
                _log('skipping the other phases: this one failed')
                break
            if index < len(batches) - 1:
                results['deletions'].append(
                    _delete(user, servers, args, cloud))
        if args.actions and not phase['failures']:
            results['actions'] = actions.run_phase(cloud, args, admin, user,
                                                   servers)
            actions.print_phase(results['actions'], sys.stderr)
        if (args.cold or args.live or args.drain) and \
                not phase['failures']:
            results['moves'] = moves.run_phase(cloud, args, admin, servers,
                                               image_id, profiler)
            moves.print_phase(results['moves'], sys.stderr)
    finally:
        if profiler is not None:
            profiler.stop()
        admin.close()
        user.close()


def run(args):
    """Run the benchmark; 0 when every phase succeeded and met the target.
    """
    keep = bool(args.workdir)
    args.workdir = os.path.abspath(
        args.workdir or tempfile.mkdtemp(prefix='berth-bench-e2e-'))
    os.makedirs(args.workdir, exist_ok=True)
    db = args.db or ('mysql' if args.mode == 'processes' else 'sqlite')
    cloud = clouds.make_cloud(args.mode, args.hosts, args.workdir, db,
                              clouds.parse_settings(args.set))
    results = {'servers': args.servers, 'concurrency': args.concurrency,
               'rate': args.rate, 'quota': args.quota, 'phases': [],
               'deletions': [],
               'cloud': cloud.describe(), 'workdir': args.workdir}
    _log('starting the %s cloud with %d hosts (%s) in %s' % (
        args.mode, args.hosts, db, args.workdir))
    started = time.monotonic()
    error = None
    signal.signal(signal.SIGTERM, _terminate)
    try:
        cloud.start()
        signal.signal(signal.SIGTERM, _terminate)
        results['startup_seconds'] = round(time.monotonic() - started, 1)
        _log('ready in %.0fs; measuring idle CPU for %ss' % (
            results['startup_seconds'], args.settle))
        results['idle_cpu_percent'] = idle_cpu(cloud, args.settle)
        _phases(cloud, args, results)
    except BaseException as exc:
        error = exc
    cloud.stop()
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(results, f, indent=2, sort_keys=True)
    if error is not None:
        if cloud.abandoned:
            traceback.print_exception(error)
            _log('kept %s' % args.workdir)
            sys.stderr.flush()
            os._exit(1)
        raise error
    print_report(results)
    failures = [f for p in results['phases'] for f in p['failures']] + [
        d['failure'] for d in results['deletions'] if d['failure']] + (
        results.get('actions') or {}).get('failures', []) + moves.failures(
        results.get('moves') or {})
    missed = not all(met for _line, met in verdicts(results))
    if not keep and not (failures or missed):
        shutil.rmtree(args.workdir, ignore_errors=True)
    elif not keep:
        _log('kept %s' % args.workdir)
    status = 1 if failures or missed else 0
    if cloud.abandoned:
        # NOTE: in-process service threads that would not stop keep the
        # interpreter from exiting; the results are written.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status
