# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Validate a server's own host for the new image of a rebuild.

A rebuild with a new image keeps the server where it is, with the same
flavor and allocation. As Nova's scheduler, this asks placement nothing
and claims nothing: it takes the requested destination's host state and
runs only the filters marked ``RUN_ON_REBUILD`` (those whose answer the
image can change: image properties, isolation, NUMA), so that a host at
capacity or disabled does not fail a rebuild that claims nothing new.
The request is recognised by Nova's ``_nova_check_type = rebuild``
scheduler hint (set by services/conductor/rebuild_flow.py).
"""

import logging

from common import exception
from common.objects import selection as selection_obj
from services.scheduler import explanation as explanation_mod
from services.scheduler import filters as filters_mod
from services.scheduler import host_copy

LOG = logging.getLogger(__name__)

CHECK_TYPE_HINT = '_nova_check_type'


def is_rebuild(spec):
    """True for a rebuild's host check (Nova's hint)."""
    value = (spec.scheduler_hints or {}).get(CHECK_TYPE_HINT)
    if isinstance(value, list):
        return 'rebuild' in value
    return value == 'rebuild'


def _host_states(host_manager, context, dest):
    """Private copies of the requested destination's host states."""
    uuids = host_manager.compute_uuids(dest.host, dest.node, context)
    host_manager.refresh(context, uuids)
    with host_manager.reading() as (states, _changes, _epoch):
        return [host_copy.private_copy(states[uuid]) for uuid in uuids
                if uuid in states]


def _run_filters(filters, hosts, spec, record):
    with filters_mod.Rejections() as rejections, \
            filters_mod.Limits() as limits:
        for host_filter in filters:
            if not host_filter.RUN_ON_REBUILD:
                continue
            before = hosts
            if host_filter.run_filter_for_request(spec):
                hosts = list(host_filter.filter_all(before, spec))
            record.add_filter(host_filter.name, len(before), len(hosts),
                              [(h.host, h.nodename) for h in before
                               if h not in hosts])
            if not hosts:
                break
    record.add_rejections(rejections)
    return hosts, limits


def check(host_manager, filters, context, spec):
    """The Selection of the server's own host when it passes.

    :returns: ([[Selection]], Explanation); the selection has no
        allocation request: nothing was claimed.
    :raises common.exception.NoValidHost: no destination was requested,
        the host is unknown, or a RUN_ON_REBUILD filter rejected it.
    """
    record = explanation_mod.Explanation()
    dest = spec.requested_destination
    if dest is None or not dest.host:
        record.notes.append('a rebuild check needs the server\'s host')
        raise exception.NoValidHost(reason=record.summary(),
                                    explanation=record.to_dict())
    hosts = _host_states(host_manager, context, dest)
    record.hosts = len(hosts)
    if not hosts:
        record.notes.append('host %s is not known to the scheduler'
                            % dest.host)
    else:
        hosts, limits = _run_filters(filters, hosts, spec, record)
    if not hosts:
        LOG.info('Rebuild of %s: host %s does not fit the new image: %s',
                 spec.instance_uuid, dest.host, record.summary())
        raise exception.NoValidHost(reason=record.summary(),
                                    explanation=record.to_dict())
    host = hosts[0]
    record.selected = [[host.host, host.nodename]]
    return [[selection_obj.Selection(
        service_host=host.host, nodename=host.nodename,
        compute_node_uuid=host.uuid, cell_uuid=host.cell_uuid,
        limits=limits.of(host),
        availability_zone=host.availability_zone())]], record
