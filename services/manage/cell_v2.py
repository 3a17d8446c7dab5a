# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage cell_v2 ...``: cells, host mappings, instance mappings.

    cell_v2 simple_cell_setup [--transport-url URL]
    cell_v2 map_cell0 [--database_connection URL]
    cell_v2 create_cell [--name N] [--transport-url URL]
                        [--database_connection URL] [--disabled] [--verbose]
    cell_v2 list_cells [--verbose]
    cell_v2 discover_hosts [--cell_uuid U] [--verbose] [--strict]
                           [--by-service]
    cell_v2 list_hosts [--cell_uuid U]
    cell_v2 map_instances --cell_uuid U [--max-count N] [--reset]
    cell_v2 delete_host --cell_uuid U --host H
    cell_v2 update_cell, delete_cell, verify_instance   (see cell_admin)

Option names, messages and exit codes are nova-manage's, so runbooks
(doc/behaviours.md §cells) carry over. One difference: ``simple_cell_setup``
creates cell1 even before any compute has started (upstream stops with
"No hosts found to map to cell"); computes started later are mapped by
``discover_hosts`` or the conductor's periodic discovery.
"""

import logging
import re
import uuid as uuid_lib

from oslo_db import exception as db_exc
import oslo_messaging as messaging
from oslo_utils import timeutils
import sqlalchemy as sa

from common import context
from common.db import api_tables
from common.db import boot_records
from common.db import cell_access as cell_access_mod
from common.db import cell_tables
from common.db import cells
from common.db import compute_records
from common.db import discovery
from common.db import instance_records
from common import exception
from common import rpc
from services.manage import cell_admin
from services.manage import output

LOG = logging.getLogger(__name__)

_CM = api_tables.cell_mappings
# NOTE: user:password@ after the scheme or after a comma (several hosts).
_PASSWORD = re.compile(r'(://|,)([^:@/,]*):[^@/,]*@')


def _ctxt():
    return context.get_admin_context()


def _api(conf):
    return cells.configure_api(conf)


def _transport_url(conf, given):
    """The transport URL to record, or None after printing why not."""
    rpc.register_opts(conf)
    url = given
    if not url:
        if not conf.transport_url:
            print('Must specify --transport-url if [DEFAULT]/transport_url '
                  'is not set in the configuration file.')
            return None
        print('--transport-url not provided in the command line, using the '
              'value [DEFAULT]/transport_url from the configuration file')
        url = conf.transport_url
    try:
        messaging.TransportURL.parse(conf, url)
    except (messaging.InvalidTransportURL, ValueError) as exc:
        print('Invalid transport URL: %s' % exc)
        return None
    return url


def mask_transport_url(url):
    """``url`` with every host's password replaced by ``****``."""
    return _PASSWORD.sub(r'\1\2:****@', url or '')


def _insert_cell(conf, uuid, name, transport_url, connection,
                 disabled=False):
    def insert(ctx):
        ctx.session.execute(_CM.insert().values(
            uuid=uuid, name=name, transport_url=transport_url,
            database_connection=connection, disabled=disabled,
            created_at=timeutils.utcnow()))
    _api(conf).writer(insert)(_ctxt())


def _cells(conf):
    return boot_records.list_cells(_ctxt(), database=_api(conf))


def cell0_default_connection(conf):
    """``[database] connection`` with ``_cell0`` appended to the name."""
    url = sa.engine.make_url(conf.database.connection)
    return url.set(database=url.database + '_cell0').render_as_string(
        hide_password=False)


def _map_cell0(conf, database_connection=None):
    for mapping in _cells(conf):
        if mapping.is_cell0:
            print('Cell0 is already setup')
            return mapping
    if not (database_connection or conf.database.connection):
        print('Must specify --database_connection if [database]/connection '
              'is not set in the configuration file.')
        return None
    connection = database_connection or cell0_default_connection(conf)
    _insert_cell(conf, cells.CELL0_UUID, 'cell0', 'none:///', connection)
    return cells.CellMapping(id=None, uuid=cells.CELL0_UUID, name='cell0',
                             transport_url='none:///',
                             database_connection=connection)


def map_cell0(conf):
    """Create the cell0 mapping (once); 0, or 1 without a database."""
    args = conf.category
    return 0 if _map_cell0(conf, args.database_connection) else 1


def create_cell(conf):
    """Create a cell mapping.

    :returns: 0 done, 1 transport URL or database missing, 2 a cell with
        the same transport URL and database exists.
    """
    args = conf.category
    transport_url = _transport_url(conf, args.transport_url)
    if transport_url is None:
        return 1
    connection = args.database_connection or conf.database.connection
    if not connection:
        print('Must specify --database_connection if [database]/connection '
              'is not set in the configuration file.')
        return 1
    for mapping in _cells(conf):
        if (mapping.transport_url == transport_url and
                mapping.database_connection == connection):
            print('The specified transport_url and/or database_connection '
                  'combination already exists for another cell with uuid '
                  '%s.' % mapping.uuid)
            return 2
    uuid = str(uuid_lib.uuid4())
    _insert_cell(conf, uuid, args.cell_name, transport_url, connection,
                 disabled=args.disabled)
    if args.verbose:
        print(uuid)
    return 0


def simple_cell_setup(conf):
    """cell0, cell1 on ``[database] connection``, hosts and instances.

    :returns: 0 done, 1 transport URL or database missing.
    """
    args = conf.category
    transport_url = _transport_url(conf, args.transport_url)
    if transport_url is None or _map_cell0(conf) is None:
        return 1
    connection = conf.database.connection
    cell = next((m for m in _cells(conf)
                 if m.database_connection == connection and
                 not m.is_cell0), None)
    if cell is None:
        _insert_cell(conf, str(uuid_lib.uuid4()), 'cell1', transport_url,
                     connection)
        cell = next(m for m in _cells(conf)
                    if m.database_connection == connection and
                    not m.is_cell0)
    access = cell_access_mod.CellAccess(_api(conf))
    if not discovery.discover_hosts(_ctxt(), access, cell_uuid=cell.uuid):
        print('No hosts found to map to cell %s yet.' % cell.uuid)
    try:
        _map_instances(conf, cell.uuid, max_count=None)
    except db_exc.DBError as exc:
        # NOTE: a new deployment syncs the cell databases after mapping
        # them (db sync follows the mappings); nothing to map then.
        print('The database of cell %s is not ready (%s); run '
              '"berth-manage db sync".'
              % (cell.uuid, str(exc).splitlines()[0]))
    return 0


def list_cells(conf):
    """Print the cells; passwords masked unless --verbose."""
    verbose = conf.category.verbose
    rpc.register_opts(conf)
    rows = []
    for mapping in sorted(_cells(conf), key=lambda m: m.name or ''):
        transport, database = mapping.transport_url, \
            mapping.database_connection
        if not verbose:
            database = cells.safe_url(database)
            transport = mask_transport_url(transport)
        rows.append([mapping.name, mapping.uuid, transport, database,
                     mapping.disabled])
    print(output.table(['Name', 'UUID', 'Transport URL',
                        'Database Connection', 'Disabled'], rows), end='')
    return 0


def discover_hosts(conf):
    """Map new compute hosts; see common.db.discovery.

    :returns: 0 done, 1 none found with --strict, 2 a duplicate mapping.
    """
    args = conf.category
    status = print if args.verbose else None
    access = cell_access_mod.CellAccess(_api(conf))
    try:
        with output.progress(args, 'discover_hosts') as progress:
            hosts = discovery.discover_hosts(
                _ctxt(), access, args.cell_uuid, status=status,
                by_service=args.by_service, progress=progress)
    except exception.HostMappingExists:
        print('ERROR: Duplicate host mapping was encountered. This command '
              'should be run once after all compute hosts have been '
              'deployed and should not be run in parallel. When run in '
              'parallel, the commands will collide with each other trying '
              'to map the same hosts in the cell simultaneously. Please '
              'run this command again after all compute hosts have been '
              'deployed and confirm that all hosts have been mapped.')
        return 2
    except cells.CellMappingNotFound as exc:
        print(str(exc))
        return 1
    return int(not hosts and args.strict)


def list_hosts(conf):
    """Print the host mappings (of one cell): Cell Name, Cell UUID, Host.
    """
    args = conf.category
    names = {m.uuid: m.name for m in _cells(conf)}
    if args.cell_uuid and args.cell_uuid not in names:
        print('Cell with uuid %s was not found.' % args.cell_uuid)
        return 1
    rows = [[names.get(cell), cell, host] for host, cell in
            boot_records.list_host_mappings(_ctxt(), args.cell_uuid,
                                            database=_api(conf))]
    rows.sort(key=lambda r: (r[0] or '', r[2]))
    print(output.table(['Cell Name', 'Cell UUID', 'Hostname'], rows),
          end='')
    return 0


def _map_instances(conf, cell_uuid, max_count=None):
    """Create missing instance mappings for a cell's instances.

    NOTE: every run walks the cell from its newest instance; upstream
    remembers where a run stopped, which only matters with --max-count
    on millions of instances.

    :returns: (mapped, more left).
    """
    api = _api(conf)
    access = cell_access_mod.CellAccess(api)
    database = access.database(cell_uuid)
    with output.progress(conf.category, 'map_instances (cell %s)'
                         % cell_uuid) as progress:
        return _map_batches(api, database, cell_uuid, max_count, progress)


def _map_batches(api, database, cell_uuid, max_count, progress):
    """_map_instances' loop: 500 instances at a time, newest first."""
    mapped = 0
    marker = None
    while True:
        batch = instance_records.list_instances(
            _ctxt(), database, deleted=None, limit=500, marker=marker)
        if not batch:
            return mapped, False
        marker = batch[-1].uuid
        known = boot_records.get_instance_mappings(
            _ctxt(), [i.uuid for i in batch], database=api)
        for instance in batch:
            if instance.uuid in known:
                continue
            if max_count is not None and mapped >= max_count:
                return mapped, True
            boot_records.create_instance_mapping(
                _ctxt(), instance.uuid, instance.project_id, cell_uuid,
                user_id=instance.user_id, database=api)
            if instance.deleted:
                boot_records.set_queued_for_delete(_ctxt(), instance.uuid,
                                                   database=api)
            mapped += 1
            progress.step()


def map_instances(conf):
    """Map a cell's unmapped instances to it.

    :returns: 0 all mapped, 1 --max-count reached with more left,
        127 unknown cell.
    """
    args = conf.category
    try:
        mapped, more = _map_instances(conf, args.cell_uuid, args.max_count)
    except cells.CellMappingNotFound:
        print('Cell with uuid %s was not found.' % args.cell_uuid)
        return 127
    except db_exc.DBError as exc:
        print('The database of cell %s failed: %s'
              % (args.cell_uuid, str(exc).splitlines()[0]))
        return 1
    print('%d instances mapped to cell %s.' % (mapped, args.cell_uuid))
    return 1 if more else 0


def delete_host(conf):
    """Remove a host's mapping (only a host without instances).

    :returns: 0 deleted, 1 unknown cell, 2 unknown host, 3 host in
        another cell, 4 instances on the host.
    """
    args = conf.category
    api = _api(conf)
    access = cell_access_mod.CellAccess(api)
    try:
        cell = access.cell(_ctxt(), args.cell_uuid)
    except cells.CellMappingNotFound:
        print('Cell with uuid %s was not found.' % args.cell_uuid)
        return 1
    mapped_to = boot_records.get_host_mapping(_ctxt(), args.host,
                                              database=api)
    if mapped_to is None:
        print('The host %s was not found.' % args.host)
        return 2
    if mapped_to != cell.uuid:
        print('The host %s was not found in the cell %s.'
              % (args.host, cell.uuid))
        return 3
    database = access.database(cell)
    if instance_records.list_instances(_ctxt(), database, host=args.host,
                                       limit=1):
        print('There are instances on the host %s.' % args.host)
        return 4
    nodes = compute_records.list_compute_nodes(_ctxt(), database,
                                               host=args.host)
    _unmark(database, [n['id'] for n in nodes])
    boot_records.delete_host_mapping(_ctxt(), args.host, database=api)
    return 0


def _unmark(database, ids):
    """Clear ``mapped`` so that discovery maps the host again later."""
    table = cell_tables.compute_nodes

    def update(ctx):
        if ids:
            ctx.session.execute(table.update().where(
                table.c.id.in_(ids)).values(mapped=0))
    database.writer(update)(_ctxt())


def add_parsers(subparsers):
    """Add ``cell_v2`` and its commands to berth-manage's parser."""
    parser = subparsers.add_parser('cell_v2', help='Cells v2 commands.')
    commands = parser.add_subparsers(dest='cell_v2_command',
                                     metavar='<command>')
    commands.required = True

    cmd = commands.add_parser(
        'simple_cell_setup', help='Map cell0 and cell1 ([database] '
        'connection), then its hosts and instances.')
    cmd.add_argument('--transport-url', dest='transport_url')
    cmd.set_defaults(action_fn=simple_cell_setup)

    cmd = commands.add_parser('map_cell0', help='Create the cell0 mapping.')
    cmd.add_argument('--database_connection', dest='database_connection')
    cmd.set_defaults(action_fn=map_cell0)

    cmd = commands.add_parser('create_cell', help='Create a cell mapping.')
    # NOTE: not dest 'name': oslo.config keeps the category's name there.
    cmd.add_argument('--name', dest='cell_name')
    cmd.add_argument('--transport-url', dest='transport_url')
    cmd.add_argument('--database_connection', dest='database_connection')
    cmd.add_argument('--verbose', action='store_true',
                     help="Print the new cell's uuid.")
    cmd.add_argument('--disabled', action='store_true')
    cmd.set_defaults(action_fn=create_cell)

    cmd = commands.add_parser('list_cells', help='List the cells.')
    cmd.add_argument('--verbose', action='store_true',
                     help='Show passwords in the URLs.')
    cmd.set_defaults(action_fn=list_cells)

    cmd = commands.add_parser('discover_hosts',
                              help='Map new compute hosts to their cells.')
    cmd.add_argument('--cell_uuid', dest='cell_uuid')
    cmd.add_argument('--verbose', action='store_true')
    cmd.add_argument('--strict', action='store_true',
                     help='Exit 1 when no new host was found.')
    cmd.add_argument('--by-service', dest='by_service', action='store_true',
                     help='Discover by compute services instead of compute '
                          'nodes (finds hosts whose mappings were removed).')
    cmd.add_argument('--quiet', action='store_true',
                     help=output.QUIET_HELP)
    cmd.set_defaults(action_fn=discover_hosts)

    cmd = commands.add_parser('list_hosts', help='List the host mappings.')
    cmd.add_argument('--cell_uuid', dest='cell_uuid')
    cmd.set_defaults(action_fn=list_hosts)

    cmd = commands.add_parser('map_instances',
                              help="Map a cell's unmapped instances to it.")
    cmd.add_argument('--cell_uuid', dest='cell_uuid', required=True)
    cmd.add_argument('--max-count', dest='max_count', type=int)
    cmd.add_argument('--reset', action='store_true',
                     help='Start from the beginning (every run does).')
    cmd.add_argument('--quiet', action='store_true',
                     help=output.QUIET_HELP)
    cmd.set_defaults(action_fn=map_instances)

    cmd = commands.add_parser('delete_host',
                              help="Remove a host's mapping.")
    cmd.add_argument('--cell_uuid', dest='cell_uuid', required=True)
    cmd.add_argument('--host', required=True)
    cmd.set_defaults(action_fn=delete_host)

    cell_admin.add_parsers(commands)
