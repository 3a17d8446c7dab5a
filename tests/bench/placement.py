# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""Placement benchmark: Berth against upstream openstack-placement.

For each size N, each server gets a fresh database and the same seeded data
(same uuids, from a fixed random seed): N compute-node providers with VCPU,
MEMORY_MB and DISK_GB inventory, 20% with HW_CPU_X86_AVX2, 10% with
CUSTOM_MAINTENANCE, one of 10 aggregates each, and allocations filling about
half of the capacity (5% of the nodes are filled until they cannot take the
benchmark's request). Then it measures both servers side by side, their
samples alternating, over HTTP on 127.0.0.1:

- ``GET /allocation_candidates`` latency (median, p95) for a few queries,
  with ``limit=1000``;
- claims per second (``PUT /allocations/{consumer}``) with 1 and 8 clients;
- for both, the server process's CPU time per request, which depends far
  less than latency on whatever else the machine is running.

Correctness is checked, not assumed: every query is also run without
``limit`` and the set of provider uuids in ``allocation_requests`` is
compared with the set computed from the seeded data and with the other
server's. A mismatch or any 5xx from Berth makes the run exit non-zero;
upstream's 5xx (SQLite "database is locked" under concurrency) are reported.
"""

import collections
import concurrent.futures
import json
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid

import httpx

from tests.bench import servers
from tests.bench import upstream

MICROVERSION = 'placement 1.39'
HEADERS = {
    'X-Auth-Token': 'admin',
    'OpenStack-API-Version': MICROVERSION,
    'Accept': 'application/json',
}
SEED = 20240601
DEFAULT_SIZES = (1000, 5000)
QUICK_SIZES = (1000,)
# Seeding threads (providers, allocations) per database kind.
# NOTE: SQLite takes one writer at a time and upstream answers contention
# with 500 "database is locked". Retried small provider writes still gain
# from two threads; retried 30-consumer POST /allocations made concurrent
# seeding 3x slower than one thread.
SEED_THREADS = {'sqlite': (2, 1), 'mysql': (8, 8), 'postgresql': (8, 8)}
PROVIDERS_PER_ALLOCATION_BATCH = 10
CONSUMER_TYPE = 'INSTANCE'
SEED_PROJECT = 'bench-seed-project'
CLAIM_PROJECT = 'bench-claim-project'
USER = 'bench-user'

# The request every benchmarked query makes, and the limit it uses.
REQUEST = {'VCPU': 2, 'MEMORY_MB': 4096, 'DISK_GB': 20}
LIMIT = 1000
AVX2 = 'HW_CPU_X86_AVX2'
MAINTENANCE = 'CUSTOM_MAINTENANCE'
AGGREGATE_COUNT = 10

# What one claim takes.
CLAIM = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}
CLAIM_CLIENTS = (1, 8)

ALLOCATION_RATIO = {'VCPU': 16.0, 'MEMORY_MB': 1.0, 'DISK_GB': 1.0}
# NOTE: "large" consumers keep seeding within the time budget: upstream
# takes about 8 ms per consumer on this machine.
CONSUMERS_PER_PROVIDER = (2, 4)


# ---------------------------------------------------------------- data set

Provider = collections.namedtuple(
    'Provider', 'uuid name inventory traits aggregates used')
Dataset = collections.namedtuple('Dataset', 'providers aggregates consumers')
Query = collections.namedtuple('Query', 'name params')


def _uuid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def capacity(provider, rc):
    """Return what ``provider`` can hold of ``rc`` (placement's formula)."""
    return int(provider.inventory[rc] * ALLOCATION_RATIO[rc])


def fits(provider, request, used=None):
    """Return True if ``request`` fits in ``provider`` given ``used``."""
    used = provider.used if used is None else used
    return all(amount <= provider.inventory[rc] and
               used[rc] + amount <= capacity(provider, rc)
               for rc, amount in request.items())


def _usage_split(provider, fill, consumers):
    """Split ``fill`` of each capacity over ``consumers`` allocations.

    NOTE: an allocation may not exceed max_unit (= total), so with few
    consumers per provider VCPU ends up at consumers/16 of its 16x
    overcommitted capacity while memory and disk reach ``fill``.
    """
    shares = []
    for _ in range(consumers):
        share = {}
        for rc, total in provider.inventory.items():
            amount = int(capacity(provider, rc) * fill / consumers)
            share[rc] = max(1, min(total, amount))
        shares.append(share)
    return shares


def _fill_full(provider, rng):
    """Allocations that leave less room than REQUEST needs on one class."""
    rc = rng.choice(sorted(REQUEST))
    room = rng.randrange(0, REQUEST[rc])
    share = {other: 1 for other in provider.inventory}
    share[rc] = capacity(provider, rc) - room
    shares = []
    while share[rc] > 0:
        piece = dict(share, **{rc: min(share[rc], provider.inventory[rc])})
        share[rc] -= piece[rc]
        shares.append(piece)
    return shares


def build_dataset(size, seed=SEED):
    """Return the deterministic data set of ``size`` providers.

    The same ``(size, seed)`` always gives the same uuids, inventories,
    traits, aggregates and allocations, so both servers hold the same data.
    """
    rng = random.Random('%s-%s' % (seed, size))
    aggregates = [_uuid(rng) for _ in range(AGGREGATE_COUNT)]
    providers, consumers = [], []
    for index in range(size):
        inventory = {
            'VCPU': rng.choice((32, 40, 48, 56, 64)),
            'MEMORY_MB': rng.choice((128, 192, 256, 384, 512)) * 1024,
            'DISK_GB': rng.randrange(1000, 4001, 250),
        }
        traits = [name for name, share in ((AVX2, 0.2), (MAINTENANCE, 0.1))
                  if rng.random() < share]
        provider = Provider(_uuid(rng), 'bench-cn-%05d' % index, inventory,
                            traits, [rng.choice(aggregates)],
                            dict.fromkeys(inventory, 0))
        if rng.random() < 0.05:
            shares = _fill_full(provider, rng)
        else:
            shares = _usage_split(provider, rng.uniform(0.3, 0.7),
                                  rng.randint(*CONSUMERS_PER_PROVIDER))
        for share in shares:
            consumers.append((_uuid(rng), provider.uuid, share))
            for rc, amount in share.items():
                provider.used[rc] += amount
        providers.append(provider)
    return Dataset(providers, aggregates, consumers)


def queries(dataset):
    """Return the benchmarked allocation-candidates queries."""
    resources = ','.join('%s:%d' % item for item in sorted(REQUEST.items()))
    base = {'resources': resources}
    return [
        Query('plain', base),
        Query('required', dict(base, required=AVX2)),
        Query('member_of', dict(base, member_of=dataset.aggregates[0])),
        Query('forbidden', dict(base, required='!' + MAINTENANCE)),
    ]


def expected_candidates(dataset, query):
    """Return the provider uuids a correct placement must return."""
    params = query.params
    required = params.get('required', '')
    result = set()
    for provider in dataset.providers:
        if not fits(provider, REQUEST):
            continue
        if required.startswith('!') and required[1:] in provider.traits:
            continue
        if required and not required.startswith('!') and \
                required not in provider.traits:
            continue
        if 'member_of' in params and \
                params['member_of'] not in provider.aggregates:
            continue
        result.add(provider.uuid)
    return result


# ------------------------------------------------------------ HTTP helpers

class BenchError(RuntimeError):
    """The server answered something the benchmark cannot go on with."""


class Clients(object):
    """One pooled httpx.Client per thread, all closed together."""

    def __init__(self, base_url):
        self.base_url = base_url
        self._local = threading.local()
        self._all = []
        self._lock = threading.Lock()

    def get(self):
        """Return this thread's client."""
        client = getattr(self._local, 'client', None)
        if client is None:
            client = httpx.Client(base_url=self.base_url, headers=HEADERS,
                                  timeout=300)
            self._local.client = client
            with self._lock:
                self._all.append(client)
        return client

    def close(self):
        """Close every thread's client."""
        for client in self._all:
            client.close()


def _expect(resp, *codes):
    if resp.status_code not in codes:
        raise BenchError('%s %s -> %s: %s' % (
            resp.request.method, resp.request.url, resp.status_code,
            resp.text[:500]))
    return resp


# ----------------------------------------------------------------- seeding

SEED_RETRIES = 20


class SeedRetries(object):
    """Counts server errors that seeding retried, keeping one example."""

    def __init__(self):
        self.count = 0
        self.example = None
        self._lock = threading.Lock()

    def record(self, resp):
        with self._lock:
            self.count += 1
            self.example = self.example or resp.text[:300]


def _send(http, retries, method, url, expected, **kwargs):
    """Send a seeding request, retrying a 5xx a few times.

    NOTE: upstream on SQLite answers concurrent writers with 500 "database
    is locked" (SQLite refuses the read-to-write lock upgrade). Every
    seeding write is one transaction that was rolled back, so resending it
    is safe; the retries are counted and reported.
    """
    for attempt in range(SEED_RETRIES):
        resp = http.request(method, url, **kwargs)
        if resp.status_code < 500:
            break
        retries.record(resp)
        time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
    return _expect(resp, *expected)


def _seed_provider(http, retries, provider):
    """Create one provider with its inventory, traits and aggregates."""
    base = '/resource_providers/%s' % provider.uuid
    resp = _send(http, retries, 'POST', '/resource_providers', [200],
                 json={'uuid': provider.uuid, 'name': provider.name})
    generation = resp.json()['generation']
    inventories = {
        rc: {'total': total, 'max_unit': total,
             'allocation_ratio': ALLOCATION_RATIO[rc]}
        for rc, total in provider.inventory.items()}
    resp = _send(http, retries, 'PUT', base + '/inventories', [200],
                 json={'resource_provider_generation': generation,
                       'inventories': inventories})
    generation = resp.json()['resource_provider_generation']
    if provider.traits:
        resp = _send(http, retries, 'PUT', base + '/traits', [200],
                     json={'resource_provider_generation': generation,
                           'traits': provider.traits})
        generation = resp.json()['resource_provider_generation']
    _send(http, retries, 'PUT', base + '/aggregates', [200],
          json={'resource_provider_generation': generation,
                'aggregates': provider.aggregates})


def _allocation_batches(dataset):
    """Group consumers so that no provider appears in two batches.

    Concurrent POST /allocations calls then never race on a provider's
    generation.
    """
    by_provider = collections.defaultdict(list)
    for consumer in dataset.consumers:
        by_provider[consumer[1]].append(consumer)
    batch, count = [], 0
    for provider in dataset.providers:
        batch.extend(by_provider[provider.uuid])
        count += 1
        if count == PROVIDERS_PER_ALLOCATION_BATCH:
            yield batch
            batch, count = [], 0
    if batch:
        yield batch


def _seed_allocations(http, retries, batch):
    body = {
        consumer: {'allocations': {rp: {'resources': share}},
                   'project_id': SEED_PROJECT, 'user_id': USER,
                   'consumer_generation': None,
                   'consumer_type': CONSUMER_TYPE}
        for consumer, rp, share in batch}
    _send(http, retries, 'POST', '/allocations', [204], json=body)


def _run_parallel(clients, threads, retries, func, items):
    """Call ``func(http, retries, item)`` for each item on ``threads``."""
    def call(item):
        return func(clients.get(), retries, item)
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(call, items):
            pass


def seed(clients, dataset, threads, log):
    """Load ``dataset`` into the server behind ``clients``.

    :param threads: (threads for providers, threads for allocations).
    :returns: (seconds taken, SeedRetries).
    """
    start = time.perf_counter()
    retries = SeedRetries()
    http = clients.get()
    _send(http, retries, 'PUT', '/traits/%s' % MAINTENANCE, [201, 204])
    provider_threads, allocation_threads = threads
    _run_parallel(clients, provider_threads, retries, _seed_provider,
                  dataset.providers)
    log('    providers in %.1fs' % (time.perf_counter() - start))
    _run_parallel(clients, allocation_threads, retries, _seed_allocations,
                  _allocation_batches(dataset))
    elapsed = time.perf_counter() - start
    verify_seed(http, dataset)
    return elapsed, retries


def verify_seed(http, dataset):
    """Check the provider count and the total usage the server reports."""
    resp = _expect(http.get('/resource_providers'), 200)
    count = len(resp.json()['resource_providers'])
    if count != len(dataset.providers):
        raise BenchError('server has %d providers, seeded %d' % (
            count, len(dataset.providers)))
    # NOTE: asked at 1.9, before 1.38 grouped usages by consumer type:
    # upstream 16.0.0's 1.38 usages query fails on PostgreSQL (GROUP BY).
    resp = _expect(http.get(
        '/usages', params={'project_id': SEED_PROJECT},
        headers={'OpenStack-API-Version': 'placement 1.9'}), 200)
    usages = resp.json()['usages']
    expected = collections.Counter()
    for provider in dataset.providers:
        expected.update(provider.used)
    if dict(expected) != usages:
        raise BenchError('usages %s, seeded %s' % (usages, dict(expected)))


# -------------------------------------------------------------- measuring

def percentile(values, fraction):
    """Return the nearest-rank percentile of ``values``."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def candidate_uuids(body):
    """Return the provider uuids named in ``allocation_requests``."""
    return {rp for request in body['allocation_requests']
            for rp in request['allocations']}


def alternating(sides, rounds):
    """Yield (round, side), reversing the order of the sides each round.

    NOTE: the sides' samples interleave so that a change in what else the
    machine runs weighs on both alike, not on whichever side ran later.
    """
    for index in range(rounds):
        for side in (sides if index % 2 == 0 else sides[::-1]):
            yield index, side


def measure_queries(sides, dataset, plan, log):
    """Time every query on every side; keep stats and candidate sets."""
    for query in queries(dataset):
        params = dict(query.params, limit=LIMIT)
        timings = {side.name: [] for side in sides}
        last, cpu_start = {}, {}
        for index, side in alternating(sides,
                                       plan['warmup'] + plan['samples']):
            if index == plan['warmup']:
                cpu_start.setdefault(side.name, side.cpu_seconds())
            start = time.perf_counter()
            resp = side.http().get('/allocation_candidates', params=params)
            elapsed_ms = (time.perf_counter() - start) * 1000
            last[side.name] = _expect(resp, 200)
            if index >= plan['warmup']:
                timings[side.name].append(elapsed_ms)
        for side in sides:
            cpu_ms = (side.cpu_seconds() - cpu_start[side.name]) * 1000
            _record_query(side, query, timings[side.name], cpu_ms,
                          candidate_uuids(last[side.name].json()))
            log('  %s: %-9s median %8.1f ms  p95 %8.1f ms  (%d cand.)' % (
                side.name, query.name,
                side.metrics['queries'][query.name]['median_ms'],
                side.metrics['queries'][query.name]['p95_ms'],
                len(side.sets[query.name][0])))


def _record_query(side, query, timings, cpu_ms, limited):
    """Store one query's stats, running it once more without limit."""
    start = time.perf_counter()
    resp = _expect(side.http().get('/allocation_candidates',
                                   params=query.params), 200)
    unlimited_ms = (time.perf_counter() - start) * 1000
    unlimited = candidate_uuids(resp.json())
    side.sets[query.name] = (limited, unlimited)
    side.metrics['queries'][query.name] = {
        'samples': len(timings),
        'median_ms': round(statistics.median(timings), 2),
        'p95_ms': round(percentile(timings, 0.95), 2),
        'server_cpu_ms': round(cpu_ms / len(timings), 2),
        'candidates': len(limited),
        'unlimited_ms': round(unlimited_ms, 2),
        'unlimited_candidates': len(unlimited),
    }


class ClaimTargets(object):
    """Providers with room for one more claim, tracked on the client side.

    Each claim is debited before it is sent, so concurrent clients never aim
    two claims at the last slot of a provider.
    """

    def __init__(self, dataset, seed=SEED):
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._providers = list(dataset.providers)
        self._used = {p.uuid: dict(p.used) for p in self._providers}

    def take(self):
        """Return a provider uuid with room for CLAIM, or None."""
        with self._lock:
            while self._providers:
                index = self._rng.randrange(len(self._providers))
                provider = self._providers[index]
                used = self._used[provider.uuid]
                if fits(provider, CLAIM, used):
                    for rc, amount in CLAIM.items():
                        used[rc] += amount
                    return provider.uuid
                self._providers[index] = self._providers[-1]
                self._providers.pop()
        return None


class ClaimTally(object):
    """Claim answers of one side at one concurrency, over several rounds."""

    def __init__(self):
        self.statuses = collections.Counter()
        self.examples = {}
        self.latencies = []
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self._lock = threading.Lock()

    def add(self, resp, elapsed_ms):
        """Count one answer."""
        with self._lock:
            self.statuses[resp.status_code] += 1
            if resp.status_code == 204:
                self.latencies.append(elapsed_ms)
            else:
                self.examples.setdefault(str(resp.status_code),
                                         resp.text[:300])

    def summary(self, concurrency):
        """Return the JSON-ready results."""
        claims = self.statuses[204]
        return {
            'clients': concurrency,
            'seconds': round(self.seconds, 2),
            'claims': claims,
            'claims_per_s': round(claims / self.seconds, 1),
            'median_ms': round(statistics.median(self.latencies), 2)
            if self.latencies else None,
            'server_cpu_ms': round(self.cpu_seconds * 1000 / claims, 2)
            if claims else None,
            'failures': {str(code): n for code, n
                         in sorted(self.statuses.items()) if code != 204},
            'failure_examples': self.examples,
        }


def _claim_worker(side, deadline, tally):
    """PUT new consumers' allocations until ``deadline``."""
    http = side.http()
    while time.monotonic() < deadline:
        rp = side.targets.take()
        if rp is None:
            return
        body = {'allocations': {rp: {'resources': CLAIM}},
                'project_id': CLAIM_PROJECT, 'user_id': USER,
                'consumer_generation': None, 'consumer_type': CONSUMER_TYPE}
        start = time.perf_counter()
        resp = http.put('/allocations/%s' % uuid.uuid4(), json=body)
        tally.add(resp, (time.perf_counter() - start) * 1000)


def run_claims(side, concurrency, duration, tally):
    """Run ``concurrency`` claiming clients on ``side`` for ``duration``."""
    cpu_start = side.cpu_seconds()
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        futures = [pool.submit(_claim_worker, side, start + duration, tally)
                   for _ in range(concurrency)]
        for future in futures:
            future.result()
    tally.seconds += time.monotonic() - start
    tally.cpu_seconds += side.cpu_seconds() - cpu_start


def measure_claims(sides, dataset, plan, log):
    """Measure the claim rate of every side at each of CLAIM_CLIENTS."""
    for side in sides:
        side.targets = ClaimTargets(dataset)
    rounds = plan['claim_rounds']
    for concurrency in CLAIM_CLIENTS:
        tallies = {side.name: ClaimTally() for side in sides}
        for _, side in alternating(sides, rounds):
            run_claims(side, concurrency, plan['claim_seconds'] / rounds,
                       tallies[side.name])
        for side in sides:
            stats = tallies[side.name].summary(concurrency)
            side.metrics['claims'][str(concurrency)] = stats
            log('  %s: claims x%d  %7.1f/s  failures %s' % (
                side.name, concurrency, stats['claims_per_s'],
                stats['failures'] or 'none'))


# ---------------------------------------------------------------- servers

CLOCK_TICKS = os.sysconf('SC_CLK_TCK')


def berth_server(workdir, db_url, port):
    """Return a ServerProcess for Berth's placement API (not started)."""
    config = servers.write_config(
        os.path.join(workdir, 'berth-placement.conf'), {
            'DEFAULT': {'debug': False},
            'api': {'auth_strategy': 'noauth2'},
            'placement_database': {'connection': db_url,
                                   'sync_on_startup': True},
        })
    script = servers.console_script('berth-placement-api')
    argv = [script] if script else [
        sys.executable, '-m', 'services.placement.server']
    argv += ['--config-file', config, '--host', '127.0.0.1',
             '--port', str(port)]
    return servers.ServerProcess(
        'berth placement', argv, 'http://127.0.0.1:%d' % port,
        os.path.join(workdir, 'berth-placement.log'), cwd=upstream.REPO_ROOT)


def make_server(name, args, size):
    """Create the side's database and return its ServerProcess."""
    port = servers.free_port()
    db_url = servers.recreate_database(
        args.db, 'berth_bench_%s_%d' % (name, size) if args.db == 'sqlite'
        else 'berth_bench_%s' % name, args.workdir)
    if name == 'berth':
        return berth_server(args.workdir, db_url, port)
    return upstream.server(args.upstream_venv, args.workdir, db_url, port)


class Side(object):
    """One server under test: its process, HTTP clients and results."""

    def __init__(self, name, server):
        self.name = name
        self.server = server
        self.clients = Clients(server.url)
        self.metrics = {'queries': {}, 'claims': {}}
        self.sets = {}
        self.targets = None

    def http(self):
        """Return this thread's client for the server."""
        return self.clients.get()

    def cpu_seconds(self):
        """Return the CPU time (user + system) the server has used."""
        with open('/proc/%d/stat' % self.server.proc.pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def seed(self, dataset, threads, log):
        """Seed the server with ``dataset``, recording the time taken."""
        log('  %s: seeding %d providers, %d consumers ...' % (
            self.name, len(dataset.providers), len(dataset.consumers)))
        seconds, retries = seed(self.clients, dataset, threads, log)
        log('  %s: seeded in %.1fs (%d retried 5xx)' % (
            self.name, seconds, retries.count))
        self.metrics.update(seed_s=round(seconds, 1),
                            seed_retries=retries.count,
                            seed_retry_example=retries.example)

    def stop(self):
        """Close the clients and stop the server."""
        self.clients.close()
        self.server.stop()


def measure(names, args, dataset, plan, log):
    """Start and seed every side, then measure them side by side.

    :returns: the Side objects, stopped, with their metrics and sets.
    """
    sides = []
    try:
        for name in names:
            side = Side(name, make_server(name, args,
                                          len(dataset.providers)))
            sides.append(side)
            side.server.start()
            side.seed(dataset, SEED_THREADS[args.db], log)
        measure_queries(sides, dataset, plan, log)
        measure_claims(sides, dataset, plan, log)
        for side in sides:
            side.server.check_alive()
    except Exception:
        for side in sides:
            log('  %s server log tail:\n%s' % (side.name,
                                               side.server.log_tail()))
        raise
    finally:
        for side in sides:
            side.stop()
    return sides


# ------------------------------------------------------------ comparing

def _compare_sides(name, sides_sets):
    """Compare the two sides' sets for query ``name``."""
    problems, notes = [], []
    (side_a, sets_a), (side_b, sets_b) = sorted(sides_sets.items())
    (limited_a, full_a), (limited_b, full_b) = sets_a[name], sets_b[name]
    if full_a != full_b:
        problems.append(
            '%s: without limit the servers disagree: %d only in %s, '
            '%d only in %s' % (name, len(full_a - full_b), side_a,
                               len(full_b - full_a), side_b))
    if limited_a != limited_b:
        notes.append(
            '%s: with limit=%d the servers pick different subsets (%d in '
            'common): truncation order differs, not an error' % (
                name, LIMIT, len(limited_a & limited_b)))
    return problems, notes


def compare(dataset, sides_sets):
    """Check candidate sets against the seeded data and between sides.

    :returns: (problems, notes): problems are failures, notes are not.
    """
    problems, notes = [], []
    for query in queries(dataset):
        expected = expected_candidates(dataset, query)
        for side, sets in sorted(sides_sets.items()):
            limited, unlimited = sets[query.name]
            if unlimited != expected:
                problems.append(
                    '%s %s: %d candidates without limit, the seeded data '
                    'gives %d (%d missing, %d unexpected)' % (
                        side, query.name, len(unlimited), len(expected),
                        len(expected - unlimited), len(unlimited - expected)))
            if not limited <= expected or \
                    len(limited) != min(LIMIT, len(expected)):
                problems.append(
                    '%s %s: limit=%d gave %d candidates, not a subset of '
                    'size min(limit, %d) of the expected set' % (
                        side, query.name, LIMIT, len(limited),
                        len(expected)))
        if len(sides_sets) == 2:
            more_problems, more_notes = _compare_sides(query.name, sides_sets)
            problems += more_problems
            notes += more_notes
    return problems, notes


def server_errors(metrics):
    """Return the 5xx answers to claims, one string per status."""
    return ['claims x%s: HTTP %s x%d, e.g. %s' % (
        clients, code, count, stats['failure_examples'][code][:200])
        for clients, stats in metrics['claims'].items()
        for code, count in stats['failures'].items()
        if code.startswith('5')]


# --------------------------------------------------------------- report

def _ratio(berth, upstream_value, higher_is_better):
    if not berth or not upstream_value:
        return None
    if higher_is_better:
        return berth / upstream_value
    return upstream_value / berth


def report_rows(size_result):
    """Yield (metric, berth, upstream, ratio) rows for one size."""
    sides = size_result['sides']
    berth, up = sides.get('berth'), sides.get('upstream')
    any_side = berth or up
    for name in any_side['queries']:
        for key, label in (('median_ms', 'median ms'), ('p95_ms', 'p95 ms'),
                           ('server_cpu_ms', 'server CPU ms'),
                           ('candidates', 'candidates')):
            b = berth['queries'][name][key] if berth else None
            u = up['queries'][name][key] if up else None
            ratio = None if key == 'candidates' else _ratio(b, u, False)
            yield ('a_c %s %s' % (name, label), b, u, ratio)
    for clients in any_side['claims']:
        b = berth['claims'][clients]['claims_per_s'] if berth else None
        u = up['claims'][clients]['claims_per_s'] if up else None
        yield ('claims/s x%s' % clients, b, u, _ratio(b, u, True))
        b = berth['claims'][clients]['server_cpu_ms'] if berth else None
        u = up['claims'][clients]['server_cpu_ms'] if up else None
        yield ('claim server CPU ms x%s' % clients, b, u, _ratio(b, u, False))
    b = berth['seed_s'] if berth else None
    u = up['seed_s'] if up else None
    yield ('seed s', b, u, _ratio(b, u, False))


def _cell(value, fmt='%.1f'):
    if value is None:
        return '-'
    return fmt % value if isinstance(value, float) else str(value)


def print_report(results, out=sys.stdout):
    """Print the per-size table and the target verdict."""
    out.write('\nPlacement benchmark, database: %s; upstream: %s\n' % (
        results['db'], results['upstream_server']))
    out.write('ratio = upstream/berth for latency, berth/upstream for '
              'rates (higher is better for Berth)\n')
    out.write('%d CPUs; load average %.1f at the start, %.1f at the end '
              '(other processes skew the numbers)\n' % (
                  results['cpus'], results['loadavg_start'][0],
                  results['loadavg_end'][0]))
    for size, size_result in results['sizes'].items():
        out.write('\nN = %s\n' % size)
        out.write('%-28s %12s %12s %8s\n' % ('metric', 'berth', 'upstream',
                                             'ratio'))
        for metric, b, u, ratio in report_rows(size_result):
            out.write('%-28s %12s %12s %8s\n' % (
                metric, _cell(b), _cell(u), _cell(ratio, '%.2fx')))
        for line in size_result['problems']:
            out.write('FAILURE: %s\n' % line)
        for line in size_result['warnings']:
            out.write('UPSTREAM ERRORS: %s\n' % line)
        for line in size_result['notes']:
            out.write('note: %s\n' % line)
    for line in target_verdict(results):
        out.write(line + '\n')


def target_verdict(results):
    """Return lines judging the 10x targets at the largest size."""
    size, size_result = list(results['sizes'].items())[-1]
    rows = {metric: ratio for metric, _, _, ratio in report_rows(size_result)}
    lines = ['\nTargets at N=%s (>= 10x):' % size]
    for metric in ('a_c plain median ms', 'claims/s x1', 'claims/s x8'):
        ratio = rows.get(metric)
        verdict = '-' if ratio is None else (
            'MET' if ratio >= 10 else 'NOT MET')
        lines.append('  %-22s %8s  %s' % (metric, _cell(ratio, '%.2fx'),
                                          verdict))
    for side, metrics in sorted(size_result['sides'].items()):
        for clients, stats in sorted(metrics['claims'].items()):
            errors = sum(count for code, count in stats['failures'].items()
                         if code.startswith('5'))
            if errors:
                lines.append('  NOTE: %s answered %d claims x%s with 5xx; '
                             'its rate counts successes only' % (
                                 side, errors, clients))
    return lines


# ------------------------------------------------------------------ main

def plan_for(size, quick):
    """Return sample counts and claim duration (in rounds) for ``size``."""
    if quick:
        return {'samples': 5, 'warmup': 1, 'claim_seconds': 3,
                'claim_rounds': 3}
    return {'samples': 30 if size <= 1000 else 20, 'warmup': 3,
            'claim_seconds': 10, 'claim_rounds': 5}


def add_arguments(parser):
    """Add this benchmark's options to ``parser``."""
    parser.add_argument('--sizes', default=None,
                        help='comma-separated provider counts (default '
                        '1000,5000; 1000 with --quick)')
    parser.add_argument('--db', choices=servers.DB_KINDS, default='sqlite')
    parser.add_argument('--only', choices=('berth', 'upstream'),
                        help='measure one side only')
    parser.add_argument('--quick', action='store_true',
                        help='fewer samples and shorter claim runs')
    parser.add_argument('--json', help='write the results to this file')
    parser.add_argument('--workdir',
                        help='keep configs, logs and SQLite files here '
                        '(default: a temporary directory, removed after '
                        'a successful run)')
    parser.add_argument('--upstream-venv', default=upstream.venv_path(),
                        help='venv for openstack-placement (default '
                        '$BERTH_BENCH_UPSTREAM_VENV or .tox/bench-upstream)')


def _sizes(args):
    if args.sizes:
        return [int(size) for size in args.sizes.split(',')]
    return list(QUICK_SIZES if args.quick else DEFAULT_SIZES)


def _log(message):
    sys.stderr.write(message + '\n')
    sys.stderr.flush()


def _server_trouble(side, metrics, size_result):
    """File the side's 5xx answers and seeding retries in ``size_result``.

    NOTE: a 5xx from Berth is a failure; one from upstream is upstream's
    behaviour (SQLite "database is locked"), reported as loudly but not
    failing the run.
    """
    lines = ['%s %s' % (side, line) for line in server_errors(metrics)]
    if metrics['seed_retries']:
        lines.append('%s: %d 5xx retried while seeding, e.g. %s' % (
            side, metrics['seed_retries'],
            metrics['seed_retry_example'][:200]))
    size_result['problems' if side == 'berth' else 'warnings'] += lines


def run_size(args, names, size):
    """Measure every side at ``size``; return the size's results."""
    _log('N = %d (logs in %s)' % (size, args.workdir))
    dataset = build_dataset(size)
    sides = measure(names, args, dataset, plan_for(size, args.quick), _log)
    size_result = {'sides': {}, 'problems': [], 'warnings': [], 'notes': []}
    for side in sides:
        size_result['sides'][side.name] = side.metrics
        _server_trouble(side.name, side.metrics, size_result)
    problems, notes = compare(
        dataset, {side.name: side.sets for side in sides})
    size_result['problems'] += problems
    size_result['notes'] += notes
    return size_result


def run(args):
    """Run the benchmark; return 0, or 1 on mismatches or Berth errors."""
    sides = [args.only] if args.only else ['berth', 'upstream']
    keep = bool(args.workdir)
    args.workdir = os.path.abspath(
        args.workdir or tempfile.mkdtemp(prefix='berth-bench-'))
    os.makedirs(args.workdir, exist_ok=True)
    results = {'db': args.db, 'quick': args.quick, 'seed': SEED,
               'microversion': MICROVERSION, 'limit': LIMIT,
               'request': REQUEST, 'claim': CLAIM, 'sizes': {},
               'upstream_server': '-', 'cpus': os.cpu_count(),
               'loadavg_start': os.getloadavg()}
    if 'upstream' in sides:
        upstream.ensure_venv(args.upstream_venv, log=_log)
        results['upstream_server'] = (
            'openstack-placement %s on cheroot, %d threads' % (
                upstream.installed_version(args.upstream_venv),
                upstream.SERVER_THREADS))
    for size in _sizes(args):
        size_result = run_size(args, sides, size)
        size_result['ratios'] = {metric: ratio for metric, _, _, ratio
                                 in report_rows(size_result) if ratio}
        results['sizes'][str(size)] = size_result
    results['loadavg_end'] = os.getloadavg()
    print_report(results)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(results, f, indent=2, sort_keys=True)
    failed = any(r['problems'] for r in results['sizes'].values())
    if not keep and not failed:
        shutil.rmtree(args.workdir, ignore_errors=True)
    return 1 if failed else 0
