# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""PCI devices in placement: names, and a flavor's aliases as groups.

With ``[pci] report_in_placement`` a compute reports each physical
function (holding its VFs) or stand-alone device as a child provider;
with ``[filter_scheduler] pci_in_placement`` the scheduler asks placement
for the devices a flavor's ``pci_passthrough:alias`` requests, one
request group per device (``resources<S>=<RC>:1`` plus the alias's
traits), as Nova does (doc/behaviours.md §pci-placement). Both sides name
resource classes and traits with the functions here, so what a compute
reports is what a flavor asks.

A PCI request ``n`` of count ``k`` becomes the groups with suffixes
``_pci<n>_0`` ... ``_pci<n>_<k-1>``; the compute reads placement's
``mappings`` of those suffixes to learn which provider (and so which
physical function or device) holds each allocated device.
"""

import re

import os_resource_classes as orc
import os_traits

_NAME_CHARS = re.compile(r'[^A-Z0-9_]')
_STANDARD_CLASSES = frozenset(orc.STANDARDS)
_STANDARD_TRAITS = frozenset(os_traits.get_traits())
_SUFFIX = re.compile(r'^_pci(\d+)_(\d+)$')


def custom_name(name):
    """``name`` as a CUSTOM_ resource class or trait name."""
    normal = _NAME_CHARS.sub('_', str(name).upper())
    return normal if normal.startswith('CUSTOM_') else 'CUSTOM_' + normal


def resource_class(name=None, vendor_id=None, product_id=None):
    """The resource class of PCI devices.

    ``name`` (from ``device_spec`` or an alias) is kept when it is a
    standard class and normalized to ``CUSTOM_<NAME>`` otherwise; without
    one, devices are ``CUSTOM_PCI_<VENDOR_ID>_<PRODUCT_ID>``.
    """
    if name:
        upper = str(name).upper()
        return upper if upper in _STANDARD_CLASSES else custom_name(upper)
    return custom_name('PCI_%s_%s' % (vendor_id, product_id))


def traits(text):
    """The traits of a comma-separated list: standard ones kept, the
    others normalized to ``CUSTOM_<NAME>``.
    """
    found = set()
    for name in str(text or '').split(','):
        name = name.strip()
        if not name:
            continue
        upper = name.upper()
        found.add(upper if upper in _STANDARD_TRAITS else custom_name(upper))
    return found


def group_suffix(request_index, device_index):
    """The request group suffix of one requested device."""
    return '_pci%d_%d' % (request_index, device_index)


def parse_suffix(suffix):
    """(request index, device index) of a PCI group suffix, or None."""
    found = _SUFFIX.match(suffix or '')
    return (int(found.group(1)), int(found.group(2))) if found else None


def request_class(request):
    """The resource class a PCI request (see services/api/pci_requests.py)
    asks placement for.
    """
    spec = (request.get('spec') or [{}])[0]
    return resource_class(request.get('resource_class'),
                          spec.get('vendor_id'), spec.get('product_id'))


def add_groups(pci_requests, query):
    """Add one group per requested device to ``query``.

    Every group asks for one device of the request's class, with the
    request's traits. When the flavor names no ``group_policy``, ``none``
    is used (placement requires one with several numbered groups; Nova
    defaults it the same way for groups it adds itself).

    :param pci_requests: the request spec's PCI requests.
    :param query: a :class:`common.placement.query.PlacementQuery`.
    :returns: the number of groups added.
    """
    added = 0
    for index, request in enumerate(pci_requests or []):
        rc = request_class(request)
        required = traits(request.get('traits'))
        for device in range(int(request.get('count', 1))):
            group = query.group(group_suffix(index, device))
            group.resources[rc] = 1
            group.required |= required
            added += 1
    if added and not query.group_policy:
        query.group_policy = 'none'
    return added
