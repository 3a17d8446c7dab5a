# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The two response shapes of ``GET /allocation_candidates``.

* ``allocation_requests``: a list of bodies ready for ``PUT /allocations``:
  lists of ``{"resource_provider": {"uuid"}, "resources"}`` at 1.10-1.11,
  dicts keyed by provider uuid from 1.12, plus ``mappings`` (request group
  suffix -> provider uuids) from 1.34.
* ``provider_summaries``: per provider uuid, ``resources`` (capacity and
  usage; only the requested classes before 1.27), ``traits`` (1.17) and
  ``parent_provider_uuid``/``root_provider_uuid`` (1.29).
"""

from services.placement.objects import catalog


def allocation_requests(version, candidates, uuid_of, rc_name):
    """The ``allocation_requests`` list.

    :param candidates: list of (allocations, mappings) as produced by
        :mod:`candidate_combine` (provider and class ids).
    :param uuid_of: {provider id: uuid}.
    :param rc_name: {class id: name}.
    """
    dict_shape = version >= (1, 12)
    with_mappings = version >= (1, 34)
    # NOTE: when groups explode into many candidates, most share their
    # allocations and their mapping entries; each distinct one is built
    # once and the (read-only) objects are shared in the response.
    rendered = {}
    mapped = {}
    result = []
    for allocations, mappings in candidates:
        allocs = rendered.get(allocations)
        if allocs is None:
            allocs = rendered[allocations] = _allocations(
                dict_shape, allocations, uuid_of, rc_name)
        body = {'allocations': allocs}
        if with_mappings:
            body['mappings'] = entry = {}
            for suffix, pids in mappings:
                uuids = mapped.get(pids)
                if uuids is None:
                    uuids = mapped[pids] = [uuid_of[p] for p in pids]
                entry[suffix] = uuids
        result.append(body)
    return result


def single_provider_requests(version, chosen, resources):
    """``allocation_requests`` when every candidate is one provider.

    :param chosen: list of (provider id, uuid) in output order.
    :param resources: {class name: amount}, the same for every candidate.
    """
    # NOTE: one resources dict is shared by every request of the answer;
    # the response is only serialised, never changed.
    if version < (1, 12):
        return [{'allocations': [{'resource_provider': {'uuid': uuid},
                                  'resources': resources}]}
                for _pid, uuid in chosen]
    if version < (1, 34):
        return [{'allocations': {uuid: {'resources': resources}}}
                for _pid, uuid in chosen]
    return [{'allocations': {uuid: {'resources': resources}},
             'mappings': {'': [uuid]}}
            for _pid, uuid in chosen]


def _allocations(dict_shape, allocations, uuid_of, rc_name):
    per_provider = {}
    for (pid, rc), amount in sorted(allocations):
        per_provider.setdefault(pid, {})[rc_name[rc]] = amount
    if dict_shape:
        return {uuid_of[pid]: {'resources': resources}
                for pid, resources in per_provider.items()}
    return [{'resource_provider': {'uuid': uuid_of[pid]},
             'resources': resources}
            for pid, resources in per_provider.items()]


def provider_summaries(version, provider_ids, uuid_of, inventories, traits,
                       tree, rc_name):
    """The ``provider_summaries`` dict.

    :param provider_ids: ids to summarise, in output order.
    :param inventories: {id: [(class id, capacity, used)]}.
    :param traits: {id: names in output order} (used from 1.17); see
        :func:`traits_in_id_order`.
    :param tree: {id: (uuid, parent id, root id)} (used from 1.29).
    """
    with_traits = version >= (1, 17)
    with_tree = version >= (1, 29)
    result = {}
    for pid in provider_ids:
        summary = {'resources': {
            rc_name[rc]: {'capacity': capacity, 'used': used}
            for rc, capacity, used in inventories.get(pid, ())}}
        if with_traits:
            summary['traits'] = list(traits.get(pid, ()))
        if with_tree:
            _uuid, parent, root = tree[pid]
            summary['parent_provider_uuid'] = (
                uuid_of[parent] if parent is not None else None)
            summary['root_provider_uuid'] = uuid_of[root]
        result[uuid_of[pid]] = summary
    return result


def traits_in_id_order(ctx, traits):
    """``{id: [names]}`` of ``{id: set of names}``, each in trait id order.

    NOTE: a provider's traits are listed in trait id order (standard traits
    first, as synced, then custom traits in creation order), the order
    upstream answers with on its reference databases (the API reference's
    example lists ``HW_NUMA_ROOT`` before ``CUSTOM_FOO``) and the order
    this summary lists resource classes in. An explicit sort makes it the
    same on every backend and in every answer, whatever the SQL returned.
    """
    order = catalog.TRAITS.in_id_order
    return {pid: order(ctx, names) for pid, names in traits.items()}
