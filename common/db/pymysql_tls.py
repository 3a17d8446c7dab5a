# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""One TLS context per distinct set of PyMySQL ssl options, not per connection.

NOTE: PyMySQL builds a new ``ssl.SSLContext`` for every connection, even
in its default "preferred" mode where the context verifies nothing; each
one loads the system's default CA certificates, which takes milliseconds.
A service whose concurrency goes beyond its pool opens and closes
overflow connections all the time: in a burst of boots on 1000 simulated
hosts that loading was 78% of the conductor's busy CPU. A context holds
no per-connection state, so connections with the same options can share
one; what each connection negotiates is unchanged.
"""

import logging
import ssl
import threading

LOG = logging.getLogger(__name__)

_lock = threading.Lock()
_contexts = {}


def _key(sslp):
    """A hashable form of PyMySQL's ssl options, or None (not cacheable)."""
    try:
        key = tuple(sorted(sslp.items()))
        hash(key)
    except (AttributeError, TypeError):
        return None
    return key


def install():
    """Make PyMySQL reuse its TLS contexts; safe to call more than once.

    :returns: True when installed (PyMySQL present and as expected).
    """
    try:
        from pymysql import connections
    except ImportError:
        return False
    original = getattr(connections.Connection, '_create_ssl_ctx', None)
    if original is None:
        LOG.debug('PyMySQL has no _create_ssl_ctx; TLS contexts not shared')
        return False
    if getattr(original, 'berth_shared', False):
        return True

    def create_ssl_ctx(self, sslp):
        if isinstance(sslp, ssl.SSLContext):
            return sslp
        key = _key(sslp)
        if key is None:
            return original(self, sslp)
        with _lock:
            context = _contexts.get(key)
        if context is None:
            context = original(self, sslp)
            with _lock:
                context = _contexts.setdefault(key, context)
        return context

    create_ssl_ctx.berth_shared = True
    connections.Connection._create_ssl_ctx = create_ssl_ctx
    return True
