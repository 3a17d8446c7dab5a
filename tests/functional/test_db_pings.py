# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Pooled MariaDB connections are pinged only after sitting idle.

oslo.db's pre-ping sent a COM_PING on every checkout; Berth pings a
connection only when it was unused for ``PING_IDLE_AFTER`` seconds
(common/db/api.py), and must still replace one the server dropped. The
connection's own ``Com_admin_commands`` counter (where MariaDB counts
pings) tells what was sent.
"""

import pytest
import sqlalchemy as sa

from common.db import api as db_api
from tests.functional import single_connection
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional.placement.conftest import make_database  # noqa


class _Clock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = _Clock()
    original = db_api._ping_idle_connections
    monkeypatch.setattr(db_api, '_ping_idle_connections',
                        lambda engine: original(engine, clock=clock))
    return clock


def test_only_idle_connections_are_pinged(make_database, clock):  # noqa
    database = single_connection.database(make_database('mysql'), 'pings')

    @database.reader
    def pings(ctxt):
        return int(ctxt.session.execute(sa.text(
            "SHOW SESSION STATUS LIKE 'Com_admin_commands'")).one()[1])

    before = pings(single_connection.Context())
    for _ in range(5):
        clock.now += db_api.PING_IDLE_AFTER / 2
        pings(single_connection.Context())
    assert pings(single_connection.Context()) == before

    clock.now += db_api.PING_IDLE_AFTER + 1
    assert pings(single_connection.Context()) == before + 1


def test_a_dropped_idle_connection_is_replaced(make_database, clock):  # noqa
    database = single_connection.database(make_database('mysql'), 'pings')

    @database.reader
    def connection_id(ctxt):
        return ctxt.session.execute(sa.text(
            'SELECT CONNECTION_ID()')).scalar()

    first = connection_id(single_connection.Context())
    other = sa.create_engine(database.connection,
                             poolclass=sa.pool.NullPool)
    with other.connect() as connection:
        connection.execute(sa.text('KILL %d' % first))
    other.dispose()

    clock.now += db_api.PING_IDLE_AFTER + 1
    second = connection_id(single_connection.Context())
    assert second != first
