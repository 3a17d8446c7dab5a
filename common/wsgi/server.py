# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The threaded HTTP server and main loop of the Berth API scripts.

``berth-api`` and ``berth-placement-api`` both serve their WSGI
application with cheroot, listen where their ``bind_host``/``bind_port``
options (or ``--host``/``--port``) say, and stop cleanly on SIGTERM or
SIGINT, finishing the requests in progress. Their modules import
``common.eventlet_mode`` before this one (see ``BERTH_EVENTLET``).
"""

import logging
import signal
import threading

from cheroot import wsgi as cheroot_wsgi
from oslo_config import cfg

from common import config
from common import gc_tuning

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


# Connections a server keeps alive between requests.
KEEP_ALIVE_CONNECTIONS = 512


def make_server(app, host, port, threads, name):
    """A cheroot server for ``app``, not yet bound."""
    server = cheroot_wsgi.Server(
        (host, port), app, numthreads=threads, server_name=name,
        # NOTE: cheroot's default listen backlog of 5 resets connections
        # when a burst of clients (a scheduler fleet, a benchmark's boots)
        # connects at once.
        request_queue_size=128)
    # NOTE: long keep-alive connections from many clients must not pin
    # every thread; cheroot hands idle connections back to its selector.
    server.timeout = 60
    # NOTE: cheroot keeps at most 10 connections alive by default and
    # closes every other one after its answer: a scheduler's and an
    # agent's many threads then reconnected for most requests (a tenth of
    # a scheduler's time in the e2e bench). Idle ones cost a descriptor.
    server.keep_alive_conn_limit = KEEP_ALIVE_CONNECTIONS
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
    conf = config.parse_args(argv, cli_opts=cli_opts(group))
    config.setup_logging(name)
    app = build(conf)
    gc_tuning.settle()
    options = conf[group]
    host = conf.listen_host or options.bind_host
    port = conf.port if conf.port is not None else options.bind_port
    server = make_server(app, host, port, options.threads, name)
    return serve(server, name)
