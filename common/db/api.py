# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""One oslo.db enginefacade per database, with Berth's engine rules.

Functions that touch a database are decorated with :meth:`Database.reader`
or :meth:`Database.writer` and take the request context as their first
argument; the session is then ``context.session``.

On MySQL and MariaDB every transaction runs READ COMMITTED, as on
PostgreSQL (:func:`_read_committed` says why).

SQLite is the embedded default and must never answer a concurrent request
with "database is locked". Two measures make that so:

* every SQLite connection runs in WAL mode with a long busy timeout, so
  readers never wait for the writer and another process's writer is waited
  for instead of failing;
* writer transactions open with ``BEGIN IMMEDIATE`` (and, inside one
  process, take a process-wide lock first), so two writers, threads or
  processes, never both hold a read snapshot and then race to upgrade it
  to a write lock (which SQLite resolves by failing one of them at once,
  whatever the timeout).
"""

import functools
import inspect
import logging
import os
import sqlite3
import sys
import threading
import time

from oslo_db import api as oslo_db_api
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa
from sqlalchemy import event

from common.db import pymysql_tls
from common import exception

LOG = logging.getLogger(__name__)

_SQLITE_BUSY_TIMEOUT_MS = 60000
# Connections kept open per SQLite engine (one per busy server thread),
# and how many more may be opened, and closed again, under a burst.
_SQLITE_POOL_SIZE = 32
_SQLITE_POOL_OVERFLOW = 64

# --- seams: the only uses of SQLAlchemy and oslo.db internals --------------
#
# NOTE: oslo.db makes the engine and its pool; a few of Berth's engine rules
# (see the functions using these) change what it made, and neither library
# offers a public way to. Each use is one function below, checked against
# SQLAlchemy 2.1.9 and oslo.db 18.1.1; tests/unit/test_library_seams.py
# fails naming the seam to update when a release renames or drops one.

# oslo.db's own SQLite BEGIN listener (oslo_db.sqlalchemy.engines).
_OSLO_SQLITE_BEGIN = '_sqlite_emit_begin'


def _queue_pool_like(old, **sizes):
    """A QueuePool that connects as ``old`` does, with its listeners.

    NOTE: seam: ``Pool._creator`` and ``Pool._dialect`` (how ``old``
    connects) and QueuePool's private ``_dispatch`` keyword, which carries
    over the connect listeners oslo.db put on ``old``; ``Pool.recreate``
    would keep ``old``'s class.
    """
    return sa.pool.QueuePool(old._creator, _dispatch=old.dispatch,
                             dialect=old._dialect, **sizes)


def _set_reset_on_return(pool, style):
    """Set what ``pool`` does with a connection it takes back.

    NOTE: seam: ``Pool._reset_on_return``, a constructor argument only;
    oslo.db builds the pool.
    """
    pool._reset_on_return = style


def _set_pre_ping(pool, enabled):
    """Turn the ping SQLAlchemy sends on every checkout on or off.

    NOTE: seam: ``Pool._pre_ping``, a constructor argument only; oslo.db
    builds the pool with ``pool_pre_ping=True``.
    """
    pool._pre_ping = enabled


def _oslo_sqlite_begin_listeners(engine):
    """oslo.db's own ``begin`` listeners on an SQLite engine.

    NOTE: seam: oslo.db's private listener function, found by its name
    (:data:`_OSLO_SQLITE_BEGIN`); oslo.db gives no handle on it.
    """
    return [listener for listener in engine.dispatch.begin
            if getattr(listener, '__name__', None) == _OSLO_SQLITE_BEGIN]


def _sqlite_on_connect(dbapi_conn, _record):
    # NOTE: the pysqlite driver's own transaction handling would issue a
    # deferred BEGIN behind our back; take control so that writers can say
    # BEGIN IMMEDIATE (see _sqlite_on_begin).
    dbapi_conn.isolation_level = None
    cursor = dbapi_conn.cursor()
    cursor.execute('PRAGMA busy_timeout = %d' % _SQLITE_BUSY_TIMEOUT_MS)
    cursor.execute('PRAGMA foreign_keys = ON')
    try:
        cursor.execute('PRAGMA journal_mode = WAL')
        cursor.execute('PRAGMA synchronous = NORMAL')
    except Exception:  # pragma: no cover - :memory: databases refuse WAL
        pass
    cursor.close()


def _ensure_sqlite_directory(url):
    """Create the directory of an SQLite file so a first start just works."""
    database = sa.engine.make_url(url).database
    if database and database != ':memory:':
        directory = os.path.dirname(os.path.abspath(database))
        os.makedirs(directory, exist_ok=True)


def _keep_sqlite_connections(engine):
    """Give a file SQLite engine a connection pool instead of none.

    NOTE: oslo.db forces NullPool on file SQLite, so every transaction
    opened a connection, ran the PRAGMAs above and, closing the last open
    connection, made SQLite checkpoint the WAL: most of the time of a
    placement claim. Pooled connections avoid all three. The pool keeps
    oslo.db's own connect listeners (``_dispatch``); ``:memory:`` engines
    keep their StaticPool.
    """
    old = engine.pool
    if not isinstance(old, sa.pool.NullPool):
        return
    engine.pool = _queue_pool_like(
        old, pool_size=_SQLITE_POOL_SIZE,
        max_overflow=_SQLITE_POOL_OVERFLOW, timeout=60)
    old.dispose()


def _drop_oslo_sqlite_begin(engine):
    """Remove oslo.db's own BEGIN listener from an SQLite engine.

    NOTE: oslo.db emits a plain (deferred) BEGIN at the start of every
    transaction unless the connection says one is already open. Its
    listener is registered first, and so runs first (SQLAlchemy ignores
    ``insert=True`` for connection events): Berth's BEGIN IMMEDIATE never
    went out, and writers in two processes both read and then the second
    to write failed at once with "database is locked". Now Berth's
    listener (:meth:`Database._sqlite_on_begin`) is the only one to emit
    BEGIN; oslo.db's commit and rollback listeners, which clear the "open"
    mark, stay. tests/unit/db/test_sqlite_begin.py notices if oslo.db
    renames its listener.
    """
    for listener in _oslo_sqlite_begin_listeners(engine):
        event.remove(engine, 'begin', listener)


# NOTE: kept in each pooled connection's info: False once SQLAlchemy has
# ended the connection's transaction, True from checkout or a new BEGIN.
_MAY_BE_IN_TRANSACTION = 'berth_may_be_in_transaction'


def _skip_idle_rollbacks(engine):
    """Roll a MySQL connection back on its return only if it needs it.

    NOTE: the pool rolls back every connection it takes back, to end
    whatever transaction is left open. But the Session has always just
    committed or rolled back itself, and PyMySQL sends a ROLLBACK
    whatever the state: a quarter of all statements Berth sent to MariaDB
    were these empty ROLLBACKs, each a round trip. SQLAlchemy's own
    events say whether the transaction was ended (commit, rollback) or
    begun again since; a connection checked out and not seen to end its
    transaction (raw DBAPI use, a failed commit) is still rolled back.
    """
    _set_reset_on_return(engine.pool, sa.pool.base.ResetStyle.reset_none)

    def checked_out(_dbapi_connection, record, _proxy):
        record.info[_MAY_BE_IN_TRANSACTION] = True

    def may_be_in_transaction(conn):
        conn.info[_MAY_BE_IN_TRANSACTION] = True

    def ended(conn):
        conn.info[_MAY_BE_IN_TRANSACTION] = False

    def reset(dbapi_connection, record, state):
        if state.terminate_only or state.transaction_was_reset:
            return
        if record.info.get(_MAY_BE_IN_TRANSACTION, True):
            dbapi_connection.rollback()
            record.info[_MAY_BE_IN_TRANSACTION] = False

    event.listen(engine, 'checkout', checked_out)
    event.listen(engine, 'begin', may_be_in_transaction)
    event.listen(engine, 'commit', ended)
    event.listen(engine, 'rollback', ended)
    event.listen(engine, 'reset', reset)


# NOTE: seconds a pooled connection may sit unused before its next
# checkout pings the server (see _ping_idle_connections).
PING_IDLE_AFTER = 5.0
_LAST_USED = 'berth_last_used'


def _ping_idle_connections(engine, clock=time.monotonic):
    """Ping a pooled connection on checkout only when it sat idle.

    NOTE: oslo.db turns on SQLAlchemy's pre-ping, a round trip on every
    checkout: 18 of the 79 commands a server's boot sent MariaDB, each
    one paid for by a service thread, for connections handed back
    milliseconds before. What the ping is for, finding a connection the
    server or a proxy dropped while it sat in the pool, needs idle time;
    a connection used within the last ``PING_IDLE_AFTER`` seconds is
    handed out unpinged (as a dropped in-use connection always was: its
    statement fails and the pool is invalidated). A failed ping replaces
    the connection, as the pre-ping did.
    """
    _set_pre_ping(engine.pool, False)
    dialect = engine.dialect

    def used(_dbapi_connection, record, *_args):
        record.info[_LAST_USED] = clock()

    def checkout(dbapi_connection, record, _proxy):
        last = record.info.get(_LAST_USED)
        if last is not None and clock() - last < PING_IDLE_AFTER:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except Exception as exc:
            if dialect.is_disconnect(exc, dbapi_connection, None):
                raise sa.exc.DisconnectionError(
                    'idle connection lost: %s' % exc)
            raise

    event.listen(engine, 'connect', used)
    event.listen(engine, 'checkin', used)
    event.listen(engine, 'checkout', checkout)


def _eventlet_patched():
    """True when eventlet has monkey-patched ``time`` in this process."""
    eventlet = sys.modules.get('eventlet.patcher')
    return bool(eventlet and eventlet.is_monkey_patched('time'))


# NOTE: MariaDB may pick one of two colliding transactions as a deadlock
# victim (many builds at once; compute agents saving their nodes and
# heartbeating together); the record modules' writes run the whole
# transaction again.
retry_on_deadlock = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_interval=0.05, retry_on_deadlock=True, jitter=True)


# NOTE: an IN list stays well under every backend's bound-parameter limit
# (SQLite's is 32766, older builds 999).
IN_CHUNK = 500


def chunks(values, size=None):
    """``values`` (any iterable) in lists of at most ``size`` (default
    :data:`IN_CHUNK`), for IN lists.
    """
    size = size or IN_CHUNK
    values = list(values)
    for start in range(0, len(values), size):
        yield values[start:start + size]


def write(database, fn, ctxt, *args):
    """``fn`` in a write transaction of ``database`` (a :class:`Database`),
    run again after a deadlock.
    """
    return retry_on_deadlock(database.writer(fn))(ctxt, *args)


# NOTE: run on every new MySQL connection (see _read_committed).
_READ_COMMITTED = 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'


def _read_committed(engine):
    """Run every MySQL transaction READ COMMITTED, as PostgreSQL's are.

    NOTE: InnoDB's default, REPEATABLE READ, locks the gap beside every
    index entry an UPDATE or DELETE looks at, so a transaction that moves
    one server blocks the INSERT of another server's instance, migration
    or action event that lands in that gap, and two such transactions
    deadlock: 140-280 lock waits (10-38 s of waiting in all) and up to 12
    deadlocks, each a transaction run again, per run of the end-to-end
    benchmark; READ COMMITTED leaves 1 or 2 waits (about 60 when the
    agents' periodic update runs meanwhile: rows both write) and no
    deadlock (doc/benchmarks.md). Berth writes with guarded updates and unique
    keys and never relies on a repeatable snapshot or on gap locks (no
    SELECT ... FOR UPDATE anywhere), which is why it runs unchanged on
    PostgreSQL, whose default this is. The session setting is made once
    per connection; the connections oslo.db opened before this listener
    (its connection test) are dropped from the pool.
    """
    def connect(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(_READ_COMMITTED)
        finally:
            cursor.close()

    event.listen(engine, 'connect', connect)
    engine.pool.dispose()


class Database(object):
    """A named database: its enginefacade and its reader/writer decorators."""

    def __init__(self, name):
        """
        :param name: a label for logs and errors, e.g. "placement".
        """
        self.name = name
        self.context_manager = enginefacade.transaction_context()
        self._configured = False
        self._config_lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self.is_sqlite = False
        self.connection = None
        self._engine = None

    def configure(self, conf_group):
        """Point this database at the connection in an oslo.db option group.

        May be called once per process; later calls with the same URL are
        ignored so that every entry point can call it safely.

        :param conf_group: e.g. ``CONF.placement_database``.
        :raises common.exception.DBNotConfigured: when no connection is set.
        """
        with self._config_lock:
            if self._configured:
                return
            if not conf_group.connection:
                # NOTE: name the option, e.g. "api ([api_database])".
                raise exception.DBNotConfigured(name='%s ([%s_database])' % (
                    self.name, self.name))
            url = conf_group.connection
            self.is_sqlite = url.startswith('sqlite')
            if url.startswith('mysql+pymysql'):
                pymysql_tls.install()
            if self.is_sqlite:
                _ensure_sqlite_directory(url)
            options = dict(
                connection=url,
                max_pool_size=conf_group.max_pool_size,
                max_overflow=conf_group.max_overflow,
                pool_timeout=conf_group.pool_timeout,
                max_retries=conf_group.max_retries,
                connection_recycle_time=conf_group.connection_recycle_time,
                sqlite_synchronous=conf_group.sqlite_synchronous,
                mysql_sql_mode=conf_group.mysql_sql_mode,
                # NOTE: oslo.db's sleep(0) at every check-in lets eventlet
                # switch greenthreads; native threads it only makes give
                # the GIL away once more per transaction.
                thread_checkin=_eventlet_patched(),
            )
            self.context_manager.configure(**options)
            self.connection = url
            self._configured = True

    def engine(self):
        """The writer engine, creating it (and its listeners) on first use."""
        engine = self._engine
        if engine is not None:
            return engine
        engine = self.context_manager.writer.get_engine()
        if not getattr(engine, '_berth_listeners', False):
            with self._config_lock:
                if not getattr(engine, '_berth_listeners', False):
                    self._add_listeners(engine)
                    engine._berth_listeners = True
        # NOTE: every transaction asks, and the enginefacade's own answer
        # costs a manager object each time; the engine never changes.
        self._engine = engine
        return engine

    def _add_listeners(self, engine):
        """Berth's own engine rules (see the module doc), once per engine."""
        if self.is_sqlite:
            _keep_sqlite_connections(engine)
            event.listen(engine, 'connect', _sqlite_on_connect)
            _drop_oslo_sqlite_begin(engine)
            event.listen(engine, 'begin', self._sqlite_on_begin)
            engine.pool.dispose()
            return
        _ping_idle_connections(engine)
        if self.connection.startswith('mysql'):
            _skip_idle_rollbacks(engine)
            _read_committed(engine)

    def _sqlite_on_begin(self, conn):
        if 'in_transaction' in conn.info:
            return
        writing = getattr(self._local, 'writing', 0)
        begin = 'BEGIN IMMEDIATE' if writing else 'BEGIN'
        # NOTE: straight to the driver: through SQLAlchemy's statement
        # machinery this BEGIN costs 15 times more, and a claim opens one.
        # Should it fail (a writer that waited out the busy timeout), say
        # it again through SQLAlchemy, whose error oslo.db translates as
        # callers expect.
        try:
            conn.connection.dbapi_connection.execute(begin)
        except sqlite3.Error:
            conn.exec_driver_sql(begin)
        conn.info['in_transaction'] = True

    def dispose(self):
        """Close every pooled connection (tests, and after a fork)."""
        if self._configured:
            self.engine().dispose()

    @property
    def reader(self):
        """Decorator: run the function in a read transaction."""
        return self._wrap(self.context_manager.reader)

    @property
    def writer(self):
        """Decorator: run the function in a write transaction."""
        return self._wrap(self.context_manager.writer, writing=True)

    @property
    def reader_connection(self):
        """Decorator: a read transaction on a bare Core connection.

        As :attr:`reader`, but the function gets a SQLAlchemy Connection
        as ``context.connection`` and no ORM Session is made (see
        :attr:`writer_connection`). Inside an enclosing transaction it
        runs on that transaction's connection.
        """
        return self._wrap(self.context_manager.reader.connection)

    @property
    def writer_connection(self):
        """Decorator: a write transaction on a bare Core connection.

        As :attr:`writer` (same SQLite write lock and BEGIN IMMEDIATE, same
        joining of an enclosing transaction), but the function gets a
        SQLAlchemy Connection as ``context.connection`` and no ORM Session
        is made: for hot paths written in Core statements only, where the
        Session's set-up and commit bookkeeping cost more than the SQL.
        Inside an enclosing :attr:`writer` it runs on that Session's
        connection, in its transaction.
        """
        return self._wrap(self.context_manager.writer.connection,
                          writing=True)

    def _wrap(self, mode, writing=False):
        # NOTE: the enginefacade's own decorator inspects the function's
        # signature each time it decorates, and transaction functions are
        # often closures decorated at every call: that inspection cost
        # more than the transaction's bookkeeping. The transaction scope
        # is the same one the enginefacade's decorator opens.
        def decorator(fn):
            index, name = _context_argument(fn)

            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                self.engine()
                context = kwargs.get(name) or args[index]
                if not (writing and self.is_sqlite):
                    with mode.using(context):
                        return fn(*args, **kwargs)
                with self._write_lock:
                    self._local.writing = getattr(
                        self._local, 'writing', 0) + 1
                    try:
                        with mode.using(context):
                            return fn(*args, **kwargs)
                    finally:
                        self._local.writing -= 1
            return wrapper
        return decorator


def _context_argument(fn):
    """(position, name) of the request context among ``fn``'s arguments:
    the first one, after ``self`` or ``cls`` (the enginefacade's rule).
    """
    code = getattr(fn, '__code__', None)
    if code is not None:
        names = code.co_varnames[:code.co_argcount]
    else:
        names = inspect.getfullargspec(fn).args
    index = 1 if names and names[0] in ('self', 'cls') else 0
    return index, names[index]


def is_unique_violation(exc):
    """True when ``exc`` is a duplicate-key error on any backend."""
    from oslo_db import exception as db_exc
    return isinstance(exc, db_exc.DBDuplicateEntry) or (
        isinstance(exc, sa.exc.IntegrityError) and
        'unique' in str(exc).lower())
