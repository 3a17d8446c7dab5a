# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The real RabbitMQ for functional tests, and a test RPC server process.

The broker is found at ``BERTH_TEST_RABBIT_URL`` (default the local one,
guest/guest). Unreachable, it skips the tests on a developer's machine and
fails them in CI (``CI=true``). Tests share the broker under a shared file
lock; a test that restarts it takes the lock exclusively, so no other
Berth test process loses its broker mid-test.

``python -m tests.functional.rabbit --config-file F --workers N --out D``
runs a :class:`common.service.Service` whose manager answers ``whoami``
and appends cast tokens to ``D/casts.log``.
"""

import argparse
import contextlib
import fcntl
import os
import subprocess
import sys
import tempfile
import time
import uuid

import kombu
import oslo_messaging as messaging
import pytest

from tests.functional import skips

RABBIT_URL = os.environ.get('BERTH_TEST_RABBIT_URL',
                            'rabbit://guest:guest@127.0.0.1:5672/')
LOCK_FILE = os.path.join(tempfile.gettempdir(), 'berth-test-rabbit.lock')
START_TIMEOUT = 60


def _kombu_url():
    # NOTE: kombu names the protocol amqp and the default vhost '/'.
    return 'amqp://' + RABBIT_URL.split('://', 1)[1]


def check():
    """Skip or fail the test unless the broker accepts a connection.

    NOTE: the probe holds the broker shared: another test process may be
    restarting RabbitMQ under the exclusive lock, and a broker that is
    merely restarting is not a missing one.
    """
    with broker_lock():
        try:
            with kombu.Connection(_kombu_url(), connect_timeout=5) as conn:
                conn.connect()
        except Exception as exc:
            skips.unavailable('RabbitMQ at %s is unreachable: %s'
                              % (RABBIT_URL, str(exc).splitlines()[0]))


@contextlib.contextmanager
def broker_lock(exclusive=False):
    """Hold the broker shared (normal tests) or exclusively (restarts)."""
    with open(LOCK_FILE, 'a') as f:
        fcntl.flock(f, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def rabbitmqctl(*args, timeout=60):
    """Run ``rabbitmqctl``; returns its stdout, fails the test on error."""
    try:
        out = subprocess.run(['rabbitmqctl'] + list(args), check=True,
                             capture_output=True, text=True,
                             timeout=timeout)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.fail('rabbitmqctl %s failed: %s %s'
                    % (' '.join(args), exc, getattr(exc, 'stderr', '')))
    return out.stdout


def queues():
    """{name: (messages, type)} of the broker's queues."""
    result = {}
    for line in rabbitmqctl('list_queues', '-q', '--no-table-headers',
                            'name', 'messages', 'type').splitlines():
        parts = line.split()
        if len(parts) == 3:
            result[parts[0]] = (int(parts[1]), parts[2])
    return result


def delete_everything(prefix):
    """Delete the queues and exchanges whose names start with ``prefix``."""
    names = rabbitmqctl('list_exchanges', '-q', '--no-table-headers',
                        'name').split()
    with kombu.Connection(_kombu_url(), connect_timeout=5) as conn:
        channel = conn.channel()
        for name in queues():
            if name.startswith(prefix):
                channel.queue_delete(name)
        for name in names:
            if name.startswith(prefix):
                channel.exchange_delete(name)


def unique_name():
    """A name for one test's topic and exchange, never reused."""
    return 'berth-func-%s' % uuid.uuid4().hex[:12]


class ServerProcess(object):
    """The test RPC server in its own process, on the real broker."""

    def __init__(self, workdir, topic, workers=1, rabbit_opts=None):
        self.workdir = workdir
        self.topic = topic
        self.host = 'h-' + topic
        self.workers = workers
        self.conf_file = os.path.join(workdir, 'server.conf')
        self.log_file = os.path.join(workdir, 'server.log')
        self.casts_file = os.path.join(workdir, 'casts.log')
        lines = ['[DEFAULT]', 'transport_url = %s' % RABBIT_URL,
                 'control_exchange = %s' % topic, 'host = %s' % self.host,
                 'servicegroup_driver = memory', 'periodic_enable = False',
                 'debug = True', '[oslo_messaging_rabbit]']
        lines += ['%s = %s' % item for item in (rabbit_opts or {}).items()]
        with open(self.conf_file, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        self.proc = None

    def start(self):
        """Start; return once every worker consumes from the topic."""
        log = open(self.log_file, 'w')
        self.proc = subprocess.Popen(
            [sys.executable, '-m', 'tests.functional.rabbit',
             '--config-file', self.conf_file, '--topic', self.topic,
             '--workers', str(self.workers), '--out', self.workdir],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail('server exited with %s:\n%s'
                            % (self.proc.returncode, self.log_tail()))
            if len(self.ready_pids()) >= self.workers:
                return self
            time.sleep(0.2)
        self.stop()
        pytest.fail('server not ready in %ds:\n%s'
                    % (START_TIMEOUT, self.log_tail()))

    def ready_pids(self):
        """Pids of the workers that consume messages."""
        return {int(n.split('-', 1)[1]) for n in os.listdir(self.workdir)
                if n.startswith('ready-')}

    def casts(self):
        """The cast tokens processed so far (duplicates kept)."""
        if not os.path.exists(self.casts_file):
            return []
        with open(self.casts_file) as f:
            return f.read().split()

    def stop(self, timeout=30):
        """SIGTERM and wait; returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail('server ignored SIGTERM for %ds:\n%s'
                        % (timeout, self.log_tail()))

    def log_tail(self, lines=40):
        """The end of the server's log, for failure messages."""
        with open(self.log_file) as f:
            return ''.join(f.readlines()[-lines:])


def _main():
    """Entry point of the server process (see the module docstring)."""
    from common import config
    from common import manager
    from common import rpc
    from common import service

    parser = argparse.ArgumentParser()
    parser.add_argument('--config-file', required=True)
    parser.add_argument('--topic', required=True)
    parser.add_argument('--workers', type=int, default=1)
    parser.add_argument('--out', required=True)
    args = parser.parse_args()

    class TestManager(manager.Manager):
        """whoami (call) and record (cast) for the functional tests."""

        target = messaging.Target(version='1.0')

        def post_start_hook(self):
            open(os.path.join(args.out, 'ready-%d' % os.getpid()),
                 'w').close()

        def whoami(self, ctxt, delay=0):
            time.sleep(delay)
            return {'pid': os.getpid(), 'user_id': ctxt.user_id}

        def record(self, ctxt, token):
            # NOTE: O_APPEND writes of one short line do not interleave
            # between the worker processes.
            with open(os.path.join(args.out, 'casts.log'), 'a') as f:
                f.write(token + '\n')

    config.parse_args(['--config-file', args.config_file])
    rpc.register_opts(rpc.CONF)
    config.setup_logging('berth-functional-rpc')
    svc = service.Service('berth-functional', args.topic,
                          TestManager(service_name='functional'))
    sys.exit(service.serve(svc, workers=args.workers))


if __name__ == '__main__':
    _main()
