# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage api_db ...``: the api database commands.

    berth-manage api_db sync        upgrade the api schema to the newest
                                    revision
    berth-manage api_db version     print the api schema revision

Run ``api_db sync`` first on a new deployment: the cell mappings that
``db sync`` follows live in the api database.
"""

import logging

from common.db import cells

LOG = logging.getLogger(__name__)


def sync(conf):
    """Upgrade the api schema; safe to run again.

    :param conf: the parsed ConfigOpts with ``[api_database]``.
    :returns: 0.
    """
    cells.sync_api(conf)
    return 0


def version(conf):
    """Print the api schema revision ("None" when never synced).

    :param conf: the parsed ConfigOpts with ``[api_database]``.
    :returns: 0.
    """
    print(cells.api_revision(conf))
    return 0


def add_parsers(subparsers):
    """Add ``api_db`` and its commands to berth-manage's parser."""
    api_db = subparsers.add_parser('api_db', help='The api database.')
    commands = api_db.add_subparsers(dest='api_db_command',
                                     metavar='<command>')
    commands.required = True
    commands.add_parser(
        'sync', help='Upgrade the api schema to the newest revision.'
    ).set_defaults(action_fn=sync)
    commands.add_parser(
        'version', help='Print the api schema revision.'
    ).set_defaults(action_fn=version)
