# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""This machine's assignable PCI devices: sysfs filtered by device_spec.

A device is assignable when some ``[pci] device_spec`` entry matches it;
the entry's other keys (``physical_network``, ``resource_class``...)
become its tags. No entry, no assignable device, as in Nova.
"""

import fnmatch
import json
import logging
import os

from common import exception

LOG = logging.getLogger(__name__)

_MATCH_KEYS = ('vendor_id', 'product_id', 'address', 'devname')
_SYSFS = 'sys/bus/pci/devices'


def device_specs(conf):
    """The parsed ``[pci] device_spec`` entries.

    :raises common.exception.ConfigurationError: an entry is not a JSON
        object.
    """
    specs = []
    for value in conf.pci.device_spec:
        try:
            spec = json.loads(value)
        except ValueError as exc:
            raise exception.ConfigurationError(
                reason='[pci] device_spec %r: %s' % (value, exc))
        if not isinstance(spec, dict):
            raise exception.ConfigurationError(
                reason='[pci] device_spec %r is not a JSON object' % value)
        specs.append(spec)
    return specs


def spec_matches(spec, device):
    """True when every match key of ``spec`` fits ``device``."""
    for key in _MATCH_KEYS:
        wanted = spec.get(key)
        if wanted is None:
            continue
        have = str(device.get(key) or '').lower()
        if not fnmatch.fnmatch(have, str(wanted).lower()):
            return False
    return True


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _hex_id(text):
    return (text or '').lower().replace('0x', '')


def scan(root):
    """Every PCI function sysfs shows, as device dicts."""
    base = os.path.join(root, _SYSFS)
    devices = []
    for address in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        path = os.path.join(base, address)
        node = _read(os.path.join(path, 'numa_node'))
        device = {'address': address,
                  'vendor_id': _hex_id(_read(os.path.join(path, 'vendor'))),
                  'product_id': _hex_id(_read(os.path.join(path,
                                                           'device'))),
                  'numa_node': (int(node) if node and node.lstrip('-')
                                .isdigit() and int(node) >= 0 else None),
                  'dev_type': 'type-PCI'}
        physfn = os.path.join(path, 'physfn')
        if os.path.islink(physfn):
            device['dev_type'] = 'type-VF'
            device['parent_addr'] = os.path.basename(os.readlink(physfn))
        elif os.path.exists(os.path.join(path, 'sriov_totalvfs')):
            device['dev_type'] = 'type-PF'
        devices.append(device)
    return devices


def assignable_devices(root, conf):
    """The devices some device_spec entry matches, with its tags."""
    specs = device_specs(conf)
    if not specs:
        return []
    result = []
    for device in scan(root):
        for spec in specs:
            if spec_matches(spec, device):
                tags = {k: v for k, v in spec.items()
                        if k not in _MATCH_KEYS}
                result.append(dict(device, **tags))
                break
    return result
