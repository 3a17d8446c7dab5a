# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Flavor extra spec validation, applied when extra specs are written.

A flavor's ``hw:`` keys are read at every boot (NUMA, pinning, page
sizes), ``resources:`` and ``trait:`` keys shape the placement query;
a typo there must fail when the administrator sets it, with a 400 naming
the key, not as a 500 at boot (doc/behaviours.md B11: ``hw:cpu_thread_policy=
avoid``). So every key of a namespace Berth knows is checked: an unknown
key in it, or a value outside its domain, is refused. Keys without a
namespace, and namespaces Berth does not know, are free-form, as Nova has
them (``io=fast`` for AggregateInstanceExtraSpecsFilter, a vendor's own
scope).

``accel:device_profile`` is refused outright: Berth has no accelerator
service to bind the profile's devices, and booting without them would be
silently wrong (:data:`common.placement.guest_features.
DEVICE_PROFILE_REFUSED`).

Compute API 2.86 is where Nova starts validating extra specs; Berth
always did, and from 2.86 it answers a refusal with Nova's words
("Validation failed; ...", :attr:`InvalidExtraSpec.nova_message`) and
also checks the ``vmware:`` and ``powervm:`` keys Nova knows (free-form
below 2.86, as before). Below 2.86 the messages are Berth's, naming the
key.

Keys that only make sense together (a thread policy needs dedicated CPUs,
``hw:numa_cpus.N`` must cover every vCPU) are checked at boot by
:func:`common.numa.constraints.get_constraints`, because an administrator
may set them one request at a time.
"""

import re

import os_resource_classes as orc
import os_traits

from common.numa import constraints
from common.numa import cpulist
from common.numa import exception as numa_exc
from common.numa import topology
from common.placement import guest_features

_BOOL = ('true', 'false', '1', '0', 'yes', 'no', 'on', 'off', 't', 'f',
         'y', 'n')


class InvalidExtraSpec(ValueError):
    """An extra spec key or value Berth refuses (the API's 400).

    :ivar nova_message: the refusal in Nova's words (2.86), without the
        key for a bad value, as Nova's.
    """

    def __init__(self, message, nova_message=None):
        super().__init__(message)
        self.nova_message = nova_message or message


def _unknown(key, message):
    """An unknown key of a namespace Nova validates."""
    return InvalidExtraSpec(
        message, "Validation failed; extra spec '%s' does not appear to be "
                 "a valid extra spec." % key)


def _bad_format(key, value, reason, nova_pattern):
    return InvalidExtraSpec(
        'Invalid value %r for extra spec %s: %s' % (value, key, reason),
        "Validation failed; '%s' is not of the format '%s'."
        % (value, nova_pattern))


def _not_one_of(key, value, allowed):
    return InvalidExtraSpec(
        'Invalid value %r for extra spec %s: must be one of %s.'
        % (value, key, ', '.join(allowed)),
        "Validation failed; '%s' is not one of: %s." % (value,
                                                        ', '.join(allowed)))


def _choices(*allowed):
    def check(key, value):
        if value.strip().lower() not in allowed:
            raise _not_one_of(key, value, allowed)
    return check


def _integer(minimum=0, maximum=2 ** 31 - 1):
    def check(key, value):
        berth = ('Invalid value %r for extra spec %s: must be an integer '
                 '>= %d and <= %d.' % (value, key, minimum, maximum))
        try:
            number = int(value.strip())
        except ValueError:
            raise InvalidExtraSpec(berth, "Validation failed; '%s' is not a "
                                          "valid integer value." % value)
        if number < minimum:
            raise InvalidExtraSpec(
                berth, "Validation failed; '%s' is less than the min value "
                       "of '%d'." % (value, minimum))
        if number > maximum:
            raise InvalidExtraSpec(
                berth, "Validation failed; '%s' is greater than the max "
                       "value of '%d'." % (value, maximum))
    return check


def _boolean(key, value):
    if value.strip().lower() not in _BOOL:
        raise InvalidExtraSpec(
            'Invalid value %r for extra spec %s: must be a boolean.'
            % (value, key), "Validation failed; '%s' is not a valid "
                            "boolean-like value." % value)


def _any(key, value):
    """Free-form value."""


# NOTE: Nova's value patterns, named in its 2.86 messages.
_NOVA_CPU_LIST = r'\^?\d+((-\d+)?(,\^?\d+(-\d+)?)?)*'
_NOVA_PAGE_SIZE = r'(large|small|any|\d+([kKMGT]i?)?(b|bit|B)?)'
_NOVA_PMEM = '([a-zA-Z0-9_]+(,)?)+'
_NOVA_ALIAS = r'[^:]+(:\d+)?(,[^:]+(:\d+)?)*'
_NOVA_PROC_UNITS = r'\d+\.\d+'


def _cpu_list(key, value):
    try:
        cpus = cpulist.parse_cpu_spec(value)
    except ValueError as exc:
        raise _bad_format(key, value, exc, _NOVA_CPU_LIST)
    if not cpus:
        raise _bad_format(key, value, 'no CPU listed.', _NOVA_CPU_LIST)


def _cpu_mask(key, value):
    # NOTE: a mask such as ``^0-1`` excludes CPUs; the flavor's vCPU
    # count is not known here, so only the syntax is checked.
    try:
        cpulist.parse_cpu_mask(value, range(4096))
    except ValueError as exc:
        raise _bad_format(key, value, exc, _NOVA_CPU_LIST)


def _page_size(key, value):
    try:
        constraints.parse_pagesize(key, value)
    except numa_exc.NUMARequestInvalid as exc:
        raise InvalidExtraSpec(str(exc), "Validation failed; '%s' is not of "
                                         "the format '%s'." % (
                                             value, _NOVA_PAGE_SIZE))


def _pmem(key, value):
    # NOTE: each label becomes the resource class
    # CUSTOM_PMEM_NAMESPACE_<LABEL>, so it must fit a class name.
    if not _PMEM_RE.match(value):
        raise _bad_format(key, value, 'must be LABEL[,LABEL...], labels of '
                          'letters, digits and underscores.', _NOVA_PMEM)


def _proc_units(key, value):
    if not _PROC_UNITS_RE.match(value):
        raise _bad_format(key, value, 'must be a decimal number such as '
                          '0.5.', _NOVA_PROC_UNITS)


def _refused(message):
    def check(key, value):
        raise InvalidExtraSpec(message)
    return check


def _thread_policy(key, value):
    if value.strip().lower() in ('avoid', 'separate'):
        raise InvalidExtraSpec(
            'Invalid value %r for extra spec %s: this policy was removed; '
            'must be one of %s.' % (value, key,
                                    ', '.join(topology.THREAD_POLICIES)),
            _not_one_of(key, value, topology.THREAD_POLICIES).nova_message)
    _choices(*topology.THREAD_POLICIES)(key, value)


HW = {
    'cpu_policy': _choices(*topology.CPU_POLICIES),
    'cpu_thread_policy': _thread_policy,
    'cpu_realtime': _boolean,
    'cpu_realtime_mask': _cpu_mask,
    'cpu_dedicated_mask': _cpu_mask,
    'cpu_sockets': _integer(1),
    'cpu_cores': _integer(1),
    'cpu_threads': _integer(1),
    'cpu_max_sockets': _integer(1),
    'cpu_max_cores': _integer(1),
    'cpu_max_threads': _integer(1),
    'numa_nodes': _integer(1),
    'numa_mempolicy': _choices('preferred', 'strict'),
    'mem_page_size': _page_size,
    'watchdog_action': _choices('none', 'pause', 'poweroff', 'reset',
                                'disabled'),
    'boot_menu': _boolean,
    'serial_port_count': _integer(0),
    'pmu': _boolean,
    'vif_multiqueue_enabled': _boolean,
    'hide_hypervisor_id': _boolean,
    'mem_encryption': _boolean,
    'tpm_version': _choices('1.2', '2.0'),
    'tpm_model': _choices('tpm-tis', 'tpm-crb'),
    'pci_numa_affinity_policy': _choices('required', 'legacy', 'preferred',
                                         'socket'),
    'emulator_threads_policy': _choices('share', 'isolate'),
    'locked_memory': _boolean,
    'virtio_packed_ring': _boolean,
    'maxphysaddr_mode': _choices('passthrough', 'emulate'),
    'maxphysaddr_bits': _integer(1),
    'viommu_model': _choices('intel', 'smmuv3', 'virtio', 'auto'),
    'machine_type': _any,
    'vpmem_labels': _any,
    'pmem': _pmem,
    'cpu_model': _any,
}
# hw:numa_cpus.N and hw:numa_mem.N, N a guest NUMA node.
HW_INDEXED = {
    'numa_cpus': _cpu_list,
    'numa_mem': _integer(0),
}

QUOTA = {name: _integer(0) for name in (
    'cpu_shares', 'cpu_period', 'cpu_quota', 'cpu_limit', 'cpu_reservation',
    'memory_limit', 'memory_reservation', 'memory_shares_level',
    'memory_shares_share', 'disk_read_bytes_sec', 'disk_read_iops_sec',
    'disk_write_bytes_sec', 'disk_write_iops_sec', 'disk_total_bytes_sec',
    'disk_total_iops_sec', 'disk_io_limit', 'disk_io_reservation',
    'vif_inbound_average', 'vif_inbound_peak', 'vif_inbound_burst',
    'vif_outbound_average', 'vif_outbound_peak', 'vif_outbound_burst',
    'vif_limit', 'vif_reservation')}
QUOTA['cpu_shares_level'] = _choices('custom', 'high', 'normal', 'low')

NAMESPACES = {
    'hw': HW,
    'hw_rng': {'allowed': _boolean, 'rate_bytes': _integer(0),
               'rate_period': _integer(0)},
    'hw_video': {'ram_max_mb': _integer(0)},
    'quota': QUOTA,
    'os': {'secure_boot': _choices('required', 'disabled', 'optional'),
           'monitors': _integer(0)},
    'pci_passthrough': {'alias': _any},
    'accel': {'device_profile': _refused(
        guest_features.DEVICE_PROFILE_REFUSED)},
}

# Namespaces Nova checks from 2.86 and Berth had left free-form: their
# keys are checked from 2.86 only (the drivers that read them are not
# Berth's, so nothing else depends on them).
NOVA_NAMESPACES = {
    'vmware': {'hw_version': _any, 'storage_policy': _any},
    'powervm': dict(
        min_mem=_integer(256), max_mem=_integer(256), min_vcpu=_integer(1),
        max_vcpu=_integer(1), proc_units=_proc_units,
        min_proc_units=_proc_units, max_proc_units=_proc_units,
        dedicated_proc=_boolean, shared_weight=_integer(0, 255),
        availability_priority=_integer(0, 255), uncapped=_boolean,
        dedicated_sharing_mode=_choices(
            'share_idle_procs', 'keep_idle_procs',
            'share_idle_procs_active', 'share_idle_procs_always'),
        processor_compatibility=_choices(
            'default', 'power6', 'power6+', 'power6_enhanced',
            'power6+_enhanced', 'power7', 'power8'),
        shared_proc_pool_name=_any, srr_capability=_boolean),
}

_PROC_UNITS_RE = re.compile(r'^\d+\.\d+$')
_RESOURCES_RE = re.compile(r'^resources([a-zA-Z0-9_-]{0,64}):(.*)$')
_TRAIT_RE = re.compile(r'^trait([a-zA-Z0-9_-]{0,64}):(.*)$')
_PMEM_RE = re.compile(r'^\s*\w+(\s*,\s*\w+)*\s*$', re.ASCII)
_NUMA_INDEX_RE = re.compile(r'^(numa_cpus|numa_mem)\.(\d+)$')
_STANDARD_TRAITS = frozenset(os_traits.get_traits())
_PCI_ALIAS_RE = re.compile(r'^\s*[^:,\s]+(\s*:\s*\d+)?\s*'
                           r'(,\s*[^:,\s]+(\s*:\s*\d+)?\s*)*$')


def _check_resource(key, name, value):
    if not (name in orc.STANDARDS or orc.is_custom(name)):
        raise _unknown(key, 'Invalid extra spec %s: %s is not a standard '
                            'resource class nor a CUSTOM_ one.' % (key, name))
    _integer(0)(key, value)


def _check_trait(key, name, value):
    if not (name in _STANDARD_TRAITS or os_traits.is_custom(name)):
        raise _unknown(key, 'Invalid extra spec %s: %s is not a standard '
                            'trait nor a CUSTOM_ one.' % (key, name))
    _choices('required', 'forbidden')(key, value)


def _check_namespaced(key, table, namespace, name, value):
    if namespace == 'hw':
        indexed = _NUMA_INDEX_RE.match(name)
        if indexed:
            return HW_INDEXED[indexed.group(1)](key, value)
    if namespace == 'pci_passthrough' and name == 'alias':
        if not _PCI_ALIAS_RE.match(value):
            raise _bad_format(key, value, 'must be alias[:count]'
                              '[,alias[:count]...].', _NOVA_ALIAS)
        return None
    check = table.get(name)
    if check is None:
        raise _unknown(key, 'Extra spec %s is not a known %s: key (known: '
                            '%s).' % (key, namespace,
                                      ', '.join(sorted(table))))
    return check(key, value)


def validate_one(key, value, nova_namespaces=False):
    """Check one extra spec.

    :param nova_namespaces: also check the namespaces Nova validates from
        2.86 (:data:`NOVA_NAMESPACES`).
    :raises InvalidExtraSpec: naming the key and what is wrong.
    """
    value = str(value)
    match = _RESOURCES_RE.match(key)
    if match:
        return _check_resource(key, match.group(2), value)
    match = _TRAIT_RE.match(key)
    if match:
        return _check_trait(key, match.group(2), value)
    if key == 'group_policy':
        return _choices('none', 'isolate')(key, value)
    namespace, sep, name = key.partition(':')
    table = NAMESPACES.get(namespace)
    if table is None and nova_namespaces:
        table = NOVA_NAMESPACES.get(namespace)
    if sep and table is not None:
        return _check_namespaced(key, table, namespace, name, value)
    return None


def validate(specs, nova_namespaces=False):
    """Check every extra spec of ``specs`` (key -> value).

    :param nova_namespaces: see :func:`validate_one`.
    :raises InvalidExtraSpec: for the first bad one, in key order.
    """
    for key in sorted(specs):
        validate_one(key, specs[key], nova_namespaces)
