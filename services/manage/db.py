# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage db ...``: the cell database commands.

    berth-manage db sync        upgrade cell0, every mapped cell and
                                [database] connection to the newest
                                revision
    berth-manage db online_data_migrations [--max-count N]
                                see services.manage.data_migrations
    berth-manage db version     print the schema revision of
                                [database] connection
    berth-manage db archive_deleted_rows / db purge
                                see :mod:`services.manage.db_archive`

The cells come from the api database's cell mappings, so on a new
deployment run ``api_db sync`` first; before any cell is mapped only
``[database] connection`` is synced.
"""

import logging

from common.db import cells
from services.manage import data_migrations
from services.manage import db_archive

LOG = logging.getLogger(__name__)


def sync(conf):
    """Upgrade every cell database; safe to run again.

    :param conf: the parsed ConfigOpts with ``[database]`` and, when cells
        are mapped, ``[api_database]``.
    :returns: 0.
    """
    cells.sync_cells(conf)
    return 0


def version(conf):
    """Print the local cell's schema revision ("None" when never synced).

    :param conf: the parsed ConfigOpts with ``[database]``.
    :returns: 0.
    """
    registry = cells.CellDatabases(conf)
    try:
        print(cells.cell_revision(registry.local()))
    finally:
        registry.reset()
    return 0


def add_parsers(subparsers):
    """Add ``db`` and its commands to berth-manage's parser."""
    db = subparsers.add_parser('db', help='The cell databases.')
    commands = db.add_subparsers(dest='db_command', metavar='<command>')
    commands.required = True
    commands.add_parser(
        'sync', help='Upgrade cell0, every mapped cell and [database] '
                     'connection to the newest revision.'
    ).set_defaults(action_fn=sync)
    commands.add_parser(
        'version', help='Print the schema revision of [database] '
                        'connection.'
    ).set_defaults(action_fn=version)
    db_archive.add_commands(commands)
    data_migrations.add_parser(commands,
                               data_migrations.db_online_data_migrations)
