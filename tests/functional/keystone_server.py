# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A real Keystone from PyPI, in a private venv, on SQLite, for tests.

Keystone pins its own oslo, SQLAlchemy and Flask versions, so it never goes
into Berth's environment: :func:`ensure_venv` builds a venv of its own
(``$BERTH_TEST_KEYSTONE_VENV``, default ``.tox/keystone`` in the
repository, reused by later runs) with the release and cheroot.
:class:`Keystone` writes a ``keystone.conf`` (SQLite, fernet tokens),
runs ``keystone-manage db_sync``, ``fernet_setup``, ``credential_setup``
and ``bootstrap``, serves ``keystone.wsgi.api.application`` with cheroot's
threaded server in a separate process, and offers the few identity calls
a test needs to register services, projects, users and roles::

    venv = ensure_venv()
    keystone = Keystone(venv, workdir).start()
    keystone.service_user('berth', 'secret', roles=('admin', 'service'))
    keystone.stop()

Nothing here imports pytest; an install that fails (PyPI unreachable)
raises :class:`scheduler_env.EnvironmentUnavailable`.
"""

import grp
import os
import pwd
import subprocess
import sys
import time

import httpx

from tests.bench import servers
from tests.functional import placement_server
from tests.functional import scheduler_env

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# NOTE: pinned so that a run is reproducible (the release that installs on
# Python 3.11); override with BERTH_TEST_KEYSTONE_SPEC (a pip requirement).
KEYSTONE_SPEC = 'keystone==30.0.0'
EXTRA_REQUIREMENTS = ['cheroot']
MARKER = 'berth-test-requirements.txt'
INSTALL_TIMEOUT = 600
MANAGE_TIMEOUT = 180
SERVER_THREADS = 8
# NOTE: Keystone's application parses sys.argv as its own command line,
# so the server is started from code with an empty one, not cheroot's CLI.
SERVE = '''
import sys
port, threads = int(sys.argv[1]), int(sys.argv[2])
del sys.argv[1:]
from cheroot import wsgi
from keystone.wsgi import api
wsgi.Server(('127.0.0.1', port), api.application, numthreads=threads,
            max=threads).safe_start()
'''
ADMIN_PASSWORD = 'keystone-admin-secret'
REGION = 'RegionOne'
DOMAIN = 'Default'
# NOTE: Keystone's processes must see none of Berth's import paths.
ISOLATED_ENV = {'PYTHONPATH': None, 'VIRTUAL_ENV': None}


def venv_path():
    """The absolute path of Keystone's private venv."""
    path = os.environ.get('BERTH_TEST_KEYSTONE_VENV', '.tox/keystone')
    return os.path.join(REPO_ROOT, path)


def requirements():
    """The pip requirements installed into Keystone's venv."""
    spec = os.environ.get('BERTH_TEST_KEYSTONE_SPEC', KEYSTONE_SPEC)
    return [spec] + EXTRA_REQUIREMENTS


def _bin(venv, name):
    return os.path.join(venv, 'bin', name)


def _clean_env(extra=None):
    return servers.merge_env(dict(ISOLATED_ENV, **(extra or {})))


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def ensure_venv(venv=None):
    """Create Keystone's venv and install into it, unless already done.

    A marker file records what was installed; a change of requirements
    reinstalls.

    :returns: (venv path, seconds the install took; 0 when reused).
    :raises EnvironmentUnavailable: when pip cannot install (no PyPI).
    """
    venv = venv or venv_path()
    wanted = '\n'.join(requirements()) + '\n'
    marker = os.path.join(venv, MARKER)
    if _read(marker) == wanted:
        return venv, 0.0
    started = time.monotonic()
    try:
        if not os.path.exists(_bin(venv, 'python')):
            # NOTE: run from a venv, -m venv bases the new one on the base
            # interpreter, so nothing of Berth's environment leaks in.
            subprocess.run([sys.executable, '-m', 'venv', venv], check=True,
                           env=_clean_env(), timeout=MANAGE_TIMEOUT,
                           capture_output=True)
        result = subprocess.run(
            [_bin(venv, 'python'), '-m', 'pip', 'install', '-q',
             '--disable-pip-version-check'] + requirements(),
            env=_clean_env(), timeout=INSTALL_TIMEOUT, capture_output=True,
            text=True)
    except subprocess.TimeoutExpired:
        raise scheduler_env.EnvironmentUnavailable(
            'installing %s took over %ds' % (requirements(), INSTALL_TIMEOUT))
    if result.returncode != 0:
        raise scheduler_env.EnvironmentUnavailable(
            'cannot install %s from PyPI into %s:\n%s' % (
                ' '.join(requirements()), venv,
                '\n'.join(result.stderr.strip().splitlines()[-3:])))
    with open(marker, 'w') as f:
        f.write(wanted)
    return venv, time.monotonic() - started


class Keystone(object):
    """One bootstrapped Keystone serving on a free port; see the module."""

    def __init__(self, venv, workdir):
        self.venv = venv
        self.workdir = os.path.join(workdir, 'keystone')
        os.makedirs(self.workdir, exist_ok=True)
        self.port = placement_server.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.auth_url = self.url + '/v3'
        self.conf_file = os.path.join(self.workdir, 'keystone.conf')
        self.server = None
        self.http = None
        self.token = None

    def _write_conf(self):
        servers.write_config(self.conf_file, {
            'DEFAULT': {'debug': False},
            'database': {'connection': 'sqlite:///%s' % os.path.join(
                self.workdir, 'keystone.db')},
            'token': {'provider': 'fernet'},
            'fernet_tokens': {'key_repository': os.path.join(
                self.workdir, 'fernet-keys')},
            'credential': {'key_repository': os.path.join(
                self.workdir, 'credential-keys')},
        })

    def manage(self, *args):
        """``keystone-manage --config-file F args``; returns stdout."""
        result = subprocess.run(
            [_bin(self.venv, 'keystone-manage'), '--config-file',
             self.conf_file] + list(args),
            capture_output=True, text=True, env=_clean_env(),
            timeout=MANAGE_TIMEOUT, cwd=self.workdir)
        if result.returncode != 0:
            raise scheduler_env.EnvironmentFailure(
                'keystone-manage %s failed (%d):\n%s%s' % (
                    ' '.join(args), result.returncode, result.stdout[-2000:],
                    result.stderr[-3000:]))
        return result.stdout

    def bootstrap(self):
        """Schema, key repositories, admin user, region, identity entry."""
        self._write_conf()
        self.manage('db_sync')
        user = pwd.getpwuid(os.getuid()).pw_name
        group = grp.getgrgid(os.getgid()).gr_name
        for setup in ('fernet_setup', 'credential_setup'):
            self.manage(setup, '--keystone-user', user,
                        '--keystone-group', group)
        self.manage('bootstrap', '--bootstrap-password', ADMIN_PASSWORD,
                    '--bootstrap-region-id', REGION,
                    '--bootstrap-admin-url', self.auth_url,
                    '--bootstrap-internal-url', self.auth_url,
                    '--bootstrap-public-url', self.auth_url)
        return self

    def start(self):
        """Bootstrap, serve, and log in as the bootstrap admin."""
        self.bootstrap()
        argv = [_bin(self.venv, 'python'), '-c', SERVE, str(self.port),
                str(SERVER_THREADS)]
        self.server = servers.ServerProcess(
            'keystone', argv, self.url,
            os.path.join(self.workdir, 'keystone.log'),
            env=dict(ISOLATED_ENV, OS_KEYSTONE_CONFIG_FILES=self.conf_file),
            cwd=self.workdir, ready_path='/v3')
        try:
            self.server.start()
        except servers.ServerError as exc:
            raise scheduler_env.EnvironmentFailure(str(exc))
        self.token = self.issue_token('admin', ADMIN_PASSWORD, 'admin')
        self.http = httpx.Client(base_url=self.auth_url, timeout=30,
                                 headers={'x-auth-token': self.token})
        return self

    def issue_token(self, user, password, project):
        """A project-scoped token of ``user`` (password authentication)."""
        body = {'auth': {
            'identity': {'methods': ['password'], 'password': {'user': {
                'name': user, 'password': password,
                'domain': {'name': DOMAIN}}}},
            'scope': {'project': {'name': project,
                                  'domain': {'name': DOMAIN}}}}}
        resp = httpx.post(self.auth_url + '/auth/tokens', json=body,
                          timeout=30)
        if resp.status_code != 201:
            raise scheduler_env.EnvironmentFailure(
                'token for %s in %s answered %d: %s' % (
                    user, project, resp.status_code, resp.text[:500]))
        return resp.headers['x-subject-token']

    def request(self, method, path, body=None, expect=(200, 201, 204)):
        """One admin identity call; the decoded body (None when empty)."""
        resp = self.http.request(method, path, json=body)
        if resp.status_code not in expect:
            raise scheduler_env.EnvironmentFailure(
                'keystone %s %s answered %d: %s' % (
                    method, path, resp.status_code, resp.text[:500]))
        return resp.json() if resp.content else None

    def _find(self, collection, name):
        found = self.request('GET', '/%s?name=%s' % (collection, name))
        return found[collection][0]['id'] if found[collection] else None

    def project(self, name):
        """The id of project ``name``, created in Default if missing."""
        return self._find('projects', name) or self.request(
            'POST', '/projects', {'project': {
                'name': name, 'domain_id': 'default'}})['project']['id']

    def user(self, name, password, project, roles):
        """A user with ``roles`` on ``project``; returns the user's id."""
        project_id = self.project(project)
        user_id = self.request('POST', '/users', {'user': {
            'name': name, 'password': password, 'domain_id': 'default',
            'default_project_id': project_id}})['user']['id']
        for role in roles:
            self.request('PUT', '/projects/%s/users/%s/roles/%s' % (
                project_id, user_id, self._find('roles', role)))
        return user_id

    def endpoint(self, service_type, name, url):
        """A catalog service with public and internal endpoints."""
        service_id = self.request('POST', '/services', {'service': {
            'type': service_type, 'name': name}})['service']['id']
        for interface in ('public', 'internal'):
            self.request('POST', '/endpoints', {'endpoint': {
                'service_id': service_id, 'interface': interface,
                'region_id': REGION, 'url': url}})
        return service_id

    def log_tail(self):
        """The end of Keystone's log, for failure messages."""
        return self.server.log_tail() if self.server else ''

    def stop(self):
        """Stop the server."""
        if self.http is not None:
            self.http.close()
        if self.server is not None:
            self.server.stop()
