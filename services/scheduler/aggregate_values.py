# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Per-aggregate overrides of host limits and ratios, shared by filters.

The ``Aggregate*`` filters (core, RAM, disk, instances, I/O ops) read one
metadata key from every aggregate a host is in. A host may sit in several
aggregates that disagree; the conservative value wins (the minimum for
every limit and ratio Berth knows), and a value that cannot be read falls
back to the host's or the configuration's default, as in Nova.
"""

import logging

LOG = logging.getLogger(__name__)


def validate_num_values(values, default=None, cast_to=int, based_on=min):
    """Reduce the values found for one aggregate key to a single value.

    :param values: the distinct metadata values (strings) of the key.
    :param default: returned when ``values`` is empty.
    :param cast_to: converts each value (``int``, ``float``).
    :param based_on: picks among several values (``min`` or ``max``).
    :raises ValueError: a value cannot be converted by ``cast_to``.
    """
    num_values = len(values)
    if num_values == 0:
        return default
    if num_values > 1:
        # NOTE: an operator who put a host into two aggregates with
        # different ratios should see which one is in force.
        which = 'minimum' if based_on is min else 'maximum'
        LOG.info('%(num_values)d values found, of which the %(which)s '
                 'value will be used.',
                 {'num_values': num_values, 'which': which})
    return based_on([cast_to(value) for value in values])


def aggregate_value(host_state, key, default, cast_to=int, based_on=min):
    """The value of ``key`` over the host's aggregates, or ``default``.

    :param host_state: the HostState whose aggregates are read.
    :param key: the aggregate metadata key, e.g. ``cpu_allocation_ratio``.
    :param default: the host's or the configuration's value; used when no
        aggregate sets the key or a value is undecodable.
    """
    values = host_state.aggregate_metadata(key).get(key, set())
    try:
        return validate_num_values(values, default, cast_to=cast_to,
                                   based_on=based_on)
    except (TypeError, ValueError) as error:
        # NOTE: a typo in aggregate metadata must not make every host in
        # the aggregate unschedulable; warn and keep the default.
        LOG.warning("Could not decode %(key)s: '%(error)s'",
                    {'key': key, 'error': error})
        return default
