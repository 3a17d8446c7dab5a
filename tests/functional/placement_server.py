# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A live ``berth-placement-api`` process for tests that need a real socket.

Tests that drive placement with outside clients (the ``openstack`` CLI,
keystoneauth, curl) start one with :func:`running_server`::

    with placement_server.running_server() as server:
        httpx.get(server.url + '/')

The database is ``BERTH_TEST_DB_URL`` when set (any SQLAlchemy URL Berth
supports; the schema is synced on start) and otherwise a fresh SQLite file
in a temporary directory. Nothing here depends on pytest.
"""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

DB_URL_ENV = 'BERTH_TEST_DB_URL'
START_TIMEOUT = 60
STOP_TIMEOUT = 30


class ServerError(Exception):
    """The server would not start (the message carries its log)."""


# NOTE: the ports handed out in this process: a port bound and closed is
# free again at once, and the kernel may give it out again to the next
# caller (a stack's API and placement once got the same one).
_GIVEN = set()
_GIVEN_LOCK = threading.Lock()


def free_ports(count):
    """``count`` distinct TCP ports on 127.0.0.1 that nothing listens on
    right now and that this process has not handed out before.
    """
    sockets = []
    ports = []
    try:
        while len(ports) < count:
            sock = socket.socket()
            sockets.append(sock)
            sock.bind(('127.0.0.1', 0))
            port = sock.getsockname()[1]
            with _GIVEN_LOCK:
                if port in _GIVEN:
                    continue
                _GIVEN.add(port)
            ports.append(port)
    finally:
        for sock in sockets:
            sock.close()
    return ports


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now (see
    :func:`free_ports`).
    """
    return free_ports(1)[0]


def bin_path(name):
    """``name`` from this interpreter's bin directory, else from PATH.

    :returns: the path, or None when it is installed in neither.
    """
    beside = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(beside):
        return beside
    return shutil.which(name)


class PlacementServer(object):
    """One ``berth-placement-api`` subprocess with noauth2 on a free port."""

    def __init__(self, db_url, workdir, extra_conf=''):
        """
        :param db_url: the ``[placement_database] connection``.
        :param workdir: where the config file and the log go.
        :param extra_conf: more config text appended to the file.
        """
        self.port = free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.conf_file = os.path.join(workdir, 'placement-%d.conf' % self.port)
        self.log_file = os.path.join(workdir, 'placement-%d.log' % self.port)
        with open(self.conf_file, 'w') as f:
            f.write('[api]\nauth_strategy = noauth2\n'
                    '[placement_database]\nconnection = %s\n'
                    'sync_on_startup = True\n%s' % (db_url, extra_conf))
        self.proc = None

    def start(self):
        """Start the process; return once ``GET /`` answers.

        :raises ServerError: the binary is missing, the process exited, or
            it did not answer within :data:`START_TIMEOUT` seconds.
        """
        binary = bin_path('berth-placement-api')
        if binary is None:
            raise ServerError('berth-placement-api is not installed')
        with open(self.log_file, 'w') as log:
            self.proc = subprocess.Popen(
                [binary, '--config-file', self.conf_file,
                 '--host', '127.0.0.1', '--port', str(self.port)],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError('server exited with %s:\n%s'
                                  % (self.proc.returncode, self.log_tail()))
            try:
                urllib.request.urlopen(self.url + '/', timeout=2).close()
                return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        self.stop()
        raise ServerError('server did not answer within %ds:\n%s'
                          % (START_TIMEOUT, self.log_tail()))

    def stop(self):
        """SIGTERM, then SIGKILL if it lingers; returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def log_tail(self, lines=40):
        """The end of the server's log, for failure messages."""
        try:
            with open(self.log_file) as f:
                return ''.join(f.readlines()[-lines:])
        except OSError:
            return ''


@contextlib.contextmanager
def running_server(db_url=None, extra_conf=''):
    """A started :class:`PlacementServer`, stopped (and cleaned) on exit.

    :param db_url: the database; default ``$BERTH_TEST_DB_URL`` or a
        temporary SQLite file.
    """
    workdir = tempfile.mkdtemp(prefix='berth-placement-')
    db_url = db_url or os.environ.get(DB_URL_ENV) or (
        'sqlite:///%s' % os.path.join(workdir, 'placement.sqlite'))
    server = PlacementServer(db_url, workdir, extra_conf)
    try:
        yield server.start()
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
