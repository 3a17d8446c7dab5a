# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The threaded HTTP server and main loop of the Berth API scripts.

``berth-api``, ``berth-placement-api`` and the all-in-one serve their
WSGI applications with cheroot, listen where their ``bind_host``/
``bind_port`` options (or ``--host``/``--port``) say, and stop cleanly on
SIGTERM or SIGINT, finishing the requests in progress. Their modules import
``common.eventlet_mode`` before this one (see ``BERTH_EVENTLET``).

Requests are read whole, within the size and time limits of the server's
option group, before a worker thread sees them
(:mod:`common.wsgi.connections`): idle or slow clients hold no thread.
"""

import logging
import re
import signal
import threading

from cheroot import server as cheroot_server
from cheroot import wsgi as cheroot_wsgi
from oslo_config import cfg

from common import config
from common import gc_tuning
from common import preflight
from common.wsgi import connections

LOG = logging.getLogger(__name__)


def cli_opts(group):
    """``--host`` and ``--port``, overriding ``[group]`` bind_host/port."""
    # NOTE: dest differs from the name because [DEFAULT] host (the RPC
    # services' host name, common/conf/service.py) is another option.
    return [
        cfg.HostAddressOpt('host', dest='listen_host',
                           help='Listen address; overrides [%s] bind_host.'
                                % group),
        cfg.PortOpt('port', help='Listen port; overrides [%s] bind_port.'
                                 % group),
    ]


# The requests whose body a server streams to its application instead of
# reading it whole first, per option group: the compute API's image data
# uploads (PUT /image/v2/images/{id}/file), which may be any size.
STREAM_PATHS = {
    'api': re.compile(rb'PUT /image/v2/images/[^/]+/file/?$'),
}


# The most unread body bytes cheroot reads and drops after an answer to
# keep a connection open; with more left, the connection closes.
DRAIN_LIMIT = 65536


class _Request(cheroot_server.HTTPRequest):
    """cheroot's request, which closes rather than drains a large body."""

    def send_headers(self):
        """Mark the connection to close if much of the body is unread."""
        # NOTE: cheroot reads what the application left of a body in one
        # read of its whole length: a streamed upload refused unread (401,
        # 404) that announced 100 GB would allocate them all.
        if getattr(self.rfile, 'remaining', 0) > DRAIN_LIMIT:
            self.close_connection = True
        super().send_headers()


class _Connection(cheroot_server.HTTPConnection):
    RequestHandlerClass = _Request


class Server(cheroot_wsgi.Server):
    """A cheroot WSGI server whose selector thread reads the requests."""

    ConnectionClass = _Connection

    def __init__(self, *args, limits=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.limits = limits or connections.Limits()

    def prepare(self):
        """Bind, then put the bounded connection manager in place."""
        super().prepare()
        if not self.ready:
            return
        # NOTE: cheroot builds its own manager in prepare(); it has only
        # the listening socket registered yet.
        self._connections.close()
        self._connections = connections.BoundedConnectionManager(
            self, self.limits)


def limits_from(options, group):
    """The :class:`connections.Limits` of an option group's values."""
    return connections.Limits(
        header_timeout=options.header_timeout,
        body_timeout=options.body_timeout,
        idle_timeout=options.idle_timeout,
        max_header_size=options.max_header_size,
        max_body_size=options.max_request_body_size,
        max_connections=options.max_connections,
        stream_paths=STREAM_PATHS.get(group))


def make_server(app, host, port, threads, name, limits=None):
    """A cheroot server for ``app``, not yet bound.

    :param limits: the :class:`connections.Limits` (their defaults if
        None).
    """
    limits = limits or connections.Limits()
    server = Server(
        (host, port), app, numthreads=threads, server_name=name,
        # NOTE: cheroot's default listen backlog of 5 resets connections
        # when a burst of clients (a scheduler fleet, a benchmark's boots)
        # connects at once.
        request_queue_size=128, limits=limits)
    # NOTE: cheroot's accept applies this to a new socket, before a TLS
    # handshake it runs in the selector thread: keep that short. (The
    # manager closes idle connections after limits.idle_timeout; cheroot
    # only quotes this in HTTP/1.0 "Keep-Alive: timeout=" headers.)
    server.timeout = limits.header_timeout
    # NOTE: cheroot reads the headers again once the manager has them;
    # its own limit must not be tighter.
    server.max_request_header_size = limits.max_header_size
    # NOTE: cheroot keeps at most 10 connections alive by default and
    # closes every other one after its answer: a scheduler's and an
    # agent's many threads then reconnected for most requests (a tenth of
    # a scheduler's time in the e2e bench). Idle ones cost a descriptor,
    # and the manager closes the oldest idle one for a new client.
    server.keep_alive_conn_limit = limits.max_connections
    return server


def serve(server, name):
    """Serve until SIGTERM or SIGINT; return the exit status."""
    stopping = []

    def _stop(signum, _frame):
        LOG.info('Signal %d received, stopping', signum)
        # NOTE: cheroot's stop() waits for the serve loop to leave its
        # selector, and that loop runs in this main thread, under this very
        # handler: stopping inline deadlocks. Stop from another thread.
        if not stopping:
            stopping.append(threading.Thread(target=server.stop,
                                             name='berth-stop'))
            stopping[0].start()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    server.prepare()
    host, port = server.bind_addr[:2]
    LOG.info('%s serving on http://%s:%s', name, host, port)
    print('%s serving on http://%s:%s' % (name, host, port), flush=True)
    try:
        server.serve()
    finally:
        if stopping:
            stopping[0].join()
        else:
            server.stop()
    return 0


def main(name, group, build, argv=None):
    """A console script's body: parse, build, bind and serve.

    :param name: the program name, for logs (``berth-api``).
    :param group: the option group with ``bind_host``, ``bind_port`` and
        ``threads`` (``api``, ``placement_api``).
    :param build: callable(conf) returning the WSGI application.
    :param argv: the command line without the program name.
    :returns: the exit status.
    """
    conf = preflight.start(name, argv, cli_opts=cli_opts(group))
    config.setup_logging(name)
    app = build(conf)
    gc_tuning.settle()
    options = conf[group]
    host = conf.listen_host or options.bind_host
    port = conf.port if conf.port is not None else options.bind_port
    server = make_server(app, host, port, options.threads, name,
                         limits_from(options, group))
    return serve(server, name)
