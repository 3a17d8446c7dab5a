# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage placement ...``: the placement database commands.

    berth-manage placement db sync      upgrade the schema to the newest
                                        revision and load the standard
                                        resource classes and traits
    berth-manage placement db version   print the schema revision
    berth-manage placement db stamp VERSION
                                        record VERSION as the schema
                                        revision without migrating
    berth-manage placement db online_data_migrations [--max-count N]
    berth-manage placement heal_allocations [--max-count N] [--verbose]
                 [--dry-run] [--instance UUID] [--cell UUID] [--force]
    berth-manage placement audit [--verbose] [--delete]
                 [--resource_provider UUID]
    berth-manage placement sync_aggregates [--verbose]

The last three compare placement with the instances and aggregates of the
api and cell databases; see placement_heal and placement_audit.
"""

import logging
import os

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import util as alembic_util

from services.manage import data_migrations
from services.manage import output
from services.manage import placement_audit
from services.manage import placement_heal
from services.placement.db import api as db_api

LOG = logging.getLogger(__name__)

MIGRATIONS = os.path.join(os.path.dirname(db_api.__file__), 'migrations')


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


def db_stamp(conf):
    """Record a schema revision without running any migration.

    For a database whose schema was made another way (restored from a
    dump of a known revision).

    :returns: 0 stamped, 1 unknown revision.
    """
    version = conf.category.version
    db_api.configure(conf)
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', MIGRATIONS)
    try:
        with db_api.placement_db.engine().begin() as connection:
            cfg.attributes['connection'] = connection
            alembic_command.stamp(cfg, version)
    except alembic_util.CommandError as exc:
        print('Cannot stamp the placement database with %s: %s'
              % (version, exc))
        return 1
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
    stamp = commands.add_parser(
        'stamp', help='Record VERSION as the schema revision; run no '
                      'migration.')
    stamp.add_argument('version', metavar='VERSION',
                       help='An alembic revision, or "head".')
    stamp.set_defaults(action_fn=db_stamp)
    data_migrations.add_parser(
        commands, data_migrations.placement_online_data_migrations)

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
    heal.add_argument('--quiet', action='store_true',
                      help=output.QUIET_HELP)
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
    audit.add_argument('--quiet', action='store_true',
                       help=output.QUIET_HELP)
    audit.set_defaults(action_fn=placement_audit.audit)

    sync = groups.add_parser(
        'sync_aggregates',
        help='Mirror host aggregate membership into placement.')
    sync.add_argument('--verbose', action='store_true')
    sync.add_argument('--quiet', action='store_true',
                      help=output.QUIET_HELP)
    sync.set_defaults(action_fn=placement_audit.sync_aggregates)
