# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Start every Berth service in this process, in the order they need.

The set-up follows what an operator does on a fresh deployment (see
doc/install-three-hosts.md): api schema, placement schema, cell0 and cell1
mappings, cell schemas; then placement, the RPC services and the API; then
the compute hosts are discovered (mapped into cell1) and the command waits
until placement knows every one of them. Each service is the same code its
own binary runs: the RPC services are :class:`common.service.Service`
objects under one :class:`common.service.ServiceLauncher`, the two APIs are
their WSGI applications on threaded cheroot servers.
"""

import logging
import threading
import time

from common import context as berth_context
from common.placement import client as placement_client
from common.placement import microversions
from common import rpc
from common import service
from common.wsgi import server as wsgi_server
from services.allinone import cells_setup
from services.allinone import decisions
from services.allinone import state as state_mod
from services.api import deploy as api_deploy
from services.compute import cmd as compute_cmd
from services.conductor import cmd as conductor_cmd
from services.placement import server as placement_server
from services.scheduler import manager as scheduler_manager
from services.scheduler import rpcapi as scheduler_rpcapi

LOG = logging.getLogger(__name__)

LISTEN_HOST = '127.0.0.1'
HTTP_THREADS = 16
READY_TIMEOUT = 60
POLL_INTERVAL = 0.2


class StartupError(Exception):
    """The all-in-one could not get ready; the message says what is wrong."""


class HTTPServer(object):
    """One WSGI application on a threaded cheroot server, in a thread.

    :param limits: the request limits
        (:class:`common.wsgi.connections.Limits`; their defaults if None).
    """

    def __init__(self, name, app, host, port, threads=HTTP_THREADS,
                 limits=None):
        self.name = name
        # NOTE: the same server as berth-api's and berth-placement-api's,
        # with the same bounds on idle and slow clients.
        self._server = wsgi_server.make_server(app, host, port, threads,
                                               name, limits)
        self._thread = None

    def start(self):
        """Bind and serve; returns the URL (the real port if 0 was asked)."""
        self._server.prepare()
        self._thread = threading.Thread(target=self._server.serve,
                                        name=self.name, daemon=True)
        self._thread.start()
        return self.url

    @property
    def url(self):
        """``http://host:port`` of the bound socket."""
        host, port = self._server.bind_addr[:2]
        return 'http://%s:%d' % (host, port)

    def stop(self):
        """Stop accepting, finish the requests in progress."""
        self._server.stop()
        if self._thread is not None:
            self._thread.join(10)


class AllInOne(object):
    """Every service of a Berth deployment, in this process.

    :param conf: the parsed ConfigOpts (defaults from :mod:`state`).
    :param state: the :class:`~services.allinone.state.StateDir`.
    :param hosts: the simulated compute hosts to wait for.
    """

    def __init__(self, conf, state, hosts, api_port, placement_port,
                 listen_host=LISTEN_HOST):
        self.conf = conf
        self.state = state
        self.hosts = hosts
        self.api_port = api_port
        self.placement_port = placement_port
        self.listen_host = listen_host
        self.journal = decisions.DecisionJournal()
        self.launcher = None
        self.placement_server = None
        self.api_server = None
        self.compute_services = []
        self.timings = {}

    def _timed(self, phase, func, *args):
        started = time.monotonic()
        try:
            return func(*args)
        finally:
            self.timings[phase] = time.monotonic() - started
            LOG.info('%s took %.2fs', phase, self.timings[phase])

    # --- start-up ---------------------------------------------------------

    def start(self, timeout=READY_TIMEOUT, progress=None):
        """Databases, services, host discovery; returns once ready.

        :param progress: called with each step's name as it begins.
        :raises StartupError: a step failed or did not finish in time.
        """
        for phase, func, args in (
                ('databases', self.setup_databases, ()),
                ('placement', self.start_placement, ()),
                ('rpc services', self.start_rpc_services, ()),
                ('api', self.start_api, ()),
                ('hosts', self.wait_for_hosts, (timeout,))):
            if progress is not None:
                progress(phase)
            self._timed(phase, func, *args)
        return self

    def setup_databases(self):
        """Schemas of the api and cell databases, cell0/cell1 mappings."""
        ctxt = berth_context.get_admin_context()
        cells_setup.sync_api(self.conf)
        cells_setup.ensure_cells(ctxt, self.conf,
                                 state_mod.cell0_url(self.conf, self.state))
        cells_setup.sync_cells(self.conf)

    def start_placement(self):
        """Placement first: every other service reports to it."""
        app = placement_server.build_application(self.conf)
        self.placement_server = HTTPServer(
            'berth-placement-api', app, self.listen_host,
            self.placement_port,
            threads=self.conf.placement_api.threads,
            limits=wsgi_server.limits_from(self.conf.placement_api,
                                           'placement_api'))
        url = self.placement_server.start()
        state_mod.use_placement(self.conf, url)
        LOG.info('Placement serving on %s', url)

    def _services(self):
        """The RPC services, conductor first (computes join through it).

        NOTE: the launcher stops them in the reverse order: the computes
        (whose heartbeats and records go through the conductor) first.
        """
        scheduler = scheduler_manager.SchedulerManager()
        # NOTE: keep the explanation of every decision for the demo.
        scheduler.scheduler = decisions.RecordingScheduler(
            scheduler.scheduler, self.journal)
        services = [
            conductor_cmd.build_service(),
            service.Service('berth-scheduler', scheduler_rpcapi.RPC_TOPIC,
                            scheduler),
        ]
        self.compute_services = list(compute_cmd.build_services(self.conf))
        return services + self.compute_services

    def compute_hosts(self):
        """Every simulated host, in the driver's order."""
        return [host for svc in self.compute_services for host in svc.hosts]

    def start_rpc_services(self):
        """Conductor, scheduler and the computes, one launcher for all."""
        if not rpc.initialized():
            rpc.init(self.conf)
        self.launcher = service.ServiceLauncher(self.conf)
        for svc in self._services():
            self.launcher.launch_service(svc)

    def start_api(self):
        """The compute API, last: a ready API means a ready cloud."""
        app = api_deploy.loadapp(self.conf)
        self.api_server = HTTPServer('berth-api', app, self.listen_host,
                                     self.api_port,
                                     threads=self.conf.api.threads,
                                     limits=wsgi_server.limits_from(
                                         self.conf.api, 'api'))
        url = self.api_server.start()
        state_mod.use_compute_api(self.conf, url + '/v2.1')
        LOG.info('API serving on %s', url)

    def wait_for_hosts(self, timeout=READY_TIMEOUT):
        """Map every simulated host into cell1 and see it in placement.

        :raises StartupError: not every host is there within ``timeout``.
        """
        ctxt = berth_context.get_admin_context()
        client = placement_client.PlacementClient(self.conf)
        hosts = set(self.compute_hosts())
        deadline = time.monotonic() + timeout
        while True:
            mapped = hosts.intersection(cells_setup.discover_hosts(ctxt))
            nodes = cells_setup.compute_nodes(ctxt, hosts)
            reported = set(nodes) & self._placement_providers(client)
            if (mapped == hosts and set(nodes.values()) == hosts
                    and len(reported) == len(nodes)):
                return
            if time.monotonic() >= deadline:
                raise StartupError(
                    '%d of %d hosts mapped to cell1, %d of %d compute nodes '
                    'in placement after %ds; see %s' % (
                        len(mapped), len(hosts), len(reported), len(nodes),
                        timeout, self.conf.log_file or 'the log'))
            time.sleep(POLL_INTERVAL)

    @staticmethod
    def _placement_providers(client):
        """The uuids of the resource providers placement has."""
        resp = client.list_providers(
            None, version=microversions.PROVIDER_LISTING)
        if not resp.ok:
            return set()
        return {rp['uuid'] for rp in resp.body['resource_providers']}

    # --- the endpoints ----------------------------------------------------

    @property
    def api_url(self):
        """The compute API's base URL."""
        return self.api_server.url if self.api_server else None

    @property
    def placement_url(self):
        """The placement API's base URL."""
        return self.placement_server.url if self.placement_server else None

    # --- shut-down ----------------------------------------------------------

    def wait(self, stop=None):
        """Serve until SIGTERM/SIGINT, then stop; returns the exit status.

        :param stop: what stops everything (default :meth:`stop`).
        """
        return self.launcher.wait(stop=stop or self.stop)

    def stop(self, progress=None):
        """Stop consumers before their providers, each drained first.

        The API (it calls the conductor, the scheduler and placement),
        then the computes, the scheduler and the conductor (the launcher
        stops them in the reverse of their start order), then placement,
        which all of them report to.

        :param progress: called with each step's name as it begins.
        """
        def step(name):
            if progress is not None:
                progress(name)
        if self.api_server is not None:
            step('api')
            self._timed('stop api', self.api_server.stop)
            self.api_server = None
        if self.launcher is not None:
            self._timed('stop rpc services', self.launcher.stop,
                        lambda svc: step(svc.binary.replace('berth-', '')))
        self.launcher = None
        if self.placement_server is not None:
            step('placement')
            self._timed('stop placement', self.placement_server.stop)
            self.placement_server = None
        self._timed('stop transports', rpc.cleanup)
