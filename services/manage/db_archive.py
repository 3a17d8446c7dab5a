# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage db archive_deleted_rows`` and ``db purge``.

    db archive_deleted_rows [--max_rows N] [--until-complete]
                            [--before DATE] [--purge] [--all-cells]
                            [--verbose]
    db purge [--all] [--before DATE] [--all-cells] [--verbose]

Options, messages and exit codes are nova-manage's (doc/operations.md):
archive returns 0 when nothing was archived, 1 when rows were, 2 for a bad
--max_rows, 3 when the api database cannot be reached, 4 for a bad
--before; purge returns 0 when rows were deleted, 1 without --before or
--all, 2 for a bad --before, 3 when nothing was purged, 4 when the api
database cannot be reached. Without --all-cells both work on
``[database] connection``.
"""

import logging
import time

from dateutil import parser as date_parser
from dateutil import tz
from oslo_db import exception as db_exc
import sqlalchemy as sa

from common import context
from common.db import archive
from common.db import cells
from common import exception
from services.manage import output

LOG = logging.getLogger(__name__)

MAX_INT = 2 ** 31 - 1
# NOTE: without --verbose, a long --until-complete run still says it is
# alive this often.
PROGRESS_SECONDS = 10.0


def _api(conf):
    return cells.configure_api(conf)


def _registry(conf):
    return cells.CellDatabases(conf)


def parse_before(text):
    """``--before`` as a naive UTC datetime (dateutil's fuzzy parsing).

    :raises ValueError: for text that names no date.
    """
    value = date_parser.parse(text, fuzzy=True)
    if value.tzinfo is not None:
        value = value.astimezone(tz.UTC).replace(tzinfo=None)
    return value


def _api_and_mappings(conf):
    """(api Database, cell mappings), or None after saying why not."""
    try:
        api = _api(conf)
        return api, cells.get_cell_mappings(context.get_admin_context(),
                                            database=api)
    except (exception.DBNotConfigured, db_exc.DBError,
            sa.exc.SQLAlchemyError) as exc:
        LOG.debug('api database unreachable: %s', exc)
        return None


def _targets(conf, mappings, all_cells):
    """[(prefix, cell Database)]: every mapped cell, or the local one."""
    registry = _registry(conf)
    if all_cells:
        return [(mapping.name + '.', registry.get(mapping))
                for mapping in mappings]
    return [('', registry.local())]


class _Progress(object):
    """The running totals of an --until-complete run, now and then."""

    def __init__(self, verbose, clock=time.monotonic):
        self.verbose = verbose
        self.clock = clock
        self._last = clock()

    def show(self, totals):
        now = self.clock()
        if not (self.verbose or now - self._last >= PROGRESS_SECONDS):
            return
        self._last = now
        tables = ', '.join('%s: %d' % item for item in sorted(totals.items()))
        total = sum(totals.values())
        print('Archiving: %d rows so far (%s)' % (total, tables), flush=True)


def _add(totals, prefix, counts):
    for name, count in counts.items():
        if count:
            key = name if name.startswith('API_DB.') else prefix + name
            totals[key] = totals.get(key, 0) + count


def _archive(targets, api, args, before):
    totals = {}
    progress = _Progress(args.verbose)
    try:
        for prefix, database in targets:
            archiver = archive.Archiver(database, args.max_rows, before,
                                        api_database=api)
            while True:
                counts = archiver.run_once()
                _add(totals, prefix, counts)
                if not (args.until_complete and any(counts.values())):
                    break
                progress.show(totals)
    except KeyboardInterrupt:
        # NOTE: each batch is one transaction: what was archived stays
        # archived, the interrupted batch is rolled back; run again.
        print('Cancelled')
    return totals


def _validate_max_rows(max_rows):
    if max_rows < 1:
        print('Must supply a positive value for max_rows')
        return False
    if max_rows > MAX_INT:
        print('max rows must be <= %d' % MAX_INT)
        return False
    return True


def _before_or_none(text):
    """(ok, datetime or None), after printing nova-manage's message."""
    if not text:
        return True, None
    try:
        return True, parse_before(text)
    except (ValueError, OverflowError) as exc:
        print('Invalid value for --before: %s' % exc)
        return False, None


def archive_deleted_rows(conf):
    """Move deleted rows to the shadow tables; see the module doc.

    :returns: 0 nothing archived, 1 rows archived, 2 bad --max_rows,
        3 api database unreachable, 4 bad --before.
    """
    args = conf.category
    if not _validate_max_rows(args.max_rows):
        return 2
    found = _api_and_mappings(conf)
    if found is None:
        print('Failed to connect to API DB so aborting this archival '
              'attempt. Please check your config file to make sure that '
              '[api_database]/connection is set and run this command '
              'again.')
        return 3
    ok, before = _before_or_none(args.before)
    if not ok:
        return 4
    api, mappings = found
    targets = _targets(conf, mappings, args.all_cells)
    totals = _archive(targets, api, args, before)
    if args.verbose:
        if totals:
            print(output.table(['Table', 'Number of Rows Archived'],
                               sorted(totals.items())), end='')
        else:
            print('Nothing was archived.')
    if args.purge:
        _purge_targets(targets, None, args.verbose)
    return 1 if totals else 0


def _purge_targets(targets, before, verbose):
    total = 0
    for prefix, database in targets:
        for name, count in sorted(archive.purge(database, before).items()):
            total += count
            if verbose:
                print('Deleted %d rows from %s%s' % (count, prefix, name))
    return total


def purge(conf):
    """Delete shadow rows; see the module doc.

    :returns: 0 rows deleted, 1 neither --before nor --all, 2 bad
        --before, 3 nothing purged, 4 api database unreachable.
    """
    args = conf.category
    if not (args.before or args.purge_all):
        print('Must supply --before or --all')
        return 1
    if args.before and args.purge_all:
        print('--before and --all are mutually exclusive')
        return 1
    ok, before = _before_or_none(args.before)
    if not ok:
        return 2
    mappings = []
    if args.all_cells:
        found = _api_and_mappings(conf)
        if found is None:
            print('Unable to get cell list from API DB. Is it configured?')
            return 4
        mappings = found[1]
    total = _purge_targets(_targets(conf, mappings, args.all_cells),
                           before, args.verbose)
    if not total:
        if args.verbose:
            print('Nothing was purged.')
        return 3
    return 0


def add_commands(commands):
    """Add ``archive_deleted_rows`` and ``purge`` under ``db``."""
    parser = commands.add_parser(
        'archive_deleted_rows',
        help='Move deleted rows to the shadow tables.')
    parser.add_argument(
        '--max_rows', type=int, default=1000,
        help='Rows per table and batch (default 1000).')
    parser.add_argument(
        '--until-complete', dest='until_complete', action='store_true',
        help='Run batches until nothing is left, showing progress.')
    parser.add_argument(
        '--before', help='Only rows deleted before this date.')
    parser.add_argument(
        '--purge', action='store_true',
        help='Purge all shadow table rows once the archive is done.')
    parser.add_argument(
        '--all-cells', dest='all_cells', action='store_true',
        help='Every mapped cell instead of [database] connection.')
    parser.add_argument('--verbose', action='store_true',
                        help='Print what was archived.')
    parser.set_defaults(action_fn=archive_deleted_rows)

    parser = commands.add_parser(
        'purge', help='Delete rows from the shadow tables.')
    parser.add_argument('--all', dest='purge_all', action='store_true',
                        help='Every shadow table row.')
    parser.add_argument(
        '--before', help='Only rows deleted before this date.')
    parser.add_argument(
        '--all-cells', dest='all_cells', action='store_true',
        help='Every mapped cell instead of [database] connection.')
    parser.add_argument('--verbose', action='store_true',
                        help='Print what was purged.')
    parser.set_defaults(action_fn=purge)
