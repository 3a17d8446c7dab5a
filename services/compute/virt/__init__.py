# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Virt drivers, loaded by name from the ``berth.compute.drivers`` entry
points (``[compute] compute_driver``)."""

import stevedore

from services.compute.virt import driver

NAMESPACE = 'berth.compute.drivers'


def load_driver(conf, name=None):
    """The driver ``name`` (default ``[compute] compute_driver``), built.

    :raises driver.DriverNotFound: no such entry point; the agent refuses
        to start rather than run without hypervisor.
    """
    name = name or conf.compute.compute_driver
    try:
        manager = stevedore.DriverManager(NAMESPACE, name,
                                          invoke_on_load=True,
                                          invoke_args=(conf,))
    except stevedore.exception.NoMatches:
        raise driver.DriverNotFound(name=name, namespace=NAMESPACE)
    return manager.driver
