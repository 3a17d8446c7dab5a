# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Request filters: turn a request spec into the placement query.

Each filter is a function ``f(context, spec, query, view)`` that narrows
the :class:`~common.placement.query.PlacementQuery`: resources
and traits from the flavor and image, aggregates for zones and tenant or
image isolation, a tree for a forced host. ``view`` is the scheduler's
cached view of aggregates and compute nodes (see host_manager). Placement
then does in SQL what host filters would otherwise do host by host.

They run in the order of :data:`ALL_REQUEST_FILTERS`; a filter that finds
the request cannot be placed anywhere sets ``query.impossible`` to the
reason.
"""

import logging
import re

from common.conf import CONF
from common.placement import guest_features
from common.placement import pci_groups
from common.placement import query as placement_query
from common.placement import resources as placement_resources

LOG = logging.getLogger(__name__)

_TRAIT_KEY = re.compile(r'^trait([a-zA-Z0-9_-]{1,64})?:(.+)$')

# Image properties that name a device model, and the trait prefix of each
# (placement traits of os-traits, e.g. COMPUTE_NET_VIF_MODEL_VIRTIO).
_IMAGE_PROPERTY_TRAITS = {
    'hw_disk_bus': 'COMPUTE_STORAGE_BUS_',
    'hw_cdrom_bus': 'COMPUTE_STORAGE_BUS_',
    'hw_vif_model': 'COMPUTE_NET_VIF_MODEL_',
    'hw_video_model': 'COMPUTE_GRAPHICS_MODEL_',
    'hw_architecture': 'HW_ARCH_',
}


def flavor_resources(context, spec, query, view):
    """VCPU or PCPU, MEMORY_MB and DISK_GB from the flavor.

    See :func:`common.placement.resources.flavor_resources`.
    """
    placement_resources.flavor_resources(spec, query)


def flavor_and_image_traits(context, spec, query, view):
    """``trait[S]:T=required|forbidden`` from the flavor, then the image.

    Dedicated CPUs with thread policy isolate forbid, and require demand,
    the HW_CPU_HYPERTHREADING trait; a virtual TPM and required secure
    boot require theirs (:mod:`common.placement.guest_features`).
    """
    sources = [spec.flavor.extra_specs]
    if spec.image:
        sources.append(spec.image.properties)
    for source in sources:
        for key, value in source.items():
            found = _TRAIT_KEY.match(key)
            if not found:
                continue
            group = query.group(found.group(1) or '')
            if value == 'required':
                group.required.add(found.group(2))
            elif value == 'forbidden':
                group.forbidden.add(found.group(2))
    try:
        query.unsuffixed.required |= guest_features.requests(
            spec.flavor, spec.image).traits
    except guest_features.GuestFeatureInvalid as exc:
        query.impossible = str(exc)
        return
    thread_policy, dedicated = placement_resources.cpu_needs(spec)
    if dedicated:
        if thread_policy == 'isolate':
            query.unsuffixed.forbidden.add('HW_CPU_HYPERTHREADING')
        elif thread_policy == 'require':
            query.unsuffixed.required.add('HW_CPU_HYPERTHREADING')


def pci_in_placement(context, spec, query, view):
    """One request group per PCI device (``[filter_scheduler]
    pci_in_placement``); see :func:`common.placement.pci_groups.add_groups`.
    """
    if CONF.filter_scheduler.pci_in_placement:
        pci_groups.add_groups(spec.pci_requests, query)


def compute_status(context, spec, query, view):
    """Never offer compute nodes whose service is disabled."""
    query.unsuffixed.forbidden.add('COMPUTE_STATUS_DISABLED')


def availability_zone(context, spec, query, view):
    """A requested zone becomes member_of its aggregates."""
    zone = spec.availability_zone
    if not zone or not CONF.scheduler.query_placement_for_availability_zone:
        return
    uuids = {agg.uuid for agg in view.aggregates()
             if agg.metadata.get('availability_zone') == zone}
    if uuids:
        query.unsuffixed.member_of.append(uuids)
    elif zone != CONF.default_availability_zone:
        query.impossible = 'availability zone %s has no hosts' % zone
    else:
        # NOTE: hosts in no zone are in the default zone, which therefore
        # means "not in any other zone's aggregate".
        query.unsuffixed.forbidden_aggregates |= {
            agg.uuid for agg in view.aggregates()
            if agg.metadata.get('availability_zone')}


def tenant_isolation(context, spec, query, view):
    """Send a project only to aggregates naming it (filter_tenant_id*)."""
    if not CONF.scheduler.limit_tenants_to_placement_aggregate:
        return
    mine = set()
    for agg in view.aggregates():
        for key, value in agg.metadata.items():
            if key.startswith('filter_tenant_id') and spec.project_id in [
                    v.strip() for v in value.split(',')]:
                mine.add(agg.uuid)
    if mine:
        query.unsuffixed.member_of.append(mine)
    elif CONF.scheduler.placement_aggregate_required_for_tenants:
        query.impossible = ('project %s is in no tenant aggregate'
                            % spec.project_id)


def image_type_support(context, spec, query, view):
    """Only hosts that can run the image's disk format."""
    if not CONF.scheduler.query_placement_for_image_type_support:
        return
    disk_format = spec.image and spec.image.properties.get('disk_format')
    if disk_format:
        query.unsuffixed.required.add(
            'COMPUTE_IMAGE_TYPE_%s' % disk_format.upper())


def isolated_aggregates(context, spec, query, view):
    """Keep out of aggregates that require traits the request lacks."""
    if not CONF.scheduler.enable_isolated_aggregate_filtering:
        return
    asked = set()
    for group in query.groups.values():
        asked |= group.required
    for agg in view.aggregates():
        needed = {key[len('trait:'):] for key, value in agg.metadata.items()
                  if key.startswith('trait:') and value == 'required'}
        if needed and not needed <= asked:
            query.unsuffixed.forbidden_aggregates.add(agg.uuid)


def image_metadata(context, spec, query, view):
    """Device-model image properties become required traits."""
    if not CONF.scheduler.image_metadata_prefilter or not spec.image:
        return
    for prop, prefix in _IMAGE_PROPERTY_TRAITS.items():
        value = spec.image.properties.get(prop)
        if value:
            query.unsuffixed.required.add(
                prefix + re.sub(r'[^A-Z0-9_]', '_', value.upper()))


def requested_destination(context, spec, query, view):
    """A destination's host, aggregates and forbidden aggregates."""
    dest = spec.requested_destination
    if dest is None:
        return
    for aggregates in dest.aggregates or []:
        query.unsuffixed.member_of.append(set(aggregates.split(',')))
    query.unsuffixed.forbidden_aggregates |= set(
        dest.forbidden_aggregates or [])
    if dest.host:
        uuids = view.compute_uuids(dest.host, dest.node)
        if len(uuids) == 1:
            query.unsuffixed.in_tree = uuids[0]
        elif not uuids:
            query.impossible = 'requested host %s%s is unknown' % (
                dest.host, ':%s' % dest.node if dest.node else '')


def placement_limit(context, spec, query, view):
    """Cap the candidates; not when hosts are forced (they may be last)."""
    if spec.force_hosts or spec.force_nodes:
        return
    query.limit = CONF.scheduler.max_placement_results


ALL_REQUEST_FILTERS = [
    flavor_resources,
    flavor_and_image_traits,
    pci_in_placement,
    compute_status,
    availability_zone,
    tenant_isolation,
    image_type_support,
    isolated_aggregates,
    image_metadata,
    requested_destination,
    placement_limit,
]


def build_query(context, spec, view):
    """Run every request filter; return the PlacementQuery."""
    query = placement_query.PlacementQuery()
    for request_filter in ALL_REQUEST_FILTERS:
        request_filter(context, spec, query, view)
        if query.impossible:
            LOG.info('Request filter %s: %s', request_filter.__name__,
                     query.impossible)
            break
    return query
