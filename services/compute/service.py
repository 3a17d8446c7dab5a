# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The compute service of an agent, for every host the agent serves.

Each host keeps its own service record and its own direct queue
(``compute.<host>``), as a real compute host does; what they share is the
process: one RPC server consuming every host's queue on one connection
(:mod:`common.rpc_hosts`), one heartbeat loop for every host per
``report_interval`` and one resource update of every host per
``update_resources_interval``. A thousand simulated hosts thus cost one
broker connection and two timer threads, not a thousand of each.
"""

import concurrent.futures
import logging

from common import context
from common import rpc_hosts
from common import service
from services.compute import agent as agent_mod
from services.compute import resize
from services.compute import shelve
from services.compute import stuck_builds

LOG = logging.getLogger(__name__)

DEFAULT_UPDATE_INTERVAL = 60
# NOTE: joins are conductor calls; a few at once make a thousand hosts
# join in seconds without flooding the conductor.
JOIN_WORKERS = 8


def update_interval(conf):
    """Seconds between periodic resource updates, or None (disabled)."""
    interval = conf.update_resources_interval
    if interval < 0:
        return None
    return interval or DEFAULT_UPDATE_INTERVAL


class ComputeService(service.Service):
    """The compute service of every host of one agent.

    ``host`` is the first host (the process's name in logs); ``hosts``
    all of them.

    :param agent: the process's ComputeAgent.
    :param manager: the ComputeManager (the RPC endpoint of all hosts).
    """

    def __init__(self, agent, manager, servicegroup_api=None):
        super().__init__(agent_mod.BINARY, agent_mod.TOPIC, manager,
                         host=agent.hosts[0],
                         servicegroup_api=servicegroup_api)
        self.agent = agent
        self.hosts = list(agent.hosts)
        self.records = {}

    def _join(self):
        """Every host's record; the agent heartbeats the joined ones."""
        def join(host):
            record = self.servicegroup_api.join(host, self.binary,
                                                self.topic)
            self.agent.joined_service(host)
            return host, record

        with concurrent.futures.ThreadPoolExecutor(
                max_workers=min(JOIN_WORKERS, len(self.hosts)),
                thread_name_prefix='berth-compute-join') as pool:
            self.records = dict(pool.map(join, self.hosts))
        return self.records[self.host]

    def _rpc_server(self, endpoints):
        return rpc_hosts.HostsServer(self.topic, self.hosts, endpoints)

    def report_state(self):
        """The agent's heartbeat (every joined host)."""
        return self.agent.report_services()

    def _update(self):
        self.agent.update_all()

    def _end_unclaimed_builds(self):
        self.agent.end_unclaimed_builds()
        # NOTE: a failed end is retried one grace period later; once
        # nothing is pending the loop has no more work.
        if not len(self.agent.pending_builds):
            return 24 * 3600

    def _check_build_timeouts(self):
        # NOTE: None: the loop's own interval until the next check.
        self.agent.check_build_timeouts()

    def _confirm_resizes(self):
        # NOTE: None: the loop's own interval until the next check.
        resize.confirm_expired(self.agent, context.get_admin_context(),
                               self.agent.conf.resize_confirm_window)

    def _offload_shelved(self):
        # NOTE: None: the loop's own interval until the next look.
        shelve.offload_expired(self.agent,
                               context.get_admin_context())

    def _start_loops(self):
        conf = self.agent.conf
        # NOTE: the service runner's own loop (logs a failed run and goes
        # on), with the whole agent's work in it.
        self._loops = [service._Loop('berth-compute-heartbeat',
                                     self.report_state,
                                     conf.report_interval)]
        interval = update_interval(conf)
        if interval is not None:
            self._loops.append(service._Loop(
                'berth-compute-resources', self._update, interval,
                initial_delay=interval))
        grace = conf.compute.restart_build_grace
        if len(self.agent.pending_builds):
            # NOTE: once, when the casts queued while the agent was down
            # have had their time to arrive; later runs find nothing.
            self._loops.append(service._Loop(
                'berth-compute-build-recovery', self._end_unclaimed_builds,
                grace, initial_delay=grace))
        timeouts = stuck_builds.check_interval(
            conf.compute.instance_build_timeout)
        if timeouts is not None:
            self._loops.append(service._Loop(
                'berth-compute-build-timeouts',
                self._check_build_timeouts, timeouts,
                initial_delay=timeouts))
        window = conf.resize_confirm_window
        if window:
            self._loops.append(service._Loop(
                'berth-compute-resize-confirm', self._confirm_resizes,
                min(window, 60), initial_delay=min(window, 60)))
        if conf.shelved_offload_time > 0 and conf.shelved_poll_interval:
            self._loops.append(service._Loop(
                'berth-compute-shelved-offload', self._offload_shelved,
                conf.shelved_poll_interval,
                initial_delay=conf.shelved_poll_interval))
        for loop in self._loops:
            loop.start()

    def wait(self):
        """Drain as any service, then stop the agent's update pool."""
        super().wait()
        self.agent.stop()
