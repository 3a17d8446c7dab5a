# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The api database records only the compute API writes.

Functions take the request context first and run in a transaction of the
api database (``common.db.cells.api_db``, configured from
``[api_database]``). The database is looked up when a function is called,
not when the module is imported, as :func:`common.db.cells.read` does, so
that a test or a tool may point the process at a database of its own.
"""

import functools

from common.db import cells


def _database():
    return cells.configure_api()


def reader(fn):
    """Decorator: run ``fn(ctxt, ...)`` in a read transaction."""
    @functools.wraps(fn)
    def wrapper(ctxt, *args, **kwargs):
        return _database().reader(fn)(ctxt, *args, **kwargs)
    return wrapper


def writer(fn):
    """Decorator: run ``fn(ctxt, ...)`` in a write transaction."""
    @functools.wraps(fn)
    def wrapper(ctxt, *args, **kwargs):
        return _database().writer(fn)(ctxt, *args, **kwargs)
    return wrapper
