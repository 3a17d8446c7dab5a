# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A flavor's ``pci_passthrough:alias`` as the scheduler's PCI requests.

``[pci] alias`` defines each alias as a JSON object (several with one
name are alternatives); ``pci_passthrough:alias=nic:2,gpu:1`` asks for
two devices matching ``nic`` and one matching ``gpu``. Each becomes one
request of the shape :mod:`common.pci.stats` matches::

    {'count': 2, 'spec': [{'vendor_id': '8086', 'product_id': '154d'}],
     'alias_name': 'nic', 'numa_policy': 'legacy'}

plus the alias's ``resource_class`` and ``traits`` when it names them,
which only ``[filter_scheduler] pci_in_placement`` reads
(:mod:`common.placement.pci_groups`).
"""

import json

from common import exception

SPEC_KEY = 'pci_passthrough:alias'
POLICY_KEY = 'hw:pci_numa_affinity_policy'
# NOTE: ``resource_class`` and ``traits`` say what to ask placement for
# ([filter_scheduler] pci_in_placement); they describe the provider, not
# the device, so devices are never matched against them.
_PLACEMENT_KEYS = ('resource_class', 'traits')
_NOT_SPEC = ('name', 'numa_policy') + _PLACEMENT_KEYS


class InvalidPCIAlias(exception.BerthException):
    msg_fmt = 'Invalid PCI alias request: %(reason)s'


def _aliases(conf):
    """name -> [numa_policy, [spec, ...], placement keys] from
    ``[pci] alias``.
    """
    aliases = {}
    for text in conf.pci.alias:
        try:
            alias = json.loads(text)
        except ValueError:
            raise InvalidPCIAlias(reason='[pci] alias %r is not JSON' % text)
        name = alias.get('name')
        if not name:
            raise InvalidPCIAlias(reason='[pci] alias %r has no name' % text)
        spec = {k: v for k, v in alias.items() if k not in _NOT_SPEC}
        policy = alias.get('numa_policy')
        known = aliases.setdefault(name, [policy, [], {}])
        known[1].append(spec)
        known[2].update((k, alias[k]) for k in _PLACEMENT_KEYS if k in alias)
        if policy and not known[0]:
            known[0] = policy
    return aliases


def from_flavor(conf, extra_specs):
    """The PCI requests of a flavor's extra specs ([] when none).

    :raises InvalidPCIAlias: an alias ``[pci] alias`` does not define, or
        a malformed count.
    """
    text = extra_specs.get(SPEC_KEY)
    if not text:
        return []
    aliases = _aliases(conf)
    requests = []
    for item in text.split(','):
        name, _sep, count = item.strip().partition(':')
        name = name.strip()
        try:
            count = int(count.strip() or 1)
        except ValueError:
            raise InvalidPCIAlias(reason='count of %r is not a number'
                                  % item)
        if name not in aliases:
            raise InvalidPCIAlias(reason='PCI alias %s is not defined'
                                  % name)
        policy, specs, placement_keys = aliases[name]
        if len(specs) > 1 and conf.filter_scheduler.pci_in_placement:
            # NOTE: one placement request group has one resource class;
            # alternatives cannot be asked for (as in Nova).
            raise InvalidPCIAlias(
                reason='PCI alias %s is defined more than once, which '
                       '[filter_scheduler] pci_in_placement does not '
                       'support' % name)
        request = {
            'count': count, 'spec': [dict(s) for s in specs],
            'alias_name': name,
            'numa_policy': extra_specs.get(POLICY_KEY) or policy or 'legacy',
        }
        request.update(placement_keys)
        requests.append(request)
    return requests
