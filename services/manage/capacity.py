# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage capacity``: headroom, what-if, report (doc/operations.md).

    capacity headroom --flavor F [--image I] [--az Z] [--aggregate A]
                      [--hint K=V ...] [--project-id P] [--json]
    capacity what-if (--lose HOST[,HOST] | --lose-aggregate A |
                      --lose-az Z) [--json]

Both run the scheduling pipeline in this process
(services.scheduler.offline), against the databases and placement of
the configuration, and claim nothing. ``headroom`` says how many more
servers of the request fit, in total and per host, zone and aggregate,
and what capacity is stranded; ``what-if`` plans the re-placement of
every server of the lost hosts (biggest first, ties by host name) and
lists those that would not fit, with why. Exit codes: 0 (what-if: every
server fits), 1 (what-if: some do not), 2 the cloud is unreachable, 127
invalid input.
"""

import json
import types

from common import context
from services.manage import capacity_report
from services.manage import capacity_servers
from services.manage import scheduler as explain_mod

#: Hosts listed in the human-readable headroom (``--json`` has all).
SHOWN_HOSTS = 50
#: Seconds a placement call may take: every candidate of a large cloud
#: is read (the probe already caught an unreachable placement).
PLACEMENT_TIMEOUT = 60


def _pipeline(conf):
    """The pipeline built in this process (a function, for tests)."""
    return explain_mod._offline(conf)


def run_offline(conf, work):
    """``work(scheduler, ctxt)`` on the pipeline built in this process
    (``host drain`` plans with it too); Unreachable for a cloud that
    fails.
    """
    from services.scheduler import offline
    try:
        scheduler = _pipeline(conf)
        return work(scheduler, context.get_admin_context())
    except offline.Unreachable as exc:
        raise explain_mod.Unreachable(str(exc))
    except (ValueError, explain_mod.InvalidInput):
        raise
    except Exception as exc:
        raise explain_mod.Unreachable('the dry run failed: %s' % (
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__))


def headroom_lines(result, spec):
    """The human-readable headroom, as a list of lines."""
    flavor = spec.flavor
    lines = ['Headroom for flavor %s (%d vCPU, %d MiB RAM, %d GiB disk)%s: '
             '%d more server(s)' % (
                 flavor.name, flavor.vcpus, flavor.memory_mb, spec.disk_gb,
                 ' in zone %s' % spec.availability_zone
                 if spec.availability_zone else '', result.total)]
    for title, counts in (('Per zone', result.per_zone),
                          ('Per aggregate', result.per_aggregate)):
        if counts:
            lines.append('%s: %s' % (title, ', '.join(
                '%s %d' % item for item in sorted(counts.items()))))
    if result.per_host:
        lines.append('Per host (then why no more):')
        for host in sorted(result.per_host)[:SHOWN_HOSTS]:
            lines.append('  %s: %d (%s)' % (host, result.per_host[host],
                                            result.full.get(host)))
        more = len(result.per_host) - SHOWN_HOSTS
        if more > 0:
            lines.append('  ... and %d more host(s) (--json lists all)'
                         % more)
    if result.stranded:
        lines.append('Stranded (free on hosts that take no more):')
        for rc, entry in sorted(result.stranded.items()):
            lines.append('  %s %d on %d host(s): %s' % (
                rc, entry['free'], entry['hosts'], '; '.join(
                    '%s %d' % item for item in sorted(
                        entry['by_reason'].items(),
                        key=lambda i: (-i[1], i[0])))))
    for note in result.notes:
        lines.append('Note: %s' % note)
    return lines


def headroom(conf):
    """``capacity headroom``; see the module docstring."""
    from services.scheduler.capacity import headroom as headroom_mod
    args = conf.category
    request = types.SimpleNamespace(
        flavor=args.flavor, image=args.image, image_property=None,
        availability_zone=args.az, hint=args.hint, num_instances=1,
        project_id=args.project_id)
    try:
        explain_mod.reachable(conf, PLACEMENT_TIMEOUT)
        spec = explain_mod.build_spec(conf, request)
        result = run_offline(
            conf, lambda scheduler, ctxt: headroom_mod.headroom(
                scheduler, ctxt, spec, aggregate=args.aggregate))
    except explain_mod.InvalidInput as exc:
        print(str(exc))
        return 127
    except explain_mod.Unreachable as exc:
        print(str(exc))
        return explain_mod.UNREACHABLE
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, sort_keys=True))
    else:
        print('\n'.join(headroom_lines(result, spec)))
    return 0


def what_if_lines(plan, missing):
    """The human-readable plan, as a list of lines."""
    lines = ['Losing %s: %d server(s) to re-place' % (
        ', '.join(plan.lost), len(plan.moves) + len(plan.unplaced) +
        len(missing))]
    for move in plan.moves:
        lines.append('  %s (%s) %s -> %s: %s' % (
            move.name, move.server, move.source, move.destination,
            move.why))
    stuck = [(m.server, m.name, m.source, m.why) for m in plan.unplaced]
    stuck += missing
    if stuck:
        lines.append('Would not fit (%d):' % len(stuck))
        for uuid, name, source, why in stuck:
            lines.append('  %s (%s) on %s: %s' % (name, uuid, source, why))
        lines.append('Result: %d of %d server(s) cannot be re-placed.' % (
            len(stuck), len(stuck) + len(plan.moves)))
    else:
        lines.append('Result: every server can be re-placed.')
    return lines


def plan_dict(plan, missing):
    """The plan as ``--json`` prints it, servers without a spec in
    ``unplaced``.
    """
    answer = plan.to_dict()
    answer['unplaced'] += [{'server': u, 'name': n, 'source': h,
                            'destination': None, 'node': None,
                            'why': w} for u, n, h, w in missing]
    answer['complete'] = not answer['unplaced']
    return answer


def plan_loss(scheduler, ctxt, lost):
    """(the what-if Plan of losing the ``lost`` hosts, [(uuid, name,
    host, why)] of their servers without a usable spec); ``host drain``
    follows it.
    """
    from services.scheduler.capacity import what_if as what_if_mod
    servers, missing = capacity_servers.servers_on(
        ctxt, scheduler.host_manager.source, lost, what_if_mod.Server)
    return what_if_mod.plan(scheduler, ctxt, servers, lost), missing


def what_if(conf):
    """``capacity what-if``; see the module docstring."""
    args = conf.category
    if sum(bool(v) for v in (args.lose, args.lose_aggregate,
                             args.lose_az)) != 1:
        print('Give exactly one of --lose, --lose-aggregate, --lose-az.')
        return 127

    try:
        explain_mod.reachable(conf, PLACEMENT_TIMEOUT)
    except explain_mod.Unreachable as exc:
        print(str(exc))
        return explain_mod.UNREACHABLE

    def work(scheduler, ctxt):
        lost = capacity_servers.lost_hosts(
            ctxt, scheduler.host_manager.source, args)
        return plan_loss(scheduler, ctxt, lost)
    try:
        plan, missing = run_offline(conf, work)
    except ValueError as exc:
        print(str(exc))
        return 127
    except explain_mod.Unreachable as exc:
        print(str(exc))
        return explain_mod.UNREACHABLE
    if args.json:
        print(json.dumps(plan_dict(plan, missing), indent=2,
                         sort_keys=True))
    else:
        print('\n'.join(what_if_lines(plan, missing)))
    return 0 if plan.complete and not missing else 1


def add_parsers(subparsers):
    """Add ``capacity`` and its commands to berth-manage's parser."""
    parser = subparsers.add_parser('capacity', help='Capacity answers.')
    commands = parser.add_subparsers(dest='capacity_command',
                                     metavar='<command>')
    commands.required = True
    cmd = commands.add_parser(
        'headroom', help='How many more servers of a flavor fit, where.')
    cmd.add_argument('--flavor', required=True, help='Flavor id or name.')
    cmd.add_argument('--image', help='Image id or name.')
    cmd.add_argument('--az', help='Only this availability zone.')
    cmd.add_argument('--aggregate', help='Only hosts in this aggregate '
                                         '(name or uuid).')
    cmd.add_argument('--hint', action='append', metavar='KEY=VALUE',
                     help='A scheduler hint (repeatable), e.g. '
                          'group=<uuid>.')
    cmd.add_argument('--project-id', dest='project_id', default='admin')
    cmd.add_argument('--json', action='store_true', help='Print JSON.')
    cmd.set_defaults(action_fn=headroom)
    cmd = commands.add_parser(
        'what-if', help='Could the servers of lost hosts be re-placed?')
    lose = cmd.add_mutually_exclusive_group(required=True)
    lose.add_argument('--lose', metavar='HOST[,HOST]')
    lose.add_argument('--lose-aggregate', dest='lose_aggregate',
                      metavar='AGGREGATE')
    lose.add_argument('--lose-az', dest='lose_az', metavar='ZONE')
    cmd.add_argument('--json', action='store_true', help='Print JSON.')
    cmd.set_defaults(action_fn=what_if)
    capacity_report.add_parser(commands)
