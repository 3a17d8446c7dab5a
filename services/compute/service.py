# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The compute service of one host, and the agent's two loops.

Each host an agent serves is a :class:`ComputeService`: its own service
record and RPC server (``server=host``). Only the lead service (the
first) runs loops, for the whole agent: one heartbeat for every host per
``report_interval`` and one resource update of every host per
``update_resources_interval``. A thousand simulated hosts thus cost two
timer threads, not two thousand.
"""

import logging

from common import service
from services.compute import agent as agent_mod

LOG = logging.getLogger(__name__)

DEFAULT_UPDATE_INTERVAL = 60


def update_interval(conf):
    """Seconds between periodic resource updates, or None (disabled)."""
    interval = conf.update_resources_interval
    if interval < 0:
        return None
    return interval or DEFAULT_UPDATE_INTERVAL


class ComputeService(service.Service):
    """One host's compute service.

    :param agent: the process's ComputeAgent.
    :param lead: run the agent's heartbeat and update loops.
    """

    def __init__(self, agent, host, manager, lead=False,
                 servicegroup_api=None):
        super().__init__(agent_mod.BINARY, agent_mod.TOPIC, manager,
                         host=host, servicegroup_api=servicegroup_api)
        self.agent = agent
        self.lead = lead

    def start(self):
        """Start as any service, then count in the agent's heartbeats."""
        super().start()
        self.agent.joined_service(self.host)

    def report_state(self):
        """The agent's heartbeat (every joined host)."""
        return self.agent.report_services()

    def _update(self):
        self.agent.update_all()

    def _start_loops(self):
        self._loops = []
        if not self.lead:
            return
        conf = self.agent.conf
        # NOTE: the service runner's own loop (logs a failed run and goes
        # on), with the whole agent's work in it.
        self._loops.append(service._Loop('berth-compute-heartbeat',
                                         self.report_state,
                                         conf.report_interval))
        interval = update_interval(conf)
        if interval is not None:
            self._loops.append(service._Loop(
                'berth-compute-resources', self._update, interval,
                initial_delay=interval))
        for loop in self._loops:
            loop.start()

    def wait(self):
        """Drain as any service; the lead also stops the agent's pool."""
        super().wait()
        if self.lead:
            self.agent.stop()
