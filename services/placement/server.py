# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-placement-api``: serve placement with a threaded HTTP server.

    berth-placement-api --config-file /etc/berth/berth.conf \\
        [--host H] [--port P]
"""

import logging
import signal
import sys
import threading

from cheroot import wsgi as cheroot_wsgi
from oslo_config import cfg

from common import config
from services.placement.db import api as db_api
from services.placement import deploy
from services.placement.objects import catalog

LOG = logging.getLogger(__name__)

CLI_OPTS = [
    # NOTE: dest differs from the name because [DEFAULT] host (the RPC
    # services' host name, common/conf/service.py) is another option.
    cfg.HostAddressOpt('host', dest='listen_host',
                       help='Listen address; overrides '
                            '[placement_api] bind_host.'),
    cfg.PortOpt('port', help='Listen port; overrides [placement_api] '
                             'bind_port.'),
]


def build_application(conf):
    """Configure the database and return the WSGI app.

    With ``[placement_database] sync_on_startup`` the schema is upgraded
    first; otherwise the standard catalogues are only loaded.
    """
    db_api.configure(conf)
    if conf.placement_database.sync_on_startup:
        db_api.sync(conf)
    else:
        catalog.sync_standard_catalogues()
    return deploy.loadapp(conf)


def make_server(conf, app):
    """A cheroot server bound as the config and command line say."""
    host = conf.listen_host or conf.placement_api.bind_host
    port = conf.port if conf.port is not None else (
        conf.placement_api.bind_port)
    server = cheroot_wsgi.Server(
        (host, port), app, numthreads=conf.placement_api.threads,
        server_name='berth-placement-api',
        # NOTE: cheroot's default listen backlog of 5 resets connections
        # when a burst of clients (a scheduler fleet) connects at once.
        request_queue_size=128)
    # NOTE: long keep-alive connections from many clients must not pin
    # every thread; cheroot hands idle connections back to its selector.
    server.timeout = 60
    return server


def main(argv=None):
    """Console-script entry point."""
    conf = config.parse_args(argv, cli_opts=CLI_OPTS)
    config.setup_logging('berth-placement-api')
    app = build_application(conf)
    server = make_server(conf, app)

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
    LOG.info('berth-placement-api serving on http://%s:%s', host, port)
    print('berth-placement-api serving on http://%s:%s' % (host, port),
          flush=True)
    try:
        server.serve()
    finally:
        if stopping:
            stopping[0].join()
        else:
            server.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
