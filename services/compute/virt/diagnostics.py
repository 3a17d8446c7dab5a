# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A guest's diagnostics in Nova's standard (2.48) shape.

Berth's drivers run no hypervisor that meters guests, so the figures
are what a driver knows of a guest: its vCPUs, memory and disk from the
placement allocations it was built with. Counters nothing measures (CPU
time, memory in use, disk and NIC traffic) are None, never made up;
guests have no NICs (Berth has no network service) and no config drive.
"""

import platform

_VCPU_CLASSES = ('VCPU', 'PCPU')
# NOTE: Nova's names of the power states in the ``state`` field.
POWER_STATES = {0: 'pending', 1: 'running', 3: 'paused', 4: 'shutdown',
                6: 'crashed', 7: 'suspended'}


def _amounts(guest):
    """resource class -> amount over every provider of the guest."""
    totals = {}
    for resources in (guest.allocations or {}).values():
        for name, amount in (resources or {}).items():
            totals[name] = totals.get(name, 0) + int(amount)
    return totals


def from_guest(guest, driver_name, hypervisor, state='running'):
    """The standard diagnostics dict of a running :class:`Guest`."""
    amounts = _amounts(guest)
    cpus = sum(amounts.get(rc, 0) for rc in _VCPU_CLASSES)
    disks = 1 if amounts.get('DISK_GB') else 0
    return {
        'state': state,
        'driver': driver_name,
        'hypervisor': hypervisor,
        'hypervisor_os': platform.system().lower(),
        'uptime': None,
        'config_drive': False,
        'num_cpus': cpus,
        'num_nics': 0,
        'num_disks': disks,
        'cpu_details': [{'id': i, 'time': None, 'utilisation': None}
                        for i in range(cpus)],
        'nic_details': [],
        'disk_details': [{'read_bytes': None, 'read_requests': None,
                          'write_bytes': None, 'write_requests': None,
                          'errors_count': None}] * disks,
        'memory_details': {'maximum': amounts.get('MEMORY_MB', 0),
                           'used': None},
    }
