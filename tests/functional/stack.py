# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A whole Berth deployment, one OS process per service, for tests.

Every service runs exactly as its systemd unit runs it: the installed
console script with ``--config-file`` and nothing else. The stack has an
api, a cell0, a cell1 and a placement database on the chosen server
(MariaDB or PostgreSQL), a RabbitMQ virtual host of its own, and the
processes ``berth-placement-api``, ``berth-api``, ``berth-scheduler``,
``berth-conductor`` and one ``berth-compute`` whose fake driver simulates
``hosts`` hosts::

    stack = Stack(make_database, hosts=4)
    stack.setup()                 # databases, vhost, syncs, cells
    stack.start()                 # every service; hosts discovered
    server = stack.compute.create_server('vm1', flavor_id, image_id)
    stack.compute.wait_for_server(server['id'], 'ACTIVE')
    stack.restart('berth-conductor')
    stack.stop()

Nothing here imports pytest; a missing server raises
:class:`scheduler_env.EnvironmentUnavailable`.
"""

from concurrent import futures
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time

import httpx

from tests.functional import placement_server
from tests.functional import scheduler_env

LOG = logging.getLogger(__name__)

EnvironmentFailure = scheduler_env.EnvironmentFailure
START_TIMEOUT = 90
STOP_TIMEOUT = 60
COMPUTE_VERSION = 'compute 2.79'
# NOTE: the order services start in: placement before anything that reports
# to it, the conductor before the computes (which join through it), the
# API last so that a ready API means a ready stack.
RPC_SERVICES = ('berth-scheduler', 'berth-conductor', 'berth-compute')
FIRST_TO_STOP = ('berth-api', 'berth-compute')


class ServiceProcess(object):
    """One console script run as ``<binary> --config-file F [args]``."""

    def __init__(self, binary, conf_file, workdir, args=()):
        self.binary = binary
        self.conf_file = conf_file
        self.args = list(args)
        self.out_file = os.path.join(workdir, '%s.out' % binary)
        self.proc = None

    def start(self):
        """Start the process in a session of its own."""
        path = placement_server.bin_path(self.binary)
        if path is None:
            raise EnvironmentFailure('%s is not installed (pip install -e .)'
                                     % self.binary)
        with open(self.out_file, 'a') as out:
            self.proc = subprocess.Popen(
                [path, '--config-file', self.conf_file] + self.args,
                stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        return self

    def alive(self):
        """True while the process runs."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Send ``sig``; SIGKILL the group if it lingers past ``timeout``.

        :returns: the exit code, or None when it had to be killed.
        """
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            LOG.warning('%s ignored signal %s for %ds', self.binary, sig,
                        timeout)
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return None

    def log_tail(self, lines=60):
        """The end of the process's output, for failure messages."""
        try:
            with open(self.out_file) as f:
                return ''.join(f.readlines()[-lines:])
        except OSError:
            return ''


class ComputeClient(object):
    """The compute API as a user sees it (noauth2, admin by default)."""

    def __init__(self, url, token='admin'):
        self.url = url
        self.http = httpx.Client(
            base_url=url + '/v2.1', timeout=30,
            headers={'x-auth-token': token,
                     'openstack-api-version': COMPUTE_VERSION,
                     'accept': 'application/json'})

    def request(self, method, path, body=None, expect=(200, 201, 202, 204)):
        """One call; the decoded body (None when empty).

        :raises EnvironmentFailure: for an unexpected status.
        """
        resp = self.http.request(method, path, json=body)
        if resp.status_code not in expect:
            raise EnvironmentFailure('%s %s answered %d: %s' % (
                method, path, resp.status_code, resp.text[:800]))
        return resp.json() if resp.content else None

    def create_flavor(self, name, vcpus=1, ram=512, disk=1,
                      extra_specs=None):
        """A public flavor (with extra specs); returns its id."""
        flavor = self.request('POST', '/flavors', {'flavor': {
            'name': name, 'vcpus': vcpus, 'ram': ram, 'disk': disk}})
        flavor_id = flavor['flavor']['id']
        if extra_specs:
            self.request('POST', '/flavors/%s/os-extra_specs' % flavor_id,
                         {'extra_specs': extra_specs})
        return flavor_id

    def create_image(self, name, properties=None):
        """An image in the built-in catalog; returns its id."""
        body = {'name': name, 'disk_format': 'raw',
                'container_format': 'bare'}
        body.update(properties or {})
        resp = httpx.post(self.url + '/image/v2/images', json=body,
                          headers={'x-auth-token': 'admin'}, timeout=30)
        if resp.status_code != 201:
            raise EnvironmentFailure('image create answered %d: %s' % (
                resp.status_code, resp.text[:500]))
        return resp.json()['id']

    def create_aggregate(self, name, hosts, metadata=None, zone=None):
        """An aggregate with hosts, metadata and optionally a zone."""
        body = {'name': name}
        if zone:
            body['availability_zone'] = zone
        aggregate = self.request('POST', '/os-aggregates',
                                 {'aggregate': body})['aggregate']
        for host in hosts:
            self.request('POST', '/os-aggregates/%s/action' % aggregate['id'],
                         {'add_host': {'host': host}})
        if metadata:
            self.request('POST', '/os-aggregates/%s/action' % aggregate['id'],
                         {'set_metadata': {'metadata': metadata}})
        return aggregate

    def create_server_group(self, name, policy, rules=None):
        """A server group; returns its id."""
        body = {'name': name, 'policy': policy}
        if rules:
            body['rules'] = rules
        return self.request('POST', '/os-server-groups',
                            {'server_group': body})['server_group']['id']

    def create_server(self, name, flavor_id, image_id, zone=None,
                      hints=None, min_count=1, max_count=None):
        """POST /servers; returns the response body's ``server``.

        A multi-create asks for the reservation id instead, as Nova
        answers then: the result is ``{'reservation_id': ...}``.
        """
        server = {'name': name, 'flavorRef': flavor_id,
                  'imageRef': image_id, 'networks': 'none',
                  'min_count': min_count,
                  'max_count': max_count or min_count}
        if zone:
            server['availability_zone'] = zone
        body = {'server': server}
        if hints:
            body['os:scheduler_hints'] = hints
        if server['max_count'] > 1:
            server['return_reservation_id'] = True
            return self.request('POST', '/servers', body)
        return self.request('POST', '/servers', body)['server']

    def servers(self, **filters):
        """Detailed list of servers (the filters as query parameters)."""
        resp = self.http.get('/servers/detail', params=filters)
        if resp.status_code != 200:
            raise EnvironmentFailure('server list answered %d: %s'
                                     % (resp.status_code, resp.text[:500]))
        return resp.json()['servers']

    def get_server(self, server_id):
        """The server, or None once it is gone (404)."""
        resp = self.http.get('/servers/%s' % server_id)
        if resp.status_code == 404:
            return None
        if resp.status_code != 200:
            raise EnvironmentFailure('server show answered %d: %s'
                                     % (resp.status_code, resp.text[:500]))
        return resp.json()['server']

    def wait_for_server(self, server_id, statuses=('ACTIVE', 'ERROR'),
                        timeout=120):
        """Poll until the server's status is one of ``statuses``.

        :returns: the server.
        :raises EnvironmentFailure: on timeout.
        """
        if isinstance(statuses, str):
            statuses = (statuses,)
        deadline = time.monotonic() + timeout
        server = None
        while time.monotonic() < deadline:
            server = self.get_server(server_id)
            if server is not None and server['status'] in statuses:
                return server
            time.sleep(0.3)
        raise EnvironmentFailure('server %s not %s within %ds: %s' % (
            server_id, '/'.join(statuses), timeout, server))

    def delete_server(self, server_id, wait=True, timeout=120):
        """DELETE the server; with ``wait``, until it is gone."""
        self.request('DELETE', '/servers/%s' % server_id, expect=(204,))
        if wait:
            self.wait_until_gone(server_id, timeout)

    def wait_until_gone(self, server_id, timeout=120):
        """Poll until showing the server answers 404."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.get_server(server_id) is None:
                return
            time.sleep(0.3)
        raise EnvironmentFailure('server %s still there after %ds'
                                 % (server_id, timeout))

    def close(self):
        """Close the HTTP connections."""
        self.http.close()


def host_of(server):
    """The host a server landed on (admin view)."""
    return server.get('OS-EXT-SRV-ATTR:host')


class Stack(object):
    """A full deployment; see the module docstring."""

    # The token of the admin clients (noauth2's; a real one with Keystone).
    admin_token = 'admin'

    def __init__(self, make_database, hosts=4, kind=None, workdir=None,
                 rabbit_url=scheduler_env.RABBIT_URL, extra_conf=None):
        """
        :param make_database: ``make_database()`` -> the URL of a new empty
            database; whoever provides it drops the databases.
        :param hosts: hosts the fake compute driver simulates.
        :param extra_conf: {(group, option): value} for the config file.
        """
        self.make_database = make_database
        self.hosts = hosts
        self.kind = kind or scheduler_env.db_kind()
        self.workdir = workdir or tempfile.mkdtemp(prefix='berth-stack-')
        self.rabbit_url = rabbit_url
        self.extra_conf = dict(extra_conf or {})
        self.conf_file = os.path.join(self.workdir, 'berth.conf')
        self.urls = {}
        self.vhost = None
        self.api_port, self.placement_port = placement_server.free_ports(2)
        self.api_url = 'http://127.0.0.1:%d' % self.api_port
        self.placement_url = 'http://127.0.0.1:%d' % self.placement_port
        self.processes = {}
        self.compute = None
        self.placement = None

    # --- set-up -----------------------------------------------------------

    def host_names(self):
        """The names of the simulated hosts, as the fake driver makes them."""
        return ['stack-host%d' % i for i in range(self.hosts)]

    def setup(self):
        """Databases, virtual host, config file, schemas and cells."""
        for name in ('api', 'cell0', 'cell1', 'placement'):
            self.urls[name] = self.make_database()
        self.vhost = scheduler_env.RabbitVhost(self.rabbit_url)
        self.vhost.create()
        self._write_conf()
        self.manage_many(
            ['api_db', 'sync'],
            ['placement', 'db', 'sync'],
            ['cell_v2', 'map_cell0',
             '--database_connection', self.urls['cell0']],
            ['cell_v2', 'create_cell', '--name', 'cell1',
             '--transport-url', self.vhost.url,
             '--database_connection', self.urls['cell1']],
            ['db', 'sync'])
        return self

    def _conf_groups(self):
        return {
            'DEFAULT': {
                'transport_url': self.vhost.url,
                'rpc_response_timeout': 60,
                'report_interval': 2,
                'service_down_time': 10,
                'debug': False,
            },
            'api': {'auth_strategy': 'noauth2'},
            'api_database': {'connection': self.urls['api']},
            'database': {'connection': self.urls['cell1']},
            'placement_database': {'connection': self.urls['placement']},
            'oslo_policy': {'enforce_new_defaults': False},
            'placement': {'auth_type': 'admin_token', 'token': 'admin',
                          'endpoint': self.placement_url,
                          'endpoint_override': self.placement_url},
            # NOTE: berth-manage host drain moves servers through the API.
            'compute_api': {'auth_type': 'admin_token',
                            'token': self.admin_token,
                            'endpoint_override': self.api_url + '/v2.1'},
            'oslo_messaging_rabbit': {'amqp_durable_queues': True},
            'scheduler': {'workers': 1,
                          'discover_hosts_in_cells_interval': 2},
            'conductor': {'workers': 1},
            # NOTE: tests boot more than a new project's default quota.
            'quota': {'instances': -1, 'cores': -1, 'ram': -1},
            'compute': {'compute_driver': 'fake'},
            'fake_driver': {'host_count': self.hosts,
                            'host_name_pattern': 'stack-host{index}'},
        }

    def _write_conf(self):
        groups = self._conf_groups()
        for (group, name), value in self.extra_conf.items():
            groups.setdefault(group, {})[name] = value
        lines = []
        for group, options in groups.items():
            lines.append('[%s]' % group)
            lines.extend('%s = %s' % item for item in options.items())
        with open(self.conf_file, 'w') as f:
            f.write('\n'.join(lines) + '\n')

    def manage(self, *args, timeout=300):
        """Run ``berth-manage --config-file F args``; returns stdout."""
        result = subprocess.run(
            [sys.executable, '-m', 'services.manage.main',
             '--config-file', self.conf_file] + list(args),
            capture_output=True, text=True, timeout=timeout)
        if result.returncode:
            raise EnvironmentFailure('berth-manage %s failed (%d):\n%s%s' % (
                ' '.join(args), result.returncode, result.stdout[-2000:],
                result.stderr[-3000:]))
        return result.stdout

    def manage_many(self, *commands, timeout=300):
        """Run berth-manage ``commands`` (argument lists) in order, in
        one process (tests/functional/manage_many.py).
        """
        result = subprocess.run(
            [sys.executable, '-m', 'tests.functional.manage_many',
             self.conf_file, json.dumps([list(c) for c in commands])],
            capture_output=True, text=True, timeout=timeout)
        if result.returncode:
            raise EnvironmentFailure('berth-manage failed (%d):\n%s%s' % (
                result.returncode, result.stdout[-2000:],
                result.stderr[-3000:]))
        return result.stdout

    # --- processes --------------------------------------------------------

    def _process(self, binary):
        if binary not in self.processes:
            args = ()
            if binary == 'berth-api':
                args = ('--host', '127.0.0.1', '--port', str(self.api_port))
            elif binary == 'berth-placement-api':
                args = ('--host', '127.0.0.1',
                        '--port', str(self.placement_port))
            self.processes[binary] = ServiceProcess(
                binary, self.conf_file, self.workdir, args)
        return self.processes[binary]

    def start(self):
        """Start every service; return once the API lists every host."""
        self.start_service('berth-placement-api')
        self.placement = scheduler_env.Placement(self.placement_url,
                                                 self.admin_token)
        for binary in RPC_SERVICES:
            self.start_service(binary)
        self.start_service('berth-api')
        self.compute = ComputeClient(self.api_url, self.admin_token)
        self.wait_for_hosts()
        return self

    def start_service(self, binary):
        """Start one service (again); HTTP services are waited for."""
        process = self._process(binary).start()
        if binary in ('berth-api', 'berth-placement-api'):
            url = (self.api_url if binary == 'berth-api'
                   else self.placement_url)
            self._wait_http(process, url)
        return process

    def _wait_http(self, process, url):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if not process.alive():
                raise EnvironmentFailure('%s exited:\n%s' % (
                    process.binary, process.log_tail()))
            try:
                httpx.get(url + '/', timeout=2)
                return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise EnvironmentFailure('%s did not answer within %ds:\n%s' % (
            process.binary, START_TIMEOUT, process.log_tail()))

    def wait_for_hosts(self, timeout=START_TIMEOUT):
        """Wait until every simulated host is an up, mapped hypervisor."""
        wanted = set(self.host_names())
        deadline = time.monotonic() + timeout
        seen = set()
        while time.monotonic() < deadline:
            hypervisors = self.compute.request(
                'GET', '/os-hypervisors/detail')['hypervisors']
            seen = {h['service']['host'] for h in hypervisors
                    if h.get('state') == 'up'}
            if wanted <= seen:
                return
            self._check_alive()
            time.sleep(0.5)
        raise EnvironmentFailure('hosts %s not up within %ds:\n%s' % (
            sorted(wanted - seen), timeout, self.log_tails()))

    def wait_for_hosts_down(self, timeout=START_TIMEOUT):
        """Wait until the API shows every simulated host down."""
        deadline = time.monotonic() + timeout
        up = set()
        while time.monotonic() < deadline:
            hypervisors = self.compute.request(
                'GET', '/os-hypervisors/detail')['hypervisors']
            up = {h['service']['host'] for h in hypervisors
                  if h.get('state') == 'up'}
            if not up & set(self.host_names()):
                return
            time.sleep(0.5)
        raise EnvironmentFailure('hosts %s still up after %ds'
                                 % (sorted(up), timeout))

    def _check_alive(self):
        for process in self.processes.values():
            if process.proc is not None and not process.alive():
                raise EnvironmentFailure('%s exited:\n%s' % (
                    process.binary, process.log_tail()))

    def stop_service(self, binary, sig=signal.SIGTERM):
        """Stop one service; returns its exit code (None if killed)."""
        return self._process(binary).stop(sig)

    def restart(self, binary):
        """SIGTERM one service, then start it again."""
        code = self.stop_service(binary)
        self.start_service(binary)
        return code

    def log_tails(self):
        """The end of every service's output."""
        return '\n'.join('--- %s ---\n%s' % (name, p.log_tail())
                         for name, p in self.processes.items())

    def stop(self):
        """Stop every service and delete the virtual host.

        The API and the computes stop first, one by one (a stopping compute
        still reports through the conductor); the rest have nothing left
        to finish and stop together.
        """
        order = list(reversed(list(self.processes)))
        first = [b for b in order if b in FIRST_TO_STOP]
        for binary in first:
            self.processes[binary].stop()
        rest = [self.processes[b] for b in order if b not in first]
        if rest:
            with futures.ThreadPoolExecutor(len(rest)) as pool:
                list(pool.map(lambda process: process.stop(), rest))
        for client in (self.compute, self.placement):
            if client is not None:
                client.close()
        if self.vhost is not None:
            self.vhost.delete()


@contextlib.contextmanager
def running_stack(make_database, **kwargs):
    """A set-up and started :class:`Stack`, stopped on exit."""
    stack = Stack(make_database, **kwargs)
    try:
        stack.setup()
        stack.start()
        yield stack
    finally:
        stack.stop()
