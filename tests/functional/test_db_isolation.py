# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""MariaDB transactions run READ COMMITTED (common/db/api.py).

Under InnoDB's default, REPEATABLE READ, an UPDATE found by an index
locks the gaps beside what it looked at: another transaction's INSERT
into such a gap waits, and moves deadlocked. Berth sets READ COMMITTED on
every connection, the one oslo.db opened before Berth's listeners too:
the Database here has a pool of one connection.
"""

import uuid

import pytest
import sqlalchemy as sa

from tests.functional import single_connection
from tests.functional.placement.conftest import database_servers  # noqa
from tests.functional.placement.conftest import make_database  # noqa


@pytest.fixture
def tables(make_database):  # noqa
    """(Berth Database, a plain engine) on one fresh MariaDB database with
    a table ``t`` (a non-unique index on ``k``) holding k = 10 and 20.
    """
    url = make_database('mysql')
    other = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with other.begin() as connection:
        connection.execute(sa.text(
            'CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, k INT, '
            'v VARCHAR(36), INDEX ix_k (k)) ENGINE=InnoDB'))
        connection.execute(sa.text(
            "INSERT INTO t (k, v) VALUES (10, 'a'), (20, 'b')"))
    yield single_connection.database(url, 'isolation'), other
    other.dispose()


def test_every_session_is_read_committed(tables):
    database, _other = tables

    @database.reader
    def level(ctxt):
        return ctxt.session.execute(sa.text(
            'SELECT @@SESSION.tx_isolation')).scalar()

    assert level(single_connection.Context()) == 'READ-COMMITTED'


def test_an_update_does_not_block_an_insert_beside_it(tables):
    database, other = tables
    inserted = []

    @database.writer
    def update_then_insert_elsewhere(ctxt):
        changed = ctxt.session.execute(sa.text(
            "UPDATE t SET v = :v WHERE k = 10"), {'v': str(uuid.uuid4())})
        # NOTE: with the update's locks held: an insert of k = 15 lands in
        # the gap REPEATABLE READ would have locked (it would wait out
        # the one-second timeout and fail).
        with other.connect() as connection:
            connection.execute(sa.text(
                'SET SESSION innodb_lock_wait_timeout = 1'))
            connection.execute(sa.text(
                "INSERT INTO t (k, v) VALUES (15, 'c')"))
            connection.commit()
            inserted.append(True)
        # A row another transaction committed meanwhile is seen at once.
        return changed.rowcount, ctxt.session.execute(sa.text(
            'SELECT COUNT(*) FROM t')).scalar()

    assert update_then_insert_elsewhere(
        single_connection.Context()) == (1, 3)
    assert inserted == [True]
