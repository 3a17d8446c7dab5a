# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""MetricsFilter: hosts must report the metrics the weigher uses."""

import logging

import common.conf
from services.scheduler import filters

LOG = logging.getLogger(__name__)
CONF = common.conf.CONF


def metric_names(setting):
    """The metric names of ``[metrics] weight_setting`` items.

    Items read ``name=ratio``; an item without ``=`` or with an empty name
    is skipped with a warning, as the weigher skips it.
    """
    names = []
    for item in setting:
        name, sep, _ratio = item.partition('=')
        name = name.strip()
        if not sep or not name:
            LOG.warning('Ignoring malformed [metrics] weight_setting item '
                        '%r: expected name=ratio', item)
            continue
        names.append(name)
    return names


class MetricsFilter(filters.BaseHostFilter):
    """Pass hosts reporting every metric of ``[metrics] weight_setting``.

    The companion of MetricsWeigher: with ``[metrics] required`` (the
    default) a host missing one of the weighed metrics could not be
    weighed, so it fails here. With ``required = False`` every host
    passes and the weigher gives the missing ones
    ``weight_of_unavailable`` instead.
    """

    # NOTE: metrics are refreshed by the compute's reports, not by this
    # request's own consumption, but they are cheap to check per instance.
    run_filter_once_per_request = False
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        """True when every weighed metric is reported by the host."""
        if not CONF.metrics.required:
            return True
        names = metric_names(CONF.metrics.weight_setting)
        missing = [name for name in names
                   if (host_state.metrics or {}).get(name) is None]
        if missing:
            return self.reject(host_state, 'does not report metric(s) %s',
                               ', '.join(missing))
        return True
