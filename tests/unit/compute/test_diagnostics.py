# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A guest's diagnostics: the driver's answer and the manager's."""

import types

import pytest

from services.compute import manager
from services.compute.virt import driver
from services.compute.virt import fake

UUID = '0d3c7e0a-4f5e-4e47-9a59-0f6c2b1c7a11'


def _spawned(conf):
    drv = fake.FakeDriver(conf.conf)
    host = drv.hosts()[0]
    drv.spawn(driver.Guest(uuid=UUID, host=host, nodename=host,
                           allocations={'rp1': {'VCPU': 2,
                                                'MEMORY_MB': 512,
                                                'DISK_GB': 1}}))
    return drv, host


def test_fake_driver_diagnostics(conf):
    drv, host = _spawned(conf)
    diag = drv.get_diagnostics(host, UUID)
    assert diag['state'] == 'running' and diag['driver'] == 'fake'
    assert diag['num_cpus'] == 2 and len(diag['cpu_details']) == 2
    assert diag['memory_details'] == {'maximum': 512, 'used': None}
    assert diag['num_disks'] == 1 and diag['num_nics'] == 0
    assert diag['cpu_details'][1] == {'id': 1, 'time': None,
                                      'utilisation': None}
    with pytest.raises(driver.GuestNotFound):
        drv.get_diagnostics(host, 'other')


def test_manager_answers_errors_as_values(conf):
    drv, host = _spawned(conf)
    agent = types.SimpleNamespace(driver=drv, trackers={host: None},
                                  hosts=[host])
    mgr = manager.ComputeManager.__new__(manager.ComputeManager)
    mgr.agent = agent
    mgr.host = host
    answer = mgr.get_diagnostics(None, UUID, host)
    assert answer['diagnostics']['num_cpus'] == 2
    assert mgr.get_diagnostics(None, 'other', host) == {
        'error': 'not-found'}

    def missing(host, uuid):
        raise NotImplementedError()

    drv.get_diagnostics = missing
    assert mgr.get_diagnostics(None, UUID, host) == {
        'error': 'not-implemented'}
