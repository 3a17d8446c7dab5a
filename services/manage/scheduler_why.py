# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage scheduler why SERVER``: why is this server there?

    scheduler why SERVER_UUID [--all] [--json]

Reads the decision record the scheduler kept when it placed the server
(common.db.decision_records: the boot's, later each move's), from the
server's cell database; no scheduler needs to run. Prints the newest
(``--all``: every one, newest first): the placement query and its
candidates, each filter's hosts in and out with the commonest reasons,
the best weighed hosts with each weigher's share, the hints no enabled
filter read, and whether the host was drawn at random among equals.
Exit code 0 when a record was found, 1 when not (the message says why).
"""

import json

from common import context
from common.db import boot_records
from common.db import cell_access as cell_access_mod
from common.db import decision_records
from common.db import instance_records
from common import exception


def _rejected_lines(record):
    lines = []
    for name, entry in record.get('rejected', {}).items():
        reasons = '; '.join('%s (%d)' % (reason, n)
                            for reason, n in entry['reasons'])
        hosts = ', '.join(entry.get('hosts') or [])
        lines.append('    %s removed %d: %s%s' % (
            name, entry['count'], reasons,
            ' [e.g. %s]' % hosts if hosts else ''))
    return lines


def render(record):
    """One decision record as lines of text."""
    selected = record.get('selected') or ['-', '-']
    lines = ['%s at %s (request %s): %s (%s)' % (
        record.get('kind'), record.get('recorded_at'),
        record.get('request_id') or '-', selected[0], selected[1])]
    if record.get('placement_query') is not None:
        lines.append('  Placement query: %s' % record['placement_query'])
        lines.append('  Candidates from placement: %d, hosts: %d' % (
            record.get('candidates', 0), record.get('hosts', 0)))
    for item in record.get('filters', []):
        lines.append('  Filter %s: %d -> %d' % (
            item['filter'], item['hosts_in'], item['hosts_out']))
    rejected = _rejected_lines(record)
    if rejected:
        lines.append('  Removed hosts, per filter:')
        lines.extend(rejected)
    if record.get('weighed'):
        lines.append('  Best hosts:')
        for rank, item in enumerate(record['weighed'], 1):
            shares = ', '.join('%s %s' % pair for pair in
                               sorted(item['weighers'].items()))
            lines.append('    %d. %s (%s) weight %s [%s]' % (
                rank, item['host'], item['node'], item['weight'], shares))
    for item in record.get('ignored_hints', []):
        lines.append('  Ignored hint: %s (needs %s)' % (
            item['hint'], ' or '.join(item['needs'])))
    for note in record.get('notes', []):
        lines.append('  Note: %s' % note)
    return lines


def _instance(ctxt, api, uuid):
    """(Instance or None, records, why-none message or None)."""
    mapping = boot_records.get_instance_mapping(ctxt, uuid, database=api)
    if mapping is None:
        return None, [], 'Server %s could not be found.' % uuid
    if mapping['cell_uuid'] is None:
        return None, [], ('Server %s has no host yet: it is waiting to be '
                          'scheduled.' % uuid)
    access = cell_access_mod.CellAccess(api)
    _cell, database = access.instance_cell(ctxt, uuid)
    try:
        instance = instance_records.get_instance(ctxt, database, uuid)
    except exception.InstanceNotFound:
        return None, [], 'Server %s could not be found.' % uuid
    return (instance, decision_records.decisions(ctxt, database, uuid),
            None)


def _none_message(instance):
    if instance.fault:
        return ("Server %s was not placed: %s (its fault holds the "
                "scheduler's explanation)"
                % (instance.uuid, instance.fault['message']))
    return ('Server %s has no decision record (placed before records were '
            'kept?).' % instance.uuid)


def why(conf):
    """The command; see the module docstring."""
    from services.manage import scheduler
    args = conf.category
    ctxt = context.get_admin_context()
    instance, found, message = _instance(ctxt, scheduler._api(conf),
                                         args.server)
    if message is None and not found:
        message = _none_message(instance)
    if message is not None:
        print(message)
        return 1
    shown = found if args.all else found[:1]
    if args.json:
        print(json.dumps({'server_id': instance.uuid, 'host': instance.host,
                          'node': instance.node, 'decisions': shown},
                         indent=2, sort_keys=True))
        return 0
    lines = ['Server %s is on %s (%s).'
             % (instance.uuid, instance.host, instance.node)]
    for record in shown:
        lines.extend(render(record))
    if len(found) > len(shown):
        lines.append('(%d earlier placement(s): --all shows them)'
                     % (len(found) - len(shown)))
    print('\n'.join(lines))
    return 0


def add_parser(commands):
    """Add ``why`` to the ``scheduler`` commands."""
    cmd = commands.add_parser(
        'why', help='Why is this server where it is: its placement '
                    'decision record(s).')
    cmd.add_argument('server', metavar='SERVER', help='The server uuid.')
    cmd.add_argument('--all', action='store_true',
                     help='Every placement of the server, newest first.')
    cmd.add_argument('--json', action='store_true',
                     help='Print the records as JSON.')
    cmd.set_defaults(action_fn=why)
