# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Guest features a flavor or image asks for, as placement resources/traits.

Memory encryption, a virtual TPM, UEFI secure boot and persistent memory
namespaces need a host that has them, so, as in Nova, each becomes part of
the placement query instead of a hope at boot:

===========================================  ===============================
request                                      placement
===========================================  ===============================
``hw:mem_encryption`` / ``hw_mem_encryption``  ``MEM_ENCRYPTION_CONTEXT:1``
``hw:tpm_version`` / ``hw_tpm_version``      ``COMPUTE_SECURITY_TPM_1_2`` or
                                             ``COMPUTE_SECURITY_TPM_2_0``
``hw:tpm_model`` / ``hw_tpm_model``          ``COMPUTE_SECURITY_TPM_TIS`` or
                                             ``COMPUTE_SECURITY_TPM_CRB``
``os:secure_boot=required`` /                ``COMPUTE_SECURITY_UEFI_``
``os_secure_boot=required``                  ``SECURE_BOOT``
``hw:pmem=LABEL[,LABEL]``                    ``CUSTOM_PMEM_NAMESPACE_<LABEL>``
                                             (one per label)
===========================================  ===============================

A flavor and an image that set the same feature must agree (the flavor is
the administrator's, the image may not contradict it). The API checks all
this at boot (:func:`validate`, a 400); the scheduler's request filters
call :func:`requests` once per request spec, never per host.
"""

import collections
import re

import os_resource_classes as orc
from oslo_utils import strutils

TPM_VERSIONS = {'1.2': 'COMPUTE_SECURITY_TPM_1_2',
                '2.0': 'COMPUTE_SECURITY_TPM_2_0'}
TPM_MODELS = {'tpm-tis': 'COMPUTE_SECURITY_TPM_TIS',
              'tpm-crb': 'COMPUTE_SECURITY_TPM_CRB'}
SECURE_BOOT_POLICIES = ('required', 'disabled', 'optional')
SECURE_BOOT_TRAIT = 'COMPUTE_SECURITY_UEFI_SECURE_BOOT'
MEM_ENCRYPTION_RC = 'MEM_ENCRYPTION_CONTEXT'
# NOTE: SEV binds the guest's virtio devices to a PCIe bridge, which only
# the q35 machine types have.
_Q35 = re.compile(r'^(pc-)?q35')

Requests = collections.namedtuple('Requests', ['resources', 'traits'])


class GuestFeatureInvalid(ValueError):
    """A feature request the API refuses with a 400 (Nova's wording)."""


# NOTE: a device profile names devices an accelerator service (Cyborg)
# binds to the guest; Berth has none, so booting would silently give the
# guest no device. Refused when the extra spec is set and at boot.
DEVICE_PROFILE_REFUSED = (
    'Extra spec accel:device_profile is not supported: Berth has no '
    'accelerator service (Cyborg) to bind the devices of a device profile, '
    'so the server would boot without them.')


def device_profile(flavor):
    """Refuse ``accel:device_profile``.

    :raises GuestFeatureInvalid: the flavor has one.
    """
    if _specs(flavor).get('accel:device_profile') is not None:
        raise GuestFeatureInvalid(DEVICE_PROFILE_REFUSED)


def _name(obj):
    return getattr(obj, 'name', None) or (
        obj.get('name') if isinstance(obj, dict) else None) or ''


def _specs(flavor):
    if isinstance(flavor, dict):
        return flavor.get('extra_specs') or {}
    return getattr(flavor, 'extra_specs', None) or {}


def _props(image):
    if image is None:
        return {}
    if isinstance(image, dict):
        return image.get('properties') or {}
    return getattr(image, 'properties', None) or {}


def _unique(flavor, image, key, prefix='hw'):
    """The flavor's or image's value of ``key``; both must agree."""
    flavor_val = _specs(flavor).get('%s:%s' % (prefix, key))
    image_val = _props(image).get('%s_%s' % (prefix, key))
    if (flavor_val is not None and image_val is not None
            and str(flavor_val) != str(image_val)):
        raise GuestFeatureInvalid(
            'Flavor %s has %s:%s extra spec explicitly set to %s, '
            'conflicting with image %s which has %s_%s explicitly set to '
            '%s.' % (_name(flavor), prefix, key, flavor_val, _name(image),
                     prefix, key, image_val))
    return flavor_val if flavor_val is not None else image_val


def _boolean(key, raw):
    if raw is None:
        return None
    try:
        return strutils.bool_from_string(raw, strict=True)
    except ValueError:
        raise GuestFeatureInvalid('Invalid value %r for %s: must be a '
                                  'boolean.' % (raw, key))


def mem_encryption(flavor, image):
    """True when the guest's memory must be encrypted (AMD SEV).

    :raises GuestFeatureInvalid: the flavor and image disagree, the
        image is not UEFI, or its machine type is not q35.
    """
    flavor_raw = _specs(flavor).get('hw:mem_encryption')
    image_raw = _props(image).get('hw_mem_encryption')
    wanted = _boolean('hw:mem_encryption', flavor_raw)
    image_wanted = _boolean('hw_mem_encryption', image_raw)
    if not wanted and not image_wanted:
        return False
    if wanted is not None and image_wanted is not None:
        # NOTE: both explicit and different (one of them is true here).
        if wanted != image_wanted:
            raise GuestFeatureInvalid(
                'Flavor %s has hw:mem_encryption extra spec explicitly set '
                'to %s, conflicting with image %s which has '
                'hw_mem_encryption explicitly set to %s.'
                % (_name(flavor), flavor_raw, _name(image), image_raw))
    requesters = []
    if wanted:
        requesters.append('hw:mem_encryption extra spec in %s flavor'
                          % _name(flavor))
    if image_wanted:
        requesters.append('hw_mem_encryption property of image %s'
                          % _name(image))
    props = _props(image)
    if props.get('hw_firmware_type') != 'uefi':
        raise GuestFeatureInvalid(
            "Memory encryption requested by %s but image %s doesn't have "
            "'hw_firmware_type' property set to 'uefi' or volume-backed "
            "instance was requested" % (' and '.join(requesters),
                                        _name(image)))
    machine_type = props.get('hw_machine_type')
    if machine_type is not None and not _Q35.match(machine_type):
        raise GuestFeatureInvalid(
            'Machine type %s is not compatible with image %s (%s): q35 '
            'type is required for SEV to work'
            % (machine_type, _name(image), getattr(image, 'id', None)))
    return True


def vtpm(flavor, image):
    """(version, model) of the virtual TPM, or None without one.

    The model defaults to ``tpm-tis``; a model without a version asks
    for nothing, as in Nova.

    :raises GuestFeatureInvalid: an unknown version or model, CRB with
        TPM 1.2, or a flavor and image that disagree.
    """
    version = _unique(flavor, image, 'tpm_version')
    if version is None:
        return None
    if version not in TPM_VERSIONS:
        raise GuestFeatureInvalid(
            'Invalid TPM version %r. Allowed values: %s.'
            % (version, ', '.join(TPM_VERSIONS)))
    model = _unique(flavor, image, 'tpm_model')
    if model is None:
        model = 'tpm-tis'
    elif model not in TPM_MODELS:
        raise GuestFeatureInvalid(
            'Invalid TPM model %r. Allowed values: %s.'
            % (model, ', '.join(TPM_MODELS)))
    elif (model, version) == ('tpm-crb', '1.2'):
        raise GuestFeatureInvalid(
            'TPM model CRB is only valid with TPM version 2.0.')
    return version, model


def secure_boot(flavor, image):
    """required, disabled, optional or None (``os:secure_boot``).

    :raises GuestFeatureInvalid: an unknown value, or a disagreement.
    """
    policy = _unique(flavor, image, 'secure_boot', prefix='os')
    if policy is not None and policy not in SECURE_BOOT_POLICIES:
        raise GuestFeatureInvalid(
            'Invalid secure boot policy %r. Allowed values: %s.'
            % (policy, ', '.join(SECURE_BOOT_POLICIES)))
    return policy


def pmem_labels(flavor):
    """The ``hw:pmem`` namespace labels, in order, blanks dropped."""
    raw = _specs(flavor).get('hw:pmem')
    if not raw:
        return []
    return [label.strip() for label in str(raw).split(',') if label.strip()]


def requests(flavor, image):
    """The placement resources and required traits of the features.

    :returns: :class:`Requests` (resource class -> amount, set of traits)
        for the unsuffixed request group.
    :raises GuestFeatureInvalid: as :func:`validate`.
    """
    device_profile(flavor)
    resources = collections.Counter()
    traits = set()
    if mem_encryption(flavor, image):
        resources[MEM_ENCRYPTION_RC] = 1
    tpm = vtpm(flavor, image)
    if tpm:
        traits.add(TPM_VERSIONS[tpm[0]])
        traits.add(TPM_MODELS[tpm[1]])
    if secure_boot(flavor, image) == 'required':
        traits.add(SECURE_BOOT_TRAIT)
    for label in pmem_labels(flavor):
        resources[orc.normalize_name('PMEM_NAMESPACE_' + label)] += 1
    return Requests(dict(resources), traits)


def validate(flavor, image):
    """Check every feature rule of a flavor and image, at boot.

    :param flavor: a Flavor object or record dict (``name``,
        ``extra_specs``).
    :param image: an ImageMeta, a record dict, or None (volume-backed).
    :raises GuestFeatureInvalid: the first rule broken, Nova's message.
    """
    requests(flavor, image)
