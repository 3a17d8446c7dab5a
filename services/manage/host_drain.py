# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-manage host drain``: empty a host for maintenance.

    host drain HOST [--live | --cold] [--dry-run] [--parallel N]
                    [--reason TEXT] [--timeout SECONDS] [--json]

1. The host's compute service is disabled with a reason, through the
   compute API (``[compute_api]``, common/conf/compute_api.py), so that
   nothing new lands on it. An unknown host is Nova's "Compute host HOST
   could not be found." (exit 127).
2. Moves from the host left by an interrupted drain are finished: those
   under way are waited for, those in VERIFY_RESIZE confirmed.
3. The plan is ``capacity what-if --lose HOST``'s (the pipeline run in
   this process, deterministic), printed as what-if prints it.
4. Each server is moved to its planned host with the API's own actions
   (services/manage/drain_moves.py): running servers (ACTIVE, PAUSED)
   live-migrated and stopped ones (SHUTOFF) cold-migrated and confirmed;
   ``--live`` only live-migrates, ``--cold`` cold-migrates every server.
   Progress on stderr (services/manage/drain_progress.py), then a
   summary: each server left or failed, with why, stays where it is.

``--dry-run`` disables nothing and moves nothing: it shows the moves
under way, the plan and how each server would move. Exit codes, as
what-if's: 0 the host is empty (dry run: every server would move), 1
some servers are left, 2 the cloud (or the compute API) is unreachable,
127 invalid input; 130 interrupted (run it again to finish).
"""

import collections
import json
import sys
import time

from oslo_utils import timeutils

from services.manage import capacity
from services.manage import compute_client
from services.manage import drain_moves as moves
from services.manage import drain_progress
from services.manage import scheduler as explain_mod

INVALID = 127
INTERRUPTED = 130


def _compute_api(conf):
    """The compute API client (a function, for tests)."""
    return compute_client.ComputeAPI(conf)


def _plan(conf, host):
    """(the what-if Plan of losing ``host``, servers without a spec).

    :raises explain_mod.Unreachable: the databases or placement.
    """
    explain_mod.reachable(conf, capacity.PLACEMENT_TIMEOUT)
    return capacity.run_offline(
        conf, lambda scheduler, ctxt: capacity.plan_loss(scheduler, ctxt,
                                                         [host]))


def _mode(args):
    return moves.LIVE if args.live else moves.COLD if args.cold else \
        moves.DEFAULT


def _tasks(plan, missing):
    """One task per server of the host, in the plan's order."""
    tasks = [moves.Task(server=m.server, name=m.name, source=m.source,
                        destination=m.destination, why=m.why)
             for m in plan.moves + plan.unplaced]
    tasks += [moves.Task(server=uuid, name=name, source=host, why=why)
              for uuid, name, host, why in missing]
    return tasks


class _Run(object):
    """One drain: its arguments, its API client, what it prints."""

    def __init__(self, conf, api):
        self.conf = conf
        self.args = conf.category
        self.host = self.args.drained_host
        self.api = api
        self.answer = {'host': self.host, 'dry_run': self.args.dry_run,
                       'resumed': [], 'servers': []}

    def say(self, *lines):
        if lines and not self.args.json:
            print('\n'.join(lines), flush=True)

    # --- the service ------------------------------------------------------

    def disable(self, service):
        """Disable the host's service, unless it is already (and no new
        ``--reason`` is given).
        """
        if service['status'] == 'disabled' and not self.args.reason:
            self.say('The compute service of %s is already disabled: %s'
                     % (self.host, service['disabled_reason']))
        elif self.args.dry_run:
            self.say('Would disable the compute service of %s (dry run).'
                     % self.host)
            return service
        else:
            reason = self.args.reason or 'drained by berth-manage at %s' % (
                timeutils.utcnow().strftime('%Y-%m-%dT%H:%M:%SZ'))
            service = self.api.disable_service(service['id'], reason)
            self.say('Disabled the compute service of %s: %s'
                     % (self.host, reason))
        self.answer['service'] = {'status': service['status'],
                                  'disabled_reason':
                                  service['disabled_reason']}
        return service

    # --- the moves ----------------------------------------------------

    def resume(self, engine, progress):
        """Finish the moves from the host an earlier drain left; those
        that ended (a move back on the host is planned again).
        """
        pending = moves.pending_tasks(self.api, self.host)
        if not pending:
            return []
        self.say('%d move(s) from %s already under way%s:' % (
            len(pending), self.host,
            ' (a drain would wait for or confirm them)'
            if self.args.dry_run else ''))
        self.say(*['  %s -> %s: %s' % (t.server, t.destination, t.why)
                   for t in pending])
        self.answer['resumed'] = [t.to_dict() for t in pending]
        if self.args.dry_run:
            return []
        progress.expect(len(pending))
        engine.run(pending, self.args.parallel)
        self.answer['resumed'] = [t.to_dict() for t in pending]
        return [t for t in pending if t.outcome != moves.RETURNED]

    def dry_run(self, tasks):
        """How each server would move; the exit code."""
        servers = {s['id']: s for s in self.api.servers_on(self.host)}
        lines = []
        for task in tasks:
            server = servers.get(task.server) or {}
            task.kind, why = moves.kind_for(server.get('status'),
                                            _mode(self.args))
            if task.destination is None:
                task.kind, why = None, task.why
            elif server.get('OS-EXT-STS:task_state'):
                task.kind, why = None, 'busy: task state %s' % server[
                    'OS-EXT-STS:task_state']
            if task.kind is None:
                task.outcome, task.detail = moves.LEFT, why
                lines.append('  %s (%s): left: %s' % (task.name,
                                                      task.server, why))
            else:
                lines.append('  %s (%s) %s -> %s: %s migration' % (
                    task.name, task.server, task.source, task.destination,
                    task.kind))
        moving = [t for t in tasks if t.kind is not None]
        self.say('Would move (dry run):', *lines)
        self.say('Result (dry run): %d of %d server(s) would be moved.'
                 % (len(moving), len(tasks)))
        return 0 if len(moving) == len(tasks) else 1

    def summary(self, tasks, elapsed):
        """The end: counts, what stays and why; the exit code."""
        staying = [t for t in tasks if t.outcome in (moves.LEFT,
                                                     moves.FAILED)]
        remaining = self.api.servers_on(self.host)
        self.answer['remaining'] = sorted(s['id'] for s in remaining)
        self.answer['empty'] = not remaining
        self.say('Drain of %s ended in %s: %s.' % (
            self.host, drain_progress.duration(elapsed), _counts(tasks)))
        self.say(*_staying_lines(self.host, staying, remaining))
        self.say(_result_line(self.host, staying, remaining))
        return 1 if remaining or staying else 0

    def execute(self, engine, progress):
        """Steps 2 to 4 of the module doc; the exit code."""
        started = time.monotonic()
        resumed = self.resume(engine, progress)
        plan, missing = _plan(self.conf, self.host)
        tasks = _tasks(plan, missing)
        self.answer['plan'] = capacity.plan_dict(plan, missing)
        if not tasks and not resumed:
            self.say('Host %s has no servers: nothing to drain.'
                     % self.host)
            self.answer['empty'] = True
            return 0
        if tasks:
            self.say(*capacity.what_if_lines(plan, missing))
        if self.args.dry_run:
            code = self.dry_run(tasks)
            self.answer['servers'] = [t.to_dict() for t in tasks]
            return code
        if tasks:
            self.say('Moving %d server(s) off %s, %d at a time.' % (
                len(plan.moves), self.host, self.args.parallel))
            progress.expect(len(tasks))
            engine.run(tasks, self.args.parallel)
        progress.finish()
        self.answer['servers'] = [t.to_dict() for t in tasks]
        return self.summary(resumed + tasks, time.monotonic() - started)


def _counts(tasks):
    """'3 moved, 1 left, 0 failed' (and the servers deleted meanwhile)."""
    counts = collections.Counter(t.outcome for t in tasks)
    text = '%d moved, %d left, %d failed' % (
        counts[moves.MOVED], counts[moves.LEFT], counts[moves.FAILED])
    if counts[moves.GONE]:
        text += ', %d deleted meanwhile' % counts[moves.GONE]
    return text


def _staying_lines(host, staying, remaining):
    """Each server left or failed with why, then any other server still
    on the host (one that came after the plan).
    """
    lines = []
    if staying:
        lines.append('Left where they are (%d):' % len(staying))
        lines += ['  %s (%s) on %s: %s: %s' % (
            t.name, t.server, t.host or t.source, t.outcome, t.detail)
            for t in staying]
    listed = {t.server for t in staying}
    others = [s for s in remaining if s['id'] not in listed]
    if others:
        lines.append('Also on %s (not in the plan):' % host)
        lines += ['  %s (%s): %s' % (s['name'], s['id'], s['status'])
                  for s in others]
    return lines


def _result_line(host, staying, remaining):
    if remaining:
        return 'Result: %d server(s) remain on %s.' % (len(remaining), host)
    if staying:
        # NOTE: e.g. a user's resize from the host, or a move that timed
        # out: the server is elsewhere, the host still holds resources.
        return ('Result: no server is on %s, but %d move(s) from it did '
                'not end (see above).' % (host, len(staying)))
    return 'Result: %s is empty.' % host


def _checked(args):
    """The one line saying what is wrong with the arguments, or None."""
    if args.parallel < 1:
        return '--parallel must be at least 1, not %d' % args.parallel
    if args.timeout <= 0:
        return '--timeout must be a positive number of seconds'
    return None


def _begin(run):
    """Find and disable the host's service; an exit code when that ends
    the command, else None.
    """
    service = run.api.compute_service(run.host)
    if service is None:
        print('Compute host %s could not be found.' % run.host)
        return INVALID
    run.disable(service)
    return None


def drain(conf):
    """``host drain``; see the module docstring."""
    args = conf.category
    problem = _checked(args)
    if problem:
        print(problem)
        return INVALID
    try:
        run = _Run(conf, _compute_api(conf))
        code = _begin(run)
        if code is not None:
            return code
        progress = drain_progress.DrainProgress(run.host)
        engine = moves.Drain(run.api, mode=_mode(args),
                             timeout=args.timeout, listener=progress)
        try:
            code = run.execute(engine, progress)
        except KeyboardInterrupt:
            progress.finish()
            print('Interrupted: the moves already asked for go on in the '
                  'cloud; run the same command again to finish the drain.',
                  file=sys.stderr)
            return INTERRUPTED
    except (compute_client.NotConfigured, compute_client.Unreachable,
            compute_client.APIError, explain_mod.Unreachable) as exc:
        print(str(exc))
        return explain_mod.UNREACHABLE
    except ValueError as exc:
        print(str(exc))
        return INVALID
    if args.json:
        print(json.dumps(run.answer, indent=2, sort_keys=True))
    return code


def add_parsers(subparsers):
    """Add ``host`` and its commands to berth-manage's parser."""
    parser = subparsers.add_parser('host', help='Host maintenance.')
    commands = parser.add_subparsers(dest='host_command',
                                     metavar='<command>')
    commands.required = True
    cmd = commands.add_parser(
        'drain', help='Disable a compute host and move its servers away, '
                      'following the capacity what-if plan.')
    cmd.add_argument('drained_host', metavar='HOST',
                     help='The compute host.')
    how = cmd.add_mutually_exclusive_group()
    how.add_argument('--live', action='store_true',
                     help='Only live migrations (stopped servers stay).')
    how.add_argument('--cold', action='store_true',
                     help='Cold-migrate every server (and confirm).')
    cmd.add_argument('--dry-run', dest='dry_run', action='store_true',
                     help='Show the plan and the moves; change nothing.')
    cmd.add_argument('--parallel', type=int, default=1, metavar='N',
                     help='Moves at a time (default 1).')
    cmd.add_argument('--reason', metavar='TEXT',
                     help='The disabled reason of the compute service '
                          '(default: "drained by berth-manage at <time>").')
    cmd.add_argument('--timeout', type=float,
                     default=moves.DEFAULT_TIMEOUT, metavar='SECONDS',
                     help='Seconds each move may take (default %d).'
                          % moves.DEFAULT_TIMEOUT)
    cmd.add_argument('--json', action='store_true',
                     help='Print the plan and the outcomes as JSON.')
    cmd.set_defaults(action_fn=drain)
