# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The api database records only the compute API writes.

Functions take the request context first and run in a transaction of the
api database (``common.db.cells.api_db``, configured from
``[api_database]``). The database is looked up when a function is called,
not when the module is imported, as :func:`common.db.cells.read` does, so
that a test or a tool may point the process at a database of its own.

A handler renders its response (``orjson``) from what a write function
returns, after that function's transaction has committed. So that a
response that cannot be rendered (a lone surrogate, an integer beyond 64
bits) never leaves its write behind, every write function's result is
encoded once inside its transaction (:func:`_rendered`): when that fails
the transaction rolls back and the caller gets a 400.
"""

import functools

import orjson

from common.db import cells
from services.api import errors


def _database():
    return cells.configure_api()


def _rendered(fn):
    """``fn`` checking, before its transaction ends, that its result can
    be encoded as JSON, which is how the handler will render it.
    """
    @functools.wraps(fn)
    def wrapper(ctxt, *args, **kwargs):
        result = fn(ctxt, *args, **kwargs)
        try:
            orjson.dumps(result, default=str,
                         option=orjson.OPT_NON_STR_KEYS)
        except TypeError as exc:
            # NOTE: raised inside the transaction, so it rolls back.
            raise errors.BadRequest(
                'Nothing was changed: the result cannot be rendered as '
                'JSON (%s).' % exc)
        return result
    return wrapper


def _in_transaction(fn, mode):
    """``fn(ctxt, ...)`` run in a transaction of the api database.

    :param mode: the name of the :class:`common.db.api.Database`
        decorator to use (``reader``, ``writer_connection``...).
    """
    # NOTE: the database's decorator is applied once per database, not at
    # every call; the api database only changes in tests, which point the
    # process at a database of their own.
    decorated = [(None, None)]
    if mode.startswith('writer'):
        fn = _rendered(fn)

    @functools.wraps(fn)
    def wrapper(ctxt, *args, **kwargs):
        database = _database()
        known, run = decorated[0]
        if known is not database:
            run = getattr(database, mode)(fn)
            decorated[0] = (database, run)
        return run(ctxt, *args, **kwargs)
    return wrapper


def reader(fn):
    """Decorator: run ``fn(ctxt, ...)`` in a read transaction, with an
    ORM Session as ``ctxt.session``.
    """
    return _in_transaction(fn, 'reader')


def writer(fn):
    """Decorator: run ``fn(ctxt, ...)`` in a write transaction, with an
    ORM Session as ``ctxt.session``.
    """
    return _in_transaction(fn, 'writer')


def reader_connection(fn):
    """Decorator: run ``fn(ctxt, ...)`` in a read transaction on a bare
    Core connection, ``ctxt.connection`` (no ORM Session is made).

    For functions that run Core statements only. Inside an enclosing
    transaction of the same context (a :func:`writer`'s, say) ``fn``
    runs on that transaction's connection and sees its writes.
    """
    return _in_transaction(fn, 'reader_connection')


def writer_connection(fn):
    """Decorator: run ``fn(ctxt, ...)`` in a write transaction on a bare
    Core connection, ``ctxt.connection`` (see :func:`reader_connection`).
    """
    return _in_transaction(fn, 'writer_connection')
