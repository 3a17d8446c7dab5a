# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Real databases and real placement servers for the functional tests.

Each test session creates its own databases (``berth_func_<random>``) on
the MariaDB and PostgreSQL servers and drops them at the end. The servers
are found at ``BERTH_TEST_MYSQL_URL`` / ``BERTH_TEST_POSTGRESQL_URL``
(SQLAlchemy URLs without a database name; defaults: the local servers
with root / postgres and no password).

An unreachable server skips its tests on a developer's machine, with the
reason; in CI (``CI=true``) it fails them, so a broken CI machine can never
pass by running nothing.
"""

import os
import tempfile
import uuid

import pytest
import sqlalchemy as sa

from tests.functional import placement_server as placement_server_mod
from tests.functional import skips

SERVER_URLS = {
    'mysql': os.environ.get('BERTH_TEST_MYSQL_URL',
                            'mysql+pymysql://root@127.0.0.1:3306'),
    'postgresql': os.environ.get('BERTH_TEST_POSTGRESQL_URL',
                                 'postgresql+psycopg2://postgres@127.0.0.1'
                                 ':5432'),
}
# NOTE: the database a server-level connection opens, to create others.
_ADMIN_DB = {'mysql': '', 'postgresql': 'postgres'}
_URL_SUFFIX = {'mysql': '?charset=utf8mb4', 'postgresql': ''}


ADMIN_HEADERS = {
    'x-auth-token': 'admin',
    'openstack-api-version': 'placement latest',
    'accept': 'application/json',
}


class DatabaseServer(object):
    """One MariaDB or PostgreSQL server: creates and drops databases."""

    def __init__(self, kind):
        self.kind = kind
        self.base_url = SERVER_URLS[kind].rstrip('/')
        self.engine = sa.create_engine(
            '%s/%s' % (self.base_url, _ADMIN_DB[kind]),
            isolation_level='AUTOCOMMIT', poolclass=sa.pool.NullPool,
            connect_args={'connect_timeout': 5})
        self.created = []

    def check(self):
        """Raise if the server does not accept a connection."""
        with self.engine.connect() as conn:
            conn.execute(sa.text('SELECT 1'))

    def create(self):
        """A new empty database; returns its SQLAlchemy URL."""
        name = 'berth_func_%s' % uuid.uuid4().hex[:12]
        with self.engine.connect() as conn:
            if self.kind == 'mysql':
                conn.execute(sa.text(
                    'CREATE DATABASE %s CHARACTER SET utf8mb4' % name))
            else:
                conn.execute(sa.text('CREATE DATABASE %s' % name))
        self.created.append(name)
        return '%s/%s%s' % (self.base_url, name, _URL_SUFFIX[self.kind])

    def drop_all(self):
        """Drop every database this object created."""
        with self.engine.connect() as conn:
            for name in self.created:
                if self.kind == 'postgresql':
                    # NOTE: a server that was killed may leave sessions.
                    conn.execute(sa.text(
                        'DROP DATABASE IF EXISTS %s WITH (FORCE)' % name))
                else:
                    conn.execute(sa.text('DROP DATABASE IF EXISTS %s'
                                         % name))
        self.created = []
        self.engine.dispose()


@pytest.fixture(scope='session')
def database_servers():
    """Lazily connected database servers, cleaned up at session end."""
    servers = {}
    yield servers
    for server in servers.values():
        server.drop_all()


@pytest.fixture(params=['mysql', 'postgresql'])
def real_backend(request):
    """The name of a real database backend ("mysql", "postgresql")."""
    return request.param


@pytest.fixture(params=['sqlite', 'mysql', 'postgresql'])
def any_backend(request):
    """Each backend, SQLite included."""
    return request.param


@pytest.fixture
def make_database(database_servers, tmp_path):
    """Factory: ``make_database(kind)`` -> URL of a fresh empty database."""
    def _make(kind):
        if kind == 'sqlite':
            return 'sqlite:///%s' % (tmp_path / ('%s.sqlite'
                                                 % uuid.uuid4().hex))
        if kind not in database_servers:
            server = DatabaseServer(kind)
            try:
                server.check()
            except Exception as exc:
                skips.unavailable('%s server at %s is unreachable: %s'
                                  % (kind, server.base_url,
                                     str(exc).splitlines()[0]))
            database_servers[kind] = server
        return database_servers[kind].create()
    return _make


@pytest.fixture
def placement_server(make_database):
    """Factory: ``placement_server(kind)`` -> a started PlacementServer."""
    workdir = tempfile.mkdtemp(prefix='berth-func-')
    servers = []

    def _start(kind, extra_conf=''):
        server = placement_server_mod.PlacementServer(
            make_database(kind), workdir, extra_conf)
        servers.append(server)
        try:
            return server.start()
        except placement_server_mod.ServerError as exc:
            pytest.fail(str(exc))

    yield _start
    for server in servers:
        server.stop()
