# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Server side of the compute RPC API: thin, one per served host.

Each host an agent serves has its own manager (and RPC server with
``server=host``); the work lives in :mod:`services.compute.build` and
:mod:`services.compute.delete`, the state in the shared agent.
"""

import logging

import oslo_messaging as messaging

from common import manager
from services.compute import build
from services.compute import delete

LOG = logging.getLogger(__name__)


class ComputeManager(manager.Manager):
    """The compute RPC endpoint of one host.

    :param host: the host this manager serves.
    :param agent: the process's ComputeAgent.
    """

    target = messaging.Target(version='1.0')

    def __init__(self, host, agent):
        super().__init__(host=host, service_name='compute')
        self.agent = agent

    def init_host(self):
        """Prepare the agent (records, recovery, first update) once."""
        self.agent.start()

    def build_and_run_instance(self, ctxt, instance, request_spec, selection,
                               alternates, node=None):
        """Claim, spawn and activate an instance; reschedule on failure.

        :param instance: the Instance primitive.
        :param request_spec: the RequestSpec primitive.
        :param selection: the claimed Selection primitive.
        :param alternates: Selection primitives to reschedule to.
        :param node: the node (default the selection's).
        """
        build.BuildTask(self.agent, ctxt, self.host, instance, request_spec,
                        selection, alternates, node).run()

    def terminate_instance(self, ctxt, instance_uuid):
        """Delete an instance of this host.

        :param instance_uuid: the instance to delete.
        """
        delete.terminate(self.agent, ctxt, self.host, instance_uuid)
