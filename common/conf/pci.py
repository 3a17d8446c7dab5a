# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[pci]`` group: PCI passthrough, as Nova names them.

``alias`` is read where requests are built (a flavor's
``pci_passthrough:alias`` names aliases); ``device_spec`` and
``report_in_placement`` by compute agents, which decide which of their
devices guests may have.
"""

from oslo_config import cfg

pci_group = cfg.OptGroup(
    'pci', title='PCI passthrough options',
    help='Which host PCI devices guests may use and how flavors ask.')

pci_opts = [
    cfg.MultiStrOpt('alias', default=[], help="""
A PCI alias flavors may request (``pci_passthrough:alias=<name>:<count>``),
as a JSON object; repeat the option for more aliases.

Keys: ``name``, and what a device must match: ``vendor_id``,
``product_id``, ``device_type`` (``type-PCI``, ``type-PF``, ``type-VF``);
``numa_policy`` (``legacy``, ``preferred``, ``required``, ``socket``);
and, for ``[filter_scheduler] pci_in_placement``, ``resource_class``
(default ``CUSTOM_PCI_<VENDOR_ID>_<PRODUCT_ID>``; a name that is not a
standard class is normalized to ``CUSTOM_<NAME>``) and ``traits`` (a
comma-separated list the device's provider must have; non-standard names
are normalized to ``CUSTOM_<NAME>``). Neither is matched against the
device itself.

Possible values:

* e.g. ``{"name": "nic", "vendor_id": "8086", "product_id": "154d",
  "device_type": "type-VF", "numa_policy": "required"}``
"""),
    cfg.MultiStrOpt('device_spec', default=[], help="""
Which host devices guests may have, as a JSON object matched against each
device; repeat the option for more. No entry: no device is assignable.

Keys: ``vendor_id``, ``product_id``, ``address`` (may end in ``*``),
``devname``; anything else (``physical_network``, ``trusted``...) becomes
a tag of the matching devices. With ``report_in_placement``,
``resource_class`` and ``traits`` (comma-separated) shape the inventory.
"""),
    cfg.BoolOpt('report_in_placement', default=False, help="""
Report assignable PCI devices to placement: each physical function (or
stand-alone device) becomes a child provider of the compute node with an
inventory of its devices (``CUSTOM_PCI_<VENDOR>_<PRODUCT>`` unless
``device_spec`` names a ``resource_class``) and the
``COMPUTE_MANAGED_PCI_DEVICE`` trait.

Possible values:

* False (default): devices are tracked by the compute agent only.
* True: devices are also reported to placement.

Related options:

* ``[filter_scheduler] pci_in_placement`` (needs this on every compute)
* ``[pci] device_spec``
"""),
]


def register_opts(conf):
    """Register the [pci] options."""
    conf.register_group(pci_group)
    conf.register_opts(pci_opts, group=pci_group)


def list_opts():
    """Options for the sample config."""
    return [(pci_group, pci_opts)]
