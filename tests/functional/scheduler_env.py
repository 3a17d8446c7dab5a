# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A live scheduler deployment on real servers, for tests and benchmarks.

One :class:`SchedulerEnv` is a small Berth deployment: an api database, a
cell0 and a cell1 database (synced with ``berth-manage``), a
``berth-placement-api`` process, a RabbitMQ virtual host of its own and a
``berth-scheduler`` process with N workers, plus an RPC client in this
process::

    env = SchedulerEnv(make_database)       # () -> URL of an empty db
    env.setup()                             # databases, placement, vhost
    hosts = env.add_hosts('node', 50, vcpus=64)
    env.add_zone('az1', hosts)              # an aggregate with the zone
    env.start_scheduler(workers=3)
    env.api.select_destinations(ctxt, spec, [uuid])
    env.stop()                              # drops nothing: the caller's
                                            # make_database owns the dbs

Hosts are what a compute agent would have left behind: a resource provider
with inventories (and aggregates) in placement, a ``compute_nodes`` row of
the same uuid, a host mapping and a live ``berth-compute`` service record,
heartbeated from a thread of this process.

Nothing here imports pytest; a missing server raises
:class:`EnvironmentUnavailable`, which a test turns into skip-or-fail.
"""

import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import httpx
import kombu
from oslo_config import cfg
from oslo_utils import timeutils
import sqlalchemy as sa

from common import context
from common.db import api_tables
from common.db import cell_tables
from common.db import cells
from common import rpc
from common import servicegroup_db
from services.scheduler import rpcapi
from services.scheduler.sources import database as db_source
from tests.functional import placement_server

LOG = logging.getLogger(__name__)

RABBIT_URL = os.environ.get('BERTH_TEST_RABBIT_URL',
                            'rabbit://guest:guest@127.0.0.1:5672/')
# NOTE: which database server the environment runs on: "mysql" (MariaDB,
# the default) or "postgresql".
DB_KIND_ENV = 'BERTH_TEST_SCHEDULER_DB'
DB_KINDS = ('mysql', 'postgresql')

PLACEMENT_VERSION = 'placement 1.39'
START_TIMEOUT = 90
STOP_TIMEOUT = 30
# NOTE: compute services heartbeat this often, as a berth-compute's
# default report_interval; the scheduler's service_down_time is 60.
HEARTBEAT_INTERVAL = 10
CELL1_UUID = 'c0ffee00-0000-4000-8000-00000000ce11'
DEFAULT_FILTERS = ('AvailabilityZoneFilter', 'ComputeFilter',
                   'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
                   'AggregateInstanceExtraSpecsFilter',
                   'ServerGroupAntiAffinityFilter',
                   'ServerGroupAffinityFilter')


class EnvironmentUnavailable(Exception):
    """A server the environment needs is missing or unreachable."""


class EnvironmentFailure(Exception):
    """A process of the environment failed; the message has its log."""


def db_kind():
    """The database kind chosen by ``$BERTH_TEST_SCHEDULER_DB``."""
    kind = os.environ.get(DB_KIND_ENV, 'mysql').strip().lower() or 'mysql'
    if kind not in DB_KINDS:
        raise ValueError('%s=%s: expected one of %s'
                         % (DB_KIND_ENV, kind, ', '.join(DB_KINDS)))
    return kind


@dataclasses.dataclass
class Host(object):
    """One seeded compute host (one node, named like its host)."""

    name: str
    uuid: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    cpu_allocation_ratio: float = 1.0
    ram_allocation_ratio: float = 1.0
    disk_allocation_ratio: float = 1.0


def _with_vhost(url, vhost):
    """``url`` (a rabbit:// or amqp:// URL) pointing at ``vhost``."""
    scheme, rest = url.split('://', 1)
    return '%s://%s/%s' % (scheme, rest.split('/', 1)[0], vhost)


def _log_tail(path, lines=40):
    try:
        with open(path) as f:
            return ''.join(f.readlines()[-lines:])
    except OSError:
        return ''


class RabbitVhost(object):
    """A RabbitMQ virtual host of one environment, made with rabbitmqctl.

    rabbitmqctl manages the local node, so the broker of ``RABBIT_URL``
    must be the local one.

    NOTE: a virtual host, not a control_exchange, isolates runs: the
    scheduler's queues are named after its fixed topic ("scheduler",
    "scheduler.<host>"), whatever the exchange, so two runs sharing a
    virtual host would consume each other's requests.
    """

    def __init__(self, base_url=RABBIT_URL):
        self.name = 'berth-sched-%s' % uuid.uuid4().hex[:12]
        self.user = base_url.split('://', 1)[1].split(':', 1)[0] or 'guest'
        self.url = _with_vhost(base_url, self.name)
        self.kombu_url = 'amqp://' + self.url.split('://', 1)[1]
        self.created = False

    @staticmethod
    def ctl(*args, timeout=60):
        """Run ``rabbitmqctl``; returns stdout.

        :raises EnvironmentUnavailable: rabbitmqctl is missing or failed.
        """
        try:
            return subprocess.run(['rabbitmqctl'] + list(args), check=True,
                                  capture_output=True, text=True,
                                  timeout=timeout).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            raise EnvironmentUnavailable(
                'rabbitmqctl %s failed (a virtual host per run is needed): '
                '%s %s' % (' '.join(args), exc, getattr(exc, 'stderr', '')))

    def create(self):
        """Add the virtual host and let the URL's user use it."""
        self.ctl('add_vhost', self.name)
        self.created = True
        self.ctl('set_permissions', '-p', self.name, self.user,
                 '.*', '.*', '.*')

    def delete(self):
        """Delete the virtual host with every queue and exchange in it."""
        if self.created:
            self.ctl('delete_vhost', self.name)
            self.created = False

    def consumers(self, queue):
        """Consumers of ``queue`` now (0 when the queue does not exist)."""
        with kombu.Connection(self.kombu_url, connect_timeout=5) as conn:
            channel = conn.channel()
            try:
                return channel.queue_declare(queue=queue,
                                             passive=True).consumer_count
            except conn.channel_errors:
                return 0


class Placement(object):
    """Admin HTTP access to the environment's placement (noauth2)."""

    def __init__(self, url, token='admin'):
        self.url = url
        self.http = httpx.Client(
            base_url=url, timeout=30,
            headers={'x-auth-token': token,
                     'openstack-api-version': PLACEMENT_VERSION,
                     'accept': 'application/json'})

    def request(self, method, path, body=None, expect=(200, 201, 204)):
        """One call; the decoded body (None when empty).

        :raises EnvironmentFailure: for an unexpected status.
        """
        resp = self.http.request(method, path, json=body)
        if resp.status_code not in expect:
            raise EnvironmentFailure('%s %s answered %d: %s' % (
                method, path, resp.status_code, resp.text[:500]))
        return resp.json() if resp.content else None

    def create_provider(self, host):
        """A root provider with VCPU, MEMORY_MB and DISK_GB inventories."""
        self.request('POST', '/resource_providers',
                     {'name': host.name, 'uuid': host.uuid})
        inventories = {}
        for rc, total, ratio in (
                ('VCPU', host.vcpus, host.cpu_allocation_ratio),
                ('MEMORY_MB', host.memory_mb, host.ram_allocation_ratio),
                ('DISK_GB', host.disk_gb, host.disk_allocation_ratio)):
            inventories[rc] = {'total': total, 'allocation_ratio': ratio,
                               'max_unit': total}
        self.request('PUT', '/resource_providers/%s/inventories' % host.uuid,
                     {'resource_provider_generation': 0,
                      'inventories': inventories})

    def add_to_aggregate(self, provider_uuid, aggregate_uuid):
        """Add a provider to a placement aggregate (keeping its others)."""
        path = '/resource_providers/%s/aggregates' % provider_uuid
        current = self.request('GET', path)
        aggregates = sorted(set(current['aggregates']) | {aggregate_uuid})
        self.request('PUT', path, {
            'aggregates': aggregates,
            'resource_provider_generation':
                current['resource_provider_generation']})

    def usages(self, provider_uuid):
        """Resource class -> amount used on a provider."""
        return self.request('GET', '/resource_providers/%s/usages'
                            % provider_uuid)['usages']

    def capacities(self, provider_uuid):
        """Resource class -> (total - reserved) * allocation_ratio."""
        inventories = self.request(
            'GET', '/resource_providers/%s/inventories'
            % provider_uuid)['inventories']
        return {rc: int((inv['total'] - inv['reserved']) *
                        inv['allocation_ratio'])
                for rc, inv in inventories.items()}

    def allocations(self, consumer_uuid):
        """Provider uuid -> resources held by a consumer ({} when none)."""
        body = self.request('GET', '/allocations/%s' % consumer_uuid)
        return {rp: alloc['resources']
                for rp, alloc in body['allocations'].items()}

    def delete_allocations(self, consumer_uuid):
        """Remove a consumer's allocations (404 tolerated)."""
        self.request('DELETE', '/allocations/%s' % consumer_uuid,
                     expect=(204, 404))

    def close(self):
        """Close the HTTP connections."""
        self.http.close()


class SchedulerProcess(object):
    """``berth-scheduler --config-file F`` in its own process group."""

    def __init__(self, conf_file, log_file):
        self.conf_file = conf_file
        self.log_file = log_file
        self.proc = None

    def start(self):
        """Start the process (readiness is the caller's business)."""
        binary = placement_server.bin_path('berth-scheduler')
        if binary is None:
            raise EnvironmentFailure(
                'berth-scheduler is not installed (pip install -e .)')
        with open(self.log_file + '.out', 'w') as out:
            # NOTE: a session of its own, so that a hung shutdown can be
            # ended for the parent and every worker it forked at once.
            self.proc = subprocess.Popen(
                [binary, '--config-file', self.conf_file],
                stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)

    def alive(self):
        """True while the parent process runs."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM (workers drain), SIGKILL the group if it lingers.

        :returns: the exit code, or None when it had to be killed.
        """
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                LOG.warning('berth-scheduler ignored SIGTERM for %ds',
                            timeout)
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                return None
        return self.proc.returncode

    def log_tail(self, lines=40):
        """The end of the log (and of stdout/stderr), for messages."""
        return _log_tail(self.log_file, lines) + _log_tail(
            self.log_file + '.out', lines)

    def scheduled_by_pid(self):
        """Worker pid -> number of select_destinations it answered.

        NOTE: read from the INFO line the manager logs per request; the
        pid is the third field of oslo.log's default line format.
        """
        counts = {}
        with open(self.log_file) as f:
            for line in f:
                if ' Scheduled [' not in line:
                    continue
                pid = int(line.split()[2])
                counts[pid] = counts.get(pid, 0) + 1
        return counts


class SchedulerEnv(object):
    """A scheduler deployment; see the module docstring."""

    def __init__(self, make_database, kind=None, workdir=None,
                 rabbit_url=RABBIT_URL, rabbit_opts=None, extra_conf=None):
        """
        :param make_database: ``make_database()`` -> the URL of a new empty
            database on the chosen server; whoever provides it drops the
            databases (e.g. ``DatabaseServer(kind).create`` of
            tests/functional/placement/conftest.py).
        :param kind: "mysql" or "postgresql" (information only);
            :func:`db_kind` if None.
        :param workdir: config files and logs; a new temporary directory
            if None (kept after :meth:`stop`, for the logs).
        :param rabbit_opts: [oslo_messaging_rabbit] options for the
            scheduler and the client, e.g. ``{'amqp_durable_queues': True}``.
        :param extra_conf: {(group, option): value} added to the
            scheduler's config file.
        """
        self.make_database = make_database
        self.kind = kind or db_kind()
        self.workdir = workdir or tempfile.mkdtemp(prefix='berth-sched-')
        self.rabbit_url = rabbit_url
        self.rabbit_opts = dict(rabbit_opts or {})
        self.extra_conf = dict(extra_conf or {})
        self.urls = {}
        self.hosts = []
        self.zones = {}
        self.timings = {}
        self.vhost = None
        self.placement_server = None
        self.placement = None
        self.scheduler = None
        self.api = None
        self.host_name = 'sched-%s' % uuid.uuid4().hex[:8]
        self.conf_file = os.path.join(self.workdir, 'berth.conf')
        self._cell_db = None
        self._services = None
        self._cell1_id = None
        self._heartbeat_stop = threading.Event()
        self._heartbeat = None

    # --- set-up -----------------------------------------------------------

    def setup(self):
        """Databases, schemas, cells, placement and the virtual host.

        :raises EnvironmentUnavailable: rabbitmqctl or a server missing.
        :raises EnvironmentFailure: a sync or placement failed to start.
        """
        with self._phase('databases'):
            for name in ('api', 'cell0', 'cell1', 'placement'):
                self.urls[name] = self.make_database()
        with self._phase('vhost'):
            self.vhost = RabbitVhost(self.rabbit_url)
            self.vhost.create()
        self._write_conf(workers=None)
        with self._phase('api_db sync'):
            self._manage('api_db', 'sync')
        now = timeutils.utcnow()
        self._execute(self.urls['api'], api_tables.cell_mappings.insert(), [
            dict(uuid=cells.CELL0_UUID, name='cell0',
                 transport_url='none:///',
                 database_connection=self.urls['cell0'], disabled=False,
                 created_at=now),
            dict(uuid=CELL1_UUID, name='cell1', transport_url=self.vhost.url,
                 database_connection=self.urls['cell1'], disabled=False,
                 created_at=now)])
        with self._phase('db sync'):
            self._manage('db', 'sync')
        self._cell1_id = self._scalar(
            self.urls['api'], sa.select(api_tables.cell_mappings.c.id).where(
                api_tables.cell_mappings.c.uuid == CELL1_UUID))
        self._cell_db = cells.database_for_url('cell1 (seed)',
                                               self.urls['cell1'])
        self._services = servicegroup_db.DatabaseDriver(self._cell_db)
        self.placement_server = placement_server.PlacementServer(
            self.urls['placement'], self.workdir)
        with self._phase('placement start'):
            try:
                self.placement_server.start()
            except placement_server.ServerError as exc:
                raise EnvironmentFailure(str(exc))
        self.placement = Placement(self.placement_server.url)
        self._heartbeat = threading.Thread(target=self._heartbeat_loop,
                                           name='compute-heartbeats',
                                           daemon=True)
        self._heartbeat.start()
        return self

    @contextlib.contextmanager
    def _phase(self, name):
        """Add the wall time of the block to ``timings[name]`` (seconds)."""
        started = time.monotonic()
        try:
            yield
        finally:
            elapsed = time.monotonic() - started
            self.timings[name] = self.timings.get(name, 0.0) + elapsed
            LOG.info('%s took %.1fs', name, elapsed)

    def _write_conf(self, workers):
        placement_url = (self.placement_server.url if self.placement_server
                         else 'http://127.0.0.1:1')
        groups = {
            'DEFAULT': {
                'host': self.host_name,
                'transport_url': self.vhost.url,
                'servicegroup_driver': 'db',
                'rpc_response_timeout': 60,
            },
            'scheduler': {'workers': workers or 1},
            'filter_scheduler': {'enabled_filters': ','.join(
                DEFAULT_FILTERS)},
            'database': {'connection': self.urls['cell1']},
            'api_database': {'connection': self.urls['api']},
            # NOTE: keystoneauth's admin_token plugin takes ``endpoint``
            # and ``token``; endpoint_override is the adapter's own and
            # wins over the catalog, so both point at our placement.
            'placement': {'auth_type': 'admin_token', 'token': 'admin',
                          'endpoint': placement_url,
                          'endpoint_override': placement_url},
            'oslo_messaging_rabbit': dict(self.rabbit_opts),
        }
        if workers:
            groups['DEFAULT']['log_file'] = os.path.join(self.workdir,
                                                         'scheduler.log')
        for (group, name), value in self.extra_conf.items():
            groups.setdefault(group, {})[name] = value
        lines = []
        for group, options in groups.items():
            lines.append('[%s]' % group)
            for name, value in options.items():
                lines.append('%s = %s' % (name, value))
        with open(self.conf_file, 'w') as f:
            f.write('\n'.join(lines) + '\n')

    def _manage(self, *args):
        result = subprocess.run(
            [sys.executable, '-m', 'services.manage.main',
             '--config-file', self.conf_file] + list(args),
            capture_output=True, text=True, timeout=300)
        if result.returncode:
            raise EnvironmentFailure(
                'berth-manage %s failed (%d):\n%s' % (
                    ' '.join(args), result.returncode,
                    result.stderr[-3000:]))

    @staticmethod
    def _execute(url, statement, rows):
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        try:
            with engine.begin() as connection:
                connection.execute(statement, rows)
        finally:
            engine.dispose()

    @staticmethod
    def _scalar(url, query):
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as connection:
                return connection.execute(query).scalar_one()
        finally:
            engine.dispose()

    # --- hosts and aggregates ---------------------------------------------

    def add_hosts(self, prefix, count, vcpus=8, memory_mb=16384,
                  disk_gb=200, cpu_allocation_ratio=1.0,
                  ram_allocation_ratio=1.0, disk_allocation_ratio=1.0):
        """Seed ``count`` equal hosts named ``<prefix>-NN``.

        :returns: the list of :class:`Host`.
        """
        hosts = [Host(name='%s-%02d' % (prefix, i), uuid=str(uuid.uuid4()),
                      vcpus=vcpus, memory_mb=memory_mb, disk_gb=disk_gb,
                      cpu_allocation_ratio=cpu_allocation_ratio,
                      ram_allocation_ratio=ram_allocation_ratio,
                      disk_allocation_ratio=disk_allocation_ratio)
                 for i in range(count)]
        # NOTE: placement first, as a compute agent does: a node the
        # scheduler finds in placement but not yet in its cell is skipped,
        # never the reverse.
        with self._phase('providers'), \
                concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(self.placement.create_provider, hosts))
        now = timeutils.utcnow()
        self._execute(self.urls['api'], api_tables.host_mappings.insert(), [
            dict(cell_id=self._cell1_id, host=h.name, created_at=now)
            for h in hosts])
        self._execute(self.urls['cell1'], cell_tables.compute_nodes.insert(),
                      [self._compute_node(h, now) for h in hosts])
        for host in hosts:
            self._services.join(host.name, db_source.COMPUTE_BINARY,
                                'compute')
            self._services.report(host.name, db_source.COMPUTE_BINARY)
        self.hosts.extend(hosts)
        return hosts

    @staticmethod
    def _compute_node(host, now):
        return dict(
            uuid=host.uuid, host=host.name, hypervisor_hostname=host.name,
            host_ip='192.0.2.1', vcpus=host.vcpus, memory_mb=host.memory_mb,
            local_gb=host.disk_gb, vcpus_used=0, memory_mb_used=0,
            local_gb_used=0, free_ram_mb=host.memory_mb,
            free_disk_gb=host.disk_gb, running_vms=0, current_workload=0,
            hypervisor_type='QEMU', hypervisor_version=8002000,
            cpu_info='{}', stats='{}',
            supported_instances='[["x86_64", "kvm", "hvm"]]',
            cpu_allocation_ratio=host.cpu_allocation_ratio,
            ram_allocation_ratio=host.ram_allocation_ratio,
            disk_allocation_ratio=host.disk_allocation_ratio,
            mapped=1, created_at=now, updated_at=now, deleted=0)

    def add_aggregate(self, name, hosts, metadata=None):
        """A host aggregate in the api database, mirrored in placement.

        Running schedulers are told with the update_aggregates fanout.

        :returns: the aggregate uuid.
        """
        agg_uuid = str(uuid.uuid4())
        now = timeutils.utcnow()
        engine = sa.create_engine(self.urls['api'],
                                  poolclass=sa.pool.NullPool)
        try:
            with engine.begin() as connection:
                agg_id = connection.execute(api_tables.aggregates.insert(
                ).values(uuid=agg_uuid, name=name,
                         created_at=now)).inserted_primary_key[0]
                connection.execute(api_tables.aggregate_hosts.insert(), [
                    dict(aggregate_id=agg_id, host=h.name, created_at=now)
                    for h in hosts])
                if metadata:
                    connection.execute(
                        api_tables.aggregate_metadata.insert(), [
                            dict(aggregate_id=agg_id, key=k, value=v,
                                 created_at=now)
                            for k, v in metadata.items()])
        finally:
            engine.dispose()
        for host in hosts:
            self.placement.add_to_aggregate(host.uuid, agg_uuid)
        if self.api is not None:
            self.api.update_aggregates(context.get_admin_context())
        return agg_uuid

    def add_zone(self, zone, hosts):
        """Put ``hosts`` in availability zone ``zone`` (an aggregate).

        :returns: the aggregate uuid; ``zones[zone]`` lists the hosts.
        """
        self.zones[zone] = list(hosts)
        return self.add_aggregate(zone, hosts, {'availability_zone': zone})

    def service_record(self, host, binary):
        """The ServiceRecord of (host, binary) in cell1, or None."""
        return self._services.get(host, binary)

    def _heartbeat_loop(self):
        while not self._heartbeat_stop.wait(HEARTBEAT_INTERVAL):
            for host in list(self.hosts):
                try:
                    self._services.report(host.name,
                                          db_source.COMPUTE_BINARY)
                except Exception:
                    LOG.exception('Heartbeat of %s failed', host.name)

    # --- the scheduler and its client -------------------------------------

    def start_scheduler(self, workers=3):
        """Start berth-scheduler; return once ``workers`` consume.

        Also makes :attr:`api`, a SchedulerAPI in this process.

        :raises EnvironmentFailure: it exited or never became ready.
        """
        self._write_conf(workers)
        self.scheduler = SchedulerProcess(
            self.conf_file, os.path.join(self.workdir, 'scheduler.log'))
        self.scheduler.start()
        with self._phase('scheduler start'):
            self.wait_ready(workers)
        self._init_client()
        return self.scheduler

    def wait_ready(self, workers=None, timeout=START_TIMEOUT):
        """Wait until the scheduler topic has ``workers`` consumers.

        NOTE: every worker consumes the shared "scheduler" queue once, so
        the consumer count says how many are serving (also after the
        broker came back from a restart).
        """
        workers = workers or 1
        deadline = time.monotonic() + timeout
        count = 0
        while time.monotonic() < deadline:
            if not self.scheduler.alive():
                raise EnvironmentFailure(
                    'berth-scheduler exited with %s:\n%s' % (
                        self.scheduler.proc.returncode,
                        self.scheduler.log_tail()))
            try:
                count = self.vhost.consumers(rpcapi.RPC_TOPIC)
            except (OSError, kombu.exceptions.KombuError):
                count = 0
            if count >= workers:
                return count
            time.sleep(0.5)
        raise EnvironmentFailure(
            '%d of %d scheduler workers consume after %ds:\n%s' % (
                count, workers, timeout, self.scheduler.log_tail()))

    def _init_client(self):
        conf = cfg.ConfigOpts()
        rpc.register_opts(conf)
        conf([])
        conf.set_override('transport_url', self.vhost.url)
        conf.set_override('rpc_response_timeout', 60)
        for name, value in self.rabbit_opts.items():
            conf.set_override(name, value, group='oslo_messaging_rabbit')
        rpc.init(conf)
        self.api = rpcapi.SchedulerAPI()

    def worker_pids(self):
        """Pids of the scheduler's worker processes (children of it)."""
        pids = set()
        parent = str(self.scheduler.proc.pid)
        for entry in os.listdir('/proc'):
            if not entry.isdigit():
                continue
            try:
                with open('/proc/%s/stat' % entry) as f:
                    stat = f.read()
            except OSError:
                continue
            # NOTE: the command may hold spaces and parentheses; the
            # fields after the last ')' are state, then the parent pid.
            fields = stat.rsplit(')', 1)[1].split()
            if fields[1] == parent:
                pids.add(int(entry))
        return pids

    # --- tear-down --------------------------------------------------------

    def stop(self):
        """Stop everything this environment started; errors are logged.

        :returns: the scheduler's exit code (None if killed or never run).
        """
        code = None
        if self.api is not None:
            rpc.cleanup()
            self.api = None
        if self.scheduler is not None:
            code = self.scheduler.stop()
        self._heartbeat_stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(HEARTBEAT_INTERVAL + 5)
        if self.placement is not None:
            self.placement.close()
        if self.placement_server is not None:
            self.placement_server.stop()
        if self._cell_db is not None:
            self._cell_db.dispose()
        if self.vhost is not None:
            try:
                self.vhost.delete()
            except EnvironmentUnavailable:
                LOG.exception('Could not delete virtual host %s',
                              self.vhost.name)
        return code
