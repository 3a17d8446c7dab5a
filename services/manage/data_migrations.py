# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``db online_data_migrations``: fill in what schema upgrades left NULL.

    berth-manage db online_data_migrations [--max-count N]
    berth-manage placement db online_data_migrations [--max-count N]

Berth's migrations (doc/operations.md):

* ``populate_instance_sizes``: ``instances.vcpus``/``memory_mb`` of rows
  written without them (by a conductor still on the old code during a
  rolling upgrade), from the instance's flavor, in every cell database;
* ``populate_build_request_sizes``: the same for ``build_requests`` in
  the api database, from the request's instance.

Until they are filled in, quota counting reads those rows' JSON. Placement
has no online data migrations in Berth; its command says so.

Exit codes are nova-manage's: 0 nothing (more) to do, 1 --max-count was
reached with rows migrated (run again), 2 a migration failed and nothing
else could be done, 127 a --max-count below 1.
"""

import logging

import orjson
import sqlalchemy as sa

from common import context
from common.db import api_tables
from common.db import cell_tables
from common.db import cells
from common.db import instance_records
from services.manage import output

LOG = logging.getLogger(__name__)

BATCH = 50

_IN = cell_tables.instances
_BR = api_tables.build_requests


def _ctxt():
    return context.get_admin_context()


def _api(conf):
    return cells.configure_api(conf)


def _cell_databases(conf):
    """The Database of cell0, every mapped cell and [database]."""
    return [database for _label, database in cells.cells_to_sync(conf)]


def _fill_sizes(database, table, key, flavor_of, count):
    """Give up to ``count`` rows of ``table`` without vcpus their sizes.

    :returns: (rows found, rows migrated).
    """
    def migrate(ctx):
        rows = ctx.session.execute(
            sa.select(table.c.id, key).where(table.c.vcpus.is_(None))
            .order_by(table.c.id).limit(count)).all()
        done = 0
        for row_id, text in rows:
            sizes = instance_records.flavor_sizes(flavor_of(text))
            done += ctx.session.execute(table.update().where(
                table.c.id == row_id, table.c.vcpus.is_(None))
                .values(**sizes)).rowcount
        return len(rows), done
    return database.writer(migrate)(_ctxt())


def _loads(text):
    try:
        return orjson.loads(text) if text else None
    except ValueError:
        return None


def _instance_flavor(text):
    return _loads(text)


def _build_request_flavor(text):
    instance = _loads(text)
    return instance.get('flavor') if isinstance(instance, dict) else None


def populate_instance_sizes(conf, count):
    """instances.vcpus/memory_mb from the flavor, in every cell."""
    found = done = 0
    for database in _cell_databases(conf):
        if done >= count:
            break
        cell_found, cell_done = _fill_sizes(
            database, _IN, _IN.c.flavor, _instance_flavor, count - done)
        found += cell_found
        done += cell_done
    return found, done


def populate_build_request_sizes(conf, count):
    """build_requests.vcpus/memory_mb from the request's instance."""
    return _fill_sizes(_api(conf), _BR, _BR.c.instance,
                       _build_request_flavor, count)


#: The cell/api migrations, in the order they run.
DB_MIGRATIONS = (populate_instance_sizes, populate_build_request_sizes)
#: Placement's: none (its schema upgrades fill in everything they add).
PLACEMENT_MIGRATIONS = ()


def _run_batch(conf, migrations, max_count, totals):
    """One pass over ``migrations``; returns (migrated, failed)."""
    ran, failed = 0, False
    for migration in migrations:
        name = migration.__name__
        try:
            found, done = migration(conf, max_count - ran)
        except Exception:  # noqa: B902 - reported, exit code 2
            LOG.exception('Error attempting to run %s', name)
            print('Error attempting to run %s' % name)
            failed, found, done = True, 0, 0
        if found:
            print('%d rows matched query %s, %d migrated' % (found, name,
                                                             done))
        total = totals.setdefault(name, [0, 0])
        total[0] += found
        total[1] += done
        ran += done
        if ran >= max_count:
            break
    return ran, failed


def _run_batches(conf, migrations, max_count, totals, unlimited):
    """One batch of up to ``max_count`` rows; with ``unlimited``, more
    batches until one migrates nothing.

    :returns: (rows the last batch migrated, whether a migration of the
        last batch failed).
    """
    ran, failed = _run_batch(conf, migrations, max_count, totals)
    while unlimited and ran:
        ran, failed = _run_batch(conf, migrations, max_count, totals)
    return ran, failed


def _print_totals(totals):
    """The table of every migration's rows needed and completed."""
    print(output.table(['Migration', 'Total Needed', 'Completed'],
                       [[name] + totals[name] for name in sorted(totals)]),
          end='')


def _print_nothing_to_do(migrations):
    """Say why nothing was found: no row needs a migration, or there is
    no migration at all (placement's command).
    """
    print('Nothing to do: no rows need an online data migration.'
          if migrations else
          'Nothing to do: there are no online data migrations.')


def run(conf, migrations, max_count):
    """Run ``migrations`` as nova-manage runs its online migrations.

    :param max_count: None for batches of :data:`BATCH` until done.
    :returns: the exit code.
    """
    unlimited = max_count is None
    if not unlimited and max_count < 1:
        print('Must supply a positive value for max_number')
        return 127
    if unlimited:
        max_count = BATCH
        print('Running batches of %d until complete' % max_count)
    totals = {migration.__name__: [0, 0] for migration in migrations}
    ran, failed = _run_batches(conf, migrations, max_count, totals,
                               unlimited)
    _print_totals(totals)
    # NOTE: with --max-count, a failure counts only when the batch
    # migrated nothing else; otherwise exit 1 asks for another run.
    if failed and (unlimited or not ran):
        print('Some migrations failed unexpectedly. Check log for details.')
        return 2
    if not any(found for found, _done in totals.values()):
        _print_nothing_to_do(migrations)
    return 1 if ran else 0


def db_online_data_migrations(conf):
    """``berth-manage db online_data_migrations``."""
    return run(conf, DB_MIGRATIONS, conf.category.max_count)


def placement_online_data_migrations(conf):
    """``berth-manage placement db online_data_migrations``."""
    return run(conf, PLACEMENT_MIGRATIONS, conf.category.max_count)


def add_parser(commands, action):
    """Add ``online_data_migrations`` to a ``db`` command group."""
    cmd = commands.add_parser(
        'online_data_migrations',
        help='Fill in data that schema upgrades left for later.')
    cmd.add_argument('--max-count', dest='max_count', type=int,
                     help='Migrate at most this many rows, then exit 1 if '
                          'some were (run again until it exits 0).')
    cmd.set_defaults(action_fn=action)
