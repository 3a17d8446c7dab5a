# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A starting compute waits for the conductor, briefly at first."""

from oslo_messaging import exceptions as messaging_exc

from common import baserpc
from common import context
from services.compute import agent as agent_mod


def test_a_lost_first_ping_costs_a_second_not_a_whole_timeout(monkeypatch):
    # NOTE: a ping sent before the conductor's queue exists is dropped by
    # the broker; only its timeout tells the agent to ask again.
    timeouts = []
    sleeps = []

    class Conductor(object):
        def __init__(self, topic):
            assert topic == 'conductor'

        def ping(self, ctxt, arg, timeout=None):
            timeouts.append(timeout)
            if len(timeouts) < 7:
                raise messaging_exc.MessagingTimeout('nobody answered')
            return {'service': 'conductor', 'arg': arg}

    monkeypatch.setattr(baserpc, 'BaseAPI', Conductor)
    monkeypatch.setattr(agent_mod.time, 'sleep', sleeps.append)
    agent_mod.ComputeAgent._wait_for_conductor(
        None, context.get_admin_context())
    assert timeouts == [1, 2, 4, 8, 10, 10, 10]
    assert sleeps == [agent_mod.CONDUCTOR_WAIT_INTERVAL] * 6
