# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The ``conductor`` service-group driver: records kept by the conductor.

Compute agents have no database credentials, so they join, heartbeat and
read their service records through the conductor's record proxy, which
stores them with the ``db`` driver. :meth:`ConductorDriver.report_many`
heartbeats many hosts in one call: an agent simulating hundreds of hosts
sends one message per ``report_interval``, not hundreds.

NOTE: the conductor's RPC client is handed in by the service that uses
this driver (the compute agent, see services/compute/cmd.py, which also
registers the ``conductor`` name for ``[DEFAULT] servicegroup_driver``):
common/ never imports services/ (tests/unit/test_layering.py).
"""

import logging

from common import context as berth_context
from common import servicegroup

LOG = logging.getLogger(__name__)


class ConductorDriver(servicegroup.ServiceGroupDriver):
    """Service records through ``ConductorAPI``'s service_* calls.

    :param conductor_api: the conductor's RPC client
        (``services.conductor.rpcapi.ConductorAPI``, or anything with its
        ``service_join``, ``service_report``, ``service_report_many`` and
        ``service_get`` methods).
    """

    def __init__(self, conductor_api):
        self.conductor = conductor_api

    @staticmethod
    def _context():
        return berth_context.get_admin_context()

    @staticmethod
    def _record(primitive):
        if primitive is None:
            return None
        return servicegroup.ServiceRecord.from_primitive(primitive)

    def join(self, host, binary, topic):
        """See :meth:`ServiceGroupDriver.join`."""
        return self._record(self.conductor.service_join(
            self._context(), host, binary, topic))

    def report(self, host, binary):
        """See :meth:`ServiceGroupDriver.report`."""
        return self._record(self.conductor.service_report(
            self._context(), host, binary))

    def report_many(self, hosts, binary):
        """One heartbeat for each of ``hosts`` in one conductor call."""
        self.conductor.service_report_many(self._context(), list(hosts),
                                           binary)

    def get(self, host, binary):
        """See :meth:`ServiceGroupDriver.get`."""
        return self._record(self.conductor.service_get(
            self._context(), host, binary))

    def get_all(self, binary=None):
        """Not offered: listing services is for holders of the database.

        :raises NotImplementedError: always.
        """
        raise NotImplementedError(
            'the conductor service-group driver cannot list services; '
            'use the db driver where the database is reachable')

    def update(self, host, binary, **values):
        """Not offered: admin changes go through the API's database.

        :raises NotImplementedError: always.
        """
        raise NotImplementedError(
            'the conductor service-group driver cannot change service '
            'records; use the db driver where the database is reachable')
