# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage cell_v2`` commands that change or check one cell.

    cell_v2 update_cell --cell_uuid U [--name N] [--transport-url URL]
                        [--database_connection URL] [--disable|--enable]
    cell_v2 delete_cell --cell_uuid U [--force]
    cell_v2 verify_instance --uuid U [--quiet]

Messages and exit codes are nova-manage's (doc/operations.md lists them).
A disabled cell gets no new instances: the scheduler leaves its hosts out
once its cell list is re-read (at most a minute later, or at once after a
SIGHUP of berth-scheduler).
"""

import logging

from oslo_utils import timeutils
import sqlalchemy as sa

from common import context
from common.db import api_tables
from common.db import boot_records
from common.db import cell_access as cell_access_mod
from common.db import cell_tables
from common.db import cells
from common.db import instance_records
from common import exception
from common import rpc

LOG = logging.getLogger(__name__)

_CM = api_tables.cell_mappings
_HM = api_tables.host_mappings
_IM = api_tables.instance_mappings


def _ctxt():
    return context.get_admin_context()


def _api(conf):
    return cells.configure_api(conf)


def _cell_or_none(api, cell_uuid):
    try:
        return cells.get_cell_mapping(_ctxt(), cell_uuid, api)
    except cells.CellMappingNotFound:
        print('Cell with uuid %s was not found.' % cell_uuid)
        return None


# --- update_cell -------------------------------------------------------------

def _url_or_configured(given, configured, option, flag):
    """``given``, else the configured value (saying so), else None."""
    if given:
        return given
    if not configured:
        return None
    print('%s not provided in the command line, using the value %s from '
          'the configuration file' % (flag, option))
    return configured


def _clashing_cell(api, cell, transport_url, connection):
    """Another cell with this transport URL or database, or None."""
    for other in cells.get_cell_mappings(_ctxt(), api):
        if other.uuid == cell.uuid:
            continue
        if (other.transport_url == transport_url or
                other.database_connection == connection):
            return other
    return None


def _disabled_value(args, cell):
    """(exit code or None, the new ``disabled`` value)."""
    if args.disable and args.enable:
        print('Cell cannot be disabled and enabled at the same time.')
        return 4, None
    if not (args.disable or args.enable):
        return None, cell.disabled
    if cell.is_cell0:
        print('Cell0 cannot be disabled.')
        return 5, None
    if args.disable and cell.disabled:
        print('Cell %s is already disabled' % cell.uuid)
    elif args.enable and not cell.disabled:
        print('Cell %s is already enabled' % cell.uuid)
    return None, bool(args.disable)


def update_cell(conf):
    """Change a cell mapping's name, URLs or disabled flag.

    As nova-manage, a transport URL or database connection not given on
    the command line is taken from the configuration file when it sets
    one (and the command says so); unset in both, it is left as it is.

    :returns: 0 updated, 1 unknown cell, 2 the update failed, 3 another
        cell has the transport URL or database connection, 4 both
        --disable and --enable, 5 --disable/--enable of cell0.
    """
    args = conf.category
    api = _api(conf)
    cell = _cell_or_none(api, args.cell_uuid)
    if cell is None:
        return 1
    # NOTE: read before register_opts: oslo.config refuses the command's
    # argument once an option of the same name is registered.
    given_url = args.transport_url
    rpc.register_opts(conf)
    transport_url = _url_or_configured(
        given_url, conf.transport_url, '[DEFAULT]/transport_url',
        '--transport-url')
    connection = _url_or_configured(
        args.database_connection, conf.database.connection,
        '[database]/connection', '--database_connection')
    other = _clashing_cell(api, cell, transport_url, connection)
    if other is not None:
        print('The specified transport_url and/or database_connection '
              'combination already exists for another cell with uuid %s.'
              % other.uuid)
        return 3
    code, disabled = _disabled_value(args, cell)
    if code is not None:
        return code
    values = {'disabled': disabled, 'updated_at': timeutils.utcnow()}
    if args.cell_name:
        values['name'] = args.cell_name
    if transport_url:
        values['transport_url'] = transport_url
    if connection:
        values['database_connection'] = connection

    def update(ctx):
        ctx.session.execute(_CM.update().where(
            _CM.c.uuid == cell.uuid).values(**values))
    try:
        api.writer(update)(_ctxt())
    except Exception as exc:  # noqa: B902 - reported, exit code 2
        print('Unable to update CellMapping: %s' % exc)
        return 2
    return 0


# --- delete_cell -------------------------------------------------------------

def _has_rows(api, table, cell_id):
    def fetch(ctx):
        return ctx.session.execute(
            sa.select(table.c.id).where(table.c.cell_id == cell_id)
            .limit(1)).first() is not None
    return api.reader(fetch)(_ctxt())


def _has_live_instances(database):
    return bool(instance_records.list_instances(_ctxt(), database, limit=1))


def _delete_cell_rows(api, database, cell):
    """Unmark the cell's compute nodes, then drop its mappings and it."""
    if database is not None:
        nodes = cell_tables.compute_nodes

        def unmark(ctx):
            ctx.session.execute(nodes.update().where(
                nodes.c.mapped != 0).values(mapped=0))
        database.writer(unmark)(_ctxt())

    def delete(ctx):
        for table in (_IM, _HM):
            ctx.session.execute(table.delete().where(
                table.c.cell_id == cell.id))
        ctx.session.execute(_CM.delete().where(_CM.c.id == cell.id))
    api.writer(delete)(_ctxt())


def delete_cell(conf):
    """Delete an empty cell mapping (with --force, its mappings too).

    :returns: 0 deleted, 1 unknown cell, 2 hosts mapped (no --force),
        3 live instances in the cell, 4 instance mappings of deleted
        instances remain (no --force).
    """
    args = conf.category
    api = _api(conf)
    cell = _cell_or_none(api, args.cell_uuid)
    if cell is None:
        return 1
    access = cell_access_mod.CellAccess(api)
    database = None
    if _has_rows(api, _HM, cell.id):
        if not args.force:
            print('There are existing hosts mapped to cell with uuid %s.'
                  % cell.uuid)
            return 2
        database = access.database(cell)
    if _has_rows(api, _IM, cell.id):
        if _has_live_instances(access.database(cell)):
            print('There are existing instances mapped to cell with uuid '
                  '%s.' % cell.uuid)
            return 3
        if not args.force:
            print('There are instance mappings to cell with uuid %s, but '
                  'all instances have been deleted in the cell.' % cell.uuid)
            print("So execute 'berth-manage db archive_deleted_rows' to "
                  "delete the instance mappings.")
            return 4
    _delete_cell_rows(api, database, cell)
    return 0


# --- verify_instance ---------------------------------------------------------

def _instance_state(database, uuid):
    """'live', 'deleted' or 'archived' (no row at all)."""
    try:
        instance = instance_records.get_instance(_ctxt(), database, uuid,
                                                 read_deleted=True)
    except exception.InstanceNotFound:
        return 'archived'
    return 'deleted' if instance.deleted else 'live'


def verify_instance(conf):
    """Check that an instance is mapped to the cell that holds it.

    :returns: 0 mapped and alive, 1 no instance mapping, 2 mapping
        without a cell, 3 the instance is deleted, 4 it is archived but
        its mapping remains.
    """
    args = conf.category

    def say(text):
        if not args.quiet:
            print(text)
    api = _api(conf)
    mapping = boot_records.get_instance_mapping(_ctxt(), args.uuid,
                                                database=api)
    if mapping is None:
        say('Instance %s is not mapped to a cell (upgrade is incomplete) '
            'or instance does not exist' % args.uuid)
        return 1
    if mapping['cell_uuid'] is None:
        say('Instance %s is not mapped to a cell' % args.uuid)
        return 2
    cell = cells.get_cell_mapping(_ctxt(), mapping['cell_uuid'], api)
    state = _instance_state(
        cell_access_mod.CellAccess(api).database(cell), args.uuid)
    if state == 'deleted':
        say('The instance with uuid %s has been deleted.' % args.uuid)
        say('Execute `berth-manage db archive_deleted_rows` command to '
            'archive this deleted instance and remove its '
            'instance_mapping.')
        return 3
    if state == 'archived':
        say('The instance with uuid %s has been archived.' % args.uuid)
        say('However its instance_mapping remains.')
        return 4
    say('Instance %s is in cell: %s (%s)' % (args.uuid, cell.name,
                                             cell.uuid))
    return 0


def add_parsers(commands):
    """Add update_cell, delete_cell and verify_instance to ``cell_v2``."""
    cmd = commands.add_parser('update_cell',
                              help='Change the properties of a cell.')
    cmd.add_argument('--cell_uuid', dest='cell_uuid', required=True)
    cmd.add_argument('--name', dest='cell_name')
    cmd.add_argument('--transport-url', dest='transport_url',
                     help='Running services see it after a restart.')
    cmd.add_argument('--database_connection', dest='database_connection',
                     help='Running services see it after a restart.')
    cmd.add_argument('--disable', action='store_true',
                     help='Stop scheduling to the cell (the scheduler '
                          'notices within a minute, or at its SIGHUP).')
    cmd.add_argument('--enable', action='store_true',
                     help='Schedule to a disabled cell again.')
    cmd.set_defaults(action_fn=update_cell)

    cmd = commands.add_parser('delete_cell', help='Delete an empty cell.')
    cmd.add_argument('--cell_uuid', dest='cell_uuid', required=True)
    cmd.add_argument('--force', action='store_true',
                     help='Also delete its host mappings and the instance '
                          'mappings of its deleted instances.')
    cmd.set_defaults(action_fn=delete_cell)

    cmd = commands.add_parser('verify_instance',
                              help="Check an instance's cell mapping.")
    cmd.add_argument('--uuid', required=True)
    cmd.add_argument('--quiet', action='store_true',
                     help='Print nothing; only the exit code tells.')
    cmd.set_defaults(action_fn=verify_instance)
