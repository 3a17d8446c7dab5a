# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ImagePropertiesFilter: architecture, hypervisor type, VM mode, version."""

import pytest

from common.conf import CONF
from services.scheduler import filters
from services.scheduler.filters import image_properties_filter
from tests.unit.scheduler import fakes

FILTER = image_properties_filter.ImagePropertiesFilter()

KVM_X86 = [['x86_64', 'kvm', 'hvm'], ['x86_64', 'qemu', 'hvm'],
           ['i686', 'kvm', 'hvm']]


@pytest.fixture
def conf():
    """Set options for one test; every override is cleared afterwards."""
    overridden = []

    def override(name, value, group=None):
        CONF.set_override(name, value, group=group)
        overridden.append((name, group))

    yield override
    for name, group in overridden:
        CONF.clear_override(name, group=group)


@pytest.mark.parametrize('supported,version,props,expected', [
    # no checked property: any host, even one advertising nothing
    (KVM_X86, 8002000, {}, True),
    ([], None, {'os_distro': 'ubuntu'}, True),
    ([], None, {'img_hv_requested_version': '>=99'}, True),
    (KVM_X86, 8002000, {'hw_architecture': 'x86_64'}, True),
    (KVM_X86, 8002000, {'hw_architecture': 'aarch64'}, False),
    # canonical names: amd64 is x86_64, i386 is i686, case folded
    (KVM_X86, 8002000, {'hw_architecture': 'amd64'}, True),
    (KVM_X86, 8002000, {'hw_architecture': 'X86_64'}, True),
    (KVM_X86, 8002000, {'hw_architecture': 'i386'}, True),
    ([['AMD64', 'KVM', 'HVM']], None, {'hw_architecture': 'x86_64',
                                       'hw_vm_mode': 'hvm'}, True),
    (KVM_X86, 8002000, {'img_hv_type': 'kvm'}, True),
    (KVM_X86, 8002000, {'img_hv_type': 'xen'}, False),
    # 'qemu' in an image means QEMU or KVM
    ([['x86_64', 'kvm', 'hvm']], 8002000, {'img_hv_type': 'qemu'}, True),
    (KVM_X86, 8002000, {'hw_vm_mode': 'hvm'}, True),
    (KVM_X86, 8002000, {'hw_vm_mode': 'hv'}, True),
    (KVM_X86, 8002000, {'hw_vm_mode': 'exe'}, False),
    ([['x86_64', 'xen', 'xen']], None, {'hw_vm_mode': 'pv'}, True),
    ([['x86_64', 'xen', 'xen']], None, {'img_hv_type': 'xapi'}, True),
    # all properties must be met by one triple
    (KVM_X86, 8002000, {'hw_architecture': 'i686', 'img_hv_type': 'qemu'},
     True),
    ([['i686', 'xen', 'xen'], ['x86_64', 'kvm', 'hvm']], None,
     {'hw_architecture': 'i686', 'img_hv_type': 'kvm'}, False),
    # the host advertises nothing
    ([], 8002000, {'hw_architecture': 'x86_64'}, False),
    # hypervisor version predicates (8002000 is 8.2.0)
    (KVM_X86, 8002000, {'hw_architecture': 'x86_64',
                        'img_hv_requested_version': '>=2.6'}, True),
    (KVM_X86, 8002000, {'hw_architecture': 'x86_64',
                        'img_hv_requested_version': '>=8.3'}, False),
    (KVM_X86, 8002000, {'hw_architecture': 'x86_64',
                        'img_hv_requested_version': '>= 8.2, < 9'}, True),
    (KVM_X86, 8002000, {'hw_architecture': 'x86_64',
                        'img_hv_requested_version': '8.2'}, True),
    (KVM_X86, 8002000, {'hw_architecture': 'x86_64',
                        'img_hv_requested_version': '<8'}, False),
    # a host without a version passes the version check
    (KVM_X86, None, {'hw_architecture': 'x86_64',
                     'img_hv_requested_version': '>=99'}, True),
    (KVM_X86, 8002000, {'hw_architecture': 'x86_64',
                        'img_hv_requested_version': 'recent'}, False),
])
def test_image_properties(supported, version, props, expected):
    host = fakes.host('h1', supported_instances=supported,
                      hypervisor_version=version)
    spec = fakes.spec(image_properties=props)
    assert FILTER.host_passes(host, spec) is expected


@pytest.mark.parametrize('default,expected', [
    (None, True), ('x86_64', True), ('aarch64', False)])
def test_default_architecture(conf, default, expected):
    conf('image_properties_default_architecture', default,
         group='filter_scheduler')
    host = fakes.host('h1', supported_instances=KVM_X86)
    assert FILTER.host_passes(host, fakes.spec()) is expected
    # an image naming its architecture overrides the default
    spec = fakes.spec(image_properties={'hw_architecture': 'x86_64'})
    assert FILTER.host_passes(host, spec)


@pytest.mark.parametrize('supported,props,reason', [
    ([], {'hw_architecture': 'x86_64'},
     'image requires architecture x86_64, hypervisor any, vm mode any but '
     'the host advertises no supported instances'),
    ([['x86_64', 'kvm', 'hvm']], {'hw_architecture': 'aarch64'},
     "image requires architecture aarch64, hypervisor any, vm mode any, "
     "host supports only [['x86_64', 'kvm', 'hvm']]"),
    ([['x86_64', 'kvm', 'hvm']], {'hw_architecture': 'x86_64',
                                  'img_hv_requested_version': '>=9'},
     "hypervisor version 8.2.0 does not satisfy the image's "
     "img_hv_requested_version '>=9'"),
    ([['x86_64', 'kvm', 'hvm']], {'hw_architecture': 'x86_64',
                                  'img_hv_requested_version': 'x'},
     "image property img_hv_requested_version: invalid version predicate "
     "'x'"),
])
def test_reasons(supported, props, reason):
    host = fakes.host('h1', supported_instances=supported)
    with filters.Rejections() as rejections:
        assert not FILTER.host_passes(
            host, fakes.spec(image_properties=props))
    assert rejections.by_host[('h1', 'h1')] == (
        'ImagePropertiesFilter', reason)


def test_flags():
    assert FILTER.RUN_ON_REBUILD
    assert FILTER.run_filter_once_per_request
