# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Berth's default for oslo.db's connection pool size.

NOTE: oslo.db keeps 5 connections per engine and opens the rest as
overflow, closing each one as soon as it is returned. Berth's services
are threaded (16 request threads per API process, 64 RPC threads per
conductor server), so under load most transactions paid for a new
connection; with PyMySQL that includes a TLS context whose default
certificates take milliseconds to load: a third of the conductor's and
the API's CPU in a burst of boots. Ten per engine keeps the connections
such a burst uses and overflow still covers more, while a whole
deployment's idle connections stay well under MariaDB's default limit of
151 (OpenStack deployments raise it anyway; devstack sets 1024).
"""

import copy

MAX_POOL_SIZE = 10


def set_pool_defaults(conf, group):
    """Berth's pool default for the oslo.db options of ``group``."""
    conf.set_default('max_pool_size', MAX_POOL_SIZE, group=group)


def documented(opts):
    """``opts`` for the sample file, showing Berth's pool default.

    NOTE: copies: [database] registers oslo.db's own option objects,
    whose defaults belong to oslo.db.
    """
    shown = []
    for opt in opts:
        if opt.dest == 'max_pool_size':
            opt = copy.deepcopy(opt)
            opt.default = MAX_POOL_SIZE
        shown.append(opt)
    return shown
