# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. See the License
# for the specific language governing permissions and limitations.
"""Server subprocesses and scratch databases for the benchmarks.

A benchmark starts each server under test as its own process (never in the
benchmark's interpreter, so neither side shares a GIL with the load
generator), waits until it answers HTTP, and stops it afterwards. Every
server has a hard lifetime limit so a hung run cannot leave it behind.
"""

import atexit
import configparser
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx

# NOTE: a server that outlives this is killed by its watchdog, whatever the
# benchmark is doing: a bench run is bounded in time by construction.
DEFAULT_LIFETIME = 3600
DEFAULT_READY_TIMEOUT = 120

DB_KINDS = ('sqlite', 'mysql', 'postgresql')

_LIVE = set()


class ServerError(RuntimeError):
    """A server did not start, or died while it was in use."""


def free_port(host='127.0.0.1'):
    """Return a TCP port on ``host`` that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def write_config(path, sections):
    """Write an INI file from ``{section: {option: value}}``."""
    parser = configparser.ConfigParser(interpolation=None)
    for section, options in sections.items():
        parser[section] = {key: str(value) for key, value in options.items()}
    with open(path, 'w') as f:
        parser.write(f)
    return path


def console_script(name):
    """Return the path of console script ``name`` beside this interpreter.

    :returns: the path, or None when it is not installed there.
    """
    candidate = os.path.join(os.path.dirname(sys.executable), name)
    if os.access(candidate, os.X_OK):
        return candidate
    return shutil.which(name)


class ServerProcess(object):
    """One HTTP server subprocess with a readiness poll and a watchdog.

    :param name: label used in messages and the log file name.
    :param argv: the command line.
    :param url: base URL; ``url + ready_path`` must answer < 500 when ready.
    :param log_path: file receiving the server's stdout and stderr.
    :param env: extra environment variables (None unsets one).
    :param cwd: working directory of the server.
    :param lifetime: seconds after which the server is killed regardless.
    """

    def __init__(self, name, argv, url, log_path, env=None, cwd=None,
                 ready_path='/', lifetime=DEFAULT_LIFETIME):
        self.name = name
        self.argv = list(argv)
        self.url = url
        self.log_path = log_path
        self.env = merge_env(env)
        self.cwd = cwd
        self.ready_path = ready_path
        self.lifetime = lifetime
        self.proc = None
        self._watchdog = None

    def start(self, ready_timeout=DEFAULT_READY_TIMEOUT):
        """Start the process and wait until it answers HTTP.

        :raises ServerError: if it exits or is not ready in time.
        """
        with open(self.log_path, 'ab') as log:
            # NOTE: a new session gives the server its own process group,
            # so stop() reaches any children it forks, and nothing else.
            self.proc = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=self.env, cwd=self.cwd,
                start_new_session=True)
        _LIVE.add(self)
        self._watchdog = threading.Timer(self.lifetime, self._expire)
        self._watchdog.daemon = True
        self._watchdog.start()
        self._wait_ready(ready_timeout)
        return self

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError('%s exited with %s during start-up:\n%s' % (
                    self.name, self.proc.returncode, self.log_tail()))
            try:
                resp = httpx.get(self.url + self.ready_path, timeout=2)
                if resp.status_code < 500:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise ServerError('%s not ready after %ss:\n%s' % (
            self.name, timeout, self.log_tail()))

    def check_alive(self):
        """Raise ServerError if the process has exited."""
        if self.proc is None or self.proc.poll() is not None:
            raise ServerError('%s is not running:\n%s' % (
                self.name, self.log_tail()))

    def _expire(self):
        sys.stderr.write('%s reached its %ss lifetime, killing it\n' % (
            self.name, self.lifetime))
        self.stop(grace=0)

    def stop(self, grace=10):
        """Stop the server: SIGTERM, then SIGKILL after ``grace`` seconds."""
        if self._watchdog is not None:
            self._watchdog.cancel()
        _LIVE.discard(self)
        if self.proc is None or self.proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def log_tail(self, lines=40):
        """Return the last ``lines`` lines of the server's log."""
        try:
            with open(self.log_path, errors='replace') as f:
                return ''.join(f.readlines()[-lines:])
        except OSError:
            return '(no log)'

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def merge_env(extra):
    """Return os.environ updated with ``extra``; a None value unsets."""
    env = dict(os.environ)
    for key, value in (extra or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


@atexit.register
def _stop_all():
    for server in list(_LIVE):
        server.stop(grace=2)


def _run(argv):
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise ServerError('%s failed: %s' % (' '.join(argv),
                                             result.stderr.strip()))


def recreate_database(kind, name, workdir):
    """Drop and create scratch database ``name``; return its SQLAlchemy URL.

    :param kind: one of DB_KINDS. SQLite uses a file in ``workdir``;
        MariaDB/MySQL (root, no password) and PostgreSQL (postgres, trust)
        are the local servers on 127.0.0.1.
    """
    if kind == 'sqlite':
        path = os.path.join(os.path.abspath(workdir), name + '.db')
        for suffix in ('', '-wal', '-shm', '-journal'):
            if os.path.exists(path + suffix):
                os.unlink(path + suffix)
        return 'sqlite:///' + path
    if kind == 'mysql':
        _run(['mysql', '-uroot', '-h127.0.0.1', '-e',
              'DROP DATABASE IF EXISTS `%s`; CREATE DATABASE `%s` '
              'CHARACTER SET utf8mb4' % (name, name)])
        return 'mysql+pymysql://root@127.0.0.1/%s?charset=utf8mb4' % name
    if kind == 'postgresql':
        psql = ['psql', '-h', '127.0.0.1', '-U', 'postgres', '-q', '-c']
        _run(psql + ['DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % name])
        _run(psql + ['CREATE DATABASE "%s"' % name])
        return 'postgresql+psycopg2://postgres@127.0.0.1/%s' % name
    raise ValueError('unknown database kind %r' % kind)
