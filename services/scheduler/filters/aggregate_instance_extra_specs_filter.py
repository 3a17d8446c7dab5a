# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""AggregateInstanceExtraSpecsFilter: flavor extra specs vs aggregates."""

from services.scheduler import extra_specs_ops
from services.scheduler import filters

SCOPE = 'aggregate_instance_extra_specs'


def _aggregate_key(key):
    """The aggregate metadata key an extra spec asks about, or None.

    ``aggregate_instance_extra_specs:io`` and the unscoped ``io`` both ask
    about ``io``; a key in any other scope (``hw:``, ``trait:``,
    ``resources:``, ``quota:``, ``capabilities:``...) is not this filter's.
    """
    scope, sep, rest = key.partition(':')
    if not sep:
        return key
    if scope == SCOPE and rest:
        return rest
    return None


class AggregateInstanceExtraSpecsFilter(filters.BaseHostFilter):
    """Pass hosts whose aggregates' metadata meet the flavor's extra specs.

    Every extra spec scoped ``aggregate_instance_extra_specs:`` or
    unscoped (``io=fast``) needs the key in the metadata of one of the
    host's aggregates, and one of the values found for it (values are
    merged over the aggregates and comma-split) must match the
    requirement under :func:`~services.scheduler.extra_specs_ops.match`
    (``fast``, ``>= 2``, ``<or> fast <or> medium``...). So a flavor with
    ``io=fast`` never lands on a host in no aggregate carrying ``io``,
    while a flavor without such specs lands anywhere.
    """

    # NOTE: the flavor and the host's aggregates do not change within a
    # request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        """True when all the flavor's aggregate specs are met here."""
        flavor = spec_obj.flavor
        extra_specs = flavor.extra_specs if flavor is not None else None
        if not extra_specs:
            return True
        metadata = None
        for key, req in extra_specs.items():
            name = _aggregate_key(key)
            if name is None:
                continue
            if metadata is None:
                metadata = host_state.aggregate_metadata(split=True)
            values = metadata.get(name)
            if not values:
                return self.reject(
                    host_state, "extra spec %s: no aggregate of the host "
                    "has metadata '%s'", key, name)
            if not any(extra_specs_ops.match(value, req)
                       for value in values):
                return self.reject(
                    host_state, "extra spec %s: aggregate values %s do not "
                    "match '%s'", key, sorted(values), req)
        return True
