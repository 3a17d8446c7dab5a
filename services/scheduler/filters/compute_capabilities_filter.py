# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ComputeCapabilitiesFilter: flavor extra specs against host attributes."""

import dataclasses
import json

from services.scheduler import extra_specs_ops
from services.scheduler import filters
from services.scheduler import host_state as host_state_mod

SCOPE = 'capabilities'

# NOTE: the fields an unscoped key may name (the lock is no capability).
_HOST_FIELDS = frozenset(
    field.name for field in dataclasses.fields(host_state_mod.HostState)
    if field.name != 'lock')


def _lookup(host_state, path):
    """The host value at ``path`` (attribute, then nested keys), or None.

    ``['cpu_info', 'arch']`` reads ``host_state.cpu_info['arch']``; a
    nested level stored as a JSON string (as compute nodes report
    ``cpu_info``) is decoded first.
    """
    name = path[0]
    if name.startswith('_'):
        return None
    value = getattr(host_state, name, None)
    for key in path[1:]:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        if isinstance(value, dict):
            value = value.get(key)
        else:
            value = getattr(value, key, None)
        if value is None:
            return None
    return value


def _path(key):
    """The attribute path a key asks about, or None when not ours."""
    scope = key.split(':')
    if len(scope) > 1:
        if scope[0] != SCOPE:
            return None
        return scope[1:] if all(scope[1:]) else None
    return scope if key in _HOST_FIELDS else None


def _comparable(value):
    # NOTE: requirements are strings ('16', 'QEMU'); numbers and such are
    # compared in their string form, collections keep element semantics.
    if isinstance(value, (list, tuple, set, frozenset, str)):
        return value
    return str(value)


class ComputeCapabilitiesFilter(filters.BaseHostFilter):
    """Pass hosts whose attributes satisfy the flavor's capability specs.

    Keys scoped ``capabilities:`` name a host state attribute, nested with
    further colons (``capabilities:cpu_info:arch``,
    ``capabilities:hypervisor_type``); their values are
    :mod:`~services.scheduler.extra_specs_ops` requirements
    (``>= 4096``, ``s== QEMU``, ``<all-in> aes avx``). A host lacking the
    attribute fails.

    Keys in any other scope (``hw:``, ``trait:``, ``aggregate_instance_
    extra_specs:``...) are not this filter's. For backward compatibility
    an unscoped key is matched too, but only when it names a host state
    field (``free_disk_mb``, ``vcpus_total``...); other unscoped keys
    (``io=fast``) belong to AggregateInstanceExtraSpecsFilter and are
    ignored here, so that both filters can be enabled together.
    """

    # NOTE: flavor and host capabilities do not change within a request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def run_filter_for_request(self, spec_obj):
        """Only a flavor with capability extra specs can lose hosts."""
        flavor = spec_obj.flavor
        extra_specs = (flavor.extra_specs if flavor is not None else None)
        return any(_path(key) is not None for key in extra_specs or {})

    def host_passes(self, host_state, spec_obj):
        """True when every capability requirement of the flavor is met."""
        flavor = spec_obj.flavor
        extra_specs = (flavor.extra_specs if flavor is not None else None)
        for key, req in (extra_specs or {}).items():
            path = _path(key)
            if path is None:
                continue
            value = _lookup(host_state, path)
            if value is None:
                return self.reject(
                    host_state, "does not report capability '%s' "
                    "(extra spec %s)", ':'.join(path), key)
            if not extra_specs_ops.match(_comparable(value), req):
                return self.reject(
                    host_state, "capability '%s' is %r, extra spec %s "
                    "requires '%s'", ':'.join(path), value, key, req)
        return True
