# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Options of the ``[filter_scheduler]`` group: filters and weighers.

Names and defaults follow Nova's, so an operator's nova.conf section can be
carried over.
"""

from oslo_config import cfg

filter_scheduler_group = cfg.OptGroup(
    'filter_scheduler', title='Filter scheduler options',
    help='Which host filters and weighers run, and how they score hosts.')


def _multiplier(name, default, what):
    return cfg.FloatOpt(name, default=default, help="""
Multiplier of the %s weigher.

A positive value prefers hosts scoring higher, a negative one hosts scoring
lower, 0 disables it. An aggregate may override it for its hosts with
metadata of the same name (the smallest value wins).
""" % what)


filter_scheduler_opts = [
    cfg.IntOpt('host_subset_size', default=1, min=1, help="""
Pick the destination at random among this many best-weighed hosts.

1 takes the best host. Larger values spread concurrent requests from
several schedulers over more hosts at the cost of a less optimal choice.
Hosts that share the best weight are always chosen among at random (Nova's
shuffle_best_same_weighed_hosts is therefore not needed).
"""),
    cfg.IntOpt('max_io_ops_per_host', default=8, min=0, help="""
The most concurrent I/O-heavy operations (builds, resizes, snapshots) a
host may have and still pass IoOpsFilter.
"""),
    cfg.IntOpt('max_instances_per_host', default=50, min=1, help="""
The most instances a host may have and still pass NumInstancesFilter.
"""),
    cfg.BoolOpt('track_instance_changes', default=True, help="""
Let compute agents tell the schedulers about instance changes, so that
filters such as SameHost, DifferentHost and the group filters see them
without reading the database.
"""),
    cfg.ListOpt('enabled_filters',
                default=['ComputeFilter', 'ComputeCapabilitiesFilter',
                         'ImagePropertiesFilter',
                         'ServerGroupAntiAffinityFilter',
                         'ServerGroupAffinityFilter'],
                help="""
The host filters run for every request, in this order.

Each name is an entry point in the berth.scheduler.filters namespace; an
unknown name stops the scheduler at start-up. Availability zones, tenant
and image isolation and resource capacity are usually enforced by
placement query pre-filters instead (see [scheduler]).
"""),
    cfg.ListOpt('weight_classes', default=['all'], help="""
The weighers to use: entry-point names in berth.scheduler.weighers, or
"all" for every installed weigher.
"""),
    _multiplier('ram_weight_multiplier', 1.0, 'RAM (free memory)'),
    _multiplier('cpu_weight_multiplier', 1.0, 'CPU (free vCPUs)'),
    _multiplier('disk_weight_multiplier', 1.0, 'disk (free disk)'),
    _multiplier('io_ops_weight_multiplier', -1.0,
                'I/O operations (negative prefers idle hosts)'),
    _multiplier('pci_weight_multiplier', 1.0,
                'PCI (keeps PCI hosts for PCI requests)'),
    _multiplier('soft_affinity_weight_multiplier', 1.0,
                'server group soft-affinity'),
    _multiplier('soft_anti_affinity_weight_multiplier', 1.0,
                'server group soft-anti-affinity'),
    _multiplier('build_failure_weight_multiplier', 1000000.0,
                'recent build failures'),
    _multiplier('cross_cell_move_weight_multiplier', 1000000.0,
                'cross-cell move (prefers the source cell)'),
    _multiplier('hypervisor_version_weight_multiplier', 1.0,
                'hypervisor version (prefers newer)'),
    _multiplier('num_instances_weight_multiplier', 0.0,
                'number of instances'),
    _multiplier('image_props_weight_multiplier', 0.0,
                'image properties (prefers hosts running instances of '
                'images with the same properties)'),
    cfg.ListOpt('image_props_weight_setting', default=[], help="""
Per-property ratios for the image properties weigher, e.g.
"os_distro=1,hw_machine_type=0.5". Empty means every property counts 1.
"""),
    cfg.StrOpt('image_properties_default_architecture', help="""
The architecture assumed for images without hw_architecture
(ImagePropertiesFilter).
"""),
    cfg.ListOpt('isolated_images', default=[], help="""
Images (uuids) that may run only on the isolated hosts (IsolatedHostsFilter).
"""),
    cfg.ListOpt('isolated_hosts', default=[], help="""
Hosts reserved for the isolated images (IsolatedHostsFilter).
"""),
    cfg.BoolOpt('restrict_isolated_hosts_to_isolated_images', default=True,
                help="""
Let only isolated images run on isolated hosts (IsolatedHostsFilter).
"""),
    cfg.StrOpt('aggregate_image_properties_isolation_namespace', help="""
Only image properties in this namespace are compared with aggregate
metadata (AggregateImagePropertiesIsolation).
"""),
    cfg.StrOpt('aggregate_image_properties_isolation_separator',
               default='.', help="""
The separator between namespace and property name
(AggregateImagePropertiesIsolation).
"""),
    cfg.BoolOpt('pci_in_placement', default=False, help="""
Schedule and allocate the PCI devices of flavor aliases in placement.

When enabled, every device a flavor's ``pci_passthrough:alias`` asks for
becomes one request group of the placement query (resource class and
traits from the alias, see ``[pci] alias``), the scheduler's claim
allocates it from the compute's PCI provider, and the compute gives the
instance a device of the provider that holds the allocation. The host
filters still run: placement narrows the hosts, PciPassthroughFilter and
NUMATopologyFilter still check device tags and NUMA affinity.

Enable it only after every compute reports its devices
(``[pci] report_in_placement``); a compute that does not has no PCI
providers, so no PCI request could land on it. An alias defined more than
once (alternative devices under one name) cannot be expressed as one
placement request group and is refused at boot while this is enabled.

Possible values:

* False (default): PCI devices are scheduled by the PciPassthroughFilter
  and claimed by the compute only, placement does not see them.
* True: as above, plus the devices are allocated in placement.

Related options:

* ``[pci] report_in_placement`` (must be on for every compute first)
* ``[pci] alias`` (``resource_class`` and ``traits``)
* ``[pci] device_spec`` (``resource_class`` and ``traits``)
"""),
]


def register_opts(conf):
    """Register the [filter_scheduler] options."""
    conf.register_group(filter_scheduler_group)
    conf.register_opts(filter_scheduler_opts, group=filter_scheduler_group)


def list_opts():
    """Options for the sample config."""
    return [(filter_scheduler_group, filter_scheduler_opts)]
