# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage placement ...``: the placement database commands.

    berth-manage placement db sync      upgrade the schema to the newest
                                        revision and load the standard
                                        resource classes and traits
    berth-manage placement db version   print the schema revision
    berth-manage placement heal_allocations [--max-count N] [--verbose]
                 [--dry-run] [--instance UUID] [--cell UUID] [--force]
    berth-manage placement audit [--verbose] [--delete]
                 [--resource_provider UUID]
    berth-manage placement sync_aggregates [--verbose]

The last three compare placement with the instances and aggregates of the
api and cell databases; see placement_heal and placement_audit.
"""

import logging

from services.manage import placement_audit
from services.manage import placement_heal
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

    heal = groups.add_parser(
        'heal_allocations',
        help='Create the missing allocations of instances on hosts.')
    heal.add_argument('--max-count', dest='max_count', type=int,
                      help='Heal at most this many instances.')
    heal.add_argument('--verbose', action='store_true')
    heal.add_argument('--dry-run', dest='dry_run', action='store_true',
                      help='Print what would be written, write nothing.')
    heal.add_argument('--instance', help='Only this instance.')
    heal.add_argument('--cell', help='Only the instances of this cell.')
    heal.add_argument('--force', action='store_true',
                      help='Rewrite the allocations of --instance even '
                           'when it has some.')
    heal.set_defaults(action_fn=placement_heal.heal_allocations)

    audit = groups.add_parser(
        'audit', help='Find (and with --delete remove) allocations of '
                      'consumers that are no instance.')
    audit.add_argument('--verbose', action='store_true')
    audit.add_argument('--delete', action='store_true',
                       help='Delete the orphaned allocations found.')
    audit.add_argument('--resource_provider', dest='resource_provider',
                       help='Only this resource provider.')
    audit.add_argument('--stuck_after', dest='stuck_after', type=int,
                       help='Also report servers in a task state for more '
                            'than this many seconds (default 3600).')
    audit.set_defaults(action_fn=placement_audit.audit)

    sync = groups.add_parser(
        'sync_aggregates',
        help='Mirror host aggregate membership into placement.')
    sync.add_argument('--verbose', action='store_true')
    sync.set_defaults(action_fn=placement_audit.sync_aggregates)
