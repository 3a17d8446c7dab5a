# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""``berth-compute``: the agent of one hypervisor host, or of many fakes.

    berth-compute --config-file /etc/berth/berth.conf

Serves ``build_and_run_instance`` and ``terminate_instance`` on topic
``compute`` for every host the driver reports (``[fake_driver]
host_count`` simulated hosts, or this machine), keeps their records
through the conductor and their providers in placement. One process,
no workers: the hosts share the agent's state.
"""

# NOTE: first, before anything imports threading (BERTH_EVENTLET mode).
from common import eventlet_mode  # noqa: F401

import logging
import sys

from common import config
from common.placement import client as placement_client
from common import preflight
from common import rpc
from common import service
from common import servicegroup
from common import servicegroup_conductor
from services.compute import agent as agent_mod
from services.compute import manager
from services.compute import report
from services.compute import service as compute_service
from services.compute import virt

LOG = logging.getLogger(__name__)


def _conductor_driver():
    """The ``conductor`` service-group driver, on a new conductor client.

    NOTE: registered here, by the service that owns the dependency:
    common.servicegroup_conductor must not import the conductor's client.
    """
    from services.conductor import rpcapi as conductor_rpcapi
    return servicegroup_conductor.ConductorDriver(
        conductor_rpcapi.ConductorAPI())


servicegroup.register_driver('conductor', _conductor_driver)


def build_agent(conf, driver=None, conductor=None, scheduler=None,
                placement=None, servicegroup_api=None,
                wait_for_conductor=True):
    """The ComputeAgent of this process, its clients built from ``conf``.

    Each argument left None is built from the configuration: the driver
    from ``[compute] compute_driver``, the conductor and scheduler RPC
    clients (RPC is initialized if needed), the placement client from
    ``[placement]``, heartbeats through the conductor.

    :raises services.compute.virt.driver.DriverNotFound: unknown driver.
    """
    if not rpc.initialized():
        rpc.init(conf)
    if driver is None:
        driver = virt.load_driver(conf)
    if conductor is None:
        from services.conductor import rpcapi as conductor_rpcapi
        conductor = conductor_rpcapi.ConductorAPI()
    if scheduler is None:
        from services.scheduler import rpcapi as scheduler_rpcapi
        scheduler = scheduler_rpcapi.SchedulerAPI()
    if placement is None:
        placement = placement_client.PlacementClient(conf)
    if servicegroup_api is None:
        # NOTE: computes always heartbeat through the conductor, whatever
        # servicegroup_driver the rest of the deployment uses.
        servicegroup_api = servicegroup.API(
            servicegroup_conductor.ConductorDriver(conductor))
    reporter = report.ReportClient(
        placement, refresh=conf.compute.resource_provider_association_refresh)
    return agent_mod.ComputeAgent(
        conf, driver, conductor, reporter, scheduler=scheduler,
        servicegroup=servicegroup_api,
        wait_for_conductor=wait_for_conductor)


def build_services(conf, **kwargs):
    """The service of this process, ready to start (all-in-one entry).

    :param kwargs: passed to :func:`build_agent` (tests inject clients).
    :returns: a list with one common.service.Service serving every host
        of the agent.
    """
    agent = build_agent(conf, **kwargs)
    return [compute_service.ComputeService(
        agent, manager.ComputeManager(agent),
        servicegroup_api=agent.servicegroup)]


def main(argv=None):
    """Console-script entry point; returns the exit status."""
    conf = preflight.start('berth-compute', argv)
    config.setup_logging('berth-compute')
    services = build_services(conf)
    LOG.info('Starting berth-compute for %d host(s) with the %s driver',
             sum(len(svc.hosts) for svc in services),
             conf.compute.compute_driver)
    launcher = service.ServiceLauncher(conf)
    for svc in services:
        launcher.launch_service(svc)
    return launcher.wait()


if __name__ == '__main__':
    sys.exit(main())
