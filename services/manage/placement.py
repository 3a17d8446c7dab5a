# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage placement ...``: the placement database commands.

    berth-manage placement db sync      upgrade the schema to the newest
                                        revision and load the standard
                                        resource classes and traits
    berth-manage placement db version   print the schema revision

Later placement commands (``heal_allocations``, ``audit``) are added as
further sub-parsers here.
"""

import logging

from services.placement.db import api as db_api

LOG = logging.getLogger(__name__)


def db_sync(conf):
    """Upgrade the placement schema; safe to run again.

    :param conf: the parsed ConfigOpts with ``[placement_database]``.
    :returns: 0.
    """
    db_api.sync(conf)
    return 0


def db_version(conf):
    """Print the placement schema revision ("None" when never synced).

    :param conf: the parsed ConfigOpts with ``[placement_database]``.
    :returns: 0.
    """
    print(db_api.current_revision(conf))
    return 0


def add_parsers(subparsers):
    """Add ``placement`` and its commands to berth-manage's parser."""
    placement = subparsers.add_parser(
        'placement', help='Placement service commands.')
    groups = placement.add_subparsers(dest='placement_group',
                                      metavar='<group>')
    groups.required = True
    db = groups.add_parser('db', help='The placement database.')
    commands = db.add_subparsers(dest='db_command', metavar='<command>')
    commands.required = True
    sync = commands.add_parser(
        'sync', help='Upgrade the schema and load the standard catalogues.')
    sync.set_defaults(action_fn=db_sync)
    version = commands.add_parser(
        'version', help='Print the schema revision.')
    version.set_defaults(action_fn=db_version)
