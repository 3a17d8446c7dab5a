# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The moves of a host drain: one state machine per server, N at a time.

Each server of the plan (services/scheduler/capacity/what_if.py) is a
:class:`Task` with its planned destination. :class:`Drain` runs the tasks
on a futurist thread pool, started in plan order, each one through the
compute REST API (services/manage/compute_client.py)::

    START       no planned destination -> LEFT (the plan's why)
                GET the server: gone -> GONE; no longer on the source ->
                MOVED; its status and the mode say live, cold or LEFT
                (with why); a task in progress -> LEFT (busy)
                POST os-migrateLive / migrate with host = the planned
                destination (the scheduler still checks it); a refusal
                (400, 409: Nova's message) -> FAILED
    MOVING      GET the server until its task ends:
                ERROR -> FAILED (its fault)
                VERIFY_RESIZE -> CONFIRM (a user's resize: LEFT, its
                owner's to confirm or revert)
                off the source -> MOVED
                back on the source -> FAILED (the migration's status and
                the failed event's message); RETURNED for a resumed move
    CONFIRM     POST confirmResize: until then the source's allocation
                stays with the migration consumer, and the host would not
                end empty
    CONFIRMING  GET the server until it leaves VERIFY_RESIZE -> MOVED

A move still under way after ``timeout`` seconds is FAILED (it goes on in
the cloud; the next drain waits for it). Interrupted (:meth:`Drain.stop`),
the tasks stop waiting and keep no outcome.

Resuming needs no state of its own (:func:`pending_tasks`): the moves
from the host that are still under way (os-migrations by status) are
waited for, the cold migrations left in VERIFY_RESIZE (``finished``)
confirmed (a user's resize is reported, not confirmed); the caller then
plans what is still on the host, and the deterministic plan gives the
same destinations as before.
"""

from concurrent import futures
import dataclasses
import logging
import threading
import time

import futurist
from futurist import waiters

from services.manage import compute_client

LOG = logging.getLogger(__name__)

# Modes (the command's --live / --cold; DEFAULT: each server's own),
# also the kinds of move (with RESIZE, a user's, found when resuming).
DEFAULT = 'default'
LIVE = 'live'
COLD = 'cold'
RESIZE = 'resize'

# States of a task.
START = 'start'
MOVING = 'moving'
CONFIRM = 'confirm'
CONFIRMING = 'confirming'
DONE = 'done'

# Outcomes.
MOVED = 'moved'
LEFT = 'left'
FAILED = 'failed'
GONE = 'gone'
#: A resumed move that ended on the source: planned again.
RETURNED = 'returned'

#: Seconds between two looks at a moving server, once it has moved for
#: a while.
POLL_INTERVAL = 1.0
#: Seconds before the second look of a state; each wait after it is
#: twice the one before, up to the poll interval. A move of a small
#: server on a fast network ends within a second: waiting a whole second
#: from the start would make that second most of the drain's time, and
#: a long move costs only two looks more.
FIRST_POLL = 0.25
#: Seconds between two looks of the main thread at an interruption.
WAKE_INTERVAL = 0.5
#: Seconds a move may take by default (``--timeout``).
DEFAULT_TIMEOUT = 1800

_LIVE_STATUSES = ('ACTIVE', 'PAUSED')
_COLD_STATUSES = ('ACTIVE', 'SHUTOFF')
# NOTE: the migration statuses of a move not over yet (Nova's), the
# ``finished`` one awaiting its confirmation included.
IN_FLIGHT = ('accepted', 'queued', 'preparing', 'running', 'pre-migrating',
             'migrating', 'post-migrating', 'finished', 'confirming',
             'reverting')
# NOTE: the kind of move each migration_type is (an evacuation is
# waited for as a cold move: it ends off the host, with no confirmation).
_KINDS = {'live-migration': LIVE, 'migration': COLD, 'resize': RESIZE,
          'evacuation': COLD}


@dataclasses.dataclass
class Task(object):
    """One server of the drain.

    :ivar destination: the planned host (a resumed move's destination,
        None when the migration has none yet).
    :ivar why: the plan's explanation (why there, or why nowhere).
    :ivar kind: LIVE or COLD once chosen (RESIZE: a user's resize
        found under way).
    :ivar outcome: MOVED, LEFT, FAILED, GONE or RETURNED; None while it
        runs or when it was interrupted.
    :ivar detail: what the outcome needs said (a failure's reason).
    :ivar host: where the server is at the end.
    """

    server: str
    name: str
    source: str
    destination: str = None
    why: str = ''
    state: str = START
    kind: str = None
    resumed: bool = False
    outcome: str = None
    detail: str = ''
    host: str = None
    started: float = None
    ended: float = None
    #: Waits since the task entered its state (see :meth:`Drain._wait`).
    waits: int = 0

    def to_dict(self):
        """A JSON-ready dict (no timings)."""
        body = dataclasses.asdict(self)
        for name in ('state', 'started', 'ended', 'waits'):
            body.pop(name)
        return body


def kind_for(status, mode):
    """(LIVE or COLD, None), or (None, why a server in ``status`` is not
    moved in ``mode``).
    """
    if mode == COLD:
        if status in _COLD_STATUSES:
            return COLD, None
        return None, ('a %s server cannot be cold-migrated (--cold moves '
                      'ACTIVE and SHUTOFF servers)' % status)
    if status in _LIVE_STATUSES:
        return LIVE, None
    if mode == LIVE:
        return None, ('a %s server is not live-migrated (--live moves '
                      'ACTIVE and PAUSED servers)' % status)
    if status == 'SHUTOFF':
        return COLD, None
    return None, ('a %s server is not moved (only ACTIVE, PAUSED and '
                  'SHUTOFF servers are)' % status)


def pending_tasks(api, host):
    """Tasks for the moves from ``host`` still under way or awaiting
    their confirmation, oldest first (the latest migration of each
    server).
    """
    latest = {}
    for status in IN_FLIGHT:
        for migration in api.migrations(source_compute=host,
                                        status=status):
            known = latest.get(migration['instance_uuid'])
            if known is None or migration['id'] > known['id']:
                latest[migration['instance_uuid']] = migration
    tasks = []
    for migration in sorted(latest.values(), key=lambda m: m['id']):
        kind = _KINDS.get(migration.get('migration_type'), COLD)
        finished = migration['status'] == 'finished' and kind == COLD
        tasks.append(Task(
            server=migration['instance_uuid'], name=None, source=host,
            destination=migration['dest_compute'], kind=kind, resumed=True,
            state=CONFIRM if finished else MOVING,
            why='%s %s' % (migration.get('migration_type') or 'migration',
                           migration['status'])))
    return tasks


def _host(server):
    return server.get('OS-EXT-SRV-ATTR:host')


def _task_state(server):
    return server.get('OS-EXT-STS:task_state')


class Drain(object):
    """Run tasks through the compute API.

    :param api: a :class:`compute_client.ComputeAPI` (or a fake).
    :param mode: DEFAULT, LIVE or COLD.
    :param timeout: seconds each move may take.
    :param listener: ``listener(event, task)`` for ``started`` (a move
        was asked for), ``resumed`` (a move found under way is watched),
        ``confirming`` and ``ended``; called from the pool's threads.
    """

    def __init__(self, api, mode=DEFAULT, timeout=DEFAULT_TIMEOUT,
                 poll_interval=None, listener=None, clock=time.monotonic):
        self.api = api
        self.mode = mode
        self.timeout = timeout
        self.poll_interval = POLL_INTERVAL if poll_interval is None \
            else poll_interval
        self.listener = listener or (lambda event, task: None)
        self.clock = clock
        self.stopping = threading.Event()
        self._handlers = {START: self._start, MOVING: self._moving,
                          CONFIRM: self._confirm,
                          CONFIRMING: self._confirming}

    def run(self, tasks, parallel=1):
        """Run ``tasks``, ``parallel`` at a time, started in their order;
        returns them with their outcomes.

        :raises KeyboardInterrupt: after stopping every task (their
            moves go on in the cloud).
        """
        pool = futurist.ThreadPoolExecutor(max_workers=parallel)
        running = [pool.submit(self.move, task) for task in tasks]
        try:
            for future in running:
                _result(future)
        except BaseException:
            self.stop()
            # NOTE: the running tasks notice at their next wait.
            waiters.wait_for_all(running)
            raise
        finally:
            # NOTE: idle workers end on their own within a second;
            # waiting for them would add that second to every run.
            pool.shutdown(wait=False)
        return tasks

    def interval(self, waits):
        """Seconds of the wait that follows ``waits`` waits in a state."""
        return min(self.poll_interval, FIRST_POLL * 2 ** min(waits, 16))

    def stop(self):
        """Stop waiting: running tasks return, the others do not start."""
        self.stopping.set()

    def move(self, task):
        """Drive ``task`` through its states until it ends; returns it."""
        task.started = self.clock()
        if task.resumed and not self.stopping.is_set():
            self.listener('resumed', task)
        while task.state != DONE and not self.stopping.is_set():
            state = task.state
            try:
                self._handlers[state](task)
            except (compute_client.APIError,
                    compute_client.Unreachable) as exc:
                self._end(task, FAILED, str(exc))
            except Exception as exc:
                LOG.exception('The move of %s failed', task.server)
                self._end(task, FAILED, 'unexpected error: %s' % exc)
            if task.state != state:
                task.waits = 0
        return task

    # --- the states -------------------------------------------------------

    def _start(self, task):
        if task.destination is None:
            # NOTE: the plan found no host: the server stays untouched.
            self._end(task, LEFT, task.why, host=task.source)
            return
        server = self.api.get_server(task.server)
        if not self._present(task, server):
            return
        if _host(server) != task.source:
            self._end(task, MOVED, 'already on %s' % _host(server),
                      host=_host(server))
            return
        kind, why = kind_for(server['status'], self.mode)
        if kind is None:
            self._end(task, LEFT, why, host=task.source)
            return
        if _task_state(server):
            self._end(task, LEFT, 'busy: task state %s; run the drain again '
                      'once it ends' % _task_state(server), host=task.source)
            return
        task.kind = kind
        call = self.api.live_migrate if kind == LIVE else self.api.migrate
        try:
            call(task.server, task.destination)
        except (compute_client.APIError, compute_client.Unreachable) as exc:
            self._end(task, FAILED, _refusal(exc), host=task.source)
            return
        task.state = MOVING
        self.listener('started', task)

    def _moving(self, task):
        server = self._look(task)
        if server is None:
            return
        if server['status'] == 'VERIFY_RESIZE' and not _task_state(server):
            self._verify(task, server)
        elif server['status'] == 'ERROR':
            self._failed(task, server)
        elif not _task_state(server):
            self._settled(task, server)
        else:
            self._wait(task, server)

    def _verify(self, task, server):
        if task.kind == RESIZE:
            # NOTE: a resize is its owner's to confirm or revert; until
            # then the host keeps the old flavor's allocation.
            self._end(task, LEFT, "a resize awaiting its owner's "
                      "confirmation or revert (the host keeps its "
                      "allocation until then)", host=_host(server))
        else:
            task.state = CONFIRM

    def _confirm(self, task):
        try:
            self.api.confirm_resize(task.server)
        except compute_client.APIError as exc:
            # NOTE: 400/409 when another confirm or a revert came first:
            # the server tells how it ends.
            server = self.api.get_server(task.server)
            if (server is not None and server['status'] == 'VERIFY_RESIZE'
                    and not _task_state(server)):
                self._end(task, FAILED, 'confirmResize refused: %s'
                          % exc.message, host=_host(server))
                return
        except compute_client.Unreachable as exc:
            self._wait(task, None, str(exc))
            return
        task.state = CONFIRMING
        self.listener('confirming', task)

    def _confirming(self, task):
        server = self._look(task)
        if server is None:
            return
        if server['status'] == 'ERROR':
            self._failed(task, server)
        elif server['status'] == 'VERIFY_RESIZE' or _task_state(server):
            self._wait(task, server)
        else:
            self._settled(task, server)

    # --- helpers ----------------------------------------------------------

    def _look(self, task):
        """The server; None when the task ended (gone) or must wait (no
        answer this time: a poll outlives a short outage).
        """
        try:
            server = self.api.get_server(task.server)
        except (compute_client.APIError, compute_client.Unreachable) as exc:
            self._wait(task, None, str(exc))
            return None
        if not self._present(task, server):
            return None
        return server

    def _present(self, task, server):
        if server is None:
            self._end(task, GONE, 'deleted meanwhile')
            return False
        if task.name is None:
            task.name = server.get('name')
        return True

    def _wait(self, task, server, problem=None):
        """Poll again after a while (short at first in each state, see
        :data:`FIRST_POLL`), or end the task as timed out.
        """
        if self.clock() - task.started < self.timeout:
            self.stopping.wait(self.interval(task.waits))
            task.waits += 1
            return
        if server is not None:
            problem = 'status %s, task state %s' % (server['status'],
                                                    _task_state(server))
        self._end(task, FAILED, 'still moving after %ds (%s); it goes on '
                  'in the cloud: run the drain again to wait for it'
                  % (self.timeout, problem), host=task.source)

    def _settled(self, task, server):
        """The move is over: where did the server end?"""
        host = _host(server)
        if host != task.source:
            detail = '' if host == task.destination or \
                task.destination is None else \
                'on %s, not the planned %s' % (host, task.destination)
            self._end(task, MOVED, detail, host=host)
        elif task.resumed:
            self._end(task, RETURNED, 'back on %s' % host, host=host)
        else:
            self._failed(task, server)

    def _failed(self, task, server):
        self._end(task, FAILED, self._why_failed(task, server),
                  host=_host(server))

    def _why_failed(self, task, server):
        """The server's fault, else its failed event's message, and its
        latest migration's status.
        """
        reasons = []
        fault = server.get('fault') or {}
        try:
            message = fault.get('message') or self.api.last_error(
                task.server)
            if message:
                reasons.append(message)
            migrations = self.api.migrations(instance_uuid=task.server)
            if migrations:
                reasons.append('migration %s %s' % (
                    migrations[0].get('migration_type') or 'migration',
                    migrations[0]['status']))
        except (compute_client.APIError, compute_client.Unreachable) as exc:
            reasons.append('(no details: %s)' % exc)
        status = 'status %s' % server['status']
        return '; '.join([status] + reasons)

    def _end(self, task, outcome, detail, host=None):
        task.outcome, task.detail, task.host = outcome, detail, host
        task.state = DONE
        task.ended = self.clock()
        self.listener('ended', task)


def _result(future):
    """``future.result()``, waiting in short slices.

    NOTE: a Ctrl-C the kernel hands to a pool thread only sets a flag the
    main thread reads when it runs; a wait without a timeout would hold
    it back until the next move ends.
    """
    while True:
        try:
            return future.result(timeout=WAKE_INTERVAL)
        except futures.TimeoutError:
            continue


def _refusal(exc):
    """The one line of a refused (or unanswered) move request."""
    if isinstance(exc, compute_client.APIError):
        return 'refused (%d): %s' % (exc.status, exc.message)
    return str(exc)
