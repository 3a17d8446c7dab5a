# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""MetricsWeigher: weigh hosts by a weighted sum of their reported metrics."""

import logging

from common.conf import CONF
from common import exception
from services.scheduler import weighers

LOG = logging.getLogger(__name__)


class ComputeHostMetricNotFound(exception.BerthException):
    """A metric of ``[metrics] weight_setting`` is missing on a host."""

    msg_fmt = 'Metric %(name)s not found on host %(host)s.'


def parse_weight_setting(items):
    """Parse ``["name=ratio", ...]`` into a list of (name, float) pairs.

    NOTE: an unreadable item is skipped with a warning rather than stopping
    the scheduler: the remaining metrics still give a useful order.
    """
    setting = []
    for item in items:
        name, sep, ratio = item.partition('=')
        name = name.strip()
        try:
            if not sep or not name:
                raise ValueError(item)
            setting.append((name, float(ratio)))
        except ValueError:
            LOG.warning('Metric weight setting %r is not "name=ratio"; '
                        'ignoring it.', item)
    return setting


class MetricsWeigher(weighers.BaseHostWeigher):
    """Weigh hosts by ``sum(metric value * ratio)`` over ``weight_setting``.

    ``[metrics] weight_setting = cpu.idle.percent=1.0,cpu.user.percent=-1.0``
    gives ``idle * 1.0 + user * -1.0``. A host lacking one of the metrics
    raises ComputeHostMetricNotFound when ``[metrics] required`` is True
    (MetricsFilter should have removed it), and otherwise weighs
    ``[metrics] weight_of_unavailable`` as a whole.
    """

    def __init__(self):
        self._parsed = (None, [])

    def _setting(self):
        """The parsed weight setting, re-parsed only when the option changes.

        NOTE: caching keeps the parse warnings to one per configuration
        instead of one per host and request.
        """
        raw = tuple(CONF.metrics.weight_setting)
        if self._parsed[0] != raw:
            self._parsed = (raw, parse_weight_setting(raw))
        return self._parsed[1]

    def weight_multiplier(self, host_state):
        """``[metrics] weight_multiplier``, or the aggregate override.

        NOTE: the aggregate key is ``metrics_weight_multiplier``, the name
        upstream uses, since a bare ``weight_multiplier`` key would be
        ambiguous in aggregate metadata.
        """
        return weighers.aggregate_multiplier(
            host_state, 'metrics_weight_multiplier',
            CONF.metrics.weight_multiplier)

    def weigh_objects(self, weighed_hosts, spec_obj):
        """Raw weights; all 0 at once when no metric is configured.

        NOTE: the setting is read once per request, not once per host.
        """
        setting = self._setting()
        if not setting:
            return [0.0] * len(weighed_hosts)
        return [self._weigh(w.obj, setting) for w in weighed_hosts]

    def _weigh_object(self, host_state, spec_obj):
        """The weighted sum of the host's metrics, or the fallback weight."""
        return self._weigh(host_state, self._setting())

    def _weigh(self, host_state, setting):
        """The weighted sum of the host's metrics, or the fallback weight.

        :raises: ComputeHostMetricNotFound when a metric is missing and
            ``[metrics] required`` is True.
        """
        total = 0.0
        for name, ratio in setting:
            value = _metric_value(host_state, name)
            if value is None:
                if CONF.metrics.required:
                    raise ComputeHostMetricNotFound(
                        name=name, host=host_state.host)
                LOG.debug('Metric %s is not available on %s; weighing it '
                          'as %s.', name, host_state.host,
                          CONF.metrics.weight_of_unavailable)
                return CONF.metrics.weight_of_unavailable
            total += value * ratio
        return total


def _metric_value(host_state, name):
    """The float value of metric ``name`` on the host, or None."""
    metric = host_state.metrics.get(name)
    if isinstance(metric, dict):
        metric = metric.get('value')
    try:
        return None if metric is None else float(metric)
    except (TypeError, ValueError):
        return None
