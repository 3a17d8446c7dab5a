# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""The clouds the end-to-end benchmark boots servers on.

``inprocess``: the all-in-one (:class:`services.allinone.launcher.AllInOne`)
in the benchmark's own interpreter, on the ``fake://`` transport and SQLite
files (or scratch MariaDB/PostgreSQL databases with ``--db``). The load
generator shares the GIL with every service, as a user of
``berth-all-in-one`` on the same machine would.

``processes``: every service its own process, as systemd runs them, on
RabbitMQ (a private virtual host) and MariaDB or PostgreSQL, through the
functional tests' :class:`tests.functional.stack.Stack`.

Both give the API and placement URLs, the CPU seconds each process used
(from /proc: unlike wall time, CPU per server does not depend on what
else the shared machine runs), and optional py-spy profiles.
"""

import collections
import configparser
import fcntl
import os
import signal
import subprocess
import sys
import threading
import uuid

from tests.bench import scheduler as scheduler_bench
from tests.bench import servers as bench_servers

START_TIMEOUT = 900
# --db -> (report label, process command names) of the servers the
# processes cloud uses besides its own processes.
_BROKER = ('rabbitmq (shared)', ('beam.smp',))
SHARED_SERVERS = {
    'mysql': [('mariadb (shared)', ('mariadbd', 'mysqld')), _BROKER],
    'postgresql': [('postgresql (shared)', ('postgres',)), _BROKER],
}
# NOTE: stopping 1000 in-process compute services waits for each one's
# in-flight builds (and their RPC timeouts); past this the benchmark stops
# waiting and leaves the process to end without them.
INPROCESS_STOP_TIMEOUT = 60


def _log(message):
    sys.stderr.write(message + '\n')
    sys.stderr.flush()


def parse_settings(items):
    """``group.option=value`` strings -> {(group, option): value}."""
    settings = {}
    for item in items or ():
        key, sep, value = item.partition('=')
        group, dot, option = key.strip().rpartition('.')
        if not sep or not dot:
            raise ValueError('--set %r: expected group.option=value' % item)
        settings[(group or 'DEFAULT', option)] = value.strip()
    return settings


class ScratchDatabases(object):
    """Uniquely named databases on the local server, dropped at the end."""

    def __init__(self, kind, workdir):
        self.kind = kind
        self.workdir = workdir
        self.prefix = 'berth_e2e_%s' % uuid.uuid4().hex[:8]
        self.names = []

    def create(self, suffix=None):
        """A new empty database; returns its URL."""
        name = '%s_%s' % (self.prefix, suffix or len(self.names))
        self.names.append(name)
        return bench_servers.recreate_database(self.kind, name,
                                               self.workdir)

    def drop(self):
        """Drop every database made here (best effort)."""
        for name in self.names:
            if self.kind == 'mysql':
                argv = ['mysql', '-uroot', '-h127.0.0.1', '-e',
                        'DROP DATABASE IF EXISTS `%s`' % name]
            elif self.kind == 'postgresql':
                argv = ['psql', '-h', '127.0.0.1', '-U', 'postgres', '-q',
                        '-c', 'DROP DATABASE IF EXISTS "%s" WITH (FORCE)'
                        % name]
            else:
                continue
            subprocess.run(argv, capture_output=True, timeout=120)
        self.names = []


class SchedulingTimings(object):
    """Stands in for the all-in-one's decision journal.

    Keeps the ``timings_ms`` of every real scheduling decision, in order.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self.decisions = []

    def record(self, instance_uuids, explanation):
        """Called by RecordingScheduler after each select_destinations."""
        with self._lock:
            self.decisions.append((len(instance_uuids),
                                   dict(explanation.get('timings_ms', {}))))

    def get(self, instance_uuid):
        """The journal's lookup; the benchmark keeps no explanations."""
        return None

    def take(self):
        """The decisions recorded since the last call."""
        with self._lock:
            taken, self.decisions = self.decisions, []
        return taken


class InProcessCloud(object):
    """The all-in-one in this interpreter (once per process)."""

    mode = 'inprocess'

    def __init__(self, hosts, workdir, db='sqlite', settings=None):
        self.hosts = hosts
        self.workdir = workdir
        self.db = db
        self.settings = dict(settings or {})
        self.databases = ScratchDatabases(db, workdir)
        self.timings = SchedulingTimings()
        self.aio = None
        self.log_file = os.path.join(workdir, 'state', 'berth.log')
        self.abandoned = False

    def _write_conf(self):
        sections = collections.defaultdict(dict)
        if self.db != 'sqlite':
            sections['api_database']['connection'] = (
                self.databases.create('api'))
            cell1 = self.databases.create('cell1')
            sections['database']['connection'] = cell1
            # NOTE: the all-in-one derives cell0's name from cell1's.
            self.databases.create('cell1_cell0')
            sections['placement_database']['connection'] = (
                self.databases.create('placement'))
        for (group, option), value in self.settings.items():
            sections[group][option] = value
        path = os.path.join(self.workdir, 'berth-e2e.conf')
        parser = configparser.ConfigParser(interpolation=None)
        for group, options in sections.items():
            parser[group] = options
        with open(path, 'w') as f:
            parser.write(f)
        return path

    def start(self):
        """Databases, every service, the hosts discovered; returns self."""
        from common import config
        from services.allinone import launcher
        from services.allinone import state as state_mod
        conf_file = self._write_conf()
        conf = config.parse_args([], default_config_files=[conf_file])
        state = state_mod.StateDir(os.path.join(self.workdir, 'state'))
        state.prepare()
        state_mod.apply_defaults(conf, state, self.hosts)
        config.setup_logging('berth-all-in-one')
        self.aio = launcher.AllInOne(conf, state, self.hosts, 0, 0)
        self.aio.journal = self.timings
        try:
            self.aio.start(timeout=START_TIMEOUT)
        except Exception:
            self.stop()
            raise
        return self

    @property
    def api_url(self):
        """berth-api's base URL."""
        return self.aio.api_url

    @property
    def placement_url(self):
        """Placement's base URL."""
        return self.aio.placement_url

    def pids(self):
        """{name: process group} of the processes doing the work."""
        return {'all-in-one (incl. client)': os.getpgid(0)}

    def cpu_seconds(self):
        """CPU seconds this process used so far (the client included)."""
        times = os.times()
        return {'all-in-one (incl. client)': times.user + times.system}

    def describe(self):
        """What the cloud is, for the report."""
        return {'mode': self.mode, 'db': self.db, 'transport': 'fake://',
                'hosts': self.hosts, 'log': self.log_file,
                'settings': {'%s.%s' % k: v
                             for k, v in self.settings.items()}}

    def stop(self, timeout=INPROCESS_STOP_TIMEOUT):
        """Stop every service (waiting at most ``timeout``), drop scratch
        databases. ``abandoned`` tells the caller that service threads
        still run, and that the process must end with os._exit.
        """
        if self.aio is not None:
            stopper = threading.Thread(target=self._stop_services,
                                       name='e2e-stop', daemon=True)
            stopper.start()
            stopper.join(timeout)
            if stopper.is_alive():
                _log('the in-process services did not stop within %ds; '
                     'leaving them' % timeout)
                self.abandoned = True
        self.databases.drop()

    def _stop_services(self):
        try:
            self.aio.stop()
        except Exception as exc:
            _log('all-in-one stop: %s' % exc)


def _bench_stack_class():
    # NOTE: imported late: tests.functional pulls in kombu and the test
    # helpers, which the inprocess mode does not need.
    from tests.functional import stack as stack_mod

    class BenchStack(stack_mod.Stack):
        """The functional tests' stack, with time for 1000 hosts to start.

        NOTE: Stack waits 90 s for its hosts.
        """

        def wait_for_hosts(self, timeout=START_TIMEOUT):
            return super().wait_for_hosts(timeout=timeout)

    return BenchStack


class ProcessesCloud(object):
    """Every service its own process on RabbitMQ and a database server."""

    mode = 'processes'

    def __init__(self, hosts, workdir, db='mysql', settings=None):
        if db == 'sqlite':
            raise ValueError('--mode processes needs --db mysql or '
                             'postgresql (several processes write)')
        self.hosts = hosts
        self.workdir = workdir
        self.db = db
        self.settings = dict(settings or {})
        self.databases = ScratchDatabases(db, workdir)
        self.stack = None
        self._lock = None
        self.abandoned = False

    def _extra_conf(self):
        conf = {
            # NOTE: a deployment's heartbeat settings, not the functional
            # tests' 2 s: 1000 hosts reporting every 2 s is load of its own.
            ('DEFAULT', 'report_interval'): 10,
            ('DEFAULT', 'service_down_time'): 60,
            ('scheduler', 'discover_hosts_in_cells_interval'): 10,
        }
        conf.update(self.settings)
        return conf

    def start(self):
        """Databases, vhost, every service, hosts up; returns self."""
        # NOTE: the functional tests' broker lock, held shared: a test
        # that restarts RabbitMQ waits for the benchmark to end.
        self._lock = open(scheduler_bench.BROKER_LOCK, 'a')
        fcntl.flock(self._lock, fcntl.LOCK_SH)
        self.stack = _bench_stack_class()(
            self.databases.create, hosts=self.hosts, kind=self.db,
            workdir=self.workdir, extra_conf=self._extra_conf())
        try:
            self.stack.setup()
            self.stack.start()
        except Exception:
            _log(self.stack.log_tails())
            self.stop()
            raise
        return self

    @property
    def api_url(self):
        """berth-api's base URL."""
        return self.stack.api_url

    @property
    def placement_url(self):
        """Placement's base URL."""
        return self.stack.placement_url

    def pids(self):
        """{binary: process group} of the running services."""
        return {name: proc.proc.pid
                for name, proc in self.stack.processes.items()
                if proc.alive()}

    def cpu_seconds(self):
        """{binary: CPU seconds of its process group so far}, and the
        same of the database server and the broker.

        NOTE: MariaDB and RabbitMQ spend a third of what a boot costs the
        machine; they are shared with anything else the machine runs, as
        their names in the report say.
        """
        used = {name: scheduler_bench.group_cpu_seconds(pgid)
                for name, pgid in self.pids().items()}
        for label, commands in SHARED_SERVERS[self.db]:
            used[label] = scheduler_bench.command_cpu_seconds(commands)
        return used

    def describe(self):
        """What the cloud is, for the report."""
        return {'mode': self.mode, 'db': self.db,
                'transport': 'rabbit (private vhost)', 'hosts': self.hosts,
                'log': self.workdir,
                'settings': {'%s.%s' % k: v
                             for k, v in self.settings.items()}}

    def stop(self):
        """Stop every service, delete the vhost, drop the databases."""
        if self.stack is not None:
            try:
                self.stack.stop()
            except Exception as exc:
                _log('stack stop: %s' % exc)
        self.databases.drop()
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None


def make_cloud(mode, hosts, workdir, db, settings):
    """The cloud of ``mode`` (not started)."""
    if mode == 'processes':
        return ProcessesCloud(hosts, workdir, db, settings)
    return InProcessCloud(hosts, workdir, db, settings)


class PySpy(object):
    """py-spy recording some processes for the length of a phase."""

    def __init__(self, outdir, rate=100, gil=False):
        self.outdir = outdir
        self.rate = rate
        self.gil = gil
        self.running = {}

    @staticmethod
    def binary():
        """py-spy beside this interpreter, or None."""
        return bench_servers.console_script('py-spy')

    def start(self, pids, label):
        """Record each {name: pid} into ``<outdir>/<label>-<name>.txt``."""
        binary = self.binary()
        if binary is None:
            _log('py-spy is not installed; no profile')
            return
        os.makedirs(self.outdir, exist_ok=True)
        for name, pid in pids.items():
            safe = ''.join(c if c.isalnum() else '_' for c in name)
            path = os.path.join(self.outdir, '%s-%s.txt' % (label, safe))
            argv = [binary, 'record', '-p', str(pid), '-r', str(self.rate),
                    '-f', 'raw', '-o', path, '--nonblocking',
                    '--subprocesses']
            if self.gil:
                argv.append('--gil')
            log = open(path + '.log', 'w')
            self.running[path] = (subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT), log)

    def stop(self):
        """Stop recording (SIGINT makes py-spy write); returns the files.
        """
        files = []
        for path, (proc, log) in self.running.items():
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
            if os.path.exists(path):
                files.append(path)
        self.running = {}
        return files


def _frames(stack):
    """The frames of one py-spy raw stack, outermost first."""
    return [f for f in stack.split(';') if f]


def summarize_profile(path, top=25, match=('services/', 'common/')):
    """The hottest frames of a py-spy raw (collapsed) profile.

    :returns: {'samples', 'self': [(frame, share)], 'inclusive':
        [(frame, share)] of Berth's own frames}.
    """
    leaf = collections.Counter()
    inclusive = collections.Counter()
    total = 0
    with open(path) as f:
        for line in f:
            stack, _sep, count = line.rstrip('\n').rpartition(' ')
            if not stack or not count.isdigit():
                continue
            count = int(count)
            total += count
            frames = _frames(stack)
            if frames:
                leaf[frames[-1]] += count
            for frame in set(frames):
                inclusive[frame] += count
    if not total:
        return {'samples': 0, 'self': [], 'inclusive': []}
    own = [(frame, n) for frame, n in inclusive.most_common()
           if any(m in frame for m in match)]
    return {
        'samples': total,
        'self': [(frame, round(n / total, 4))
                 for frame, n in leaf.most_common(top)],
        'inclusive': [(frame, round(n / total, 4))
                      for frame, n in own[:top]],
    }
