# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Which of a node's PCI devices belong to which instance.

The scheduler sees a node's devices as pools of identical devices with
counts (``compute_nodes.pci_stats``); the agent must hand out actual
devices. Matching and NUMA affinity follow the scheduler's own rules
(:mod:`common.pci.stats`), applied to pools of free devices,
and the chosen pools' lowest addresses are taken, so the same instances
always get the same devices back after a restart.

A physical function and its virtual functions exclude each other: a PF
given to a guest takes its VFs with it, and a PF with a VF in use cannot
be given away.

With ``[filter_scheduler] pci_in_placement`` the scheduler has allocated
each device from one PCI provider (a PF with its VFs, or one device); the
claim then takes each device from the provider placement's ``mappings``
name for its request group, so that the device given is the one
allocated (doc/behaviours.md §pci-placement).
"""

import logging

from common.pci import stats as pci_stats
from common.placement import pci_groups
from services.compute import provider_tree

LOG = logging.getLogger(__name__)

# NOTE: device keys that identify a device rather than describe its kind;
# they never split pools.
_IDENTITY_KEYS = frozenset(['address', 'parent_addr', 'numa_node',
                            'vendor_id', 'product_id', 'dev_type'])

PciDeviceRequestFailed = pci_stats.PciDeviceRequestFailed


class _Pools(object):
    """``support_requests`` over one node's free devices, for NUMA fit."""

    def __init__(self, pools):
        self._pools = pools

    def support_requests(self, requests, cell_ids):
        return pci_stats.support_requests(self._pools, requests, cell_ids)


class PciTracker(object):
    """The devices of one node and their owners. Not thread-safe: the
    resource tracker calls it under its lock.
    """

    def __init__(self):
        self.devices = {}
        self.owner = {}

    def set_devices(self, devices):
        """Take the driver's current device list; owners of devices that
        are gone are forgotten.
        """
        self.devices = {d['address']: d for d in devices}
        self.owner = {a: u for a, u in self.owner.items()
                      if a in self.devices}

    def reset(self):
        """Forget every owner (before usage is rebuilt)."""
        self.owner = {}

    def _taken(self):
        taken = set(self.owner)
        for address in self.owner:
            device = self.devices[address]
            if device.get('parent_addr'):
                taken.add(device['parent_addr'])
            if device.get('dev_type') == pci_stats.DEV_TYPE_PF:
                taken.update(a for a, d in self.devices.items()
                             if d.get('parent_addr') == address)
        return taken

    @staticmethod
    def _key(device):
        tags = tuple(sorted((k, str(v)) for k, v in device.items()
                            if k not in _IDENTITY_KEYS))
        return (device.get('vendor_id'), device.get('product_id'),
                device.get('numa_node'), device.get('dev_type'), tags)

    def _pools(self):
        """(pool dicts with free counts, free addresses per pool)."""
        taken = self._taken()
        pools = {}
        for address in sorted(self.devices):
            device = self.devices[address]
            key = self._key(device)
            if key not in pools:
                pools[key] = ({'vendor_id': device.get('vendor_id'),
                               'product_id': device.get('product_id'),
                               'numa_node': device.get('numa_node'),
                               'dev_type': device.get('dev_type'),
                               'tags': dict(key[4]), 'count': 0}, [])
            if address not in taken:
                pools[key][0]['count'] += 1
                pools[key][1].append(address)
        return list(pools.values())

    def pools(self):
        """The node's pools with free counts (``compute_nodes.pci_stats``).

        Emptied pools stay, with count 0, as the scheduler expects.
        """
        return [pool for pool, _free in self._pools()]

    def fit_pools(self):
        """An object NUMA fitting can ask ``support_requests`` of."""
        return _Pools(self.pools())

    @staticmethod
    def _owner(device):
        """The address of the device's provider: its PF's, or its own."""
        return device.get('parent_addr') or device['address']

    def placed(self, root_uuid, nodename, mappings):
        """Request index -> provider owner address of each device, from
        placement's ``mappings`` (group suffix -> provider uuids).

        Groups that are not PCI groups, or whose provider is not one of
        this node's PCI providers, are left out.
        """
        by_uuid = {}
        for device in self.devices.values():
            owner = self._owner(device)
            name = '%s_%s' % (nodename, owner)
            by_uuid[provider_tree.child_uuid(root_uuid, name)] = owner
        placed = {}
        for suffix, providers in sorted((mappings or {}).items()):
            found = pci_groups.parse_suffix(suffix)
            owner = by_uuid.get((providers or [None])[0])
            if found is None or owner is None:
                continue
            placed.setdefault(found[0], []).append((found[1], owner))
        return {index: [owner for _i, owner in sorted(pairs)]
                for index, pairs in placed.items()}

    def _device_pool(self, device):
        key = self._key(device)
        return {'vendor_id': key[0], 'product_id': key[1],
                'numa_node': key[2], 'dev_type': key[3],
                'tags': dict(key[4]), 'count': 1}

    def _take_from(self, instance_uuid, owner, request, cell_ids):
        """Give one free device of provider ``owner`` matching ``request``;
        its address, or None.
        """
        members = [d for d in self.devices.values()
                   if self._owner(d) == owner]
        # NOTE: a PF whose VFs are assignable is offered through them
        # (see provider_tree); never hand out the PF itself then.
        vfs = [d for d in members if d.get('parent_addr')]
        taken = self._taken()
        for device in sorted(vfs or members, key=lambda d: d['address']):
            if device['address'] in taken:
                continue
            if pci_stats.device_allowed(self._device_pool(device), request,
                                        cell_ids):
                self.owner[device['address']] = instance_uuid
                return device['address']
        return None

    def _claim_placed(self, instance_uuid, requests, cell_ids, placed):
        """Take the devices of the placed requests; the addresses."""
        chosen = []
        for index, owners in sorted(placed.items()):
            for owner in owners:
                address = self._take_from(instance_uuid, owner,
                                          requests[index], cell_ids)
                if address is None:
                    for taken in chosen:
                        self.owner.pop(taken, None)
                    raise PciDeviceRequestFailed(requests=[requests[index]])
                chosen.append(address)
        return chosen

    def claim(self, instance_uuid, requests, cell_ids=None, placed=None):
        """Give ``instance_uuid`` devices for its PCI ``requests``.

        :param cell_ids: host NUMA cells the instance is fitted to (None
            when it has no NUMA topology).
        :param placed: request index -> provider owner addresses, one per
            device placement allocated (see :meth:`placed`); those
            requests are served from exactly those providers.
        :returns: the list of addresses it got.
        :raises PciDeviceRequestFailed: the free devices cannot serve the
            requests; nothing is taken then.
        """
        if not requests:
            return []
        # NOTE: a request placement did not allocate device by device
        # (groups missing from the mappings) is served from the pools.
        placed = {index: owners for index, owners in (placed or {}).items()
                  if index < len(requests) and
                  len(owners) == int(requests[index].get('count', 1))}
        chosen = self._claim_placed(instance_uuid, requests, cell_ids,
                                    placed)
        rest = [r for i, r in enumerate(requests) if i not in placed]
        try:
            return chosen + self._claim_pools(instance_uuid, rest, cell_ids)
        except PciDeviceRequestFailed:
            for address in chosen:
                self.owner.pop(address, None)
            raise

    def _claim_pools(self, instance_uuid, requests, cell_ids):
        if not requests:
            return []
        entries = self._pools()
        pools = [dict(pool) for pool, _free in entries]
        pci_stats.apply_requests(pools, requests, cell_ids)
        chosen = []
        for (pool, free), after in zip(entries, pools):
            chosen.extend(free[:pool['count'] - after['count']])
        for address in chosen:
            self.owner[address] = instance_uuid
        return chosen

    def assign(self, instance_uuid, addresses):
        """Give back devices an instance is known to hold.

        :returns: False when one of them is gone or held by another
            instance (the caller then claims afresh).
        """
        taken = self._taken()
        if any(a not in self.devices or a in taken for a in addresses):
            return False
        for address in addresses:
            self.owner[address] = instance_uuid
        return True

    def release(self, instance_uuid):
        """Free every device of ``instance_uuid``."""
        self.owner = {a: u for a, u in self.owner.items()
                      if u != instance_uuid}

    def addresses_of(self, instance_uuid):
        """The addresses ``instance_uuid`` holds, sorted."""
        return sorted(a for a, u in self.owner.items()
                      if u == instance_uuid)
