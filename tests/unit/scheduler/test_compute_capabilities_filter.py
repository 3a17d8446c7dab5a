# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ComputeCapabilitiesFilter: capabilities: extra specs vs host state."""

import json

import pytest

from services.scheduler import filters
from services.scheduler.filters import compute_capabilities_filter
from tests.unit.scheduler import fakes

FILTER = compute_capabilities_filter.ComputeCapabilitiesFilter()

CPU_INFO = {'arch': 'x86_64', 'vendor': 'Intel',
            'features': ['aes', 'avx', 'mmx'],
            'topology': {'sockets': 2, 'cores': 18, 'threads': 2}}


def _host(**fields):
    values = dict(cpu_info=CPU_INFO, free_ram_mb=8192, vcpus_total=48,
                  hypervisor_type='QEMU', hypervisor_version=8002000)
    values.update(fields)
    return fakes.host('h1', **values)


@pytest.mark.parametrize('extra_specs,expected', [
    ({}, True),
    ({'capabilities:hypervisor_type': 's== QEMU'}, True),
    ({'capabilities:hypervisor_type': 's== ironic'}, False),
    ({'capabilities:hypervisor_type': 'QEMU'}, True),
    ({'capabilities:free_ram_mb': '>= 4096'}, True),
    ({'capabilities:free_ram_mb': '>= 10240'}, False),
    ({'capabilities:vcpus_total': '= 24'}, True),
    ({'capabilities:vcpus_total': '48'}, True),
    ({'capabilities:hypervisor_version': '>= 8000000'}, True),
    ({'capabilities:host': '<in> h'}, True),
    # nested with ':'
    ({'capabilities:cpu_info:arch': 'x86_64'}, True),
    ({'capabilities:cpu_info:arch': 'aarch64'}, False),
    ({'capabilities:cpu_info:features': '<all-in> aes avx'}, True),
    ({'capabilities:cpu_info:features': '<all-in> aes sse9'}, False),
    ({'capabilities:cpu_info:features': '<in> av'}, False),
    ({'capabilities:cpu_info:topology:cores': '>= 16'}, True),
    ({'capabilities:cpu_info:topology:cores': '>= 20'}, False),
    # a capability the host does not report fails
    ({'capabilities:cpu_info:model': 'Skylake'}, False),
    ({'capabilities:gpu_count': '>= 1'}, False),
    # unscoped keys: only host state fields are matched ...
    ({'free_ram_mb': '>= 4096'}, True),
    ({'free_ram_mb': '>= 10240'}, False),
    # ... others belong to AggregateInstanceExtraSpecsFilter (A1: io=fast)
    ({'io': 'fast'}, True),
    # other scopes are ignored
    ({'hw:cpu_policy': 'dedicated', 'trait:HW_CPU_X86_AVX2': 'required',
      'aggregate_instance_extra_specs:io': 'fast',
      'resources:VGPU': '1'}, True),
    ({'capabilities:hypervisor_type': 's== QEMU',
      'capabilities:free_ram_mb': '>= 10240'}, False),
])
def test_capabilities(extra_specs, expected):
    spec = fakes.spec(extra_specs=extra_specs)
    assert FILTER.host_passes(_host(), spec) is expected


def test_cpu_info_reported_as_json_text():
    host = _host(cpu_info=json.dumps(CPU_INFO))
    spec = fakes.spec(extra_specs={'capabilities:cpu_info:vendor': 'Intel'})
    assert FILTER.host_passes(host, spec)


@pytest.mark.parametrize('extra_specs,reason', [
    ({'capabilities:cpu_info:arch': 'aarch64'},
     "capability 'cpu_info:arch' is 'x86_64', extra spec "
     "capabilities:cpu_info:arch requires 'aarch64'"),
    ({'capabilities:gpu_count': '>= 1'},
     "does not report capability 'gpu_count' (extra spec "
     "capabilities:gpu_count)"),
])
def test_reasons(extra_specs, reason):
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(_host(),
                                      fakes.spec(extra_specs=extra_specs))
    assert rejections.by_host[('h1', 'h1')] == (
        'ComputeCapabilitiesFilter', reason)
