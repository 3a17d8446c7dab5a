# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Returning a pooled MariaDB connection: a rollback only when needed,
and no yield.

The pool used to send a ROLLBACK for every connection it took back, even
right after the Session's own COMMIT or ROLLBACK. Berth skips that one
(common/db/api.py) but must still end a transaction left open. The
connection's own ``Com_rollback`` counter tells what was sent.
"""

from oslo_db.sqlalchemy import engines as oslo_engines
import sqlalchemy as sa
from sqlalchemy import event

from tests.functional import single_connection
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional.placement.conftest import make_database  # noqa


def test_only_open_transactions_are_rolled_back(make_database):  # noqa
    database = single_connection.database(make_database('mysql'), 'rollbacks')

    @database.writer
    def create(ctxt):
        ctxt.session.execute(sa.text(
            'CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)'))

    @database.writer
    def insert(ctxt, value):
        ctxt.session.execute(sa.text('INSERT INTO t VALUES (:v, :v)'),
                             {'v': value})

    @database.reader
    def rollbacks(ctxt):
        return int(ctxt.session.execute(sa.text(
            "SHOW SESSION STATUS LIKE 'Com_rollback'")).one()[1])

    @database.reader
    def count(ctxt):
        return ctxt.session.execute(sa.text(
            'SELECT COUNT(*) FROM t')).scalar()

    create(single_connection.Context())
    before = rollbacks(single_connection.Context())
    for value in range(5):
        insert(single_connection.Context(), value)
        assert count(single_connection.Context()) == value + 1
    # NOTE: 5 reads end with their own ROLLBACK (and the reader above
    # with one more); the 5 commits and the 6 returns to the pool add none.
    assert rollbacks(single_connection.Context()) - before == 6

    # A connection handed back with its transaction open is still ended:
    # the next transaction must see a row another connection committed.
    engine = database.engine()
    raw = engine.raw_connection()
    cursor = raw.cursor()
    cursor.execute('SELECT COUNT(*) FROM t')
    assert cursor.fetchone()[0] == 5
    cursor.close()
    raw.close()
    other = sa.create_engine(database.connection,
                             poolclass=sa.pool.NullPool)
    with other.begin() as connection:
        connection.execute(sa.text('INSERT INTO t VALUES (99, 99)'))
    other.dispose()
    assert count(single_connection.Context()) == 6


def test_no_sleep_at_check_in(make_database):  # noqa
    """oslo.db's sleep(0) at check-in is for eventlet only: with native
    threads it hands the GIL away once more per transaction.
    """
    database = single_connection.database(make_database('mysql'), 'rollbacks')
    assert not event.contains(database.engine(), 'checkin',
                              oslo_engines._thread_yield)
