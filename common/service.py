# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The service runner: RPC server, heartbeat, periodic tasks, workers.

A :class:`Service` serves one manager on ``topic`` and ``topic.host`` (and
the topic's fanout), reports to its service group every
``report_interval`` seconds and runs the manager's periodic tasks. A
launcher runs it until SIGTERM or SIGINT (stop taking messages, finish
those in flight, then exit); SIGHUP reloads the mutable options.

NOTE: oslo.service's launchers are not used: its threading backend needs
cotyledon, which Berth does not otherwise depend on, and its default
backend is eventlet, which Berth only allows as an opt-in mode. The two
launchers here are small: :class:`ServiceLauncher` for one process,
:class:`ProcessLauncher` forking N workers and respawning dead ones.
"""

import collections
import logging
import os
import random
import signal
import threading
import time

import oslo_messaging as messaging

from common import baserpc
import common.conf
from common import context
from common import exception
from common import gc_tuning
from common import rpc
from common import servicegroup

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF

# NOTE: the longest sleep between two periodic task runs, so that a task
# added at run time or a shortened spacing is picked up within a minute.
PERIODIC_INTERVAL_MAX = 60
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_HANDLED_SIGNALS = _STOP_SIGNALS + (signal.SIGHUP,)
# NOTE: the status of a worker that cannot start for want of
# configuration (sysexits' EX_CONFIG): respawning it cannot help, so the
# parent stops instead of looping.
EXIT_CONFIG = 78

# (slot, workers) of this process: (0, 1) unless forked by ProcessLauncher.
_worker = (0, 1)


def worker_slot():
    """(this worker's slot, number of workers) of the running service.

    Slots are 0 .. workers - 1 and a respawned worker takes the slot of
    the one it replaces.
    """
    return _worker


class _Loop(object):
    """Call ``func`` in a daemon thread until stopped.

    ``func`` returns the seconds to wait before its next call (None: the
    ``interval``). An exception is logged and the loop goes on, so one bad
    run never ends heartbeats or periodic tasks.
    """

    def __init__(self, name, func, interval, initial_delay=0):
        self.name = name
        self._func = func
        self._interval = interval
        self._initial_delay = initial_delay
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name,
                                        daemon=True)

    def start(self):
        """Start the thread."""
        self._thread.start()

    def _run(self):
        if self._stop.wait(self._initial_delay):
            return
        while True:
            try:
                delay = self._func()
            except Exception:
                LOG.exception('%s failed; retrying in %ss', self.name,
                              self._interval)
                delay = None
            if self._stop.wait(self._interval if delay is None else delay):
                return

    def stop(self):
        """Ask the loop to end; a run in progress completes."""
        self._stop.set()

    def wait(self, timeout=None):
        """Wait for the thread to end."""
        if self._thread.is_alive():
            self._thread.join(timeout)


class Service(object):
    """One RPC service: a manager served on a topic.

    :param binary: the program name, e.g. ``berth-scheduler``.
    :param topic: the RPC topic (``scheduler``, ``conductor``,
        ``compute``).
    :param manager: a :class:`common.manager.Manager` instance.
    :param host: the server name; default ``[DEFAULT] host``.
    :param servicegroup_api: a :class:`common.servicegroup.API`; default:
        one with the configured driver, made at :meth:`start`.
    """

    def __init__(self, binary, topic, manager, host=None,
                 servicegroup_api=None):
        self.binary = binary
        self.topic = topic
        self.manager = manager
        self.host = host or CONF.host
        self.servicegroup_api = servicegroup_api
        self.record = None
        self.rpcserver = None
        self._loops = []

    def __repr__(self):
        return '<Service %s on %s (topic %s)>' % (self.binary, self.host,
                                                  self.topic)

    def start(self):
        """Prepare the host, join the group, then consume messages.

        :raises Exception: whatever ``manager.init_host`` raises; nothing
            is consumed then.
        """
        LOG.info('Starting %s on %s', self.binary, self.host)
        self.manager.init_host()
        if self.servicegroup_api is None:
            self.servicegroup_api = servicegroup.API()
        self.record = self._join()
        # NOTE: per process: a worker made by fork initializes its own.
        if not rpc.initialized():
            rpc.init(CONF)
        endpoints = [self.manager,
                     baserpc.BaseRPCAPI(self.manager.service_name)]
        endpoints.extend(self.manager.additional_endpoints)
        self.rpcserver = self._rpc_server(endpoints)
        self.rpcserver.start()
        self.manager.post_start_hook()
        self._start_loops()

    def _join(self):
        """Create or revive the service record; returns it."""
        return self.servicegroup_api.join(self.host, self.binary, self.topic)

    def _rpc_server(self, endpoints):
        """The RPC server (not started) of ``topic`` and ``server=host``."""
        target = messaging.Target(topic=self.topic, server=self.host)
        return rpc.get_server(target, endpoints)

    def _start_loops(self):
        # NOTE: the first heartbeat goes out at once, so that the service
        # counts as up as soon as it consumes messages.
        self._loops = [_Loop('%s-heartbeat' % self.binary, self.report_state,
                             CONF.report_interval)]
        if CONF.periodic_enable:
            delay = 0
            if CONF.periodic_fuzzy_delay:
                delay = random.randint(0, CONF.periodic_fuzzy_delay)
            self._loops.append(_Loop('%s-periodic' % self.binary,
                                     self.periodic_tasks,
                                     PERIODIC_INTERVAL_MAX, delay))
        for loop in self._loops:
            loop.start()

    def report_state(self):
        """One heartbeat; returns the seconds until the next."""
        self.record = self.servicegroup_api.report(self.host, self.binary)
        return CONF.report_interval

    def periodic_tasks(self):
        """Run the due periodic tasks; returns the seconds until the next."""
        ctxt = context.get_admin_context()
        idle = self.manager.periodic_tasks(ctxt, raise_on_error=False)
        if idle is None:
            return PERIODIC_INTERVAL_MAX
        return min(max(idle, 0), PERIODIC_INTERVAL_MAX)

    def stop(self):
        """Stop taking messages and end the heartbeat and periodic tasks.

        Messages already taken still run; :meth:`wait` waits for them.
        """
        LOG.info('Stopping %s on %s', self.binary, self.host)
        for loop in self._loops:
            loop.stop()
        if self.rpcserver is not None:
            try:
                rpc.stop_server(self.rpcserver)
            except Exception:
                LOG.exception('Failed to stop the RPC server of %s', self)

    def wait(self):
        """Wait for in-flight messages and threads, then clean the host."""
        if self.rpcserver is not None:
            self.rpcserver.wait()
        for loop in self._loops:
            loop.wait()
        self.manager.cleanup_host()
        LOG.info('Stopped %s on %s', self.binary, self.host)

    def reset(self):
        """After SIGHUP: let the manager drop configuration-bound state."""
        self.manager.reset()


class StartInterrupted(SystemExit):
    """A stop signal came while a service was still starting.

    NOTE: a start can wait a long time (a compute waits for the
    conductor), and a queued signal would only be seen after it. This
    ends the process instead, with status 0 and no traceback, being a
    SystemExit (which ``except Exception`` retry loops let through).
    """

    def __init__(self, signum):
        super().__init__(0)
        self.signum = signum


def _install_handlers(handler):
    """Point the handled signals at ``handler``; returns the old ones."""
    return {sig: signal.signal(sig, handler) for sig in _HANDLED_SIGNALS}


def _restore_handlers(old):
    for sig, handler in old.items():
        signal.signal(sig, handler)


class _Launcher(object):
    """Signal bookkeeping shared by both launchers.

    NOTE: a Python signal handler runs in the main thread between two
    bytecodes; it only queues the signal, and :meth:`wait` acts on it, so
    no lock is ever taken inside a handler.
    """

    def __init__(self, conf=None):
        self.conf = conf if conf is not None else CONF
        self._pending = collections.deque()
        self._wake = threading.Event()
        self._old_handlers = None
        self._starting = False

    def handle_signal(self, signum, frame=None):
        """Queue ``signum`` for :meth:`wait` (the signal handler).

        :raises StartInterrupted: a stop signal while a service starts.
        """
        if self._starting and signum in _STOP_SIGNALS:
            self._starting = False
            raise StartInterrupted(signum)
        self._pending.append(signum)
        self._wake.set()

    def _install(self):
        if self._old_handlers is None:
            self._old_handlers = _install_handlers(self.handle_signal)

    def _restore(self):
        if self._old_handlers is not None:
            _restore_handlers(self._old_handlers)
            self._old_handlers = None

    def _next_signal(self, poll):
        """The next queued signal, waiting up to ``poll`` seconds."""
        if not self._pending:
            self._wake.wait(poll)
            self._wake.clear()
        return self._pending.popleft() if self._pending else None


class ServiceLauncher(_Launcher):
    """Runs services in this process until a stop signal."""

    def __init__(self, conf=None):
        super().__init__(conf)
        self.services = []

    def launch_service(self, service):
        """Start ``service``; signals are handled from now on.

        :raises StartInterrupted: SIGTERM/SIGINT before it started; what
            it had started, and the services started before, are stopped
            (and their hosts cleaned) first.
        """
        self._install()
        self._starting = True
        try:
            service.start()
        except StartInterrupted as exc:
            LOG.info('Caught signal %d while starting %s; exiting',
                     exc.signum, service)
            self._abandon(service)
            self.stop()
            raise
        finally:
            self._starting = False
        self.services.append(service)
        gc_tuning.settle()

    @staticmethod
    def _abandon(service):
        """Stop and drain a service whose start was cut short."""
        try:
            service.stop()
            service.wait()
        except Exception:
            LOG.warning('Could not stop %s cleanly after an interrupted '
                        'start', service, exc_info=True)

    def reload(self):
        """SIGHUP: reload mutable options, then reset each service."""
        LOG.info('Reloading mutable configuration options')
        self.conf.mutate_config_files()
        for service in self.services:
            service.reset()

    def stop(self, report=None):
        """Stop the services in the reverse of their start order.

        Each drains before the next one stops: a service started later
        may depend on an earlier one (a compute heartbeats through the
        conductor), never the other way round, so a consumer always
        finishes its last calls while its provider still answers.

        :param report: called with each service before it stops.
        """
        for service in reversed(self.services):
            if report is not None:
                report(service)
            service.stop()
            service.wait()

    def wait(self, poll=0.5, stop=None):
        """Serve until SIGTERM/SIGINT; returns the exit status (0).

        :param stop: what stops the services on the signal (default
            :meth:`stop`); the all-in-one stops its HTTP servers around it.
        """
        self._install()
        try:
            while True:
                signum = self._next_signal(poll)
                if signum == signal.SIGHUP:
                    self.reload()
                elif signum is not None:
                    LOG.info('Caught signal %d, stopping', signum)
                    (stop or self.stop)()
                    return 0
        finally:
            self._restore()


class ProcessLauncher(_Launcher):
    """Forks ``workers`` processes each running the service.

    The parent only supervises: it respawns a worker that dies, forwards
    SIGHUP (each worker reloads its own options) and on SIGTERM/SIGINT
    stops every worker and waits for them to drain.
    """

    def __init__(self, conf=None):
        super().__init__(conf)
        self.service = None
        self.workers = 0
        self.children = {}
        self._last_spawn = {}
        self.unusable = False

    def launch_service(self, service, workers):
        """Fork ``workers`` processes running ``service``."""
        self._install()
        self.service = service
        self.workers = workers
        gc_tuning.settle()
        for slot in range(workers):
            self._spawn(slot)

    def _spawn(self, slot):
        # NOTE: a worker dying at start must not make the parent spin: at
        # most one respawn per slot per second.
        delay = 1.0 - (time.monotonic() - self._last_spawn.get(slot, 0))
        if delay > 0:
            time.sleep(delay)
        self._last_spawn[slot] = time.monotonic()
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                status = self._child_main(slot)
            except exception.ConfigurationError as exc:
                LOG.error('Worker %d cannot start: %s', slot, exc)
                status = EXIT_CONFIG
            except SystemExit as exc:
                status = exc.code or 0
            except BaseException:
                LOG.exception('Worker %d failed', slot)
            finally:
                os._exit(status)
        LOG.info('Started worker %d (pid %d) of %s', slot, pid, self.service)
        self.children[pid] = slot

    def _child_main(self, slot):
        global _worker
        _worker = (slot, self.workers)
        _restore_handlers({sig: signal.SIG_DFL for sig in _HANDLED_SIGNALS})
        self._old_handlers = None
        rpc.reset_after_fork()
        launcher = ServiceLauncher(self.conf)
        launcher.launch_service(self.service)
        return launcher.wait()

    def _reap(self, respawn=True):
        """Collect exited workers; respawn them unless stopping."""
        for pid in list(self.children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if not done:
                continue
            slot = self.children.pop(pid)
            if os.WIFEXITED(status) and os.WEXITSTATUS(status) == EXIT_CONFIG:
                LOG.error('Worker %d (pid %d) cannot run with this '
                          'configuration; stopping', slot, pid)
                self.unusable = True
            elif respawn:
                LOG.warning('Worker %d (pid %d) exited with status %s; '
                            'respawning', slot, pid, status)
                self._spawn(slot)

    def _signal_children(self, signum):
        for pid in list(self.children):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    def stop(self):
        """SIGTERM every worker and wait for all of them to exit."""
        self._signal_children(signal.SIGTERM)
        while self.children:
            pid, _status = os.waitpid(next(iter(self.children)), 0)
            self.children.pop(pid, None)

    def wait(self, poll=0.5):
        """Supervise until SIGTERM/SIGINT; returns the exit status.

        0 after a stop signal; 1 when a worker could not start for want
        of configuration (the other workers are stopped then).
        """
        self._install()
        try:
            while True:
                signum = self._next_signal(poll)
                if signum == signal.SIGHUP:
                    self.conf.mutate_config_files()
                    self._signal_children(signal.SIGHUP)
                elif signum is not None:
                    LOG.info('Caught signal %d, stopping %d workers',
                             signum, len(self.children))
                    self.stop()
                    return 0
                self._reap()
                if self.unusable:
                    self.stop()
                    return 1
        finally:
            self._restore()


def launch(service, workers=1):
    """Start ``service`` in ``workers`` processes; returns the launcher.

    One worker runs in this process; more are forked. Call ``wait()`` on
    the result to serve until a stop signal.
    """
    if workers and workers > 1:
        launcher = ProcessLauncher()
        launcher.launch_service(service, workers)
    else:
        launcher = ServiceLauncher()
        launcher.launch_service(service)
    return launcher


def serve(service, workers=1):
    """Run ``service`` until SIGTERM/SIGINT; returns the exit status."""
    return launch(service, workers).wait()
