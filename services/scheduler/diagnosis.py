# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Why placement left no host: a few reads, made only after a failure.

An empty ``GET /allocation_candidates`` answer says nothing of its cause,
and a forced host that is not among the candidates only shows as "0
hosts". Once a request has failed, these reads name the likely cause for
the explanation (and so the fault):

* a requested or forced host: its root provider's traits (the
  ``COMPUTE_STATUS_DISABLED`` trait every query forbids, set while its
  compute service is disabled), inventories (``max_unit``, ``min_unit``,
  ``step_size``) and usages (free capacity);
* otherwise, per resource class asked for, whether any provider could take
  that amount alone (``GET /resource_providers?resources=``).

A scheduling request that finds a host makes none of these reads. Each
read is bounded by the placement client's timeout; a failed read only
leaves its cause unnamed.
"""

import logging

LOG = logging.getLogger(__name__)

DISABLED_TRAIT = 'COMPUTE_STATUS_DISABLED'


def no_candidates(placement, context, query, spec):
    """Notes naming why placement found no candidate for ``query``.

    :param placement: the scheduler's SchedulerPlacementClient.
    :param query: the PlacementQuery asked.
    :param spec: the RequestSpec (for the requested host's name).
    """
    root = query.unsuffixed.in_tree
    try:
        if root:
            dest = spec.requested_destination
            label = 'requested host %s' % (dest.host if dest is not None
                                           and dest.host else root)
            return provider_notes(placement, context, root, query, label)
        return resource_notes(placement, context, query)
    except Exception:
        # NOTE: the request has failed already; a failed diagnosis must
        # not replace its NoValidHost.
        LOG.warning('Could not tell why placement found no candidate',
                    exc_info=True)
        return []


def forced_hosts_missing(placement, context, query, spec, view,
                         candidates):
    """Notes on the forced hosts placement did not offer.

    :param view: the host manager (compute uuids by host).
    :param candidates: the compute uuids placement offered.
    """
    notes = []
    try:
        for host in spec.force_hosts or []:
            for node in spec.force_nodes or [None]:
                notes.extend(_forced_notes(placement, context, query, view,
                                           candidates, host, node))
    except Exception:
        LOG.warning('Could not tell why the forced hosts were not '
                    'candidates', exc_info=True)
    return notes


def _forced_notes(placement, context, query, view, candidates, host, node):
    label = 'forced host %s' % (host if node is None else
                                '%s:%s' % (host, node))
    uuids = view.compute_uuids(host, node, context=context)
    if not uuids:
        return ['%s is unknown' % label]
    notes = []
    for uuid in uuids:
        if uuid in candidates:
            continue
        found = provider_notes(placement, context, uuid, query, label)
        notes.extend(found or ["%s is not among placement's candidates"
                               % label])
    return notes


def provider_notes(placement, context, uuid, query, label):
    """Why provider ``uuid`` (a compute node's root) cannot take ``query``.

    Only what the provider itself shows is named: resources its root has
    no inventory of may sit on a child provider and are not judged.
    """
    traits = placement.provider_traits(context, uuid)
    if traits is None:
        return ['%s has no resource provider in placement' % label]
    group = query.unsuffixed
    notes = []
    if DISABLED_TRAIT in traits and DISABLED_TRAIT in group.forbidden:
        notes.append('%s is disabled: its provider has the %s trait, '
                     'which every request forbids' % (label, DISABLED_TRAIT))
    forbidden = sorted((traits & group.forbidden) - {DISABLED_TRAIT})
    if forbidden:
        notes.append('%s has forbidden trait(s) %s' % (
            label, ', '.join(forbidden)))
    notes.extend(_inventory_notes(placement, context, uuid, group.resources,
                                  label))
    return notes


def _inventory_notes(placement, context, uuid, resources, label):
    wanted = {rc: n for rc, n in resources.items() if n}
    if not wanted:
        return []
    inventories = placement.provider_inventories(context, uuid) or {}
    notes = []
    unexplained = {}
    for rc, amount in sorted(wanted.items()):
        inv = inventories.get(rc)
        if inv is None:
            continue
        unit = _unit_note(rc, amount, inv)
        if unit:
            notes.append('%s:%d %s of %s' % (rc, amount, unit, label))
        else:
            unexplained[rc] = (amount, inv)
    if unexplained:
        usages = placement.provider_usages(context, uuid) or {}
        for rc, (amount, inv) in sorted(unexplained.items()):
            capacity = int((inv['total'] - inv.get('reserved', 0)) *
                           inv.get('allocation_ratio', 1.0))
            used = usages.get(rc, 0)
            if used + amount > capacity:
                notes.append('%s:%d exceeds the free capacity of %s (%d of '
                             '%d used)' % (rc, amount, label, used,
                                           capacity))
    return notes


def _unit_note(rc, amount, inv):
    """Why ``amount`` of one inventory cannot be allocated at once."""
    if amount > inv.get('max_unit', amount):
        return 'is above the max_unit %d' % inv['max_unit']
    if amount < inv.get('min_unit', 1):
        return 'is below the min_unit %d' % inv['min_unit']
    step = inv.get('step_size', 1)
    if step > 1 and amount % step:
        return 'is not a multiple of the step_size %d' % step
    return None


def resource_notes(placement, context, query):
    """Per resource class asked for: could any provider take that amount
    alone? One read per class; a class no provider can take costs up to
    :data:`SAMPLE` + 1 more, to tell max_unit from capacity.
    """
    notes = []
    for suffix in sorted(query.groups):
        for rc, amount in sorted(query.groups[suffix].resources.items()):
            if not amount:
                continue
            providers = placement.providers_with(context, {rc: amount})
            if providers is None or providers:
                continue
            notes.append(_no_provider_note(placement, context, rc, amount))
    return notes


#: How many providers' inventories a failed request reads at most, per
#: resource class, to tell whether their max_unit is what refuses it.
SAMPLE = 5


def _no_provider_note(placement, context, rc, amount):
    """Why no provider can take ``amount`` of ``rc``."""
    some = placement.providers_with(context, {rc: 1})
    if some is not None and not some:
        return ('no resource provider can take %s:%d: none has any %s '
                'free' % (rc, amount, rc))
    if some and len(some) <= SAMPLE:
        units = []
        for uuid in some:
            inv = (placement.provider_inventories(context, uuid) or
                   {}).get(rc)
            if inv is None:
                break
            units.append(inv.get('max_unit', inv['total']))
        else:
            if amount > max(units):
                return ('%s:%d is above the max_unit of every resource '
                        'provider with %s free (the largest is %d)'
                        % (rc, amount, rc, max(units)))
            return ('%s:%d exceeds the free capacity of every resource '
                    'provider with %s free' % (rc, amount, rc))
    return ('no resource provider can take %s:%d: it is above the '
            'max_unit or the free capacity of every provider of %s'
            % (rc, amount, rc))
