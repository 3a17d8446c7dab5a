# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""How Berth's SQLite transactions begin, and writers in two processes.

A writer must open with exactly one ``BEGIN IMMEDIATE`` (never oslo.db's
plain deferred ``BEGIN``): otherwise two processes writing to one SQLite
file both take a read snapshot and the second to write fails at once with
"database is locked", whatever the busy timeout.
"""

import multiprocessing
import sqlite3
import time
import types

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from common import context
from common.db import api as db_api


def _database(path, name='begin test'):
    """A Database on an SQLite file, configured without oslo.config."""
    database = db_api.Database(name)
    database.configure(types.SimpleNamespace(
        connection='sqlite:///%s' % path, max_pool_size=None,
        max_overflow=None, pool_timeout=None, max_retries=10,
        connection_recycle_time=3600,
        sqlite_synchronous=True, mysql_sql_mode='TRADITIONAL'))
    return database


@pytest.fixture
def traced(tmp_path):
    """(database, statements): every SQL statement SQLite runs, in order."""
    database = _database(tmp_path / 'trace.sqlite')
    engine = database.engine()
    with engine.begin() as conn:
        conn.exec_driver_sql('CREATE TABLE t (n INTEGER)')
    statements = []

    def trace(dbapi_conn, _record):
        dbapi_conn.set_trace_callback(statements.append)

    event.listen(engine, 'connect', trace)
    engine.dispose()
    yield database, statements
    database.dispose()


def _begins(statements):
    return [s for s in statements if s.upper().startswith('BEGIN')]


def test_writer_begins_immediate_once(traced):
    database, statements = traced

    @database.writer
    def write(ctx):
        ctx.session.execute(sa.text('INSERT INTO t VALUES (1)'))

    write(context.RequestContext())
    assert _begins(statements) == ['BEGIN IMMEDIATE']
    assert statements[0] == 'BEGIN IMMEDIATE'


def test_connection_writer_begins_immediate_once(traced):
    database, statements = traced

    @database.writer_connection
    def write(ctx):
        assert isinstance(ctx.connection, sa.engine.Connection)
        ctx.connection.execute(sa.text('INSERT INTO t VALUES (1)'))

    write(context.RequestContext())
    assert _begins(statements) == ['BEGIN IMMEDIATE']
    assert statements[-1] == 'COMMIT'


def test_reader_begins_deferred(traced):
    database, statements = traced

    @database.reader
    def read(ctx):
        return ctx.session.execute(sa.text('SELECT count(*) FROM t')).scalar()

    assert read(context.RequestContext()) == 0
    assert _begins(statements) == ['BEGIN']


def test_connection_writer_joins_enclosing_writer(traced):
    database, statements = traced

    @database.writer_connection
    def inner(ctx):
        ctx.connection.execute(sa.text('INSERT INTO t VALUES (2)'))

    @database.writer
    def outer(ctx, fail):
        ctx.session.execute(sa.text('INSERT INTO t VALUES (1)'))
        inner(ctx)
        if fail:
            raise ValueError('undo both')

    @database.reader
    def count(ctx):
        return ctx.session.execute(sa.text('SELECT count(*) FROM t')).scalar()

    with pytest.raises(ValueError):
        outer(context.RequestContext(), True)
    assert count(context.RequestContext()) == 0
    del statements[:]
    outer(context.RequestContext(), False)
    assert _begins(statements) == ['BEGIN IMMEDIATE']
    assert count(context.RequestContext()) == 2


def test_writer_that_waits_out_the_lock_gets_a_translated_error(
        tmp_path, monkeypatch):
    monkeypatch.setattr(db_api, '_SQLITE_BUSY_TIMEOUT_MS', 50)
    path = tmp_path / 'busy.sqlite'
    database = _database(path)
    with database.engine().begin() as conn:
        conn.exec_driver_sql('CREATE TABLE t (n INTEGER)')

    @database.writer
    def write(ctx):
        ctx.session.execute(sa.text('INSERT INTO t VALUES (1)'))

    other = sqlite3.connect(str(path), isolation_level=None)
    other.execute('BEGIN IMMEDIATE')
    try:
        # NOTE: SQLAlchemy's (and so oslo.db's) error, as for any other
        # statement; never the bare driver error.
        with pytest.raises(sa.exc.OperationalError, match='locked'):
            write(context.RequestContext())
    finally:
        other.execute('ROLLBACK')
        other.close()
    write(context.RequestContext())
    database.dispose()


def _increment(path, start, rounds, results):
    """Child process: read-modify-write a counter ``rounds`` times."""
    database = _database(path, 'writer process')

    @database.writer
    def bump(ctx):
        value = ctx.session.execute(sa.text('SELECT n FROM counter')).scalar()
        # NOTE: widen the window between the read and the write, where a
        # deferred transaction would hold a snapshot another writer spoils.
        time.sleep(0.001)
        ctx.session.execute(sa.text('UPDATE counter SET n = :n'),
                            {'n': value + 1})

    with database.engine().connect():
        pass
    start.wait(timeout=60)
    errors = []
    for _ in range(rounds):
        try:
            bump(context.RequestContext())
        except Exception as exc:
            errors.append(str(exc).splitlines()[0])
    results.put(errors)


def test_writers_in_two_processes_never_see_locked(tmp_path):
    path = tmp_path / 'shared.sqlite'
    database = _database(path)
    with database.engine().begin() as conn:
        conn.exec_driver_sql('CREATE TABLE counter (n INTEGER)')
        conn.exec_driver_sql('INSERT INTO counter VALUES (0)')
    database.dispose()

    rounds, processes = 60, 2
    mp = multiprocessing.get_context('spawn')
    # NOTE: both children start writing once both have connected.
    start = mp.Barrier(processes)
    results = mp.Queue()
    children = [mp.Process(target=_increment,
                           args=(str(path), start, rounds, results))
                for _ in range(processes)]
    for child in children:
        child.start()
    try:
        errors = [e for _ in children for e in results.get(timeout=120)]
    finally:
        for child in children:
            child.join(timeout=30)
            if child.is_alive():
                child.terminate()
    assert errors == []
    with database.engine().connect() as conn:
        assert conn.exec_driver_sql(
            'SELECT n FROM counter').scalar() == rounds * processes
    database.dispose()
