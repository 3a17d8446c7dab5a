# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The resources and traits guest features ask placement for, and refusals.

Each row is what a Nova operator relies on: a flavor or image that asks
for memory encryption, a vTPM, secure boot or persistent memory lands only
where placement has it, and a contradictory request is a 400 with Nova's
message.
"""

import pytest

from common.objects import flavor as flavor_obj
from common.objects import image as image_obj
from common.placement import guest_features

UEFI = {'hw_firmware_type': 'uefi'}


def _requests(specs=None, props=None):
    flavor = flavor_obj.Flavor(name='f1', flavorid='f1', vcpus=1,
                               memory_mb=512, extra_specs=dict(specs or {}))
    image = image_obj.ImageMeta(id='img-id', name='img',
                                properties=dict(props or {}))
    return guest_features.requests(flavor, image)


@pytest.mark.parametrize('specs, props, resources, traits', [
    ({}, {}, {}, set()),
    # Memory encryption: one encryption context, flavor or image.
    ({'hw:mem_encryption': 'true'}, UEFI,
     {'MEM_ENCRYPTION_CONTEXT': 1}, set()),
    ({}, dict(UEFI, hw_mem_encryption='yes'),
     {'MEM_ENCRYPTION_CONTEXT': 1}, set()),
    ({'hw:mem_encryption': 'True'}, dict(UEFI, hw_mem_encryption='1'),
     {'MEM_ENCRYPTION_CONTEXT': 1}, set()),
    ({'hw:mem_encryption': 'false'}, {}, {}, set()),
    ({'hw:mem_encryption': 'true'}, dict(UEFI, hw_machine_type='pc-q35-8.2'),
     {'MEM_ENCRYPTION_CONTEXT': 1}, set()),
    # vTPM: the version's trait and the model's (TIS by default).
    ({'hw:tpm_version': '2.0'}, {}, {},
     {'COMPUTE_SECURITY_TPM_2_0', 'COMPUTE_SECURITY_TPM_TIS'}),
    ({'hw:tpm_version': '2.0', 'hw:tpm_model': 'tpm-crb'}, {}, {},
     {'COMPUTE_SECURITY_TPM_2_0', 'COMPUTE_SECURITY_TPM_CRB'}),
    ({}, {'hw_tpm_version': '1.2', 'hw_tpm_model': 'tpm-tis'}, {},
     {'COMPUTE_SECURITY_TPM_1_2', 'COMPUTE_SECURITY_TPM_TIS'}),
    ({'hw:tpm_version': '2.0'}, {'hw_tpm_version': '2.0'}, {},
     {'COMPUTE_SECURITY_TPM_2_0', 'COMPUTE_SECURITY_TPM_TIS'}),
    # A model without a version asks for nothing (Nova).
    ({'hw:tpm_model': 'tpm-crb'}, {}, {}, set()),
    # Secure boot: only "required" needs the trait.
    ({'os:secure_boot': 'required'}, {}, {},
     {'COMPUTE_SECURITY_UEFI_SECURE_BOOT'}),
    ({}, {'os_secure_boot': 'required'}, {},
     {'COMPUTE_SECURITY_UEFI_SECURE_BOOT'}),
    ({'os:secure_boot': 'optional'}, {}, {}, set()),
    ({'os:secure_boot': 'disabled'}, {}, {}, set()),
    # Persistent memory: one namespace per label, repeats add up.
    ({'hw:pmem': 'SMALL'}, {}, {'CUSTOM_PMEM_NAMESPACE_SMALL': 1}, set()),
    ({'hw:pmem': '4GB, 4GB,small'}, {},
     {'CUSTOM_PMEM_NAMESPACE_4GB': 2, 'CUSTOM_PMEM_NAMESPACE_SMALL': 1},
     set()),
])
def test_requests(specs, props, resources, traits):
    assert _requests(specs, props) == (resources, traits)


@pytest.mark.parametrize('specs, props, message', [
    # The image asks for encryption the flavor explicitly turns off.
    ({'hw:mem_encryption': 'false'}, dict(UEFI, hw_mem_encryption='true'),
     'Flavor f1 has hw:mem_encryption extra spec explicitly set to false, '
     'conflicting with image img which has hw_mem_encryption explicitly '
     'set to true.'),
    ({'hw:mem_encryption': 'true'}, dict(UEFI, hw_mem_encryption='false'),
     'conflicting with image img'),
    ({'hw:mem_encryption': 'true'}, {},
     "Memory encryption requested by hw:mem_encryption extra spec in f1 "
     "flavor but image img doesn't have 'hw_firmware_type' property set to "
     "'uefi'"),
    ({}, {'hw_mem_encryption': 'true', 'hw_firmware_type': 'bios'},
     'requested by hw_mem_encryption property of image img'),
    ({'hw:mem_encryption': 'true'}, dict(UEFI, hw_machine_type='pc'),
     'Machine type pc is not compatible with image img (img-id): q35 type '
     'is required for SEV to work'),
    ({}, dict(UEFI, hw_mem_encryption='maybe'),
     "Invalid value 'maybe' for hw_mem_encryption: must be a boolean."),
    ({'hw:tpm_version': '3.0'}, {},
     "Invalid TPM version '3.0'. Allowed values: 1.2, 2.0."),
    ({'hw:tpm_version': '2.0', 'hw:tpm_model': 'tpm-spi'}, {},
     "Invalid TPM model 'tpm-spi'. Allowed values: tpm-tis, tpm-crb."),
    ({'hw:tpm_version': '1.2', 'hw:tpm_model': 'tpm-crb'}, {},
     'TPM model CRB is only valid with TPM version 2.0.'),
    ({'hw:tpm_version': '2.0'}, {'hw_tpm_version': '1.2'},
     'Flavor f1 has hw:tpm_version extra spec explicitly set to 2.0, '
     'conflicting with image img which has hw_tpm_version explicitly set '
     'to 1.2.'),
    ({'os:secure_boot': 'required'}, {'os_secure_boot': 'disabled'},
     'Flavor f1 has os:secure_boot extra spec explicitly set to required'),
    ({}, {'os_secure_boot': 'always'},
     "Invalid secure boot policy 'always'. Allowed values: required, "
     "disabled, optional."),
    ({'accel:device_profile': 'gpu-profile'}, {},
     'Extra spec accel:device_profile is not supported: Berth has no '
     'accelerator service'),
])
def test_refusals(specs, props, message):
    with pytest.raises(guest_features.GuestFeatureInvalid) as caught:
        _requests(specs, props)
    assert message in str(caught.value)


def test_volume_backed_encryption_needs_an_image():
    flavor = flavor_obj.Flavor(name='f1', extra_specs={
        'hw:mem_encryption': 'true'})
    with pytest.raises(guest_features.GuestFeatureInvalid) as caught:
        guest_features.validate(flavor, None)
    assert 'volume-backed instance was requested' in str(caught.value)


def test_record_dicts_work_too():
    flavor = {'name': 'f1', 'extra_specs': {'hw:pmem': 'a'}}
    image = {'name': 'img', 'properties': {'os_secure_boot': 'required'}}
    assert guest_features.requests(flavor, image) == (
        {'CUSTOM_PMEM_NAMESPACE_A': 1}, {'COMPUTE_SECURITY_UEFI_SECURE_BOOT'})
